"""Session 25 red team: git's remote helpers (gitremote-helpers(7)).

A repository written ``NAME::address``, or a URL whose scheme git does not carry itself (``NAME://``, in any case
but git's own lower-case ``file``, ``git``, ``ssh``, ``http(s)``, ``ftp(s)``), makes git run the program
``git-remote-NAME`` with the address: ``ext::sh -c cmd`` runs any command wherever ``protocol.ext.allow`` permits
it, ``fd::N`` speaks over descriptors the shell opened, and any ``git-remote-*`` on PATH is another program. Before:
the shipped stack allowed ``git fetch 'ext::sh -c id'`` (git's default policy refused it, the guard did not), and
the network rule read no host from ``git clone 'ext::ssh evil.example %S'``.

Fix: the tool rules read such a repository as an option that runs a command (:data:`.shell.programs.HAZARDS`), and
the network rule reads the host of git's own URL helpers (``https::https://h/r``) and refuses any other helper's
address as unreadable (:func:`.network_remotes.git_remote_host`). Oracle: real git's ``GIT_TRACE`` shows that it
picks a helper program for every word the guard refuses as one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from agentguard.config import load_stack
from agentguard.core.types import Context, ToolCall
from agentguard.policies.network_remotes import git_remote_host
from agentguard.policies.networks import NetworkGuard

STACK = load_stack("src/agentguard/server/examples/rules.toml")
NET = NetworkGuard(allow=["github.com"])
CTX = Context(run_id="s25-helpers")

HELPERS = ["ext::sh -c id", "ext::ssh evil.example %S", "fd::3", "fd::3,4", "x.y::z", "testgit::/tmp/r",
           "evil://x/y", "HTTPS://127.0.0.1:1/x", "Ssh://127.0.0.1:1/x", "svn://127.0.0.1:1/x", "hg::http://127.0.0.1:1/r"]
OWN = ["https://github.com/x/y", "ssh://git@github.com/x/y", "git@github.com:x/y.git", "git+ssh://github.com/x",
       "file:///tmp/nope", "origin"]


def _refuses(guard, command: str) -> bool:
    return guard.check(CTX, ToolCall("run_command", {"command": command})).decision.refuses


@pytest.mark.parametrize("word", HELPERS)
@pytest.mark.parametrize("sub", ["fetch", "pull"])  # on the allow list: the refusal is the hazard's
def test_a_remote_helper_is_refused_by_the_tool_rules(sub: str, word: str) -> None:
    quoted = "'" + word + "'"
    assert _refuses(STACK, f"git {sub} {quoted}")
    assert _refuses(STACK, f"git {sub} -- {quoted}")


@pytest.mark.parametrize("word", [w for w in HELPERS if "::" in w and not w.startswith(("hg::",))])
def test_a_remote_helpers_address_is_unreadable_to_the_network_rule(word: str) -> None:
    host = git_remote_host(word)
    assert host is not None and " " in host
    assert _refuses(NET, "git clone '" + word + "'")


def test_gits_own_url_helpers_are_read_as_urls() -> None:
    assert git_remote_host("https::https://evil.example/r") == "evil.example"
    assert _refuses(NET, "git fetch 'https::https://evil.example/r'")
    assert not _refuses(NET, "git fetch 'https::https://github.com/x'")
    assert git_remote_host("https::evil.example/r") is None  # no scheme: git refuses the URL itself


@pytest.mark.parametrize("word", OWN)
def test_gits_own_transports_stay_allowed(word: str) -> None:
    assert not _refuses(STACK, f"git fetch {word}")


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_runs_a_helper_for_each_word_refused_as_one(tmp_path) -> None:
    """The oracle: real git (GIT_TRACE) selects a remote helper, or refuses the ext transport by policy, for every
    word refused above, and for none of its own transports."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    env = {**os.environ, "GIT_TRACE": "1", "GIT_SSH_COMMAND": "false", "GIT_TERMINAL_PROMPT": "0"}

    def helper(word: str) -> bool:
        if word.startswith("fd::"):  # git's in-process fd transport (transport.c), which would wait on the descriptor
            return True
        out = subprocess.run(["git", "ls-remote", "--", word], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=20).stderr
        names = re.findall(r"run_command: git-remote-(\S+)", out)
        return any(n not in ("http", "https", "ftp", "ftps") for n in names) \
            or "transport 'ext' not allowed" in out

    assert all(helper(w) for w in HELPERS), [w for w in HELPERS if not helper(w)]
    local = ["https://127.0.0.1:1/x", "ssh://127.0.0.1:1/x", "git://127.0.0.1:1/x", "file:///nonexistent/r",
             "https::https://127.0.0.1:1/x"]
    assert not any(helper(w) for w in local), [w for w in local if helper(w)]
