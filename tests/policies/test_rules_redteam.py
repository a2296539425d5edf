"""Red team of the rules guard's path reading (thirteenth session): each attack is kept, with a property per class.

Classes (every bypass found is listed in the hand-back of that session):

1. a glob in an argument not named as a path (``{"doc": {"x": "~/.ss[h]/id_rsa"}}``) was read only literally:
   now every path-shaped value (:func:`agentguard.policies.arguments.path_shaped`) is also read as the glob a
   tool may expand; a ``**`` crosses ``/`` only as a whole component (``**bold**`` in a text is one ``*``);
2. spellings the OS resolves to a denied file: ``/proc/self/root/../etc/shadow`` (the magic link's ``..`` stays
   at ``/``), nested ``/proc/*/root``, an open descriptor ``/dev/fd/<n>/...`` (a directory the guard cannot know),
   ``file://127.0.0.1/...`` and any other host, a relative ``file:.env``, Windows drive and UNC paths, and a
   relative path read from a working directory that may be ``/``. The oracle is the OS itself: the spelling is
   opened in a temporary tree and, when it reaches a denied file, the guard must refuse it.

Nothing here runs a command: values are only opened (read) inside a temporary directory.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.core.types import Context, Decision, ToolCall
from agentguard.policies.arguments import path_shaped
from agentguard.policies.rules import ArgumentRule, ToolRuleGuard

from .test_arguments import patterns

MINIMAL = ToolRuleGuard(deny_paths=["/etc/shadow", "~/.ssh/*", ".env", "*/.env"], name="minimal")


def decide(args: dict, guard: ToolRuleGuard = MINIMAL) -> Decision:
    return guard.check(Context(run_id="r"), ToolCall("read_file", args)).decision


def nestings(value: str) -> list[dict]:
    return [{"x": value}, {"doc": {"x": value}}, {"query": [value]}, {"path": value}, {"a": {"b": {"c": [value]}}}]


# ---- 1. a glob in any argument ----------------------------------------------------------------------------------

GLOBS = ["~/.ss[h]/id_rsa", "/etc/sh*dow", "/etc/shado?", "~/.ss?/id_rsa", "/e*/shadow", "/etc/{shadow,x}",
         "~/.*/id_rsa", "/*/shadow", ".ss[h]/id_rsa", "/etc/[s]hadow", "file:///etc/sh*dow", "%2fetc%2fsh*dow",
         "/proc/*/root/etc/shadow", "/proc/self/root/e?c/shadow", "./.en?", "~/.ssh/*", "/home/*/.ssh/id_*",
         "C:\\Users\\*\\.ssh\\id_rsa", "/**/id_rsa"]


@pytest.mark.parametrize("value", GLOBS)
def test_a_glob_in_an_argument_not_named_as_a_path_is_read_as_the_glob_a_tool_may_expand(value: str) -> None:
    for args in nestings(value):
        assert decide(args) is Decision.REJECT, args


@pytest.mark.parametrize("value", ["https://example.com/page?id=1&x=2", "**bold** and/or *italic*", "a/b?",
                                   "What is 3*4/2?", "10/05/2024 at 3pm?", "/api/users/{id}", "s/[aeiou]//g",
                                   "see [docs](a/b)", "./*.py", "/var/log/*.log", "docs/{a,b}.md", "1/2 * 3",
                                   "https://example.com/*", "~user?"])
def test_ordinary_text_with_slashes_and_glob_characters_is_not_refused(value: str) -> None:
    assert decide({"text": value}) is Decision.ALLOW


def test_a_double_star_is_recursive_only_as_a_whole_component() -> None:
    # "**bold**" is one component: it cannot reach "x/.env" below; "a/**" can
    assert decide({"text": "**bold** and/or *italic*"}) is Decision.ALLOW
    assert decide({"text": "src/**"}) is Decision.REJECT         # may reach src/app/.env
    assert decide({"text": "/home/**/id_rsa"}) is Decision.REJECT


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(comps=patterns(), key=st.sampled_from(["x", "query", "doc", "pattern", "q"]))
def test_property_a_glob_that_reaches_a_denied_file_is_refused_in_any_argument(tree: Path, comps: list[str],
                                                                               key: str) -> None:
    """Python's glob over a real tree is the oracle, the pattern sits in an argument not named as a path."""
    root = str(tree)
    guard = ToolRuleGuard(name="tree", deny_paths=[f"{root}/etc/shadow*", f"{root}/home/*/.ssh/*", f"{root}/*/.env",
                                                   f"{root}/run/secrets/*"])
    pattern = root + "/" + "/".join(comps)
    denied = {f"{root}/etc/shadow", f"{root}/etc/shadow-", f"{root}/home/u/.ssh/id_rsa", f"{root}/app/.env",
              f"{root}/run/secrets/db"}
    reached = {os.path.normpath(p) for p in glob.glob(pattern, recursive=True, include_hidden=True)} \
        if "include_hidden" in glob.glob.__code__.co_varnames else set()
    reached |= {os.path.normpath(p) for p in glob.glob(pattern, recursive=True)}
    if reached & denied:
        assert decide({key: {"inner": pattern}}, guard).refuses, (pattern, sorted(reached & denied))


