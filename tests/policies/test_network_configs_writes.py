"""Session 25 red team, :mod:`agentguard.policies.network_configs_writes`: a tree copied or extracted over a client's
default files in the same command that runs the client.
Real curl 7.88 is the oracle where installed (run under a temporary HOME against closed ports of 127.0.0.x)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .test_network_configs import home, net_refuses  # noqa: F401 (the fixture: an empty HOME)


# -- a tree written over a client's files in the same command (names the tree or the archive chooses) -------------


@pytest.mark.parametrize("command", ["cp -r dir ~ && curl https://example.com",
                                     "tar -xf a.tar -C ~; curl https://example.com",
                                     "unzip a.zip -d ~ && wget https://example.com",
                                     "rsync -a dir/ ~/ && curl https://example.com",
                                     "cp -r dir/. ~/ && git fetch https://github.com/a/b",
                                     "mv dir/.curlrc ~ && curl https://example.com",
                                     "cd ~ && cp /tmp/x/.curlrc . && curl https://example.com"])
def test_a_tree_written_over_a_clients_files_then_read_refuses(home: Path, command: str) -> None:
    assert net_refuses(command)


@pytest.mark.parametrize("command", ["cd ~ && curl https://example.com", "curl --output-dir ~ -O https://example.com/x",
                                     "cp f ~/notes.txt && curl https://example.com",
                                     "curl -o ~/x https://example.com && curl https://example.com",
                                     "cp -r dir /tmp/y && curl https://example.com", "cp -r dir ~"])
def test_ordinary_writes_beside_a_client_stay_allowed(home: Path, command: str) -> None:
    assert not net_refuses(command)


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None, reason="curl not installed")
def test_curl_reads_a_curlrc_a_tree_copy_just_wrote(home: Path, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / ".curlrc").write_text('url = "http://127.0.0.9:9/evil"\n')
    done = subprocess.run(["bash", "-c", f"cp -r {tmp_path}/d/. ~ && curl -s -o /dev/null -w '%{{url_effective}}\\n' "
                           "--connect-timeout 1 http://127.0.0.8:9/ok"],
                          env={"HOME": str(home), "PATH": os.environ.get("PATH", "")}, capture_output=True, text=True,
                          timeout=20)
    assert "127.0.0.9" in done.stdout


def test_a_place_assigned_to_no_client_is_no_client_file() -> None:
    """Session 25 full run: ``make PREFIX=/usr/local install`` (make's variable, make's operand /usr/local) was refused
    as "a configuration file written before the client reads it"; no client runs or is named there. With a client, the
    same place still refuses."""
    from agentguard.core.types import Context, ToolCall
    from agentguard.policies.networks import NetworkGuard

    guard = NetworkGuard()

    def refuses(command: str) -> bool:
        return guard.check(Context(run_id="s25"), ToolCall("run_command", {"command": command})).decision.refuses

    assert not refuses("make PREFIX=/usr/local install")
    assert not refuses("cmake --install build --prefix /usr/local")
    assert refuses("PREFIX=/tmp/p; echo x > /tmp/p/etc/npmrc; npm install")
    assert refuses("make PREFIX=/tmp/p install && npm install")


def test_own_writes_less_matches_a_write_spelled_from_a_cds_place_too() -> None:
    """Session 26: after ``cd b``, ``git config user.email x``'s writes are spelled ``.git/config`` and
    ``b/.git/config``; the argv alone's spell ``.git/config``: the same write, taken once."""
    from agentguard.policies.network_configs_writes import own_writes_less
    from agentguard.policies.shell.analysis import analyse
    argv = ("git", "config", "user.email", "a@b.c")
    writes = analyse("cd b && git config user.email a@b.c").writes
    assert not [w for w in own_writes_less(writes, [argv]) if any("config" in t for t, _ in w)]
    kept = own_writes_less(analyse("cd b && git config user.email a@b.c && cp x .git/config").writes, [argv])
    assert [t for w in kept for t, _ in w if t.endswith(".git/config")] == [".git/config", "b/.git/config"]
