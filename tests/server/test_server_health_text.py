"""The public ``/health`` says that a guard-file reload failed, never the loader's text (session 19).

The hole: ``guards_error`` on the public, unauthenticated ``/health`` was the loader's exception text, which
quotes the guard file's path, its rules and tool names and the value that broke it. Now it is a fixed text;
the detail goes to the server log (``agentguard.server.guards`` warning), as ``credentials_error`` did since
session 18.
"""

from __future__ import annotations

import logging
import time

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import given, strategies as st  # noqa: E402

SECRET_TOOL = "exfiltrate_payroll_to_s3_bucket_prod_7731"


def test_a_broken_guard_file_is_not_quoted_on_the_public_health(tmp_path, caplog):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    rules = tmp_path / "secret-rules-dir" / "tools.toml"
    rules.parent.mkdir()
    rules.write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_*"]\n')
    app = create_app(ServerSettings(token="health-token-1234", state_dir=str(tmp_path / "s"), tool_guards=str(rules),
                                    reload_s=0.01))
    with TestClient(app) as c, caplog.at_level(logging.WARNING, logger="agentguard.server.guards"):
        rules.write_text(f'[[guards]]\ntype = "tool-rules"\ndeny = ["{SECRET_TOOL}"]\nbogus_key = 1\n')
        deadline = time.time() + 5
        while app.state.guard_source.last_error is None and time.time() < deadline:
            time.sleep(0.05)
            c.get("/health")
        h = c.get("/health").json()
        assert h["status"] == "degraded" and h["guards_error"], h
        said = h["guards_error"]
        assert "bogus_key" not in said and "secret-rules-dir" not in said and "tools.toml" not in said, said
        assert "bogus_key" in app.state.guard_source.last_error  # the detail is kept ...
        assert any("bogus_key" in r.getMessage() for r in caplog.records)  # ... and logged


@given(st.text(max_size=200))
def test_property_the_public_text_is_fixed_whatever_the_error(text):
    from agentguard.server.routes.health import _public

    assert _public(text, "the guard files") == _public("x", "the guard files")
    assert _public(None, "the guard files") is None
