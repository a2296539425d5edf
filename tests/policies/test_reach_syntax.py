"""The syntax programs read in a value beyond a path (session 19): glob libraries' own (extended groups, escapes,
equivalence classes; bash with ``extglob`` is the oracle) and file-reference markers (``@file``, ``field=@file``;
argparse's ``fromfile_prefix_chars`` is the oracle), and a regression list of spellings refused before the session.
The secret tree and the guard are :mod:`tests.policies.test_reach`'s."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.policies.rules import ToolRuleGuard

from .test_reach import EXAMPLE, PUBLIC, SECRETS, _denied, guard, refused


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = tmp_path_factory.mktemp("reach_syntax")
    for rel in SECRETS + PUBLIC:
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text("secret" if rel in SECRETS else "public")
    return top

# -- glob libraries' own syntax: bash (extglob, globstar, dotglob) is the oracle ---------------------------------

def bash_expands(top: Path, pattern: str) -> list[str]:
    """The files bash with ``extglob``, ``globstar``, ``dotglob`` and ``nullglob`` expands an unquoted word to (the
    syntax minimatch, picomatch and wcmatch share: extended groups, escapes, ``[[=a=]]``)."""
    import subprocess
    script = f"cd {str(top)!r} && for f in {pattern}; do printf '%s\\n' \"$f\"; done"
    out = subprocess.run(["bash", "-O", "extglob", "-O", "globstar", "-O", "dotglob", "-O", "nullglob", "-c", script],
                         capture_output=True, text=True, timeout=10)
    return [os.path.join(top, line) for line in out.stdout.splitlines() if line]


_LIB_GLOBS = ["etc/@(shadow)", "etc/!(passwd|hostname)", "etc/+(shadow)", "etc/?(shadow)", "etc/sh\\adow",
              "etc/sh[[.a.]]dow", "etc/sh[[=a=]]dow", "home/u/proj/@(.env)", "home/u/.aws/@(cred*|x)",
              "home/u/.ssh/!(x)", "etc/@(sh@(a)dow)", "home/u/**/@(id_*)"]


@pytest.mark.skipif(not os.path.exists("/bin/bash"), reason="needs bash")
@pytest.mark.parametrize("pattern", _LIB_GLOBS)
def test_library_glob_syntax_reaching_a_secret_is_refused(tree: Path, pattern: str) -> None:
    got = bash_expands(tree, pattern)
    assert any(_denied(tree, p) for p in got), (pattern, got)  # the attack is real: bash reaches the secret
    assert refused(guard(tree), "search_files", {"pattern": f"{tree}/{pattern}"}), pattern
    assert refused(EXAMPLE, "search_files", {"pattern": "/" + pattern}), pattern


@pytest.mark.skipif(not os.path.exists("/bin/bash"), reason="needs bash")
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=st.sampled_from(["etc/shadow", "home/u/.aws/credentials", "home/u/proj/.env"]),
       data=st.data())
def test_property_extglob_and_escapes(tree: Path, secret: str, data: st.DataObject) -> None:
    """The secret's last name rewritten with an extended group, an escape or an equivalence class at a random
    place: when bash expands the word to a secret, the guard refuses it."""
    head, _, name = secret.rpartition("/")
    i = data.draw(st.integers(0, len(name) - 1))
    j = data.draw(st.integers(i + 1, len(name)))
    form = data.draw(st.sampled_from(["@({})", "+({})", "?({})", "*({})", "!(zz)", "\\{}", "[[={}=]]"]))
    part = name[i:j] if "{}" in form and not form.startswith(("\\", "[[")) else name[i]
    if form.startswith(("\\", "[[")):
        j = i + 1
    word = f"{head}/{name[:i]}{form.format(part)}{name[j:]}"
    if any(_denied(tree, p) for p in bash_expands(tree, word)):
        assert refused(guard(tree), "search_files", {"pattern": f"{tree}/{word}"}), word


_HFS_IGNORABLE = [0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x206A, 0x206B, 0x206C,
                  0x206D, 0x206E, 0x206F, 0xFEFF]
#: tried in session 19 and already refused before it (a regression list): glob forms in any argument, case,
#: NFD, Windows tails and short names, fullwidth letters, HFS+'s ignorable code points (``.g\u200cit`` is ``.git``)
ALREADY_REFUSED = [
    ("read_file", {"content": "/etc/shadow"}), ("search_files", {"query": "/etc/shadow"}),
    ("search_files", {"pattern": "/e?c/sha*"}), ("search_files", {"pattern": "/etc/[s]hadow"}),
    ("search_files", {"glob": "**/.env"}), ("search_files", {"pattern": "{/etc/shadow,x}"}),
    ("read_file", {"dir": "/home/u/.ssh", "name": "id_rsa"}), ("read_file", {"path": "~", "pattern": ".ssh/id_*"}),
    ("read_file", {"cwd": "/home/u/.aws", "path": "credentials"}),
    ("read_file", {"cwd": "/home/u/proj", "path": "../.aws/credentials"}),
    ("read_file", {"cwd": "/home/u", "path": "%2e%61ws/credentials"}), ("list_files", {"path": "/home/u/.ssh"}),
    ("stat", {"path": "/etc/shadow"}), ("read_file", {"path": "/ETC/SHADOW"}), ("read_file", {"path": "~/.SSH/ID_RSA"}),
    ("read_file", {"path": ".ENV"}), ("read_file", {"path": "secret.tfstate."}), ("read_file", {"path": ".env::$DATA"}),
    ("read_file", {"path": ".env. . ."}), ("read_file", {"path": "/home/u/.aws/credentials:$DATA"}),
    ("read_file", {"path": "~/.\u017fsh/id_rsa"}), ("read_file", {"path": "/etc/\uff53hadow"}),
    ("read_file", {"path": "/home/u/.ssh/id_rsa\u200b"}), ("read_file", {"path": "C:\\Users\\u\\SSH~1\\id_rsa"}),
    ("search_files", {"pattern": "/etc/sha{a..z}ow"}), ("search_files", {"pattern": "/etc/[[:alpha:]]hadow"}),
    ("search_files", {"pattern": "~/.aws/@(credentials|config)"}), ("search_files", {"pattern": "/etc/*(shadow)"}),
] + [("read_file", {"path": p.format(chr(c))}) for c in _HFS_IGNORABLE
     for p in ("~/.s{}sh/id_rsa", "/home/u/.a{}ws/credentials", ".e{}nv", "/et{}c/shadow")]


@pytest.mark.parametrize("name,args", ALREADY_REFUSED)
def test_regression_list_already_refused(name: str, args: dict[str, Any]) -> None:
    assert refused(EXAMPLE, name, args), (name, args)


# -- file-reference markers: argparse's fromfile_prefix_chars is the oracle -----------------------------------------

def argparse_reads(value: str) -> bool:
    """Whether ``argparse`` with ``fromfile_prefix_chars="@"`` (response files, as curl's ``-d @file`` and many
    CLIs) reads a secret's content when given ``value``."""
    import argparse
    parser = argparse.ArgumentParser(fromfile_prefix_chars="@", exit_on_error=False)
    parser.add_argument("x", nargs="*")
    try:
        return "secret" in parser.parse_args([value]).x
    except (OSError, SystemExit):
        return False


