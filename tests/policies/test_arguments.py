"""A tool's argument values read as the tool may read them (agentguard.policies.arguments).

Found by the lead's red team (twelfth session): ``deny_paths`` was checked only on arguments whose names are in
``PATH_ARGS``, so ``read_file(notebook_path="/etc/shadow")`` (Claude Code's notebook tool), ``source_path``,
``fname``, ``p`` ... were allowed; and a path argument was read only literally, so ``/etc/sh*dow`` or
``/etc/{shadow,x}`` passed a tool that expands its argument with ``glob.glob`` or a shell. The differential test
expands generated patterns with Python's own ``glob`` over a real directory tree and requires a refusal
whenever the expansion reaches a denied file.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.core.types import Context, Decision, ToolCall
from agentguard.policies.arguments import PATH_ARGS, path_values
from agentguard.policies.rules import ToolRuleGuard

DENY = ["/etc/shadow*", "~/.ssh/*", "*/.env", "/run/secrets/*"]
GUARD = ToolRuleGuard(allow=["read_file", "search", "send_email"], deny_paths=DENY, name="paths")


def decide(tool: str, args: dict) -> Decision:
    return GUARD.check(Context(run_id="r"), ToolCall(tool, args)).decision


NAMES = ["path", "pathname", "path_name", "filePath", "fpath", "fname", "source_path", "target_path", "notebook_path",
         "save_path", "file_to_read", "p", "name", "abs_path", "folder_path", "resource", "document", "key", "glob"]


@pytest.mark.parametrize("name", NAMES)
def test_a_denied_path_is_refused_whatever_the_argument_is_called(name: str) -> None:
    assert decide("read_file", {name: "/etc/shadow"}) is Decision.REJECT
    assert decide("read_file", {name: "~/.ssh/id_rsa"}) is Decision.REJECT
    assert decide("read_file", {"options": {name: "/run/secrets/db_password"}}) is Decision.REJECT


@pytest.mark.parametrize("value", ["/etc/sh*dow", "/etc/shado?", "/etc/[s]hadow", "/etc/{passwd,shadow}",
                                   "/e*/shadow", "/**/shadow", "/etc/sha[!x]ow", "~/.ss?/id_rsa", "/etc/shadow\x00.txt",
                                   "  /etc/shadow", "/etc/shadow\n"])
def test_a_path_argument_is_also_read_as_the_glob_a_tool_may_expand(value: str) -> None:
    assert decide("read_file", {"path": value}) is Decision.REJECT
    assert decide("read_file", {"notebook_path": value}) is Decision.REJECT


@pytest.mark.parametrize("args", [{"path": "src/*.py"}, {"path": "*.md"}, {"file_path": "docs/{a,b}.md"},
                                  {"path": "/tmp/x"}, {"query": "50% off"}, {"path": "README.md"},
                                  {"to": "a@example.com", "body": "see /tmp/report.txt\nand the rest"},
                                  {"path": "config/*.toml"}, {"glob": "docs/**/*.md"}])
def test_ordinary_values_are_not_refused(args: dict) -> None:
    tool = "send_email" if "to" in args else "read_file"
    assert decide(tool, args) is Decision.ALLOW


def test_path_args_are_still_exported_and_values_collected() -> None:
    assert "path" in PATH_ARGS
    found: list = []
    assert path_values("body", "a message\nwith /etc/shadow inside", found) is None
    assert found == []  # multi-line text names no file
    assert path_values("body", "/etc/shadow", found) is None and found


def test_an_unbounded_pattern_is_refused_unread() -> None:
    v = GUARD.check(Context(run_id="r"), ToolCall("read_file", {"path": "/x/" + "{a,b}" * 40}))
    assert v.decision is Decision.REJECT and "expansion bounds" in v.reason


# ---- differential: Python's glob over a real tree is the oracle -------------------------------------------------

_PARTS = ["etc", "shadow", "home", "u", ".ssh", "id_rsa", "app", ".env", "run", "secrets", "db", "src", "main.py"]


def _mutate(draw: st.DrawFn, comp: str) -> str:
    out = []
    for ch in comp:
        r = draw(st.integers(0, 9))
        out.append("?" if r == 0 else "*" if r == 1 else f"[{ch}]" if r == 2 else ch)
    text = "".join(out)
    return "*" if draw(st.integers(0, 12)) == 0 else text


@st.composite
def patterns(draw: st.DrawFn) -> list[str]:
    comps = draw(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=4))
    out = [_mutate(draw, c) for c in comps]
    if draw(st.booleans()):
        out.insert(draw(st.integers(0, len(out))), "**")
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(comps=patterns())
def test_differential_a_glob_that_reaches_a_denied_file_is_refused(tree: Path, comps: list[str]) -> None:
    root = str(tree)
    guard = ToolRuleGuard(allow=["read_file"], name="tree", deny_paths=[
        f"{root}/etc/shadow*", f"{root}/home/*/.ssh/*", f"{root}/*/.env", f"{root}/run/secrets/*"])
    pattern = root + "/" + "/".join(comps)
    denied = {f"{root}/etc/shadow", f"{root}/etc/shadow-", f"{root}/home/u/.ssh/id_rsa", f"{root}/app/.env",
              f"{root}/run/secrets/db"}
    reached = {os.path.normpath(p) for p in glob.glob(pattern, recursive=True)}
    reached |= {os.path.normpath(p) for p in glob.glob(pattern, recursive=True, include_hidden=True)} \
        if "include_hidden" in glob.glob.__code__.co_varnames else set()
    verdict = guard.check(Context(run_id="r"), ToolCall("read_file", {"path": pattern}))
    if reached & denied:
        assert verdict.decision.refuses, (pattern, sorted(reached & denied))


# ---- argument rules: every key that names the argument, every element of a list ----------------------------------

from agentguard.policies.rules import ArgumentRule  # noqa: E402

README_MAIL = ToolRuleGuard(arguments=[ArgumentRule("send_email", "to", match=r"[^@\s,;<>]+@example\.com")],
                            name="internal-mail")


def mail(args: dict) -> Decision:
    return README_MAIL.check(Context(run_id="r"), ToolCall("send_email", args)).decision


@pytest.mark.parametrize("args", [
    {"to": "a@example.com", "To": "eve@evil.org"},          # two keys a tool may read (case, framework aliases)
    {"to": "a@example.com", "to\u200b": "eve@evil.org"},
    {"to": "a@example.com", " to ": "eve@evil.org"},
    {"to": ["a@example.com", "eve@evil.org"]},              # a list of recipients: each one is checked
    {"to": ["eve@evil.org", "a@example.com"]},
    {"to": "eve@evil.org,a@example.com"},                   # the README's old regex (.+@example\.com) let these pass
    {"to": "eve@evil.org; a@example.com"},
    {"to": "Eve <eve@evil.org>, a@example.com"},
    {"to": []}, {"to": None}, {"to": {"addr": "eve@evil.org"}},
])
def test_an_argument_rule_checks_every_reading_of_the_argument(args: dict) -> None:
    assert mail(args) is Decision.REJECT


@pytest.mark.parametrize("args", [{"to": "a@example.com"}, {"to": ["a@example.com", "b.c+d@example.com"]},
                                  {"To": "a@example.com"}])
def test_an_argument_rule_allows_what_it_names(args: dict) -> None:
    assert mail(args) is Decision.ALLOW


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a@example.com", "b@example.com", "eve@evil.org", "x@example.com.evil.org"]),
                min_size=1, max_size=4),
       st.sampled_from(["to", "To", "TO", "to "]))
def test_property_a_list_passes_only_when_every_recipient_is_internal(recipients: list, key: str) -> None:
    ok = all(r.endswith("@example.com") for r in recipients)
    assert (mail({key: recipients}) is Decision.ALLOW) is ok


def test_a_forbid_rule_reads_every_key_and_element() -> None:
    g = ToolRuleGuard(arguments=[ArgumentRule("*", "command", forbid=r"rm\s+-rf")], name="f")
    for args in ({"command": "ls", "Command": "rm -rf /"}, {"command": ["ls", "rm -rf /"]}, {"command": {"x": "rm -rf /"}}):
        assert g.check(Context(run_id="r"), ToolCall("t", args)).decision is Decision.REJECT


# -- JSON text inside a string argument (session 17) ------------------------------------------------------------
# Found by the lead's red team: a tool that parses a string argument as JSON (LangChain's single-input tools, an
# MCP tool taking its parameters as text) reads ``{"input": "{\"path\": \"/etc/shadow\"}"}`` as /etc/shadow, while
# the guard read the whole string as one (harmless) word: allowed. The string is now also read as the value the
# standard JSON parser gives, every duplicate key's value kept.

@pytest.mark.parametrize("text", ['{"path": "/etc/shadow"}', '{"path": "\\/etc\\/shadow"}',
                                  '{"path": "\\u002fetc\\u002fshadow"}', '{"path": "ok.txt", "path": "/etc/shadow"}',
                                  '  {"a": {"b": ["~/.ssh/id_rsa"]}}\n', '{"a": "{\\"p\\": \\"/etc/shadow\\"}"}',
                                  '[{"file": "app/.env"}]'])
def test_json_text_in_a_string_argument_is_read_as_the_tool_parses_it(text: str) -> None:
    assert decide("read_file", {"input": text}) >= Decision.REJECT, text


@pytest.mark.parametrize("args", [{"input": '{"path": "notes.txt"}'}, {"query": '{"q": "weather", "n": [1, 2]}'},
                                  {"query": "{not json}"}, {"input": "[1, 2, 3]"}])
def test_json_text_naming_no_denied_path_stays_allowed(args: dict) -> None:
    assert decide("read_file" if "input" in args else "search", args) is Decision.ALLOW, args


def _json_values(v):
    if isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from _json_values(x)
    elif isinstance(v, list):
        for x in v:
            yield from _json_values(x)
    elif isinstance(v, str):
        yield v
        try:
            import json as _json
            yield from _json_values(_json.loads(v))
        except ValueError:
            pass


_JSON_KEYS = st.sampled_from(["path", "file", "p", "args", "params", "input", "x"])


def _nested(target: str):
    leaf = st.just(target)
    return st.recursive(leaf, lambda inner: st.one_of(st.dictionaries(_JSON_KEYS, inner, min_size=1, max_size=3),
                                                      st.lists(inner, min_size=1, max_size=3)), max_leaves=4)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["/etc/shadow", "~/.ssh/id_rsa", "app/.env", "/run/secrets/db", "notes.txt"]).flatmap(
    lambda t: st.tuples(st.just(t), _nested(t))), st.booleans(), st.booleans())
def test_differential_what_json_loads_finds_in_a_string_argument_is_checked(target_tree, ascii_only, twice) -> None:
    """Oracle: Python's ``json.loads`` (what such a tool runs); whenever a value it yields is a denied file, the
    guard refuses, however the JSON text escapes it and however deep the text is nested in strings."""
    import json as _json

    target, tree = target_tree
    text = _json.dumps(tree, ensure_ascii=ascii_only)
    if twice:
        text = _json.dumps({"params": text})
    found = set(_json_values(_json.loads(text)))
    got = decide("read_file", {"input": text})
    if target != "notes.txt" and target in found:
        assert got >= Decision.REJECT, text
