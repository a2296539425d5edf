"""Session 26 (second round): a clone followed by its submodules, a work tree's ``.gitmodules``, and the call's own
working directory (a ``cwd``-like argument) as the place a command's clients read their repository and project files.

Decided here: ``git clone URL x && cd x && git submodule update --init`` is allowed. Its submodule URLs are the new
``.gitmodules``, which the clone's remote chooses and which does not exist when the call is decided (as
``git clone --recurse-submodules`` already was): a remote's answer, like a redirect's target, which no reading of the
arguments sees (the module docstring's "Not covered"); the clone's own URL is checked. An existing work tree's
``.gitmodules`` and ``.git/config`` submodule URLs are read, and refuse an internal one."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentguard.core import Context, ToolCall
from agentguard.policies.network_configs_env import command_env
from agentguard.policies.networks import NetworkGuard

from .test_network_configs import home  # noqa: F401 (the fixture: an empty HOME)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")

GUARD = NetworkGuard()
CLONE = "git clone https://github.com/org/repo"


def _verdict(arguments: dict[str, Any]) -> Any:
    return GUARD.check(Context(run_id="s26b"), ToolCall("run_command", arguments))


def _refuses(command: str, **more: str) -> bool:
    return _verdict({"command": command, **more}).decision.refuses


def _git(*args: str, home: Path) -> None:
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], check=True, env=env, timeout=30, capture_output=True)


@pytest.fixture
def work(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    """The guard's working directory: ``sm`` (a work tree whose ``.gitmodules`` names 10.0.0.7 and a relative URL),
    ``ok`` (a public submodule), ``plain`` (no repository)."""
    w = tmp_path / "w"
    w.mkdir()
    for name, url in (("sm", "http://10.0.0.7/x.git"), ("ok", "https://github.com/a/s.git")):
        _git("init", "-q", str(w / name), home=home)
        _git("-C", str(w / name), "remote", "add", "origin", "https://github.com/a/b.git", home=home)
        (w / name / ".gitmodules").write_text(f'[submodule "x"]\n\tpath = x\n\turl = {url}\n'
                                              '[submodule "y"]\n\tpath = y\n\turl = ../y.git\n')
    (w / "plain").mkdir()
    monkeypatch.chdir(w)
    return w


@pytest.mark.parametrize("command", [
    f"{CLONE} b && cd b && git submodule update --init",
    f"{CLONE} && cd repo && git submodule update --init --recursive",
    f"{CLONE} b && git -C b submodule update --init",
    f"{CLONE} b && git -C b -C sub fetch",
    f"{CLONE} --recurse-submodules b",
    f"{CLONE} b && cd b && make",
    f"{CLONE} b && cd b && npm install",
    f"{CLONE} b && cd b && pip install -e .",
    f"{CLONE} b && cd b && git checkout -b fix && git pull",
    f"{CLONE} b && cd b && git config user.email a@b.c && git commit -am x && git push",
    "cd plain && git config user.name me && git fetch",   # (the config's write spelled from cd's place too)
    "cd ok && git worktree add ../wt && cd ../wt && git pull",
    "git worktree add -b fix wt2 main && cd wt2 && git pull",
])
def test_a_clone_and_its_own_next_steps_are_allowed(work: Path, command: str) -> None:
    assert not _refuses(command)


@pytest.mark.parametrize("command", [
    "cd sm && git submodule update --init",
    "git -C sm submodule update --init --recursive",
    "git -C sm fetch --recurse-submodules",
    "cd sm && git pull",
    f"{CLONE} b && cd b && git submodule add http://10.0.0.8/x.git",   # (the clone's next step names its remote)
    f"{CLONE} b && git -C b remote set-url origin http://10.0.0.8/x.git",
    "cd plain && git config user.name me && cp /tmp/x .git/config && git fetch",   # (one write taken, not both)
    "cd plain && git config url.http://10.0.0.1/.insteadOf https://github.com/ && git fetch",
    "cd plain && git config --edit && git fetch",
    "mkdir a && cd ab && git fetch",   # (ab is no directory the command makes)
])
def test_a_work_trees_internal_submodule_is_refused(work: Path, command: str) -> None:
    assert _refuses(command)


def test_a_public_or_relative_submodule_is_allowed(work: Path) -> None:
    assert not _refuses("cd ok && git submodule update --init")   # (../y.git: the origin's host, read as it)
    assert not _refuses("cd sm && git status")   # (a builtin that connects nowhere reads no file)


def test_the_configs_submodule_url_and_update_command(work: Path, home: Path) -> None:  # noqa: F811
    (work / "ok" / ".gitmodules").unlink()
    _git("-C", str(work / "ok"), "config", "submodule.w.url", "git@10.0.0.9:w.git", home=home)
    assert _refuses("cd ok && git submodule update")
    _git("-C", str(work / "ok"), "config", "--unset", "submodule.w.url", home=home)
    assert not _refuses("cd ok && git submodule update")
    _git("-C", str(work / "ok"), "config", "submodule.z.update", "!curl http://10.0.0.8/", home=home)
    assert _refuses("cd ok && git submodule update")


def test_a_place_below_one_not_found_refuses(work: Path) -> None:
    assert _refuses("git -C nope -C sub fetch")   # (s26: an IndexError before)
    assert not _refuses("git -C plain -C /etc fetch")


def test_git_submodule_is_no_switch_of_user() -> None:
    """``su`` matched the start of ``submodule`` (and ``sum``, ``suite``): HOME became ``~root``, and as root a
    clone's write of ``~/repo`` read as written before git read it, refusing clone + submodule update."""
    assert "HOME" not in command_env([f"{CLONE} b && cd b && git submodule update --init"])
    assert "HOME" not in command_env(["sum f && suite run"])
    assert command_env(["su bob -c 'git fetch'"])["HOME"] == ["~bob"]
    assert command_env(["sudo git fetch"])["HOME"] == ["~root"]


@pytest.mark.parametrize("key", ["cwd", "workdir", "working_directory"])
def test_the_calls_cwd_is_where_its_clients_run(work: Path, key: str) -> None:
    assert not _refuses("git submodule update --init")   # (the guard's directory: no repository)
    assert _refuses("git submodule update --init", **{key: str(work / "sm")})
    assert _refuses("git submodule update --init", **{key: "sm"})   # (relative: below the guard's directory)
    assert not _refuses("git submodule update --init", **{key: "ok"})
    assert _refuses("cd sm && git fetch", **{key: str(work)})


def test_a_cwd_not_found_refuses_a_client_only(work: Path) -> None:
    verdict = _verdict({"command": "git fetch", "cwd": "nope"})
    assert verdict.decision.refuses and "the call's working directory" in verdict.reason
    assert _refuses("git fetch", cwd="$HOME/x")
    assert _refuses("cd sm && git fetch", cwd=str(work / "plain"))   # (sm is not below plain: not found)
    assert not _refuses("ls -la", cwd="nope")   # (no client: no file read)
    assert not _refuses("git status", cwd="nope")


def test_npm_reads_the_cwds_project_npmrc(work: Path) -> None:
    (work / "plain" / "package.json").write_text("{}")
    (work / "plain" / ".npmrc").write_text("registry=http://10.0.0.1/\n")
    assert not _refuses("npm install")
    assert _refuses("npm install", cwd="plain")
    assert _refuses("npm install", cwd=str(work / "plain"))