@pytest.mark.parametrize("form", ["@{}", " @{}", "@{}  "])
@pytest.mark.parametrize("secret", ["etc/shadow", "home/u/.aws/credentials", "home/u/proj/.env"])
@pytest.mark.parametrize("key", ["data", "args", "input_text", "attachment", "value"])
def test_file_reference_markers_reaching_a_secret_are_refused(tree: Path, form: str, secret: str, key: str) -> None:
    value = form.format(f"{tree}/{secret}")
    assert argparse_reads(value.strip())
    assert refused(guard(tree), "call_api", {key: value}), value


@pytest.mark.parametrize("value", ["@/etc/shadow", "@~/.aws/credentials", "file@/etc/shadow", "file=@/etc/shadow",
                                   "data:=@~/.aws/credentials", "x=<~/.aws/credentials", "@.env", "@id_rsa",
                                   "-d @/etc/shadow", "@%2Fetc%2Fshadow"])
def test_example_refuses_file_references(value: str) -> None:
    """curl's ``-d @file`` and ``-F f=<file``, httpie's ``f@file``, ``f=@file`` and ``f:=@file``, a response file."""
    assert refused(EXAMPLE, "http_request", {"data": value}), value


@pytest.mark.parametrize("value", ["ann@example.com", "Meet @ noon <b>bold</b>", "a <= b", "@here please look",
                                   "x@y.org, z@w.net"])
