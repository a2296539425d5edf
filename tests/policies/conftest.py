"""Fixtures shared by the path-reading tests (test_arguments.py, test_rules_redteam.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real file tree holding denied files (the differential oracles expand globs and open paths in it)."""
    root = tmp_path_factory.mktemp("tree")
    for rel in ["etc/shadow", "etc/shadow-", "etc/hosts", "home/u/.ssh/id_rsa", "home/u/notes.txt", "app/.env",
                "app/src/main.py", "run/secrets/db", "src/main.py"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    return root
