"""Red-team round 5 on the shell reader (session 19): files a commit plants, runners that load code from elsewhere.

Holes found (each allowed by the shipped ``rules.toml`` before this session, confirmed with the real program):

- **A commit plants what a later command follows** (git 2.39, :mod:`agentguard.policies.shell.vcs`): ``git checkout
  evil`` (also ``git pull ../up evil``, ``git restore --source=origin/evil k``, ``git checkout origin/evil -- k``,
  ``git apply P``) wrote ``k -> ~/.ssh/id_rsa`` and the allowed ``cat k`` printed the key; a committed directory with
  ``HEAD``, ``objects/``, ``refs/`` and a ``config`` setting ``core.fsmonitor`` ran its command on ``cd ev && git
  status``; ``git fetch -u origin +evil:master`` moved the checked-out branch and ``git stash`` then wrote ``k``.
  Fix: only HEAD, HEAD~N, the index and the stash are trusted sources for the working tree; a checkout, switch,
  restore or reset from any other revision, ``pull``/``merge``/``apply``/... and fetches that move local refs are
  refused as ``tar -x`` is. This refused ``git checkout main``, ``git switch main`` and ``git pull``; session 19b
  trusts the project's own branches again (plain local names, the upstream, origin's NAME: ``test_vcs.py``), so the
  attacks spelled with the plain name ``evil`` moved to ``GIT_PROJECT_BRANCHES`` and their foreign spellings
  (``FETCH_HEAD``, ``ev.git``, a new remote) replaced them.
- **Runner options that load code from elsewhere** (:mod:`agentguard.policies.shell.runners`): ``make -f /tmp/x``,
  ``make -C /tmp/x``, ``make -I``, ``pytest -p MOD``, ``pytest -c``/``-o``/``--confcutdir``/``--rootdir``, ``npm test
  --prefix /tmp/x``, ``cargo build --manifest-path``, ``cargo --target spec.json``, ``go test -modfile``/``-overlay``,
  ``go build -ldflags=-extld=...``, ``pytest /tmp/x/test_a.py`` and ``cd /tmp/x && make``. Fix: each runner's
  options are an allow list; test operands and ``cd`` targets must stay in the project.
- **Over-refusal**: ``git restore --source=HEAD~1 f`` was refused (the option's attached value was read from its
  ``~``, as the tilde path ``~1`` = ``/home/1``). Fix: a ``~`` starts a path only at the start of the value.

Already refused (``already_refused_s19.txt``): process substitution, ``exec {fd}<``, arithmetic subscripts,
``${!x}``, ``${x@P}``, ``declare -n``, ``shopt``, ``command -p``, ``builtin``, ``enable -f``, globs that may expand to
options (``tar cf a.tar *.txt``), brace expansion to options (``rm {-rf,x}``), ``~+``/``~-``, git's ``-c``,
``--exec-path``, ``--template``, ``GIT_*``/``EDITOR``/``PAGER`` variables, npm/pytest/cargo/go environment variables.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agentguard.policies.shell import analyse
from agentguard.policies.shell.runners import RUNNERS
from agentguard.policies.shell.vcs import trusted_rev

sys.path.insert(0, os.path.dirname(__file__))
from test_analysis_redteam import refused  # noqa: E402

HERE = Path(__file__).resolve().parent
FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
ORACLE = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

GIT_PLANTS = [
    "git checkout origin/evil", "git checkout origin/evil -- k",
    "git checkout -b x origin/evil", "git checkout -B x origin/evil", "git checkout --detach origin/evil",
    "git checkout -", "git checkout FETCH_HEAD", "git checkout --recurse-submodules -b x",
    "git switch -c x origin/evil", "git switch --detach origin/evil", "git switch -",
    "git restore --source=origin/evil k", "git reset --hard origin/evil", "git reset origin/evil",
    "git pull ../up evil", "git merge origin/evil", "git rebase evil",
    "git cherry-pick evil", "git revert evil", "git am x.mbox", "git apply x.patch", "git submodule update --init",
    "git clone ../up x", "git worktree add ../w evil", "git read-tree -u -m evil", "git update-index --cacheinfo "
    "120000,e69de29bb2d1d6434b8b29ae775ad8c2e48c5391,k", "git update-ref HEAD evil", "git symbolic-ref HEAD "
    "refs/heads/evil", "git replace HEAD evil", "git bisect start evil HEAD", "git stash apply origin/evil",
    "git stash pop evil", "git stash branch x evil", "git stash store evil", "git fetch -u origin +evil:master",
    "git fetch --update-head-ok origin", "git fetch origin evil:refs/stash", "git fetch origin +refs/*:refs/*",
    "git fetch --refmap=+refs/heads/*:refs/heads/* origin", "git remote add --mirror=fetch e ../up",
    "git -C sub checkout evil", "git checkout $B", "git checkout \"$(echo evil)\"",
    # session 19b: the project's own branches are trusted (vcs.py), so the plain name "evil" above became a foreign
    # source spelled the ways that reach one: FETCH_HEAD, an object id, a repository that is not origin, a new remote
    "git checkout FETCH_HEAD -- k", "git restore -s FETCH_HEAD k", "git restore --source ORIG_HEAD k",
    "git restore --sou=FETCH_HEAD k", "git restore -sFETCH_HEAD k", "git checkout -f FETCH_HEAD",
    "git pull ev.git evil", "git pull --rebase ev.git main", "git pull ev.git evil && cat k",
    "timeout 60 git checkout FETCH_HEAD", "cd ev && git checkout FETCH_HEAD", "git remote add up https://e.com/x.git",
]
#: allowed on purpose since session 19b (were in GIT_PLANTS): "evil" here is a plain branch name, which names only
#: the project's own content (a local branch, or origin's branch by checkout's guess); see vcs.py's trust model
GIT_PROJECT_BRANCHES = [
    "git checkout evil", "git checkout evil k", "git checkout -f evil", "git switch evil", "git restore -s evil k",
    "git restore --source evil k", "git restore --sou=evil k", "git restore -sevil k", "git pull",
    "git pull --rebase origin main", "timeout 60 git checkout evil", "git pull && cat k", "cd ev && git checkout evil",
]
GIT_BENIGN = [
    "git checkout -b feature/x", "git checkout -B x", "git checkout --orphan gh-pages", "git switch -c x",
    "git switch --create x", "git checkout -- src/x.py", "git checkout HEAD -- f", "git checkout HEAD~1 -- f",
    "git restore README.md", "git restore --staged src/x.py", "git restore --source=HEAD~1 file",
    "git restore --source HEAD~1 file", "git restore -s HEAD^ f", "git restore --source=@~2 f", "git stash",
    "git stash list", "git stash pop", "git stash pop stash@{1}", "git stash apply 2", "git stash show -p",
    "git stash push -m wip", "git stash drop", "git fetch", "git fetch origin", "git fetch origin main",
    "git fetch --all --prune", "git fetch https://example.com/x.git main",
    "git log HEAD~1", "git diff HEAD~1", "git show HEAD~1:f",
]
RUNNER_ATTACKS = [
    "make -f /tmp/x.mk", "make -f/tmp/x.mk", "make --file=/tmp/x.mk", "make --makefile /tmp/x.mk", "make --fi /tmp/x",
    "make -C /tmp/x", "make --directory=/tmp/x", "make -I /tmp", "make --include-dir=/tmp", "make -O -f /tmp/x",
    "make -kf /tmp/x", "make -e", "make -j -f /tmp/x", "make -C ../x", "make -I ~/x", "make --directory ../x",
    "cd /tmp/x && make", "cd ~/x; make", "cd .. && make",
    "cd src; cd /tmp/x; make test", "gmake -f /tmp/x", "pytest -p evil", "pytest -pevil", "pytest -p=evil",
    "pytest -c /tmp/x.ini", "pytest -c x.ini", "pytest --config-file=x.ini", "pytest -o addopts=-pevil",
    "pytest --override-ini=pythonpath=/tmp", "pytest --confcutdir=/", "pytest --rootdir /tmp", "pytest --rootdir=x",
    "pytest /tmp/x/test_a.py", "pytest ../x", "pytest ~/x/tests", "pytest --pyargs evil", "pytest --pdbcls=evil:P",
    "pytest -W error::evil.Warn", "python -m pytest -p evil", "python3 -m pytest /tmp/x", "py.test -p evil",
    "cd /tmp/x && pytest", "pytest --cov-config=/tmp/rc", "npm test --prefix /tmp/x", "npm --prefix /tmp/x test",
    "npm run build --prefix=/tmp/x", "npm test -C /tmp/x", "npm test --globalconfig=/tmp/x",
    "npm test --onload-script=/tmp/x.js", "npm run test --ignore-scripts=false --script-shell=/tmp/x",
    "cd /tmp/x && npm test", "cargo build --manifest-path /tmp/x/Cargo.toml",
    "cargo test --manifest-path=/tmp/x/Cargo.toml", "cargo build -Z unstable-options", "cargo -C /tmp/x build",
    "cargo build --target /tmp/t.json", "cargo build --target=./t.json", "cargo +/tmp/tc build",
    "cargo clippy -- -Zcodegen-backend=/tmp/x.so", "cargo build --config build.rustc=\"/tmp/x\"",
    "go test -modfile=/tmp/go.mod ./...", "go test -overlay=/tmp/o.json ./...", "go build -C /tmp/x",
    "go build -ldflags=-extld=/tmp/x", "go build -ldflags '-extldflags -fuse-ld=/tmp/x'", "go test ../x",
    "go test /tmp/x", "go test -gcflags=-importcfg=/tmp/c ./...", "go build -toolexec=/tmp/x", "go test -exec=/tmp/x",
    "pytest $X", "make $T", "npm test $X", "go test -run $X", "mypy --config-file /tmp/x/m.ini src",
    "mypy --config-file=/tmp/m.ini src", "python -m mypy --config /tmp/m.ini src", "mypy --config-file ../m.ini .",
    "cargo clippy -- --extern e=/tmp/libe.so", "cargo clippy -- -L /tmp", "cargo check -- -Zcodegen-backend=x",
    "env -C /tmp/x make", "env --chdir=/tmp/x pytest", "(cd /tmp/x; make)", "{ cd /tmp/x; }; make", "cd && make",
    "cmake -S /tmp/evil -B build", "cmake /tmp/evil", "cmake -S/tmp/x -Bbuild", "cmake --build /tmp/evil",
    "cmake --build=/tmp/x", "cmake --install /tmp/x", "ctest --test-dir /tmp/evil", "cd /tmp/evil && cmake .",
    "cmake --build build -- -f /tmp/x", "cmake -G Ninja -S . -B /tmp/build",
    "python -m unittest discover -s /tmp/x", "python -m unittest discover /tmp/x", "python -m unittest discover -t ..",
    "python3 -m unittest discover --start-directory=/tmp/x", "npm test -g", "npm run build -g",
    "pytest /tmp/*/t.py", "pytest .*/x.py", "pytest *", 'for f in /tmp/*.py; do pytest "$f"; done',
]
RUNNER_BENIGN = [
    "make", "make -j4 test", "make -j 4 test", "make -k -s all", "make --jobs=8", "make -n install", "make V=1",
    "make --no-print-directory check", "cd src && make", "make -C docs html", "make -f Makefile.dev",
    "make -B clean all", "pytest", "pytest -q tests/",
    "pytest -x -k 'not slow' tests", "pytest -p no:cacheprovider -q", "python -m pytest -q", "pytest --co -q",
    "pytest --tb=short -ra", "pytest -n auto", "pytest tests/test_x.py::test_a -vv", "pytest --lf",
    "pytest --cov=src --cov-report=term", "pytest -W error", "pytest --maxfail=1 --durations=10",
    "pytest --import-mode=importlib tests", "npm test", "npm run build", "npm run lint -- --fix", "npm ls --depth=0",
    "npm test --silent", "npm run test -- --watch=false", "cargo build", "cargo build --release", "cargo test -- "
    "--nocapture", "cargo test -p core --all-features", "cargo build --target x86_64-unknown-linux-gnu",
    "cargo clippy -- -D warnings", "cargo fmt --check", "cargo check --workspace --all-targets", "go test ./...",
    "go test -run TestX -v ./pkg", "go build -ldflags \"-s -w\"", "go build -ldflags '-X main.v=1'", "go vet ./...",
    "go version", "go test -race -count=1 ./...", "mypy --config-file mypy.ini src", "mypy --strict src",
    "cargo clippy --all-targets -- --deny=warnings", "cargo test -- --test-threads=1", "cargo fmt -- --check",
    "env -C src make", "cd src; make; cd /tmp; ls", "cmake -B build", "cmake -S . -B build -DBUILD_TESTING=ON",
    "cmake --build build --target install", "cmake --install build --prefix /usr/local", "ctest",
    "cmake -DCMAKE_INSTALL_PREFIX=/usr/local -S . -B build", "cmake --build build -- -j4", "cd build && ctest",
    "ctest --output-on-failure -j4", "python -m unittest -v", "python -m unittest discover -s tests -p 'test_*.py'",
    "python -m unittest tests.test_x", "npm ls -g", "npm ls -g --depth=0",
]


@pytest.mark.parametrize("cmd", GIT_PLANTS + RUNNER_ATTACKS)
def test_a_planting_git_operation_or_a_runner_loading_code_from_elsewhere_is_refused(cmd: str) -> None:
    assert refused(cmd), cmd


@pytest.mark.parametrize("cmd", GIT_BENIGN + RUNNER_BENIGN + GIT_PROJECT_BRANCHES)
def test_everyday_git_and_runner_uses_stay_allowed(cmd: str) -> None:
    assert not refused(cmd), (cmd, analyse(cmd).unresolvable)


def _regression_list() -> list[str]:
    lines = (HERE / "already_refused_s19.txt").read_text().splitlines()
    return [ln for ln in lines if ln.strip() and not ln.startswith("#")]


@pytest.mark.parametrize("cmd", _regression_list())
def test_what_was_already_refused_stays_refused(cmd: str) -> None:
    assert refused(cmd), cmd


# -- properties -----------------------------------------------------------------------------------------------------

_NAME = st.from_regex(r"[A-Za-z][A-Za-z0-9_./-]{0,12}", fullmatch=True)


_FOREIGN_REV = st.one_of(
    st.from_regex(r"[0-9a-f]{4,40}", fullmatch=True),  # an object id or its abbreviation
    st.from_regex(r"[a-z][a-z0-9.]{0,6}-[0-9]{1,3}-g[0-9a-f]{4,12}", fullmatch=True),  # git describe: an object id
    st.from_regex(r"[A-Z][A-Z_]{0,14}", fullmatch=True).filter(lambda r: r != "HEAD"),  # FETCH_HEAD, MERGE_HEAD...
    st.builds("{}/{}".format, _NAME, _NAME),  # a remote-tracking branch of any remote
    st.builds("{}{}".format, _NAME, st.sampled_from(["@{1}", "@{u}", "^{commit}", ":k", "..HEAD", ".lock"])),
    st.sampled_from(["-", "@{-1}", ":/msg", "refs/heads/x", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD"]))


@FAST
@given(st.sampled_from(["git checkout {r}", "git checkout {r} -- f", "git checkout -f {r}", "git switch {r}",
                        "git switch -c new {r}", "git checkout -b new {r}", "git restore --source={r} f",
                        "git restore -s {r} f", "git restore --source {r} -- f", "git stash apply {r}",
                        "git -C d checkout {r}", "git checkout --detach {r}", "git switch --detach {r}"]),
       st.one_of(_NAME, _FOREIGN_REV, st.sampled_from(["HEAD", "HEAD~1", "HEAD^", "@", "@~3", "HEAD~2^"])))
def test_a_worktree_write_from_any_revision_but_a_trusted_one_is_refused(template: str, rev: str) -> None:
    """A revision that is not HEAD, its ancestor or a plain local branch name may name foreign content: refused."""
    cmd = template.format(r=rev)
    if "stash" in template:
        if not re.fullmatch(r"([0-9]+|(refs/)?stash(@\{[0-9]+\})?)", rev):
            assert refused(cmd), cmd  # a stash operand must be a stash entry
    elif trusted_rev(rev):
        assert not analyse(cmd).unresolvable, cmd  # (git -C is outside the example's allow list)
    else:
        assert refused(cmd), cmd


@FAST
@given(st.sampled_from(["git checkout {r}", "git checkout {r} -- f", "git switch --detach {r}",
                        "git restore --source={r} f", "git checkout -b new {r}", "git reset --hard {r}"]),
       _FOREIGN_REV)
def test_a_revision_git_reads_as_an_object_a_pseudo_ref_or_another_remote_is_refused(template: str, rev: str) -> None:
    """Generated independently of :func:`trusted_rev`: every one of these names may be foreign content."""
    assert not trusted_rev(rev), rev
    assert analyse(template.format(r=rev)).unresolvable, template.format(r=rev)


@FAST
@given(st.sampled_from(["git fetch {o} origin {a}:{b}", "git fetch origin +{a}:{b}", "git fetch {o} -u origin {a}",
                        "git fetch origin {a} {a}:{b}"]),
       st.sampled_from(["", "-q", "--prune", "-v"]), _NAME, _NAME)
def test_a_fetch_that_moves_a_local_ref_is_refused(template: str, opt: str, a: str, b: str) -> None:
    assert refused(template.format(o=opt, a=a, b=b))


@FAST
@given(st.sampled_from(sorted(RUNNERS)), st.from_regex(r"--?[a-zA-Z][a-z0-9-]{0,14}(=[a-z/]{1,6})?", fullmatch=True))
def test_a_runner_option_outside_its_allow_list_is_refused(program: str, option: str) -> None:
    """An option the allow list does not name (or abbreviate) is refused, whatever it is."""
    spec = RUNNERS[program]
    name = option.lstrip("-").split("=", 1)[0]
    longs = spec.long_flags | spec.long_values
    if option.startswith("--") or spec.single_dash_long:
        known = name in longs or (spec.abbreviations and len(name) >= 2 and any(k.startswith(name) for k in longs))
    else:
        known = all(ch in spec.short_flags + spec.short_values + spec.short_optional for ch in name[:1])
    if known:
        return
    sub = {"npm": "test ", "cargo": "build ", "go": "test "}.get(program, "")
    cmd = f"{program} {sub}{option}"
    assert analyse(cmd).unresolvable, cmd


@FAST
@given(st.sampled_from(["make", "pytest", "npm test", "cargo build", "go test", "python -m pytest"]),
       st.sampled_from(["/tmp/x", "/opt/p", "~/w", "..", "../x", "~", "/"]), st.booleans())
def test_a_runner_in_a_directory_outside_the_project_is_refused(runner: str, where: str, semicolon: bool) -> None:
    cmd = f"cd {where}{';' if semicolon else ' &&'} {runner}"
    assert refused(cmd), cmd


@FAST
@given(st.integers(0, 99), st.sampled_from(["~", "^"]), st.from_regex(r"[a-z]{1,8}(/[a-z]{1,8})?\.py", fullmatch=True))
def test_an_option_value_with_a_tilde_inside_is_no_home_directory(n: int, op: str, path: str) -> None:
    """``--source=HEAD~1`` names no ``~1``: bash expands no tilde there, and no program reads one mid-value."""
    cmd = f"git restore --source=HEAD{op}{n} {path}"
    assert not refused(cmd), (cmd, analyse(cmd).unresolvable)
    assert refused(f"cat --x=~root/{path}") and refused(f"cat -o~/.ssh/{path}")


# -- differentials: the real program as the oracle ------------------------------------------------------------------

CLEAN = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
         "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}


def _sh(script: str, cwd: str, home: str) -> str:
    env = dict(CLEAN, HOME=home)
    out = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    return out.stdout + out.stderr


_FOREIGN_PLANTS = ["git fetch -q ev.git evil && git checkout -q FETCH_HEAD",
                   "git fetch -q ev.git evil && git checkout -q FETCH_HEAD -- k",
                   "git fetch -q ev.git evil && git restore --source=FETCH_HEAD k",
                   "git pull -q --no-rebase ev.git evil",
                   "git remote add e ev.git && git fetch -q e && git checkout -q evil",
                   "git fetch -q ev.git evil && git checkout -q -b x FETCH_HEAD",
                   "git fetch -q ev.git evil && git branch x FETCH_HEAD && git checkout -q x",
                   "git fetch -q --tags ev.git && git checkout -q v9"]


def _foreign_setup(tmp: str, home: str, evil: str) -> None:
    """``tmp/work``: a clone of a clean origin ``up``, holding the bare foreign repository ``ev.git`` whose branch
    ``evil`` (and tag ``v9``) commits ``evil`` (a link to the key, or a repository whose config runs a command)."""
    _sh("git init -q -b main up && cd up && echo a > a && git add a && git commit -qm a && cd .. && "
        "git clone -q up ev && cd ev && git checkout -qb evil && " + evil + " && git commit -qm k && git tag v9 && "
        "cd .. && git clone -q up work && git clone -q --bare ev work/ev.git && "
        "cd work && git -C ev.git tag v9 evil", tmp, home)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@ORACLE
@given(st.sampled_from(_FOREIGN_PLANTS))
def test_git_differential_a_planted_link_is_read_by_cat(plant: str) -> None:
    """Real git writes the foreign commit's link; the allowed ``cat k`` then prints the secret: refused."""
    with tempfile.TemporaryDirectory() as tmp:
        home = f"{tmp}/home"
        os.makedirs(f"{home}/.ssh")
        Path(f"{home}/.ssh/id_rsa").write_text("SECRET-KEY\n")
        _foreign_setup(tmp, home, f"ln -s {home}/.ssh/id_rsa k && git add k")
        leaked = "SECRET-KEY" in _sh(f"{plant} >/dev/null 2>&1; cat k", f"{tmp}/work", home)
    assert leaked, plant  # the oracle: this spelling does plant the link
    assert not refused("cat k")  # the reader alone names nothing denied: the planting must be refused
    assert analyse(plant).unresolvable, plant  # by the structural rule, not only by the example's lists


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_differential_a_committed_repository_config_runs_on_git_status() -> None:
    """A foreign commit holding ev/{HEAD,config,objects,refs}: ``cd ev && git status`` runs its core.fsmonitor."""
    with tempfile.TemporaryDirectory() as tmp:
        evil = ("mkdir -p ev/objects ev/refs && echo 'ref: refs/heads/main' > ev/HEAD && touch ev/objects/.k "
                "ev/refs/.k && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = "
                "\"echo PWNED >&2; false\"\\n\\tbare = false\\n\\tworktree = ..\\n' > ev/config && git add ev")
        _foreign_setup(tmp, tmp, evil)
        ran = "PWNED" in _sh("git fetch -q ev.git evil && git checkout -q FETCH_HEAD && cd ev && git status",
                             f"{tmp}/work", tmp)
    assert ran
    assert not refused("cd ev && git status")
    assert refused("git checkout FETCH_HEAD") and refused("git pull ev.git evil")


