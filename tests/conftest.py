"""Shared fixtures: the path to ../shared/data (tests that need it skip with a message when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("AGENTGUARD_DATA", REPO.parent / "shared" / "data")).resolve()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The benchmark data folder; skips the test with a clear message when it is absent."""
    if not DATA.is_dir():
        pytest.skip(f"benchmark data not found at {DATA} (set AGENTGUARD_DATA)")
    return DATA