def test_file_reference_markers_in_text_name_no_file(value: str) -> None:
    assert not refused(EXAMPLE, "send_email", {"to": "ann@example.com", "body": value}), value


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=st.sampled_from(["etc/shadow", "home/u/.aws/credentials", "home/u/proj/.env"]),
       field=st.sampled_from(["", "f", "file", "data"]), op=st.sampled_from(["@", "=@", ":=@", "=<", "<"]),
       before=st.sampled_from(["", "-d ", "--data-binary ", "x "]))
def test_property_file_references(tree: Path, secret: str, field: str, op: str, before: str) -> None:
    """A reference marker after any field name, the whole value after any leading option text: the file is read
    (by curl, httpie or argparse), so the guard refuses."""
    if (not field and op not in ("@", "<")) or (field and op == "<"):  # "f<file" is no program's syntax
        return
    value = f"{before}{field}{op}{tree}/{secret}"
    assert refused(guard(tree), "call_api", {"payload": value}), value


# -- operating-system aliases: /private/etc (macOS), /var/run (Linux), Documents and Settings (Windows) -------------

@pytest.mark.parametrize("alias,target", [("/var/run", "/run"), ("/bin", "/usr/bin"), ("/lib", "/usr/lib")])
def test_linux_aliases_are_what_this_host_resolves(alias: str, target: str) -> None:
    """The Linux rows of the alias table, confirmed on this host where it has them (``os.path.realpath``)."""
    if not os.path.islink(alias):
        pytest.skip(f"{alias} is no link here")
    assert os.path.realpath(alias) == target
    g = ToolRuleGuard(deny_paths=[f"{target}/secret/*"])
    assert refused(g, "read_file", {"path": f"{alias}/secret/x"})
    g = ToolRuleGuard(deny_paths=[f"{alias}/secret/*"])
    assert refused(g, "read_file", {"path": f"{target}/secret/x"})


ALIASED = ["/private/etc/shadow", "/private/etc/sudoers", "/PRIVATE/ETC/SHADOW", "/private/var/root/.ssh/id_ed25519",
           "/var/root/.aws/credentials", "/System/Volumes/Data/Users/u/.aws/credentials",
           "/system/volumes/data/users/u/.ssh/config", "C:\\Documents and Settings\\u\\.aws\\credentials",
           "file:///private/etc/shadow", "/private/var/run/secrets/token"]


@pytest.mark.parametrize("path", ALIASED)
def test_example_refuses_paths_through_system_aliases(path: str) -> None:
    """macOS' /etc, /var, /tmp are links into /private and /System/Volumes/Data the data volume's firmlink (Apple's
    file system documentation; not confirmable on a Linux host), /var/root its root's home; Windows' Documents and
    Settings a junction to Users."""
    assert refused(EXAMPLE, "read_file", {"path": path}), path
    assert refused(EXAMPLE, "search_files", {"path": os.path.dirname(path.replace("\\", "/"))}) or "secrets" in path


@settings(max_examples=100, deadline=None)
@given(alias=st.sampled_from(["/private/etc", "/PRIVATE/etc", "/private/var/run", "/System/Volumes/Data/etc"]),
       rest=st.sampled_from(["shadow", "sudoers", "ssh/sshd_config", "secrets/x"]))
def test_property_aliases(alias: str, rest: str) -> None:
    path = f"{alias}/{rest}"
    canonical = {"/private/etc": "/etc", "/private/var/run": "/var/run", "/system/volumes/data/etc": "/etc"}[
        alias.casefold()] + "/" + rest
    if refused(EXAMPLE, "read_file", {"path": canonical}):
        assert refused(EXAMPLE, "read_file", {"path": path}), path


@pytest.mark.parametrize("path", ["/private/tmp/build.log", "/usr/bin/python3", "/private/etc/hosts",
                                  "/System/Volumes/Data/Users/u/proj/README.md"])
def test_aliases_of_allowed_paths_stay_allowed(path: str) -> None:
    assert not refused(EXAMPLE, "read_file", {"path": path}), path