def _runs(cmd: str, files: dict[str, str]) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.items():
            path = Path(tmp, name.replace("TMP", tmp))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace("TMP", tmp))
        os.makedirs(f"{tmp}/proj", exist_ok=True)
        env = dict(CLEAN, HOME=tmp, PYTHONDONTWRITEBYTECODE="1")
        cmd = cmd.replace("TMP", tmp).replace("pytest", f"{sys.executable} -m pytest -p no:cacheprovider")
        subprocess.run(["bash", "-c", cmd], cwd=f"{tmp}/proj", env=env, capture_output=True,
                       timeout=120, stdin=subprocess.DEVNULL)
        return Path(tmp, "PWNED").exists()


_EVIL_MK = {"x/Makefile": "all:\n\ttouch TMP/PWNED\n", "x/inc.mk": "$(shell touch TMP/PWNED)\n",
            "proj/Makefile": "include inc.mk\nall:\n\ttrue\n"}


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("cmd", ["make -f TMP/x/Makefile", "make -C TMP/x", "make -I TMP/x", "cd TMP/x && make"])
def test_make_differential_code_from_another_directory_runs(cmd: str) -> None:
    assert _runs(cmd, _EVIL_MK), cmd
    assert refused(cmd.replace("TMP", "/tmp/w")), cmd


