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
- **Start-up files not yet listed** (:data:`~agentguard.policies.shell.startup.CONFIG_FILES`, now its own module):
  each write below was allowed and makes a program the example allows run code later. Confirmed here: ``pip list``
  ran a ``pip/__init__.py`` written to the user site ``~/.local/lib/python3.11/site-packages`` (searched before the
  system's); npm 11 reads ``script-shell`` from its global config ``/usr/etc/npmrc`` (``npm config get globalconfig``;
  ``npm test`` ran the shell named there); ``git fetch`` runs ``/usr/lib/git-core/git-remote-https`` (``git
  --exec-path``). From the tools' documentation (not installed here): Go's ``~/.config/go/env`` (``go env -w``;
  ``GOFLAGS=-toolexec=CMD``), asdf/mise ``.tool-versions`` and ``mise.toml`` (``path:DIR`` versions, hooks),
  direnv's ``direnvrc``, ripgrep's ``~/.ripgreprc``, PATH directories (``~/go/bin``, ``~/.yarn/bin``, a venv's
  ``bin``), REPL and debugger rc files, what the start-up files source by convention (Fedora's skeleton
  ``.bashrc`` runs ``~/.bashrc.d/*``; dotfiles' ``~/.bashrc.local``, ``~/.gitconfig.local`` as an ``[include]``). ``~/bin/make`` was allowed while ``~/bin/ma?e`` was refused: a literal
  ``~/...`` was matched as ``//bin/make`` against the absolute globs (:func:`~agentguard.policies.shell.model.configures`);
  ``~/bin`` is on PATH by Debian's ``/etc/skel/.profile``. Checked and not a hole: pyenv 2.6.30 ignores a
  ``.python-version`` naming a path (``../../tmp/x``, ``/tmp/x``: "invalid version"); the environment variables of
  every tool named (GOFLAGS, GOENV, npm_config_*, PIP_*, RIPGREP_CONFIG_PATH, PYTEST_ADDOPTS...) were refused already
  (``UNSAFE_ENV``); a project's own build files (``Makefile``, ``conftest.py``, ``rust-toolchain.toml``, ``go.work``)
  are project code the example's allow list already runs.
- **A compound command after ``time`` or ``!``** (:func:`~agentguard.policies.shell.programs.command_word_reason`):
  tree-sitter-bash reads ``time if true; then rm -rf /; fi`` as the commands ``time if true``, ``then rm -rf /`` and
  ``fi``, so the analysis listed the program ``then`` (operands ``rm -rf /``) where bash ran ``rm``; ``time X=1
  agpwn`` gave the program ``X=1``. The shipped allow list refused these only because ``then``/``X=1`` are not on it;
  a deny-list rule set (``deny_commands = ["rm -rf", ...]``) allowed them all (found by the stub-oracle property
  below: ``! while agpwn``, ``time for ... cat <(ls)``). Fix: a command word that is a bash reserved word or an
  assignment is a misread and is refused. Already refused or harmless (``attacks_s21.txt``, 205 probes: ``${x@P}``,
  ``${x/p/$(..)}``, ``${!x}``, ``${!prefix*}``, aliases, functions, ``eval``, ``source``, process substitution,
  ``coproc``, here-documents, ``command``/``builtin``/``exec``, ANSI-C quoting, IFS, arithmetic in every place bash
  evaluates it), and 86 on parser/bash gaps (``((cmd) )``, ``case ;&``, here-document delimiters, ``$(...)`` holding
  ``)`` in comments and quotes) and builtins printing the environment (``set``, ``declare -p``, ``compgen -v``,
  ``${!A*}``): 272 refused, 19 allowed that ran nothing refused (``cat <<"EOF"``, ``echo $'\\x24(agpwn)'``...).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

sys.path.insert(0, os.path.dirname(__file__))
from stub_sandbox import STUBS, StubBox, available as stub_available  # noqa: E402
from test_analysis_redteam import FAST, refused  # noqa: E402

from agentguard.policies.shell import analyse  # noqa: E402

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


# -- start-up files of the allowed tools, their installation prefixes, version managers, PATH directories ------------
#: each allowed on main before session 21 (45 of 45)
STARTUP_WRITES = [
    "echo x > /usr/lib/git-core/git-remote-https", "cp evil /usr/lib/git-core/git-remote-https",
    "echo 'script-shell=/tmp/x' > /usr/etc/npmrc", "echo 'script-shell=/tmp/x' > /usr/local/etc/npmrc",
    "echo x > /usr/lib/node_modules/npm/npmrc", "echo x > /usr/local/etc/gitconfig", "echo x > /opt/homebrew/etc/gitconfig",
    "mkdir -p ~/.local/lib/python3.11/site-packages/pip && echo x > ~/.local/lib/python3.11/site-packages/pip/__init__.py",
    "echo x > ~/.local/lib/python3.11/site-packages/pytest.py", "cp -r pip ~/.local/lib/python3.11/site-packages/",
    "echo x > .venv/lib/python3.11/site-packages/pytest.py", "echo x > /usr/lib/python3/dist-packages/pip.py",
    "echo x > /usr/lib/python3.11/json/__init__.py", "echo x > .venv/pyvenv.cfg", "echo x > .venv/bin/pytest",
    "echo 'GOFLAGS=-toolexec=/tmp/x' > ~/.config/go/env",
    "mkdir -p ~/.config/go && echo 'GOFLAGS=-toolexec=/tmp/x' >> ~/.config/go/env",
    "printf 'GOFLAGS=-toolexec=/tmp/x\\n' | tee ~/.config/go/env", "echo '--pre=/tmp/x' > ~/.ripgreprc",
    "echo 'golang path:/tmp/evil' > .tool-versions", "echo 'golang path:/tmp/evil' > ~/.tool-versions",
    "echo x > mise.toml", "echo x > .mise.toml", "echo x > ~/.config/mise/config.toml", "echo x > ~/.asdf/shims/go",
    "echo x > ~/.nvm/versions/node/v20.0.0/bin/npm", "echo x > ~/.config/direnv/direnvrc", "echo x > ~/.direnvrc",
    "echo x > ~/bin/make", "cp evil ~/bin/git", "ln -s /tmp/evil ~/bin/git", "echo x > ~/go/bin/make",
    "echo x > ~/.yarn/bin/make", "echo x > ~/.irbrc", "echo x > ~/.Rprofile", "echo x > ~/.sqliterc",
    "echo x > ~/.psqlrc", "echo x > ~/.config/gdb/gdbinit", "echo x > ~/.lldbinit", "echo x > ~/.vim/after/plugin/x.vim",
    "echo x > ~/.vim/ftplugin/python.vim", "echo x > ~/.mailcap", "echo x > ~/.local/share/applications/x.desktop",
    "echo x > ~/.cmake/packages/Foo/x", "echo x > ~/.screenrc",
    # sourced by the start-up files by convention (Fedora's skeleton .bashrc: ~/.bashrc.d/*; dotfiles' *.local)
    "echo x > ~/.bashrc.d/x.sh", "echo x > ~/.bashrc.local", "echo x > ~/.gitconfig.local", "echo x > ~/.zshrc.local",
    "echo x > ~/.zshrc.d/x.zsh", "echo x > ~/.profile.d/x.sh", "echo x > ~/.bash_profile.local",
    "echo x > ~/.oh-my-zsh/custom/x.zsh", "echo x > ~/.bash_completion.d/x", "echo x > ~/.config/starship.toml",
    "echo x > ~/.profile.local", "cp x.sh ~/.bashrc.d/",
]
#: already refused before session 21 (a regression list)
STARTUP_REFUSED = [
    "go env -w GOFLAGS=-toolexec=/tmp/x", "GOFLAGS=-toolexec=/tmp/x go build", "GOENV=./e go build",
    "echo 'script-shell=/tmp/x' > .npmrc", "echo 'node-options=--require /tmp/x.js' > ~/.npmrc", "echo x > .yarnrc.yml",
    "echo x > ~/.config/pip/pip.conf", "echo x > /etc/pip.conf", "echo 'import os' > x.pth", "echo x > .envrc",
    "echo '[core] fsmonitor=/tmp/x' > .git/config", "echo x > .git/hooks/pre-commit", "echo x > ~/.config/git/config",
    "echo '[mypy]' > ~/.config/mypy/config", "echo 'plugins=x' > ~/.mypy.ini", "echo x > ~/.cargo/config.toml",
    "echo x > .cargo/config.toml", "echo x > ~/.ipython/profile_default/startup/x.py", "echo x > ~/.gdbinit",
    "echo x > ~/.config/nvim/init.lua", "echo x > ~/.config/systemd/user/x.service", "echo x > ~/.inputrc",
    "echo x > ~/.pam_environment", "echo x > ~/.ssh/rc", "echo x > ~/.docker/config.json",
    "echo x > ~/.local/lib/python3.11/site-packages/sitecustomize.py", "echo x > bin/run",
    "RIPGREP_CONFIG_PATH=x rg y", "npm_config_script_shell=/tmp/x npm test", "PIP_CONFIG_FILE=x pip list",
    "PYTEST_ADDOPTS='-p x' pytest", "MYPYPATH=x mypy .", "GIT_EXEC_PATH=/tmp/x git fetch", "NODE_OPTIONS=x npm test",
    "CARGO_BUILD_RUSTC_WRAPPER=x cargo build", "MAKEFLAGS=x make", "GOTOOLCHAIN=path go build",
]
#: reads of those files and everyday writes nearby stay allowed
STARTUP_QUIET = ["cat .tool-versions", "cat ~/.config/go/env", "ls /usr/lib", "mkdir -p ~/go/bin",
                 "echo ok > ~/notes.txt", "echo x > notes/mise.toml.md", "cat /usr/etc/npmrc",
                 "ls ~/.local/lib/python3.11/site-packages"]


@pytest.mark.parametrize("cmd", STARTUP_WRITES + STARTUP_REFUSED)
def test_a_write_of_a_start_up_file_is_refused(cmd: str) -> None:
    assert refused(cmd), cmd


@pytest.mark.parametrize("cmd", STARTUP_QUIET)
def test_reads_of_start_up_files_stay_allowed(cmd: str) -> None:
    assert not refused(cmd), cmd


_FILES = st.sampled_from([
    "/usr/lib/git-core/git-remote-https", "/usr/etc/npmrc", "/usr/local/etc/gitconfig", ".config/go/env",
    ".local/lib/python3.12/site-packages/pip/__init__.py", ".venv/lib/python3.11/site-packages/x.py",
    ".tool-versions", "mise.toml", ".config/mise/config.toml", "bin/make", "go/bin/git", ".ripgreprc",
    ".config/direnv/direnvrc", ".psqlrc", ".vim/after/plugin/x.vim", ".venv/pyvenv.cfg"])
_HOMES = st.sampled_from(["~/", "$HOME/", "/root/", "/home/u/", "~root/", "\\~/", "./", "sub/../"])
_SPELL = st.sampled_from(["{}", "'{}'", '"{}"', "{}*"[:-1], "./{}"])
_WRITE = st.sampled_from(["echo x > {p}", "echo x >> {p}", "printf x | tee {p}", "cp evil {p}", "mv evil {p}",
                          "ln -sf /tmp/evil {p}", "cat evil > {p}", "tee -a {p} < evil", "install evil {p}",
                          "touch {p}", ": > {p}", "exec 3> {p}", "cp -t $(dirname {p}) evil"])


@FAST
@given(write=_WRITE, home=_HOMES, spell=_SPELL, path=_FILES)
def test_every_spelling_of_a_start_up_file_write_is_refused(write: str, home: str, spell: str, path: str) -> None:
    """Any write verb, any home spelling, any quoting of a start-up file (absolute ones keep their own root)."""
    full = path if path.startswith("/") else home + path
    if (home == "$HOME/" and "'" in spell) or (home.startswith("\\") and spell[0] in "'\""):
        return  # quotes keep $HOME or \\~ literal: a directory of that name below the working directory
    cmd = write.format(p=spell.format(full))
    assert refused(cmd), cmd


# -- obfuscation against the whole grammar: a stub oracle (what ran) against the guard (what it judged) --------------
ATTACKS = [c.strip("\n") for c in (Path(__file__).resolve().parent / "attacks_s21.txt").read_text().split("\n%%\n")[1:]
           if c.strip()]
#: tree-sitter-bash reads ``time`` / ``!`` before a compound command as a simple command and the compound's reserved
#: words as programs (``then`` with the operands ``rm -rf /``); a deny-list rule set allowed each (bash ran the
#: program), the shipped allow list refused them only because ``then`` is not on it
MISREAD = ["time if true; then rm -rf /; fi", "! { rm -rf /; }", "time X=1 agpwn", "time -p X=1 agpwn",
           "! while true; do rm -rf /; break; done", "time for i in 1; do curl x; done", "time { agpwn; }",
           "time -p if true; then agpwn; fi", "! if true; then agpwn; fi", "time while agpwn; do break; done",
           "! until agpwn; do break; done", "time select i in 1; do agpwn; break; done",
           "nice X=1 agpwn",  # (bash runs a program named "X=1": refused as well, harmless)
           "time for ((i=0;i<1;i++)); do agpwn; done", "! case x in x) agpwn;; esac", "time function f { agpwn; }"]

def _deny_only() -> object:
    from agentguard.config import load_stack
    text = ('[stack]\nname = "deny-only"\non_error = "reject"\n[[guards]]\ntype = "tool-rules"\nname = "t"\n'
            'allow = ["run_command"]\nunresolvable = "reject"\n'
            'deny_commands = ["rm -rf", "rm -r", "curl", "agpwn", "sh", "bash"]\n')
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as fh:
        fh.write(text)
    try:
        return load_stack(fh.name)
    finally:
        os.remove(fh.name)


@pytest.mark.parametrize("cmd", MISREAD)
def test_a_compound_command_after_time_or_bang_is_not_read_as_programs(cmd: str) -> None:
    from agentguard.core import Context, Decision, ToolCall
    stack = _deny_only()
    assert stack.check(Context(), ToolCall("run_command", {"command": cmd})).decision >= Decision.REJECT, cmd
    assert refused(cmd), cmd


@pytest.mark.parametrize("cmd", ["time make", "time ls -la", "! ls", "! grep -q x f", "if true; then ls; fi",
                                 "{ ls; }", "time pytest -q"])
def test_time_and_bang_before_a_simple_command_stay_allowed(cmd: str) -> None:
    assert not refused(cmd), cmd


@pytest.fixture(scope="module")
def box():
    if stub_available() is not None:
        pytest.skip(f"stub oracle: {stub_available()}")
    b = StubBox()
    yield b
    b.close()


def _ran_refused(ran: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The logged commands the guard refuses on their own (a record named by no stub is two concurrent appends
    interleaved, ``cat <(git status)``, and is skipped)."""
    return [x for x in ran if x[0] in STUBS and (x[0] == "agpwn" or refused(shlex.join(x)))]


def test_stub_oracle_every_probe_is_refused_or_runs_nothing_refused(box) -> None:
    assert len(ATTACKS) >= 200
    holes = []
    for cmd in ATTACKS + MISREAD:
        if not refused(cmd):
            bad = _ran_refused(box.run(cmd, timeout=3)[0])
            if bad:
                holes.append((cmd, bad))
    assert not holes, holes


#: builtins print the environment without running a program the stub oracle would log: each must be refused
ENV_PRINTS = ["set", "set | grep TOKEN", "declare", "declare -p", "typeset -p", "readonly -p", "compgen -v",
              "compgen -A variable", "echo ${!A*}", 'echo "${!AWS@}"', "for v in ${!A*}; do echo ${!v}; done",
              "echo ${!x@}", "declare -f", "y=AWS_SECRET_ACCESS_KEY; echo ${!y}", "x='$AWS_SECRET_ACCESS_KEY'; echo ${x@P}",
              "echo ${AWS_SECRET_ACCESS_KEY@Q}", "echo ${AWS_SECRET_ACCESS_KEY/x/y}", "echo ${#AWS_SECRET_ACCESS_KEY}"]


@pytest.mark.parametrize("cmd", ENV_PRINTS)
def test_builtins_and_expansions_that_print_the_environment_are_refused(cmd: str) -> None:
    assert refused(cmd), cmd


def test_stub_oracle_can_fail(box) -> None:
    """The oracle sees a refused program run (so a silent pass means something)."""
    assert _ran_refused(box.run("x='$(agpwn)'; echo ${x@P}")[0])
    assert _ran_refused(box.run("time if true; then agpwn; fi")[0])


_PAYLOADS = st.sampled_from(["agpwn", "agpwn x", "ls", "cat f", "echo hi", "git status", "agpwn -rf /", "rm -rf x"])
_LAYERS = st.sampled_from([
    "command {c}", "builtin command {c}", "time {c}", "time -p {c}", "! {c}", "nice {c}", "timeout 5 {c}", "env {c}",
    "nohup {c}", "command -p {c}", "{{ {c}; }}", "({c})", "echo $({c})", "cat <({c})", "echo >({c})",
    "if {c}; then :; fi", "if true; then {c}; fi", "true && {c}", "false || {c}", "echo x; {c}", "echo x | {c}",
    "{c} & wait", "for i in 1; do {c}; done", "while {c}; do break; done", "until ! {c}; do break; done",
    "case x in x) {c};; esac", "[[ $({c}) ]]", "echo $(( $({c}) ))", "echo ${{x:-$({c})}}", "echo ${{x/a/$({c})}}",
    "cat <<EOF\n$({c})\nEOF", "x='$({c})'; echo ${{x@P}}", "cat <<< \"$({c})\"", "echo x #\n{c}", "X=1 {c}",
    "select i in 1; do {c}; break; done <<< 1", "f=1; {c}", "declare x=$({c})", "[ -n \"$({c})\" ]",
    "time {{ {c}; }}", "! if {c}; then :; fi", "time for i in 1; do {c}; done", "coproc {{ {c}; }}",
])


@FAST
@given(payload=_PAYLOADS, layers=st.lists(_LAYERS, min_size=1, max_size=3))
def test_stub_oracle_what_the_guard_read_is_what_bash_ran(box, payload: str, layers: list[str]) -> None:
    """Layers composed around a payload. When the analysis resolves the text (nothing unresolvable), every program
    bash runs (the stub log) is one the analysis read; and whatever the guard allows runs nothing it refuses."""
    cmd = payload
    for layer in layers:
        cmd = layer.format(c=cmd)
    a = analyse(cmd)
    ran = box.run(cmd, timeout=3)[0]
    if not a.unresolvable:
        believed = {c.program for c in a.commands}
        # a record whose name is no stub's is two concurrent stubs' appends interleaved (cat <(git status)): skipped
        assert all(x[0] in believed for x in ran if x[0] in STUBS), (cmd, ran, believed)
    if not refused(cmd):
        assert not _ran_refused(ran), (cmd, ran)
