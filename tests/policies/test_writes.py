"""A file tool's write of a file that configures what a program runs gets the shell guard's answer (session 17;
agentguard.policies.writes, applied in agentguard.policies.rules).

The defect: ``run_command {"command": "echo x > ~/.zshrc"}`` was refused ("configures what a program runs") while
``write_file {"path": "~/.zshrc"}`` was allowed by the same shipped rules: one path class, two answers depending on
the tool. :class:`~agentguard.policies.rules.ToolRuleGuard` now asks the shell's matcher
(:func:`agentguard.policies.shell.model.configures`) about the path values of every tool that does not only read
(:mod:`agentguard.policies.writes`). Every spelling tried is kept here; the properties compare the two tools on
generated targets (config files, and ordinary paths: no new refusal where the shell allows the write).
"""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.config import load_stack
from agentguard.core import Context, Decision, ToolCall
from agentguard.policies.arguments import path_named
from agentguard.policies.rules import ToolRuleGuard
from agentguard.policies.shell.programs import CONFIG_FILES
from agentguard.policies.writes import reads_only

EXAMPLE = Path(__file__).resolve().parents[2] / "src/agentguard/server/examples/rules.toml"
STACK = load_stack(EXAMPLE)
TABLE = next(g for g in tomllib.loads(EXAMPLE.read_text())["guards"] if g["type"] == "tool-rules")
#: the example's rules with its allow list widened to tools it does not name (a refusal is then a rule's, not the
#: allow list's)
OPEN = ToolRuleGuard(**{k: v for k, v in TABLE.items() if k not in ("type", "allow")})
#: only the shell's own rules: echo is allowed, nothing is a denied path
MINIMAL = ToolRuleGuard(allow_commands=["echo"], name="minimal")
WHY = "configures what a program runs"


def verdict(guard, name: str, args: dict):  # noqa: ANN001, ANN201
    return guard.check(Context(run_id="r"), ToolCall(name, args))


def config_refusal(guard, name: str, args: dict) -> bool:  # noqa: ANN001
    v = verdict(guard, name, args)
    return v.decision.refuses and any(WHY in r for r in (v.details or {}).get("violations", [v.reason]))


def shell_refuses(guard, path: str) -> bool:  # noqa: ANN001
    return verdict(guard, "run_command", {"command": f"echo x > {shlex.quote(path)}"}).decision.refuses


# ---- the defect as the lead found it ------------------------------------------------------------------------------

LEAD = ["~/.gitconfig", "~/.zshrc", "~/.bash_profile", "~/.bash_login", "~/.config/fish/config.fish", ".envrc",
        "~/.yarnrc", "~/.local/bin/ls", "~/.config/autostart/x.desktop", "/usr/lib/python3/dist-packages/x.pth",
        "sitecustomize.py", "g/config"]
#: the system-wide start-up files added to CONFIG_FILES this session (allowed by both tools before)
SYSTEM = ["/etc/profile.d/x.sh", "/etc/profile", "/etc/bash.bashrc", "/etc/zsh/zshrc", "/etc/zshenv",
          "/etc/environment", "/etc/gitconfig", "/etc/ld.so.preload", "/etc/xdg/autostart/x.desktop",
          "/etc/cron.d/x", "/etc/crontab", "/var/spool/cron/crontabs/root", "/etc/systemd/system/x.service",
          "/etc/rc.local", "/etc/fish/config.fish",
          "C:\\Users\\u\\AppData\\Roaming\\Microsoft\\Windows\\Start Menu\\Programs\\Startup\\x.bat"]
#: spellings of those targets the guard's path reading resolves (case, homes, URLs, Windows, .., NUL, globs)
SPELLINGS = ["~/.GitConfig", "/home/u/.gitconfig", "/Users/u/.zshrc", "C:\\Users\\u\\.gitconfig",
             "file:///home/u/.zshrc", "file://localhost/home/u/.envrc", "~/%2egitconfig", "~/x/../.zshrc", "~//.zshrc",
             "~/./.zshrc", "~u/.zshrc", "~/.zshrc.", "~/.zshrc::$DATA", ".ENVRC", "a/b/../.envrc", "~/.local/bin/./ls",
             "~/.LOCAL/bin/ls", "/USR/LIB/python3/x.PTH", "G/CONFIG", "~/.gitconfi?", "~/.git*",
             "~/.config/autostart/*.desktop", "/proc/self/root/etc/profile.d/x.sh", "/etc//profile", "/ETC/PROFILE",
             "\\\\?\\C:\\Users\\u\\.zshrc", "~/.zshrc\x00.txt", " ~/.zshrc ", "~/.zshrc/", ".git/hooks/pre-commit",
             "x.git/config", "/usr/bin/l?", "/usr/local/bin/*", "%7e/.zshrc", "file:.envrc", "./.envrc"]