# ---- 2. spellings the OS resolves ---------------------------------------------------------------------------------

SPELLINGS = ["/proc/self/root/../etc/shadow", "/proc/self/root/proc/self/root/etc/shadow",
             "/proc/self/root/proc/1/root/etc/shadow", "/proc/1/task/1/root/etc/shadow", "/proc/./self/cwd/.env",
             "/proc/self/cwd/../../etc/shadow", "/dev/fd/../root/etc/shadow", "/dev/fd/3/.env", "/proc/self/fd/7/.env",
             "file://127.0.0.1/etc/shadow", "file://host/etc/shadow", "file://etc/shadow", "file:.env",
             "FILE:///etc/shadow", "file:%2F%2F%2Fetc%2Fshadow", "C:\\Users\\bob\\.ssh\\id_rsa",
             "c:/Users/bob/.ssh/id_rsa", "\\\\?\\C:\\Users\\bob\\.ssh\\id_rsa",
             "\\\\localhost\\C$\\Users\\bob\\.ssh\\id_rsa", "etc/shadow", "./etc//shadow", "//etc//shadow",
             "/etc/./shadow", "/etc/shadow/", "/etc/shadow\x00.txt", "/tmp/%2e%2e/etc/shadow", "..\\..\\etc\\shadow",
             # Windows opens a component without its trailing dots and spaces, and a file through its :$DATA stream
             "C:\\Users\\bob\\.ssh.\\id_rsa", "C:\\Users\\bob\\.ssh \\id_rsa", "C:\\Users\\bob\\.ssh\\id_rsa::$DATA",
             "\\\\?\\UNC\\localhost\\C$\\Users\\bob\\.ssh\\id_rsa", "\\\\fileserver\\c$\\Users\\bob\\.ssh\\id_rsa",
             "..\\.env.", ".env::$DATA"]


@pytest.mark.parametrize("value", SPELLINGS)
def test_a_spelling_the_os_resolves_to_a_denied_file_is_refused(value: str) -> None:
    for args in nestings(value):
        assert decide(args) is Decision.REJECT, args


