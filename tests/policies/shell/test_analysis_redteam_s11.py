"""Red-team round 2 on the shell reader (session 11): each bypass kept as a test, one property per class.

Oracles: :class:`~stub_sandbox.StubBox` (bash under ``env -i`` with ``PATH`` holding only logging stubs, so what
ran is read from the stub log) and the marker oracle of ``test_analysis_redteam.py`` (real ``git``/``sed``/``tar``
for attacks that need them; the stub ``agpwn`` writes a marker). "The guard saw it": :func:`analyse` refused the
command as unresolvable or lists ``agpwn`` among the programs, and the shipped ``rules.toml`` refuses it.

Bypasses found (each ran in bash while the shipped rules allowed the call, or the analysis read it wrongly):

- a parse error INSIDE a word: tree-sitter marks ``${a[@]:'b[$(x)]'}`` with a MISSING ``}`` inside an
  ``expansion``; only statement-level ERROR/MISSING nodes were refused, so the word was read as an unknown
  value and bash ran ``x`` (the offset is arithmetic). Fix: any ERROR/MISSING node anywhere refuses the text.
- ``$'...'`` with a NUL: bash keeps C strings, so ``cat /etc/sha$'\\0x'dow`` opens ``/etc/shadow``; the reader
  kept the NUL and the path met no deny rule (allowed). Fix: the decoded value ends at the NUL, as in bash.
- GNU sed labels end at ``;`` or a blank: ``sed -n ':a;e agpwn' x`` ran ``agpwn`` (allowed; the label was read
  to the end of the line). Fix: :func:`sed_danger` reads labels as GNU ``read_label`` does.
- a quoted or wrapped declaration builtin: ``"export" PATH=ev; ls`` (and ``e\\xport``, ``$'export'``,
  ``builtin declare``, ``read PATH``) is a plain command for the parser, so no assignment was checked; bash ran
  ``ev/ls`` (allowed). Fix: every builtin that assigns the names it is given checks them like an assignment.
- a git directory anywhere: ``git init --bare g`` (allowed), ``printf '[core]...fsmonitor = agpwn' >> g/config``
  (allowed), ``cd g; git status`` (allowed) ran ``agpwn``. Fix: writing ``*/config``, ``*/.git``,
  ``*/commondir``, ``*/config.worktree`` configures what a program runs (``mkdir`` makes no file: exempt).
- archive extraction writes names the archive chooses: ``tar xf a.tar`` (allowed) wrote
  ``.git/hooks/pre-commit`` from an archive made with ``--transform``. Fix: ``tar -x``, ``unzip`` (not ``-l``/
  ``-t``/``-p``) and ``gunzip -N`` are refused unless they write to standard output.
- readers that write: ``uniq c.txt ~/.gitconfig`` and ``xxd -r -p c.hex ~/.gitconfig`` (both allowed: uniq and
  xxd are readers, whose operands were exempt from the config-file check) wrote a git config whose
  core.fsmonitor ran on ``git status``. Fix: a reader's output operands/options are writes.
- ``xargs -I{} env {}``: the replace string in an argument of a wrapper became the program; it was read as the
  literal program ``{}``. Fix: every word holding a replace string is unknown.
- copying into a directory: ``cp pre-commit .git/hooks`` (allowed: only ``.git/hooks`` was checked, and the
  rules deny ``.git/*`` below it) wrote ``.git/hooks/pre-commit``. Fix: ``cp``/``mv``/``ln``/``install`` also
  write TARGET/basename(SOURCE); the configuration directories themselves are config paths.
- ``{varname}`` redirections: ``true {PATH}>x; ls`` stores the descriptor number (10) in PATH, so ``ls`` ran
  ``./10/ls`` (allowed: the parser reads ``{PATH}`` as an argument); ``{a[$(x)]}>f`` evaluates the subscript.
  Fix: a ``{name}`` word before a redirection operator is an assignment, checked like one.
- by reading of the manuals: ``go build -ldflags=-extld=./x`` runs the named linker; ``md5sum -c`` reads the
  names of files to open from a file (a denied path read unseen). Refused (:data:`~.programs.HAZARDS`).
- ``set`` options that change how the following lines are read: after ``set -o keyword`` an assignment word
  anywhere goes to the command's environment (``less x LESSOPEN='|./ev/ls %s'`` ran ev/ls); ``set -H`` with
  history makes ``!$`` a command. Fix: ``set -k/-H/-o keyword|histexpand|history|posix|onecmd`` are refused.
- time to decide: 20,000 ``[`` took 260 s, 800 ``cd a;`` 170 s, 4,000 ``{`` 1.6 s (quadratic scans, an
  unbounded directory set). Fix: linear brace/bracket readers, bounded sets, a longest word
  (:data:`~agentguard.policies.shell.grammar.MAX_WORD`), at most 64 globs in a word and a work budget
  (:data:`~agentguard.policies.shell.model.MAX_WORK`): past them the command is refused unread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agentguard.policies.shell import analyse
from agentguard.policies.shell.grammar import _parser
from agentguard.policies.shell.payloads import sed_danger

sys.path.insert(0, os.path.dirname(__file__))
from stub_sandbox import StubBox, available  # noqa: E402
from test_analysis_redteam import Oracle, refused  # noqa: E402

FAST = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
REAL = {n: p for n, p in {"env": "/usr/bin/env", "timeout": "/usr/bin/timeout", "nice": "/usr/bin/nice",
                          "nohup": "/usr/bin/nohup", "bash": "/usr/bin/bash", "sh": "/usr/bin/dash",
                          "xargs": "/usr/bin/xargs"}.items() if os.path.exists(p)}


@pytest.fixture(scope="module")
def box():
    if available() is not None:
        pytest.skip(f"stub oracle: {available()}")
    b = StubBox(real=REAL)
    yield b
    b.close()


@pytest.fixture(scope="module")
def oracle():
    if shutil.which("bash") is None:
        pytest.skip("bash not installed")
    o = Oracle()
    yield o
    o.close()


def analysis_sees(cmd: str) -> bool:
    """The analysis itself (not only the shipped allow list) refuses the command or lists ``agpwn``."""
    a = analyse(cmd)
    return bool(a.unresolvable) or "agpwn" in a.programs


def ran_agpwn(box: StubBox, cmd: str) -> bool:
    return any(rec[0] == "agpwn" for rec in box.run(cmd)[0])


# -- the bypasses, each reproduced in bash ---------------------------------------------------------------------

#: (setup run unguarded in the sandbox, the call the guard is asked about, a probe run after it)
MARKER_ATTACKS = {
    "missing_inside_a_word": [("a=(1)", "echo ${a[@]:'b[$(agpwn)]'}", ""), ("a=(1)", "echo ${a:'b[$(agpwn)]'}", "")],
    "sed_labels": [("echo a > x", "sed -n ':a;e agpwn' x", ""), ("echo a > x", "sed -n ':a e agpwn' x", ""),
                   ("echo a > x", "sed -n 'bx;:x;e agpwn' x", "")],
    "quoted_declarations": [
        ("mkdir ev; printf '#!/bin/sh\\necho ran >> PWNED\\n' > ev/ls; chmod +x ev/ls", c, "")
        for c in ("\"export\" PATH=ev; ls", "e\\xport PATH=ev; ls", "$'export' PATH=ev; ls",
                  "'declare' PATH=ev; ls", "builtin export PATH=ev; ls", "read PATH <<< ev; ls")],
    "git_directory_config": [
        ("git init -q --bare g",
         "printf '[core]\\n\\tfsmonitor = agpwn\\n\\tworktree = ..\\n\\tbare = false\\n' >> g/config",
         "cd g; git status")],
    "archive_extraction": [
        ("git init -q .; echo x > x; tar --transform='s,x,.git/hooks/pre-commit,' -cf a.tar x", "tar xf a.tar",
         "test -f .git/hooks/pre-commit && agpwn")],
    "read_into_ps4": [("", "read -r PS4 <<< '$(agpwn)'; set -x; true", "")],
    "readers_that_write": [
        ("printf '[core]\\n\\tfsmonitor = agpwn\\n' > c.txt", "uniq c.txt ~/.gitconfig", "git init -q r; cd r; git status"),
        ("printf '[core]\\n\\tfsmonitor = agpwn\\n' | xxd -p > c.hex", "xxd -r -p c.hex ~/.gitconfig",
         "git init -q r; cd r; git status")],
    "copy_into_a_directory": [
        ("mkdir -p .git/hooks; printf '#!/bin/sh\\nagpwn\\n' > pre-commit; chmod +x pre-commit",
         "cp pre-commit .git/hooks", "./.git/hooks/pre-commit"),
        ("mkdir -p .local/bin; printf '#!/bin/sh\\nagpwn\\n' > ls; chmod +x ls", "mv ls ~/.local/bin/",
         "PATH=~/.local/bin:$PATH; ls")],
    "named_descriptor": [
        ("mkdir 10; printf '#!/bin/sh\\necho ran >> PWNED\\n' > 10/ls; chmod +x 10/ls", c, "")
        for c in ("true {PATH}>x; ls", "echo hi {PATH}>x; ls", "exec {PATH}>x; ls")] + [
        ("a=(1)", "true {a[$(agpwn)]}>x", ""), ("a=(1)", "true {a[$(agpwn x)]}>x", "")],
    "set_options_that_change_reading": [
        ("mkdir ev; printf '#!/bin/sh\\necho ran >> PWNED\\n' > ev/ls; chmod +x ev/ls",
         "set -o keyword\nless x LESSOPEN='|./ev/ls %s'", ""),
        ("mkdir ev; printf '#!/bin/sh\\necho ran >> PWNED\\n' > ev/ls; chmod +x ev/ls",
         "set -k\nls PATH=ev; PATH=/usr/bin:/bin\nPATH=ev ls", ""),
        ("", "set -o history -H\nls agpwn\n!$", "")],
    "xargs_replace_string": [("", "echo agpwn | xargs -I{} env {}", ""), ("", "echo agpwn | xargs -i nice {}", "")],
}


@pytest.mark.parametrize("family", sorted(MARKER_ATTACKS))
def test_each_attack_runs_in_bash_and_is_refused(oracle, family):
    for setup, cmd, probe in MARKER_ATTACKS[family]:
        if any(p in setup + probe + cmd and shutil.which(p) is None for p in ("git", "xxd")):
            continue
        full = "; ".join(p for p in (setup, cmd, probe) if p)
        assert oracle.runs(full), f"the oracle did not reproduce {full!r}"  # the attack is real
        assert analysis_sees(cmd), cmd
        assert refused(cmd), cmd


def test_a_nul_in_ansi_c_quoting_ends_the_string_as_in_bash(box):
    for cmd in ("cat /etc/sha$'\\0'dow", "cat /etc/sha$'\\0zz'dow", "cat /etc/sha$'\\x00q'dow",
                "cat /etc/sha$'\\c@'dow", "cat /etc/sha$'\\u0000'dow"):
        ran, _ = box.run(cmd)
        assert ("cat", "/etc/shadow") in ran, (cmd, ran)  # bash handed cat /etc/shadow
        assert "/etc/shadow" in [p for p, _ in analyse(cmd).paths], cmd
        assert refused(cmd), cmd


def test_deciding_is_bounded_and_fails_closed():
    """Inputs that took minutes (quadratic scans, an unbounded directory set) are refused unread; the measured
    times are in the hand-back, never asserted here."""
    for cmd in ("echo " + "[" * 20_000, "echo " + "{" * 20_000, "cd a;" * 800 + "ls", "ls|" * 5_000 + "ls",
                "cat " + "a*" * 100, "echo [" + "a" * 300 + "]", "echo {" + "0" * 300 + "1..2}"):
        assert analyse(cmd).unresolvable, cmd[:40]
    assert not analyse("ls " + " ".join(f"f{i}.py" for i in range(300))).unresolvable  # long, benign


# -- one property per class ------------------------------------------------------------------------------------

NAMES = ["agpwn", "'agpwn'", "\"agpwn\"", "ag'pw'n", "ag\\pwn", "$'agpwn'", "$'\\x61gpwn'", "$'\\141gpwn'",
         "$'\\u0061gpwn'", "$'agpwn\\0zz'", "ag$'pw\\0'n", "$\"agpwn\"", "{agpwn,}", "agpw{n..n}", "${x:-agpwn}",
         "${x-agpwn}", "${x:=agpwn}", "${x/#/agpwn}", "$(echo agpwn)", "`echo agpwn`", "\"$(echo agpwn)\"",
         "${y:-ag}pwn", "\"${!z}\"", "${x@P}"]
PREFIXES = ["", "command ", "exec ", "time ", "! ", "env ", "timeout 5 ", "nice ", "nohup ", "\\command ",
            "'command' ", "env -- ", "x=agpwn z=x; ", "builtin command ", "eval ", "bash -c ", "sh -c "]
CONTEXTS = ["{c}", "true; {c}", "true && {c}", "false || {c}", "true | {c}", "( {c} )", "{{ {c}; }}",
            "echo $({c})", "echo `{c}`", "echo \"$({c})\"", "cat <({c})", "x=$({c})", "echo ${{x:-$({c})}}",
            "case $({c}) in *) ;; esac", "[[ -n $({c}) ]]", "if {c}; then :; fi", "for i in 1; do {c}; done",
            "cat <<< $({c})", "cat <<E\n$({c})\nE", "a=(1); echo ${{a[$({c})]}}", "f() {{ {c}; }}; f",
            "coproc {c}", "echo $[$({c})]", "echo $(( $({c}) ))", "select i in $({c}); do break; done",
            "{c} #", "\t{c}", "true \\\n; {c}", "true\n{c}", "x=(\"$({c})\")", "declare y=$({c})"]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.sampled_from(NAMES), st.sampled_from(PREFIXES), st.sampled_from(CONTEXTS))
def test_property_whatever_bash_runs_the_guard_saw(box, name, prefix, context):
    """For any generated command: if the stub log shows ``agpwn`` ran, the guard did not allow it."""
    if prefix in ("bash -c ", "sh -c ", "eval "):
        inner = (prefix.strip() + " " + "'" + name.replace("'", "'\\''") + "'") if prefix != "eval " else \
            "eval " + name
        cmd = context.format(c=inner)
    else:
        cmd = context.format(c=prefix + name)
    if ran_agpwn(box, cmd):
        assert analysis_sees(cmd), cmd
        assert refused(cmd), cmd


def test_the_stub_oracle_sees_what_runs(box):
    """The property above is not vacuous: the oracle reports these runs (and the guard sees each)."""
    for cmd in ("agpwn", "$'\\x61gpwn'", "echo $(agpwn)", "x=agpwn; $x", "env agpwn", "true | agpwn",
                "a=(1); echo ${a[$(agpwn)]}", "bash -c agpwn", "ag$'pw\\0'n"):
        assert ran_agpwn(box, cmd), cmd
        assert analysis_sees(cmd), cmd
    assert not ran_agpwn(box, "echo agpwn")


_SHADOW = ["/etc/shadow", "/etc/sha$'\\0'dow", "/etc/$'sha\\0x'dow", "$'/etc/shadow\\0'", "/e$'\\x74\\0'c/shadow",
           "/etc/shad$'\\c@zz'ow", "$'\\x2f'etc/shadow", "/etc/sh{a,}dow", "/etc/./shadow", "/etc//shadow",
           "/etc/shado$'w\\u0000'", "\"/etc/\"sha'dow'"]


@FAST
@given(st.sampled_from(_SHADOW), st.sampled_from(["cat {p}", "head {p}", "cp {p} x", "grep x {p}", "ls {p}"]))
def test_property_a_protected_path_bash_opens_is_one_the_guard_refuses(box, path, form):
    cmd = form.format(p=path)
    ran, _ = box.run(cmd)
    if any("/etc/shadow" in rec[1:] for rec in ran):
        assert refused(cmd), cmd


_ALPHABET = ["${", "}", "a", "[", "]", ":", "'", "\"", "$(", ")", "`", " ", "x", "-", "@", "#", "{", ",", "(",
             "<<", "\n", ";", "|", "&", "$((", "))", "\\"]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.lists(st.sampled_from(_ALPHABET), min_size=1, max_size=12))
def test_property_any_parse_error_anywhere_is_refused(parts):
    text = "echo " + "".join(parts)
    tree = _parser().parse(text.encode())
    if tree.root_node.has_error:
        assert analyse(text).unresolvable, text


_LABEL_ATOMS = [":a", "ba", "ta", "Ta", "b", ";", " ", "\t", "\n", "e id", "e", "p", "w x", "{", "}", "1", "!",
                "s/a/b/e", "a txt", "#c\n", "v", "v 4.2"]


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.lists(st.sampled_from(_LABEL_ATOMS), min_size=1, max_size=6))
def test_property_sed_labels_end_where_gnu_sed_ends_them(atoms):
    if shutil.which("sed") is None:
        pytest.skip("sed not installed")
    script = "".join(atoms)
    if sed_danger(script) is not None:
        return
    r = subprocess.run(["sed", "--sandbox", "-n", "-e", script], input=b"", capture_output=True, timeout=5,
                       check=False)
    assert b"sandbox" not in r.stderr, (script, r.stderr)


@FAST
@given(st.sampled_from(["export", "declare", "typeset", "readonly", "local", "read", "getopts x"]),
       st.sampled_from(["\"{b}\"", "'{b}'", "\\{b}", "builtin {b}", "command {b}", "$'{b}'", "{b}"]),
       st.sampled_from(["PATH", "PS4", "BASH_ENV", "LD_PRELOAD", "HOME", "GIT_DIR", "PAGER", "BASH_COMPAT"]),
       st.sampled_from(["=x", "+=x"]))
def test_property_a_builtin_that_assigns_checks_its_names_however_spelled(builtin, spelling, name, assign):
    word, *rest = builtin.split()
    head = spelling.format(b=word)
    value = "" if word in ("read", "getopts") else assign
    cmd = " ".join([head, *rest, name + value])
    assert analyse(cmd).unresolvable, cmd


@FAST
@given(st.sampled_from(["g/config", "r/.git", "x/commondir", "g/config.worktree", "~/w/config", "config"]),
       st.sampled_from(["echo x > {p}", "printf x >> {p}", "tee {p}", "cp a {p}", "touch {p}", "ln -s a {p}"]))
def test_property_writing_a_git_directorys_files_is_refused(path, form):
    assert analyse(form.format(p=path)).unresolvable, form.format(p=path)


@FAST
@given(st.sampled_from(["tar xf a.tar", "tar -xf a.tar", "tar --extract -f a.tar", "tar --ext -f a.tar",
                        "tar --get -f a.tar", "tar -x -f a.tar -C d", "tar xvzf a.tgz", "unzip a.zip",
                        "unzip -o a.zip -d d", "gunzip -N a.gz", "gzip -dN a.gz", "gzip --decompress --name a.gz"]))
def test_property_extracting_under_stored_names_is_refused(cmd):
    assert analyse(cmd).unresolvable, cmd


@FAST
@given(st.sampled_from(["uniq a {p}", "uniq -c a {p}", "uniq -f 1 a {p}", "xxd a {p}", "xxd -r -p a {p}",
                        "xxd -r a {p}", "tree -o {p} .", "tree -o{p}", "less -o{p} a", "less --log-file={p} a"]),
       st.sampled_from(["~/.gitconfig", "~/.bashrc", ".git/hooks/pre-commit", "g/config", ".npmrc"]))
def test_property_a_readers_output_file_is_a_write(form, path):
    assert analyse(form.format(p=path)).unresolvable, form.format(p=path)


@FAST
@given(st.sampled_from(["cp {s} {d}", "cp {s} {d}/", "mv {s} {d}", "ln -s {s} {d}", "install -m 755 {s} {d}",
                        "cp -t {d} {s}", "cp -r {s} {d}", "mv -f {s} {d}/"]),
       st.sampled_from(["pre-commit", "authorized_keys", "x", "d/ls"]),
       st.sampled_from([".git/hooks", "~/.ssh", "~/.local/bin", "r/.git/hooks", "~/.config/git"]))
def test_property_a_file_copied_into_a_config_directory_is_a_write_there(form, source, target):
    cmd = form.format(s=source, d=target)
    assert analyse(cmd).unresolvable, cmd



def test_a_tilde_with_a_number_is_the_directory_stack_not_a_user():
    """``~1`` is ``${DIRSTACK[1]}`` (after ``pushd /etc; pushd /tmp`` it is /etc), not the home of a user "1"."""
    for cmd in ("pushd /etc; pushd /tmp; cat ~1/shadow", "cat ~+1/shadow", "cat ~-2/shadow"):
        a = analyse(cmd)
        assert any(tokens is not None and p.startswith("*") for p, tokens in a.paths), (cmd, a.paths)
        assert refused(cmd), cmd


def test_options_that_name_a_program_or_read_names_from_a_file():
    """From the manuals (not reproducible here: no Go toolchain): ``go tool link -extld``/``-extar`` run the named
    program; ``md5sum -c`` and its family read the names of the files to open from a file."""
    for cmd in ("go build -ldflags='-linkmode=external -extld=./x' .", "go test -ldflags '-extar ./x' ./...",
                "md5sum -c sums", "sha256sum --check sums", "b2sum -c s"):
        assert analyse(cmd).unresolvable, cmd
    for cmd in ("go build -ldflags=-s .", "sha256sum a b", "go test ./..."):
        assert not analyse(cmd).unresolvable, cmd


def test_benign_forms_of_the_fixed_classes_still_pass():
    ok = ["tar -tzf a.tgz", "tar -czf o.tgz src", "tar -xzf a.tgz -O", "unzip -l dist.zip", "unzip -p a.zip f",
          "gunzip data.csv.gz", "mkdir -p src/config", "cat config", "sed -n ':a;N;ba' x", "sed 's/a/b/' x",
          "export FOO=bar", "echo $'a\\tb'", "uniq a b", "xxd a", "uniq -c a", "set -euo pipefail", "set -x", "x=; echo ${x:-a}", "git status", "ls ~/config.d"]
    bad = [c for c in ok if analyse(c).unresolvable]
    assert not bad, bad