@pytest.mark.parametrize("path", LEAD + SYSTEM + SPELLINGS)
def test_a_file_tool_writing_a_config_file_is_refused_like_the_shell(path: str) -> None:
    assert config_refusal(STACK, "write_file", {"path": path, "content": "[core]\nfsmonitor=id"}), path
    assert config_refusal(OPEN, "write_file", {"path": path, "content": "x"}), path


@pytest.mark.parametrize("path", LEAD + SYSTEM)
def test_the_shell_refuses_the_same_targets(path: str) -> None:
    assert config_refusal(STACK, "run_command", {"command": f"echo x > {shlex.quote(path)}"}), path


@pytest.mark.parametrize("path", ["~/.zshrc", "/etc/profile.d/x.sh", "~/.local/bin/ls"])
def test_the_shell_refuses_copies_and_moves_to_them(path: str) -> None:
    for cmd in (f"cp x {path}", f"mv x {path}", f"ln -s x {path}", f"tee -a {path}"):
        assert config_refusal(STACK, "run_command", {"command": cmd}), cmd


@pytest.mark.parametrize(("name", "args"), [
    ("save_document", {"filename": "~/.bashrc"}), ("save_document", {"filename": "~/.zshrc"}),
    ("put_object", {"key": "~/.gitconfig"}), ("export_notes", {"dest": "~/.config/autostart/n.desktop"}),
    ("write_files", {"files": {"notes.txt": "x", "~/.zshrc": "y"}}), ("create", {"paths": ["a.txt", ".envrc"]}),
    ("edit", {"doc": {"x": "~/.local/bin/ls"}}), ("append_to_file", {"file": "~/.bash_profile", "text": "x"}),
    ("fs__write_file", {"path": "~/.gitconfig"}), ("mcp.files/write", {"path": ".envrc"}),
    ("upload", {"directory": "~/.config/autostart", "name": "x.desktop"}),
    ("move_file", {"src": "a", "dst": "g/config"}),
    ("link", {"target": "/usr/lib/python3/site-packages/evil.pth"}), ("unzip_archive", {"output_dir": "~/.ssh"}),
    ("read__file", {"path": "~/.zshrc"}),  # the tool "file" of an upstream "read": not a reader
    ("get_or_create_file", {"path": "~/.zshrc"}), ("read_and_write", {"path": "~/.zshrc"}),
    ("search_replace", {"path": "~/.zshrc"}), ("view_to_file", {"path": "~/.zshrc"}),
    ("search_files", {"pattern": "x", "output": "~/.zshrc"}),  # a reader's output argument is a write
    ("read_file", {"path": "a.txt", "save_to": "~/.gitconfig"}), ("search_files", {"outputFile": "~/.zshrc"}),
    ("get_report", {"destPath": "~/.local/bin/ls"}), ("list_files", {"into": ".envrc"}),
    ("run_command", {"command": "ls", "output": "~/.zshrc"}),
    # attacks of this session's own review: a reader's name in the last namespace part only, a long name, a URL
    # that climbs out of "https:", an added command key, other value types and lists
    ("write_file.read", {"path": "~/.zshrc"}), ("mail_send__read_inbox", {"path": "~/.zshrc"}),
    ("read" * 70 + "_file", {"path": "~/.zshrc"}), ("rеad_file", {"path": "~/.zshrc"}),  # Cyrillic е
    ("readAndWrite", {"path": "~/.zshrc"}), ("fetch_url", {"url": "https://x/../../home/u/.zshrc"}),
    ("save", {"doc": "https://x/%2e%2e/%2e%2e/home/u/.zshrc"}), ("write_file", {"path": "https://x/config"}),
    ("fetch_url", {"link": "https://x/.../.../home/u/.zshrc"}),
    ("copy_tree", {"src": "evil", "directory": "~/.config/autostart", "command": "ls"}),
    ("write_file", {"path": "notes.txt", "cwd": "~/.local/bin", "code": "ls"}),
    ("write_file", {"path": Path("~/.zshrc")}), ("write_file", {"path": b"~/.gitconfig"}),
    ("write_file", {"path": "notes.txt,~/.zshrc"}), ("write_file", {"path": "notes.txt\n.envrc"}),
    ("write_file", {"ｐａｔｈ": "~/.zshrc"}), ("write_file", {"path": "~/.z\u200bshrc"}),
])
def test_any_tool_that_writes_is_checked_whatever_its_argument_is_called(name: str, args: dict) -> None:
    assert config_refusal(OPEN, name, args), (name, args)
    assert verdict(STACK, name, args).decision.refuses, (name, args)