@pytest.fixture(scope="module")
def secrets_tree(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    root = tmp_path_factory.mktemp("os")
    files = {"etc/shadow": "S1", "home/u/.ssh/id_rsa": "S2", "app/.env": "S3", "app/src/main.py": "ok",
             "etc/hosts": "ok"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    fd = os.open(str(root), os.O_RDONLY)
    yield root, fd
    os.close(fd)


_TARGETS = ["etc/shadow", "home/u/.ssh/id_rsa", "app/.env", "app/src/main.py", "etc/hosts"]


@st.composite
def spellings(draw: st.DrawFn, root: str, fd: int) -> str:
    """A spelling of a file of the tree built from what the OS resolves: magic links, separators, detours."""
    target = draw(st.sampled_from(_TARGETS)).split("/")
    comps: list[str] = []
    for c in target:
        comps += draw(st.lists(st.sampled_from([".", "", "app/..", "etc/..", "nope/..", "app/src/../.."]),
                               max_size=2))
        comps.append(c)
    body = "/".join(comps)
    prefix = draw(st.sampled_from(["root", "proc_root", "proc_root_twice", "proc_pid_root", "dev_fd", "proc_fd",
                                   "proc_root_dotdot"]))
    base = {"root": root, "proc_root": "/proc/self/root" + root, "proc_root_twice": "/proc/self/root/proc/self/root" + root,
            "proc_pid_root": f"/proc/{os.getpid()}/root" + root, "dev_fd": f"/dev/fd/{fd}",
            "proc_fd": f"/proc/self/fd/{fd}", "proc_root_dotdot": "/proc/self/root/.." + root}[prefix]
    text = base + "/" + body
    how = draw(st.sampled_from(["plain", "percent", "file_url", "file_url_host", "double_slash"]))
    if how == "percent":
        text = urllib.parse.quote(text, safe="")
    elif how == "file_url":
        text = "file://" + text
    elif how == "file_url_host":
        text = "file://localhost" + text
    elif how == "double_slash":
        text = text.replace("/", "//")
    return text


def _opened_by_os(text: str) -> str | None:
    """What a tool reads from ``text``: opened as it is, percent-decoded, or as a file URL (urllib's reading)."""
    readings = [text, urllib.parse.unquote(text)]
    if text.startswith("file:"):
        readings.append(urllib.request.url2pathname(urllib.parse.urlparse(text).path))
    for r in readings:
        try:
            with open(r, encoding="utf-8") as fh:
                return fh.read()
        except (OSError, ValueError):
            continue
    return None


@pytest.mark.skipif(not os.path.isdir("/proc/self/root") or not os.path.isdir("/dev/fd"), reason="needs Linux /proc")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_property_a_spelling_that_opens_a_denied_file_is_refused(secrets_tree, data: st.DataObject) -> None:  # noqa: ANN001
    root, fd = secrets_tree
    guard = ToolRuleGuard(deny_paths=[f"{root}/etc/shadow", f"{root}/home/*/.ssh/*", "*/.env"], name="os")
    text = data.draw(spellings(str(root), fd))
    content = _opened_by_os(text)
    if content in ("S1", "S2", "S3"):
        for args in ({"path": text}, {"doc": {"x": text}}):
            assert decide(args, guard).refuses, (text, content)


@pytest.mark.parametrize("value", ["/ETC/SH*DOW", "/Etc/Shado?", "~/.SS?/id_rsa", ".EN?", "C:\\USERS\\*\\.SSH\\ID_*"])
def test_a_glob_is_matched_as_a_case_insensitive_file_system_reads_it(value: str) -> None:
    """Literal paths were matched ignoring case (macOS, Windows) but globs were not: ``/ETC/SH*DOW`` passed where
    ``/ETC/SHADOW`` was refused (and Windows' glob folds case)."""
    for args in nestings(value):
        assert decide(args) is Decision.REJECT, args
    g = ToolRuleGuard(deny_paths=["/etc/shadow"], allow_commands=["cat", "cp"], name="sh")
    for cmd in (f"cat {value}", "cp -r /ETC d"):
        if value.startswith("/E"):
            assert g.check(Context(run_id="r"), ToolCall("run_command", {"command": cmd})).decision.refuses, cmd


@settings(max_examples=200, deadline=None)
@given(flips=st.lists(st.booleans(), min_size=len("/etc/shadow"), max_size=len("/etc/shadow")),
       star=st.integers(1, len("/etc/shadow") - 1))
def test_property_any_case_of_a_glob_reaching_a_denied_path_is_refused(flips: list[bool], star: int) -> None:
    text = "".join(c.upper() if f else c for c, f in zip("/etc/shadow", flips))
    if text[star] != "/":
        text = text[:star] + "?" + text[star + 1:]
    assert decide({"x": text}) is Decision.REJECT, text


@pytest.mark.parametrize("args", [
    {"files": {"~/.ssh/authorized_keys": "ssh-rsa AAAA"}},     # a multi-file write tool: {path: content}
    {"edits": {"/etc/shadow": "x"}}, {"files": [{"~/.ssh/authorized_keys": "k"}]}, {"x": {"/etc/shadow": 1}},
    {"paths": "a.txt\n/etc/shadow"}, {"paths": "a.txt\r\n/etc/shadow"}, {"files": "a.txt,/etc/shadow"},
    {"files": "a.txt; /etc/shadow"}, {"dirs": "/usr/lib:/etc/shadow"}, {"path": "a.txt\n~/.ssh/id_rsa"},
    {"path": b"/etc/shadow"}, {"path": Path("/etc/shadow")}, {"doc": {"x": Path("~/.ssh/id_rsa")}},
])
def test_paths_in_mapping_keys_lists_and_other_types_are_read(args: dict) -> None:
    """A mapping's keys were not read (``write_files(files={"~/.ssh/authorized_keys": ...})`` passed), a path-named
    value was not read as the list a tool may split it into, and ``bytes``/``Path`` values (which ``open()``
    takes) were not read at all."""
    assert decide(args) is Decision.REJECT, args


@pytest.mark.parametrize("args", [{"files": {"notes.txt": "x", "src/a.py": "y"}}, {"paths": "a.txt\nb.txt"},
                                  {"url": "https://example.com/a,b;c"}, {"files": "a.txt,b.txt"},
                                  {"body": "line one\n/etc/shadow is mentioned in prose"}])
def test_ordinary_mappings_and_lists_are_not_refused(args: dict) -> None:
    assert decide(args) is Decision.ALLOW, args


@settings(max_examples=200, deadline=None)
@given(items=st.lists(st.sampled_from(["a.txt", "src/x.py", "/tmp/o", "/etc/shadow", "~/.ssh/id_rsa", "app/.env"]),
                      min_size=1, max_size=4),
       sep=st.sampled_from(["\n", "\r\n", ",", ";", ", "]), shape=st.sampled_from(["text", "keys", "nested_keys"]))
def test_property_a_list_of_paths_in_any_shape_meets_the_rules(items: list[str], sep: str, shape: str) -> None:
    denied = any(i in ("/etc/shadow", "~/.ssh/id_rsa", "app/.env") for i in items)
    args = ({"paths": sep.join(items)} if shape == "text" else {"files": {i: "content" for i in items}}
            if shape == "keys" else {"ops": [{"write": {i: "c"}} for i in items]})
    assert (decide(args) is Decision.REJECT) is denied, args


@pytest.mark.parametrize("args", [
    {"folder": "~/.ssh", "name": "id_rsa"}, {"path": "~", "pattern": ".ssh/id_*"},
    {"directory": "/etc", "filename": "shadow"}, {"cwd": "/etc", "file": "shadow"},
    {"root": "/", "include": "etc/sh*"}, {"base_dir": "/home/bob", "names": [".ssh/id_rsa"]},
    {"options": {"x": 1}, "working_dir": "/etc", "file_name": "shad?w"}, {"path": "/app", "pattern": ".en?"},
])
def test_a_name_joined_to_a_directory_argument_is_read_below_it(args: dict) -> None:
    """``search_files(path="~", pattern=".ssh/id_*")`` (the MCP filesystem server's shape) and
    ``read(folder="~/.ssh", name="id_rsa")`` passed: each value was read on its own."""
    assert decide(args) is Decision.REJECT, args


@pytest.mark.parametrize("args", [{"path": "/home/u/project", "pattern": "*.py"}, {"directory": "src", "name": "main.py"},
                                  {"path": "docs", "query": "hello world"}, {"folder": "/tmp/out", "filename": "r.csv"},
                                  {"path": "/home/u", "content": "hello"}])
def test_ordinary_directory_and_name_pairs_are_not_refused(args: dict) -> None:
    assert decide(args) is Decision.ALLOW, args


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(split=st.sampled_from(_TARGETS), cut=st.integers(1, 3),
       names=st.tuples(st.sampled_from(["folder", "path", "directory", "root", "cwd"]),
                       st.sampled_from(["name", "pattern", "filename", "file", "include"])))
def test_property_a_directory_and_a_name_that_join_to_a_denied_file_are_refused(secrets_tree, split: str, cut: int,
                                                                                names: tuple[str, str]) -> None:  # noqa: ANN001
    """The OS is the oracle: the two values joined (as os.path.join does) open the file."""
    root, _ = secrets_tree
    guard = ToolRuleGuard(deny_paths=[f"{root}/etc/shadow", f"{root}/home/*/.ssh/*", "*/.env"], name="join")
    comps = split.split("/")
    k = min(cut, len(comps) - 1) if len(comps) > 1 else 0
    base, rest = str(root / "/".join(comps[:k])) if k else str(root), "/".join(comps[k:])
    content = _opened_by_os(os.path.join(base, rest))
    args = {names[0]: base, names[1]: rest}
    assert (decide(args, guard) is Decision.REJECT) is (content in ("S1", "S2", "S3")), (args, content)


def test_a_value_listing_too_many_paths_is_refused_unread() -> None:
    from agentguard.policies.arguments import MAX_PIECES

    many = ",".join(f"f{i}.txt" for i in range(MAX_PIECES + 1))
    assert decide({"paths": many}) is Decision.REJECT
    assert decide({"paths": ",".join(f"f{i}.txt" for i in range(MAX_PIECES))}) is Decision.ALLOW


def test_path_shaped_values() -> None:
    assert path_shaped("/x") and path_shaped("~/x") and path_shaped("./x") and path_shaped("file:.env")
    assert path_shaped("a\\b") and path_shaped("%2e%2e")
    assert not path_shaped("*") and not path_shaped("hello world") and not path_shaped("a/b\nc/d")


@pytest.mark.skipif(not os.path.isdir("/proc/self/root") or not os.path.isdir("/dev/fd"), reason="needs Linux /proc")
def test_the_os_oracle_reaches_the_denied_file_through_every_prefix(secrets_tree) -> None:  # noqa: ANN001
    """The property above is not vacuous: each prefix of the strategy opens the secret, and the guard refuses it."""
    root, fd = secrets_tree
    guard = ToolRuleGuard(deny_paths=[f"{root}/etc/shadow"], name="os")
    for base in (f"/proc/self/root/..{root}", f"/proc/self/root/proc/self/root{root}", f"/dev/fd/{fd}",
                 f"/proc/self/fd/{fd}", f"/proc/{os.getpid()}/root{root}"):
        text = base + "/app/../etc//./shadow"
        assert _opened_by_os(text) == "S1", text
        assert decide({"doc": {"x": text}}, guard) is Decision.REJECT, text


# ---- 3. argument rules read the way the framework reads the value -----------------------------------------------

ARGS = ToolRuleGuard(arguments=[ArgumentRule("pay", "amount", forbid=r"\d{4,}"),   # no amount of 1000 or more
                                ArgumentRule("set_role", "admin", forbid=r"(?i)^true$"),
                                ArgumentRule("send_email", "to", match=r"[^@\s,;<>]+@example\.com")], name="args")


def args_decide(tool: str, args: dict) -> Decision:
    return ARGS.check(Context(run_id="r"), ToolCall(tool, args)).decision


@pytest.mark.parametrize("value", ["1_000", "1e3", "1E4", "0x3e8", "0o1750", "\uff11\uff10\uff10\uff10",
                                   "\u0661\u0660\u0660\u0660", " 1000 ", "1\u200b000", "1000.0", "1.5e3", 1e3,
                                   "10_000.5", "+1000", 1e300])
def test_a_number_spelled_another_way_meets_a_forbid_rule(value) -> None:  # noqa: ANN001
    """``forbid = '\\d{4,}'`` (no amount of 1000 or more) let ``1_000``, ``1e3`` and ``0x3e8`` through: Python's
    ``int``/``float`` (and pydantic, YAML) read them as 1000."""
    assert args_decide("pay", {"amount": value}) is Decision.REJECT, value


@pytest.mark.parametrize("value", ["yes", "on", "Y", "t", "1", "\uff54\uff52\uff55\uff45", "t\u200brue", " true ",
                                   True, "TRUE"])
def test_a_boolean_spelled_another_way_meets_a_forbid_rule(value) -> None:  # noqa: ANN001
    assert args_decide("set_role", {"admin": value}) is Decision.REJECT, value


@pytest.mark.parametrize("value", ["999", "12.5", "no", "0", False, "abc"])
def test_ordinary_values_pass_the_forbid_rules(value) -> None:  # noqa: ANN001
    tool, key = ("set_role", "admin") if value in ("no", "0", False) else ("pay", "amount")
    assert args_decide(tool, {key: value}) is Decision.ALLOW, value


def test_a_match_rule_holds_for_the_text_and_its_nfkc_form() -> None:
    assert args_decide("send_email", {"to": "a@example.com"}) is Decision.ALLOW
    assert args_decide("send_email", {"to": "02134@example.com"}) is Decision.ALLOW  # no numeric reading for match
    # U+FF20 FULLWIDTH COMMERCIAL AT is "@" in NFKC: the raw text matches "[^@...]+@example.com", its NFKC form
    # (eve@evil.org@example.com, what a mail library that normalises sends to) does not
    assert args_decide("send_email", {"to": "eve\uff20evil.org@example.com"}) is Decision.REJECT


@st.composite
def number_spellings(draw: st.DrawFn) -> tuple[str, int]:
    n = draw(st.integers(0, 10**7))
    digits = str(n)
    how = draw(st.sampled_from(["plain", "underscore", "fullwidth", "arabic", "exp", "hex", "float", "blank",
                                "zero_width", "plus"]))
    if how == "underscore" and len(digits) > 1:
        k = draw(st.integers(1, len(digits) - 1))
        s = digits[:k] + "_" + digits[k:]
    elif how == "fullwidth":
        s = "".join(chr(0xFF10 + int(c)) for c in digits)
    elif how == "arabic":
        s = "".join(chr(0x0660 + int(c)) for c in digits)
    elif how == "exp" and n and n % 10 == 0:
        z = len(digits) - len(digits.rstrip("0"))
        s = f"{digits[:len(digits) - z]}e{z}"
    elif how == "hex":
        s = hex(n)
    elif how == "float":
        s = f"{n}.0"
    elif how == "blank":
        s = f" {digits}\t"
    elif how == "zero_width" and len(digits) > 1:
        s = digits[0] + "\u200b" + digits[1:]
    elif how == "plus":
        s = "+" + digits
    else:
        s = digits
    return s, n


def _framework_reads(s: str) -> set[float]:
    """What the executing side reads: Python's int/float, int(x, 0), pydantic's lax int and float."""
    from pydantic import TypeAdapter, ValidationError

    out: set[float] = set()
    for parse in (int, lambda t: int(t, 0), float, TypeAdapter(int).validate_python, TypeAdapter(float).validate_python):
        try:
            out.add(parse(s))
        except (ValueError, ValidationError, TypeError):
            pass
    return out


@settings(max_examples=300, deadline=None)
@given(spelled=number_spellings())
def test_property_a_spelling_the_framework_reads_as_1000_or_more_meets_the_forbid_rule(spelled) -> None:  # noqa: ANN001
    s, n = spelled
    read = _framework_reads(s)
    if any(v >= 1000 for v in read):
        assert args_decide("pay", {"amount": s}) is Decision.REJECT, (s, read)


@settings(max_examples=200, deadline=None)
@given(s=st.sampled_from(["true", "yes", "on", "1", "t", "y", "True", "YES", "On", "false", "no", "0", "off"]).flatmap(
    lambda w: st.sampled_from([w, w.upper(), f" {w} ", w[:1] + "\u200b" + w[1:],
                               "".join(chr(ord(c) + 0xFEE0) if c.isalnum() else c for c in w)])))
def test_property_a_spelling_pydantic_reads_as_true_meets_the_forbid_rule(s: str) -> None:
    from pydantic import TypeAdapter, ValidationError

    try:
        value = TypeAdapter(bool).validate_python(s)
    except ValidationError:
        return
    if value is True:
        assert args_decide("set_role", {"admin": s}) is Decision.REJECT, s


# -- session 18: a grant names a tool as written (a framework runs the tool its exact name finds) -----------------
_FOLDS = [str.upper, str.title, lambda s: s.replace("_", "-"), lambda s: " " + s, lambda s: s + " ",
          lambda s: s.replace("_", "\u200b_"), lambda s: "".join(chr(ord(c) + 0xFEE0) if "a" <= c <= "z" else c for c in s),
          lambda s: s.replace("e", "\u0435")]


def test_an_allow_list_grants_only_the_name_as_written():
    """``allow = ["read_file"]`` granted ``READ_FILE``, ``read-file`` and full-width ``ｒead_file`` (canonical
    match): to LangChain, the Agents SDK or an MCP server those are other tools (a real LangChain agent ran a
    second tool named ``ＲEAD_FILE``, tests/integrations/test_langchain_once.py). Refusing rules still fold."""
    from hypothesis import given, settings, strategies as hst

    from agentguard.core.types import ToolCall
    from agentguard.policies.rules import ToolRuleGuard

    g = ToolRuleGuard(allow=["read_file", "search_*", "fs__list_dir"], deny=["delete_file"])
    for ok in ["read_file", "search_web", "search_", "fs__list_dir"]:
        assert g.check(None, ToolCall(ok, {})).decision.name == "ALLOW", ok  # type: ignore[arg-type]

    @settings(max_examples=200, deadline=None)
    @given(hst.sampled_from(["read_file", "search_web", "fs__list_dir", "delete_file"]),
           hst.lists(hst.sampled_from(range(len(_FOLDS))), min_size=1, max_size=3))
    def prop(base: str, folds: list[int]) -> None:
        name = base
        for i in folds:
            name = _FOLDS[i](name)
        v = g.check(None, ToolCall(name, {}))  # type: ignore[arg-type]
        pattern = {"search_web": "search_*", "delete_file": None}.get(base, base)
        assert (v.decision.name == "ALLOW") is (pattern is not None and fnmatch.fnmatchcase(name, pattern)), (name, v.reason)

    prop()