_EVIL_PY = {"x/evilplug.py": "open('TMP/PWNED', 'w').close()\n", "x/conftest.py": "open('TMP/PWNED', 'w').close()\n",
            "x/test_a.py": "def test_a():\n    pass\n", "proj/test_b.py": "def test_b():\n    pass\n",
            "x/p.ini": "[pytest]\naddopts = -p evilplug\npythonpath = TMP/x\n"}


@pytest.mark.skipif(shutil.which("pytest") is None, reason="pytest is not installed")
@pytest.mark.parametrize("cmd", ["PYTHONPATH=TMP/x pytest -q -p evilplug", "pytest -q -c TMP/x/p.ini",
                                 "pytest -q -o pythonpath=TMP/x -p evilplug", "pytest -q TMP/x/test_a.py"])
def test_pytest_differential_code_from_another_directory_runs(cmd: str) -> None:
    assert _runs(cmd, _EVIL_PY), cmd
    assert refused(cmd.replace("TMP", "/tmp/w").replace("PYTHONPATH=/tmp/w/x ", "")), cmd


@pytest.mark.parametrize("cmd", ["python -m unittest discover -s TMP/x", "python -m unittest discover TMP/x"])
def test_unittest_differential_a_start_directory_elsewhere_runs_its_tests(cmd: str) -> None:
    files = {"x/test_a.py": "open('TMP/PWNED', 'w').close()\n"}
    assert _runs(cmd.replace("python", sys.executable, 1), files), cmd
    assert refused(cmd.replace("TMP", "/tmp/w")), cmd


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_cmake_differential_a_source_directory_elsewhere_runs_its_script() -> None:
    files = {"x/CMakeLists.txt": "cmake_minimum_required(VERSION 3.10)\nproject(x NONE)\n"
                                 "execute_process(COMMAND touch TMP/PWNED)\n"}
    assert _runs("cmake -S TMP/x -B build", files)
    assert refused("cmake -S /tmp/w/x -B build") and refused("cmake /tmp/w/x")


