"""``agentguard serve`` on first use: a missing extra, no guard files, an empty config (issue 29)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentguard.cli import extras_providing, main, missing_extra
from agentguard.cli.server import NO_GUARDS, example_guards_file

SRC = Path(__file__).resolve().parents[2] / "src"
TOKEN = "test-token-123456"


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), *sys.path]), "AGENTGUARD_TOKEN": TOKEN}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def test_serve_without_the_server_extra_names_it_and_exits_2(tmp_path):
    """The extra is simulated missing: ``sqlalchemy`` cannot be imported in that interpreter."""
    r = _run("import sys; sys.modules['sqlalchemy'] = None\n"
             "from agentguard.cli import main; main(['serve', '--example-guards'])", tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == "error: optional dependency 'sqlalchemy' is missing: pip install 'agentguard[server]'"
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_a_missing_module_anywhere_names_its_extra():
    """The fallback in ``main``: a ModuleNotFoundError of an optional dependency (read from the package's metadata)
    is one line naming the extra, exit 2; a module no extra provides stays a bug (exit 3)."""
    assert extras_providing("sqlalchemy") == {"server"}
    assert "integrations" in extras_providing("langchain")
    assert missing_extra(ModuleNotFoundError("x", name="fastapi.routing")).endswith("pip install 'agentguard[server]'")
    assert missing_extra(ModuleNotFoundError("x", name="no_such_thing")) is None
    assert missing_extra(ValueError("x")) is None


@pytest.mark.parametrize("config", [None, ""])
def test_serve_without_guard_files_refuses_naming_the_flag(tmp_path, monkeypatch, capsys, config):
    """No guard file (none given, or an empty config file): one line naming the flags, exit 2, and no state folder
    created (the Mind2Web-SC example policy is never loaded in its place)."""
    pytest.importorskip("sqlalchemy")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTGUARD_TOKEN", TOKEN)
    monkeypatch.delenv("AGENTGUARD_STATE_DIR", raising=False)
    args = ["serve"]
    if config is not None:
        (tmp_path / "empty.toml").write_text(config)
        args += ["--config", "empty.toml"]
    import agentguard.server.guards as guards

    monkeypatch.setattr(guards, "default_guards", lambda *a: pytest.fail("the default guards were loaded"))
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err == f"error: {NO_GUARDS}\n" and "--tool-guards" in err and "--example-guards" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == (["empty.toml"] if config is not None else [])


def test_serve_with_example_guards_starts_with_the_generic_default_deny_stack(tmp_path, monkeypatch, capsys):
    pytest.importorskip("fastapi")
    from agentguard.config import load_stack
    from agentguard.core import Context, ToolCall

    monkeypatch.setenv("AGENTGUARD_TOKEN", TOKEN)
    seen = {}
    import agentguard.server.runner as runner

    monkeypatch.setattr(runner, "serve", lambda settings, *a: seen.setdefault("settings", settings))
    main(["serve", "--example-guards", "--state-dir", str(tmp_path / "state"), "--port", "8797"])
    assert seen["settings"].tool_guards == str(example_guards_file())
    err = capsys.readouterr().err
    assert "state folder" in err and "tool_guards=rules.toml" in err
    stack = load_stack(example_guards_file())     # default deny: a tool the allow list does not name is refused
    assert stack.check(Context(), ToolCall("my_own_tool", {})).decision.name == "REJECT"
    assert stack.check(Context(), ToolCall("read_file", {"path": "notes.txt"})).decision.name == "ALLOW"


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "sqlite:///file:a?mode=memory&uri=true"])
def test_serve_refuses_a_store_that_is_not_durable_and_creates_nothing(tmp_path, monkeypatch, capsys, url):
    """Session 23: an in-memory audit store started the service (every worker its own log, lost at exit); it is
    refused with one line, exit 2, and neither the state folder nor any file is created."""
    pytest.importorskip("sqlalchemy")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTGUARD_TOKEN", TOKEN)
    monkeypatch.delenv("AGENTGUARD_STATE_DIR", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--example-guards", "--db-url", url])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert list(tmp_path.iterdir()) == []


def test_serve_refuses_a_bad_audit_key_before_creating_the_store(tmp_path, monkeypatch, capsys):
    """Session 23: an audit key file that is not a PEM key was refused only after the SQLite store (and the state
    folder holding it) had been created; now the existing key is read first and nothing is created."""
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("cryptography")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTGUARD_TOKEN", TOKEN)
    monkeypatch.delenv("AGENTGUARD_STATE_DIR", raising=False)
    (tmp_path / "key.pem").write_text("garbage")
    (tmp_path / "cfg.toml").write_text(f'[server]\naudit_key_file = "{tmp_path / "key.pem"}"\n')
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--example-guards", "--config", "cfg.toml"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "is not a PEM private key" in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.toml", "key.pem"]
