"""``agentguard audit`` and ``report shadow --db`` on a store that is not there: one line, and no file left behind.

(The chain itself, ``audit verify`` / ``export`` on a real store, is tested in tests/server/test_server_chain.py.)
"""

from __future__ import annotations

import pytest

pytest.importorskip("sqlalchemy")

from agentguard.cli import main  # noqa: E402


@pytest.mark.parametrize("argv", [["audit", "verify", "--db"], ["audit", "export", "--run", "r1", "--db"],
                                  ["report", "shadow", "--db"]])
def test_a_mistyped_sqlite_store_is_refused_and_not_created(argv, tmp_path, capsys):
    path = tmp_path / "typo" / "audit.sqlite"
    with pytest.raises(SystemExit) as e:
        main([*argv, f"sqlite:///{path}"])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and err == (f"error: no audit store at {path}: the service keeps it in its state "
                                         "folder (--state-dir, default ./agentguard-data/audit.sqlite)")
    assert not path.exists() and not path.parent.exists()


def test_an_existing_store_and_a_server_url_pass(tmp_path):
    from agentguard.cli.audit import require_existing_store
    from agentguard.core.errors import InputError

    f = tmp_path / "audit.sqlite"
    f.write_bytes(b"")
    assert require_existing_store(f"sqlite:///{f}") == f"sqlite:///{f}"
    url = "postgresql+psycopg://u:p@127.0.0.1:1/db"
    assert require_existing_store(url) == url
    with pytest.raises(InputError, match="bad database URL"):
        require_existing_store("::not a url")
