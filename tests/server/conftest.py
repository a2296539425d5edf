"""Shared fixtures of the service tests: each audit store (SQLite file, PostgreSQL) as a parameter.

``store_url`` is parametrised over ``sqlite`` and ``postgresql``; the PostgreSQL case uses the test server
of ``scripts/setup_postgres.sh`` (``AGENTGUARD_TEST_PG_URL`` or ``.cache/pg_url``): it fails in CI when
that server is missing and skips elsewhere. The database is emptied before each test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'audit.sqlite'}"
    pytest.importorskip("psycopg")
    from agentguard.server.testing import postgres_test_url, reset_postgres

    url, problem = postgres_test_url(str(REPO))
    if url is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{problem} (CI is set: scripts/setup_postgres.sh must provide it)")
        pytest.skip(problem or "no PostgreSQL")
    reset_postgres(url)
    return url