@pytest.mark.parametrize(("name", "args"), [
    ("read_file", {"path": "~/.gitconfig"}), ("read_file", {"path": "~/.zshrc"}), ("list_files", {"path": "~/.config"}),
    ("search", {"query": "g/config"}), ("get_file", {"path": ".envrc"}), ("fs__read_file", {"path": "~/.gitconfig"}),
    ("readFile", {"path": "~/.yarnrc"}), ("cat", {"file": "~/.local/bin/ls"}),
    ("search_files", {"path": "~", "pattern": ".zshrc"}),
    ("view", {"path": "/etc/profile"}), ("write_file", {"path": "notes.txt", "content": "x"}),
    ("write_file", {"path": "src/app.py", "content": "print(1)"}), ("write_file", {"path": "docs/config.md"}),
    ("write_file", {"path": "config.toml"}), ("write_file", {"path": "src/configure.py"}),
    ("write_file", {"path": "/tmp/out/report.csv"}), ("save_document", {"filename": "~/Documents/plan.txt"}),
    ("run_command", {"command": "git status", "cwd": "/repo/.git"}),  # a command's directory is not written
    ("run_command", {"command": "ls", "env": {"FOO": "g/config"}}),
])
def test_reads_and_ordinary_writes_stay_allowed(name: str, args: dict) -> None:
    assert not config_refusal(OPEN, name, args), (name, args)


@pytest.mark.parametrize(("name", "args"), [
    ("write_file", {"path": "notes.txt", "content": "I changed ~/.zshrc"}),
    ("send_message", {"channel": "general", "text": "Update the app/config"}),
    ("send_email", {"to": "a@example.com", "subject": "~/.gitconfig tips", "body": "see ~/.bashrc"}),
    ("send_email", {"to": "a@example.com", "body": "https://github.com/u/dotfiles/blob/main/.zshrc"}),
    ("fetch_url", {"url": "https://api.example.com/v1/config"}), ("post_webpage", {"url": "https://x.com/.zshrc"}),
    ("update_record", {"label": "**bold** and/or *italic*"}), ("update_record", {"value": "What is 3*4/2?"}),
    ("update_record", {"query": "./*.py"}), ("update_record", {"pattern": "1/2 * 3"}),
    ("create_issue", {"title": "Fix .envrc loading", "description": "g/config is wrong"}),
])
def test_text_web_urls_and_globs_in_text_are_not_write_targets(name: str, args: dict) -> None:
    """What a tool writes or sends (an argument named as text), a web URL (a remote resource) and a glob in an
    argument not named as a path (a tool writes to the file ``open()`` names) are not files the call writes."""
    assert not config_refusal(OPEN, name, args), (name, args)


@pytest.mark.parametrize(("name", "args"), [
    ("save_note", {"note_path": "~/.zshrc"}),  # named as text and as a path: a path
    ("update_record", {"label": "I changed ~/.zshrc"}),  # the price of the structural rule: a path-shaped text
    ("download", {"url": "https://x.example/a", "dest": "~/.zshrc"}), ("fetch_url", {"url": "file:///home/u/.zshrc"}),
    ("write_file", {"path": "~/.z*rc"}), ("write_file", {"path": "~/.config/autostart/*"}),  # a path glob: as the shell
    ("create_file", {"directory": "~/.config", "name": "autostart/x.desktop"}),  # joined to the call's directory
    ("create_file", {"folder": "/repo/g", "filename": "config"}), ("save", {"doc": "../../etc/profile"}),
    # the documented prices of failing closed: a send tool is no reader, a non-shell tool's cwd is a path
    ("send_email", {"to": "a@example.com", "attachment": "~/.gitconfig"}), ("run_tests", {"cwd": "/repo/.git"}),
])
def test_path_arguments_texts_with_paths_and_joins_are_write_targets(name: str, args: dict) -> None:
    for guard in (OPEN, MINIMAL):
        assert config_refusal(guard, name, args), (guard.name, name, args)


def test_the_example_stack_keeps_its_answers_for_ordinary_calls() -> None:
    for name, args in [("read_file", {"path": "~/.gitconfig"}), ("write_file", {"path": "notes.txt", "content": "x"}),
                       ("write_file", {"path": "src/app.py", "content": "x"}), ("list_files", {"path": "."})]:
        assert verdict(STACK, name, args).decision is Decision.ALLOW, (name, args)