def test_mypy_differential_a_config_file_elsewhere_runs_its_plugin() -> None:
    """mypy (the venv's) imports the plugin a --config-file outside the project names."""
    pytest.importorskip("mypy")
    files = {"x/m.ini": "[mypy]\nplugins = TMP/x/evil.py\n", "proj/a.py": "x = 1\n",
             "x/evil.py": "open('TMP/PWNED', 'w').close()\nfrom mypy.plugin import Plugin\n\n\n"
                          "def plugin(version):\n    return Plugin\n"}
    assert _runs(f"{sys.executable} -m mypy --no-incremental --config-file TMP/x/m.ini a.py", files)
    assert refused("mypy --config-file /tmp/w/x/m.ini a.py")


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_npm_differential_prefix_runs_another_package() -> None:
    files = {"x/package.json": '{"name": "x", "scripts": {"test": "touch TMP/PWNED"}}',
             "proj/package.json": '{"name": "p", "scripts": {"test": "true"}}'}
    assert _runs("npm test --prefix TMP/x", files)
    assert refused("npm test --prefix /tmp/w/x") and refused("npm --prefix /tmp/w/x test")


# -- a link to a directory above start-up files ---------------------------------------------------------------------

LINK_ATTACKS = ["ln -s /etc/profile.d p", "ln -s /etc/profile.d/ p", "ln -sT /etc/profile.d p",
                "ln -sfn /etc/profile.d p",
                "ln -s /usr/local/bin b", "ln -s /usr u", "ln -s /var/spool/cron c", "ln -s /etc/xdg x", "ln -s / r",
                "ln -s . x", "cd /etc && ln -s profile.d p", "cp -rs /etc/profile.d p", "cp -rl /etc/profile.d p",
                "cp --symbolic-link -r /etc/profile.d p", "ln -s .git g", "ln -s ~/.config c", "ln -s ~/.local l",
                "ln -s ~/.config/systemd s", "ln -s /etc/systemd s", "ln -t d -s /etc/profile.d",
                "ln -s /etc/profile.d p && echo id > p/x.sh"]
