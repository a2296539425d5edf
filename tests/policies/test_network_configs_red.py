"""Session 25 red team of :mod:`agentguard.policies.network_configs`: each probe that found a hole is kept here (a
configuration file that is a FIFO or a device, a tree copied or extracted over a client's files in the same command).
Real curl 7.88 is the oracle where installed (run under a temporary HOME against closed ports of 127.0.0.x)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agentguard.core.types import Context, ToolCall
from agentguard.policies.network_files import read_limited, read_regular
from agentguard.policies.networks import NetworkGuard

GUARD = NetworkGuard()
_MOVERS = ("CURL_HOME", "XDG_CONFIG_HOME", "WGETRC", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "PIP_CONFIG_FILE",
           "NPM_CONFIG_USERCONFIG", "NPM_CONFIG_GLOBALCONFIG", "VIRTUAL_ENV", "npm_config_userconfig",
           "npm_config_globalconfig")


def net_refuses(command: str) -> bool:
    return GUARD.check(Context(run_id="red"), ToolCall("run_command", {"command": command})).decision.refuses


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    for name in _MOVERS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return h


# -- a configuration file that is no regular file: never waited on, never read as empty --------------------------


@pytest.mark.parametrize("name,command", [(".curlrc", "curl https://example.com"),
                                          (".gitconfig", "git fetch https://github.com/a/b"),
                                          (".wgetrc", "wget https://example.com"), (".npmrc", "npm install"),
                                          (".ssh/config", "ssh example.com")])
def test_a_fifo_config_refuses_without_waiting(home: Path, name: str, command: str) -> None:
    (home / name).parent.mkdir(exist_ok=True)
    os.mkfifo(home / name)   # opening it for reading blocked the guard until a writer came (a denial of service)
    assert net_refuses(command)


def test_a_config_linked_to_a_fifo_or_a_device_refuses(home: Path) -> None:
    os.mkfifo(home / "fifo")
    (home / ".gitconfig").write_text("[include]\n\tpath = fifo\n")
    assert net_refuses("git fetch https://github.com/a/b")
    (home / ".gitconfig").unlink()
    for target in (str(home / "fifo"), "/dev/zero"):
        (home / ".curlrc").unlink(missing_ok=True)
        (home / ".curlrc").symlink_to(target)
        assert net_refuses("curl https://example.com")
    assert net_refuses(f"curl -K {home}/fifo https://example.com")
    assert net_refuses(f"wget -i {home}/fifo")
    assert net_refuses(f"ssh -F {home}/fifo example.com")


def test_a_directory_named_curlrc_refuses(home: Path) -> None:
    (home / ".curlrc").mkdir()
    assert net_refuses("curl https://example.com")


def test_the_null_device_reads_as_no_file(home: Path) -> None:
    # the common idioms stay allowed: /dev/null is an empty configuration
    for command in ("ssh -F /dev/null example.com", "GIT_CONFIG_GLOBAL=/dev/null git fetch https://github.com/a/b",
                    "curl -K /dev/null https://example.com", "WGETRC=/dev/null wget https://example.com"):
        assert not net_refuses(command), command


def test_read_regular_refuses_what_is_no_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "f")
    for path in (tmp_path / "f", tmp_path, Path("/dev/zero")):
        with pytest.raises(OSError):
            read_regular(str(path))
        assert read_limited(str(path)) is None
    assert read_regular(os.devnull) == b""
    (tmp_path / "r").write_bytes(b"x" * 10)
    assert read_regular(str(tmp_path / "r"), 4) == b"xxxxx"


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")
def test_curl_reads_a_curlrc_behind_a_symlink(home: Path) -> None:
    # the oracle: curl follows a symlinked ~/.curlrc, so a link to a FIFO is a file it reads (and waits on)
    (home / "real").write_text('url = "http://127.0.0.9:9/evil"\n')
    (home / ".curlrc").symlink_to(home / "real")
    done = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{url_effective}\\n", "--connect-timeout", "1",
                           "http://127.0.0.8:9/ok"], env={"HOME": str(home), "PATH": os.environ.get("PATH", "")},
                          capture_output=True, text=True, timeout=20)
    assert "127.0.0.9" in done.stdout
    assert net_refuses("curl http://example.com/")
