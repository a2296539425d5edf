"""Red-team round 7 on the shell reader (session 21): what a command prints from git's configuration, tool start-up
files, and obfuscation against the whole grammar (a tracing oracle).

Holes found (each allowed by the shipped ``rules.toml`` before this session, confirmed with the real program):

- **A remote URL's credential** (:func:`~agentguard.policies.shell.gitargs.prints_config`): ``git remote -v`` (and
  ``--verbose``, ``--verb``, ``--v``, ``-vv``, ``git --no-pager remote -v``, ``git remote show [-n] origin``, ``git
  remote get-url [--push|--all] origin``) printed ``https://alice:TOKEN@host/x.git`` verbatim from ``.git/config``, a
  denied path, and a token ``url.X.insteadOf`` in ``~/.gitconfig`` rewrote into the URL too (git 2.39). ``git fetch``,
  ``git pull`` and their errors print the URL anonymised (checked below). Fix: a git command that may print a value
  of git's configuration (``remote`` with any word, ``config``, ``var``, ``ls-remote`` with any word) reads the files
  it comes from (``.git/config``, ``~/.gitconfig``, ``~/.config/git/config``), so ``deny_paths`` judges it as it
  judges ``cat .git/config``. Cost: ``git remote -v`` leaves the benign corpus (13 -> 14 of 287); ``git remote``
  (names only) stays allowed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest
from hypothesis import given, strategies as st

sys.path.insert(0, os.path.dirname(__file__))
from test_analysis_redteam import FAST, refused  # noqa: E402

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")
TOKEN = "ghp_agS21secret"

# -- git's configuration printed: a remote URL's credential ---------------------------------------------------------
#: each printed the token with git 2.39 and was allowed before session 21
CONFIG_PRINTS = [
    "git remote -v", "git remote --verbose", "git remote --verb", "git remote --v", "git remote -vv",
    "git remote -v -v", "git remote -v show", "git --no-pager remote -v", "git -p remote -v", "git remote show origin",
    "git remote show -n origin", "git remote get-url origin", "git remote get-url --push origin",
    "git remote get-url --all origin", "timeout 5 git remote -v", "git remote -v | cat", "git remote -v > r.txt",
    "echo \"$(git remote -v)\"", "git remote -v 2>&1 | head -1", "cd src && git remote -v", "git 'remote' -v",
    "g=git; $g remote -v", "git remote -\\v", "git remote ${x:--v}", "git remote $(echo -v)",
]
#: already refused before session 21 (kept as a regression list)
CONFIG_PRINTS_REFUSED = [
    "git config --get remote.origin.url", "git config -l", "git config --list", "git config remote.origin.url",
    "git ls-remote --get-url", "git ls-remote --get-url origin", "cat .git/config", "git show HEAD:.git/config",
    "git grep -e url -- .git/config", "git var -l", "git -c core.pager=cat remote -v", "git -C . remote -v",
    "git --git-dir=.git remote -v", "GIT_DIR=.git git remote -v", "head .git/config", "grep url .git/config",
    "git diff --no-index .git/config /dev/null", "git commit -F .git/config", "cat ~/.git-credentials",
]
#: git commands that name remotes or refs without printing a URL stay allowed
CONFIG_QUIET = ["git remote", "git branch -vv", "git status -sb", "git fetch", "git fetch -v", "git pull -v",
                "git fetch origin", "git log -1 --format=%an", "git branch -r", "git rev-parse --git-dir"]


@pytest.mark.parametrize("cmd", CONFIG_PRINTS + CONFIG_PRINTS_REFUSED)
def test_a_command_printing_a_remote_url_from_git_config_is_refused(cmd: str) -> None:
    assert refused(cmd), cmd


@pytest.mark.parametrize("cmd", CONFIG_QUIET)
def test_git_commands_that_print_no_url_stay_allowed(cmd: str) -> None:
    assert not refused(cmd), cmd


def _git_repo(tmp: str) -> dict[str, str]:
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    repo = os.path.join(tmp, "r")
    cmds = [["git", "init", "-q", repo],
            ["git", "-C", repo, "remote", "add", "origin", f"https://alice:{TOKEN}@127.0.0.1:9/x.git"],
            ["git", "-C", repo, "remote", "add", "up", "https://127.0.0.1:9/y.git"],
            ["git", "config", "--global", f"url.https://bob:{TOKEN}@127.0.0.1:9/y.insteadOf",
             "https://127.0.0.1:9/y"]]
    for c in cmds:
        subprocess.run(c, env=env, check=True, capture_output=True, timeout=20)
    os.makedirs(os.path.join(repo, "src"))
    return env


_GLOBAL = st.sampled_from(["", "--no-pager ", "-p ", "-P ", "--no-optional-locks "])
_REMOTE_TAIL = st.sampled_from(["", "-v", "--verbose", "--verb", "--v", "--ve", "-vv", "-v -v", "-v show", "show",
                                "show origin", "show -n origin", "show -n up", "get-url origin", "get-url up",
                                "get-url --push origin", "get-url --all up", "-v show -n origin"])
_OTHER = st.sampled_from(["fetch", "fetch -v", "fetch -v origin", "pull", "pull -v", "pull --rebase origin main",
                          "fetch --dry-run -v up", "branch -vv", "status", "branch -r", "log --oneline -1"])


@needs_git
@FAST
@given(glob=_GLOBAL, sub=st.one_of(_REMOTE_TAIL.map("remote {}".format), _OTHER), where=st.sampled_from(["", "src"]))
def test_git_differential_whatever_prints_the_token_is_refused(glob: str, sub: str, where: str) -> None:
    """Oracle: real git in a throwaway repository whose remote URL (and an insteadOf rewrite in ~/.gitconfig) carries
    a token. Each git command the guard allows must not print it; those that do must be refused."""
    cmd = f"git {glob}{sub}".strip()
    with tempfile.TemporaryDirectory() as tmp:
        env = _git_repo(tmp)
        cwd = os.path.join(tmp, "r", where)
        out = subprocess.run(cmd.split(), env=env, cwd=cwd, capture_output=True, text=True, timeout=20)
    if TOKEN in out.stdout + out.stderr:
        assert refused(cmd), (cmd, out.stdout)


@needs_git
def test_git_differential_the_oracle_prints_the_token() -> None:
    """The oracle holds: git 2.39 prints the token for -v and get-url, and not for fetch (it anonymises)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = _git_repo(tmp)
        run = [subprocess.run(c.split(), env=env, cwd=os.path.join(tmp, "r"), capture_output=True, text=True,
                              timeout=20) for c in ("git remote -v", "git remote get-url up", "git fetch up")]
    assert TOKEN in run[0].stdout and TOKEN in run[1].stdout
    assert TOKEN not in run[2].stdout + run[2].stderr