LINK_BENIGN = ["ln -s src/lib lib", "ln -s build/out latest", "ln -sf /tmp/x y", "ln -s /opt/app/current c",
               "ln -s docs/README.md README", "cp -r src dst", "cp -a src dst", "ln -s data/v2 data/current"]


@pytest.mark.parametrize("cmd", LINK_ATTACKS)
def test_a_link_to_a_directory_above_start_up_files_is_refused(cmd: str) -> None:
    assert refused(cmd), cmd


@pytest.mark.parametrize("cmd", LINK_BENIGN)
def test_a_link_inside_the_project_stays_allowed(cmd: str) -> None:
    assert not refused(cmd), (cmd, analyse(cmd).unresolvable)


_ABOVE_START_UP = ["/etc/profile.d", "/etc", "/usr/local/bin", "/usr/local", "/usr", "/usr/bin", "/bin", "/sbin",
                   "/var/spool/cron", "/etc/systemd", "/etc/xdg/autostart", "~/.config/autostart", "~/.config",
                   "~/.local/bin", "/home/u/.config/systemd", ".git", "repo/.git/hooks", "/"]


@FAST
@given(st.sampled_from(_ABOVE_START_UP), st.sampled_from(["ln -s {t} {l}", "ln -sfn {t} {l}", "ln -sT {t} {l}",
                                                           "cp -rs {t} {l}", "cp -rl {t} {l}", "ln {t} {l}",
                                                           "ln -s -- {t} {l}", "ln -t d -s {t}"]),
       st.from_regex(r"[a-z]{1,8}", fullmatch=True), st.sampled_from(["", "/"]))
def test_any_link_to_a_directory_above_start_up_files_is_refused(target: str, template: str, link: str,
                                                                  slash: str) -> None:
    """Whichever spelling makes the link, and whatever it is named: the files below it are start-up files."""
    cmd = template.format(t=target + slash if target != "/" else target, l=link)
    assert analyse(cmd).unresolvable, cmd


def test_link_differential_a_write_through_the_link_lands_in_the_target() -> None:
    """Real ln and bash: ``p/x.sh`` is written into the linked directory, a name no glob of the write matched."""
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(f"{tmp}/etc/profile.d")
        os.makedirs(f"{tmp}/w")
        _sh(f"ln -s {tmp}/etc/profile.d p && echo id > p/x.sh", f"{tmp}/w", tmp)
        landed = Path(f"{tmp}/etc/profile.d/x.sh").read_text() == "id\n"
    assert landed
    assert not refused("echo id > p/x.sh")  # the write alone names nothing: the link must be refused
    assert refused("ln -s /etc/profile.d p")