def test_read_only_tools_names_the_readers_exactly() -> None:
    only = ToolRuleGuard(deny_paths=["/etc/shadow"], read_only_tools=["fetch_*", "browse"])
    assert not config_refusal(only, "fetch_page", {"path": "~/.zshrc"})
    assert config_refusal(only, "read_file", {"path": "~/.zshrc"})  # no name is inferred once readers are named
    assert config_refusal(only, "x__fetch_page", {"path": "~/.zshrc"})  # granted as an allow list: whole name
    nobody = ToolRuleGuard(deny_paths=["/etc/shadow"], read_only_tools=[])
    assert config_refusal(nobody, "read_file", {"path": "~/.gitconfig"})


def test_read_only_tools_from_configuration(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace('unresolvable = "reject"',
                                       'unresolvable = "escalate"\nread_only_tools = ["send_email"]')
    (tmp_path / "r.toml").write_text(text)
    stack = load_stack(tmp_path / "r.toml")
    assert verdict(stack, "write_file", {"path": "~/.zshrc"}).decision is Decision.ESCALATE
    assert verdict(stack, "send_email", {"attachment": "~/.zshrc"}).decision is Decision.ALLOW


def test_the_decision_is_the_unresolvable_setting_as_in_the_shell() -> None:
    g = ToolRuleGuard(deny_paths=["/etc/shadow"], unresolvable="halt")
    assert verdict(g, "write_file", {"path": "~/.zshrc"}).decision is Decision.HALT
    assert verdict(g, "run_command", {"command": "echo x > ~/.zshrc"}).decision is Decision.HALT


def test_a_guard_without_structured_rules_reads_no_paths() -> None:
    """As for commands: a guard of name rules only (no deny_paths, deny_commands or allow_commands) reads neither
    commands nor paths, so both tools stay as they were."""
    names_only = ToolRuleGuard(allow=["write_file", "run_command"])
    assert verdict(names_only, "write_file", {"path": "~/.zshrc"}).decision is Decision.ALLOW
    assert verdict(names_only, "run_command", {"command": "echo x > ~/.zshrc"}).decision is Decision.ALLOW


@pytest.mark.parametrize(("name", "reader"), [
    ("read_file", True), ("get_file", True), ("list_files", True), ("search", True), ("view_image", True),
    ("fs__read_text_file", True), ("readFile", True), ("show_config", True), ("cat", True), ("find_files", True),
    ("write_file", False), ("read__file", False), ("get_or_create_file", False), ("read_file_and_save", False),
    ("search_replace", False), ("download_file", False), ("fetch_url", False), ("open_file", False),
    ("", False), ("__", False), ("ｒｅａｄ_file", True), ("read\u200b_file", True), ("list_then_delete", False),
    ("write_file.read", False), ("mail_send__read_inbox", False), ("github__get_file_contents", True),
    ("READ_FILE", True), ("readAndWrite", False), ("rеad_file", False), ("read" * 70, False),
])
def test_which_tools_only_read(name: str, reader: bool) -> None:
    assert reads_only(name) is reader, name


# ---- properties ---------------------------------------------------------------------------------------------------

_HOMES = ["~", "/home/u", "/root", "/Users/u", "C:\\Users\\u", "file:///home/u", "~u"]
_DIRS = ["proj", "/tmp/x", "a/b", "/srv/app", "~/work"]
_NAMES = st.sampled_from(["x", "ls", "evil", "hook", "pre-commit", "a.sh", "x.desktop"])


@st.composite
def config_targets(draw: st.DrawFn) -> str:
    """A CONFIG_FILES pattern instantiated: its leading ``*`` a home or a directory, its other ``*`` a name."""
    pattern = draw(st.sampled_from(CONFIG_FILES))
    if pattern.startswith("*"):
        rest = pattern[1:]
        head = draw(st.sampled_from(_HOMES + _DIRS))
        pattern = head + (rest if rest.startswith("/") else "/x" + rest)  # "*.gitconfig" -> <dir>/x.gitconfig
    path = pattern.replace("*", draw(_NAMES))
    return path.replace("/", "\\") if path.startswith("C:") else path


def respell(path: str, how: str) -> str:
    """One of the guard's known spellings of ``path``."""
    if how == "upper":
        return path.upper()
    if how == "dot":
        return path.replace("/", "/./", 1) if "/" in path else "./" + path
    if how == "dotdot":
        return path.replace("/", "/zz/../", 1) if "/" in path[1:] else "zz/../" + path
    if how == "percent":
        k = max(path.rfind("/"), path.rfind("\\")) + 1
        return path[:k] + "%{:02x}".format(ord(path[k])) + path[k + 1:] if k < len(path) else path
    if how == "url" and path.startswith("/"):
        return "file://" + path
    if how == "windows" and path.startswith("/"):
        return path.replace("/", "\\")
    return path


_SPELL = st.sampled_from(["plain", "upper", "dot", "dotdot", "percent", "url", "windows"])
_WRITERS = st.builds(lambda ns, verb, obj: ns + verb + obj, st.sampled_from(["", "fs__", "mcp.files/", "x:"]),
                     st.sampled_from(["write", "save", "create", "put", "update", "append", "store", "upload", "copy",
                                      "move", "export", "edit", "patch", "install"]),
                     st.sampled_from(["", "_file", "_document", "File", "_notes", "_to_disk"]))
_KEYS = st.sampled_from(["path", "file", "filename", "file_path", "dest", "target", "output", "location", "doc", "to",
                         "name_of_thing"])
_SHAPES = st.sampled_from(["value", "nested", "list", "key"])


def _args(key: str, value: str, shape: str) -> dict:
    return {"value": {key: value}, "nested": {"spec": {key: value}}, "list": {key: ["a.txt", value]},
            "key": {"files": {value: "content"}}}[shape]


@settings(max_examples=300, deadline=None)
@given(target=config_targets(), how=_SPELL, name=_WRITERS, key=_KEYS, shape=_SHAPES)
def test_property_a_write_the_shell_refuses_is_refused_through_any_writing_tool(target: str, how: str, name: str,
                                                                               key: str, shape: str) -> None:
    path = respell(target, how)
    for guard in (MINIMAL, OPEN):
        assert config_refusal(guard, name, _args(key, path, shape)), (guard.name, name, key, path)
        assert shell_refuses(guard, path), (guard.name, path)  # one answer: the shell refuses the same write


_COMPONENTS = st.sampled_from(["src", "docs", "app", "notes.txt", "main.py", "README.md", "data.json", "config.toml",
                               "settings", "build", "tmp", "out", "report.csv", "x", "bin", "lib", ".cache",
                               "configs", "my config", "profile.txt", "cron.txt", "config", ".git", "hooks",
                               ".local", "autostart", "environment.yml", "x.pth", "gitconfig.md", "bashrc.txt",
                               ".github", "etc", "profile.d"])


@settings(max_examples=300, deadline=None)
@given(head=st.sampled_from(["", "/tmp/", "~/", "/srv/", "./", "/home/u/"]),
       comps=st.lists(_COMPONENTS, min_size=1, max_size=4), name=_WRITERS, key=_KEYS)
def test_property_no_new_refusal_where_the_shell_allows_the_write(head: str, comps: list[str], name: str,
                                                                   key: str) -> None:
    """The differential the other way: on paths made of ordinary and near-miss components (``config`` inside a
    path, ``gitconfig.md``, ``.github``) the file tool refuses only where the shell does, so it adds no refusal the
    shell would not make; through an argument named as a path it refuses exactly where the shell does (``a/config``,
    ``x/.git`` by both). An argument not named as a path reads a bare word (``config``) as no file (the path reading's
    structural rule), so there it may allow what the shell refuses."""
    path = head + "/".join(comps)
    for guard in (MINIMAL, OPEN):
        file, shell = verdict(guard, name, {key: path}).decision.refuses, shell_refuses(guard, path)
        assert shell or not file, (guard.name, key, path)
        assert file == shell or not path_named(key), (guard.name, key, path)


_READERS = st.builds(lambda ns, verb, obj: ns + verb + obj, st.sampled_from(["", "fs__", "github__", "mcp.files/"]),
                     st.sampled_from(["read", "get", "list", "search", "find", "view", "show", "cat", "stat",
                                      "describe"]),
                     st.sampled_from(["", "_file", "_files", "File", "_text_file", "_contents", "_directory"]))


@settings(max_examples=200, deadline=None)
@given(target=config_targets(), name=_READERS, key=st.sampled_from(["path", "file", "filename", "doc", "pattern"]),
       out=st.sampled_from(["output", "dest", "save_to", "outputFile", "destination_path", "log_file", "to"]))
def test_property_a_reader_reads_any_config_file_but_writes_none(target: str, name: str, key: str, out: str) -> None:
    """A tool that only reads is not refused for reading a config file; its output argument is a write."""
    assert not config_refusal(MINIMAL, name, {key: target}), (name, key, target)
    assert config_refusal(MINIMAL, name, {key: "a.txt", out: target}), (name, out, target)
