"""Guard-stack configuration: in code, from agentguard.toml / YAML, schema errors, registry, CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentguard import BaseGuard, Context, Decision, GuardStack, ToolCall, Verdict
from agentguard.config import GUARD_TYPES, build_stack, load_config, load_stack, parse_config, register_guard
from agentguard.core.errors import DependencyError, InputError
from agentguard.policies.rules import ArgumentRule, ToolRuleGuard

TOML = """
[stack]
name = "prod"
on_error = "reject"
timeout_s = 0.5

[recording]
path = "traces.jsonl"

[[guards]]
type = "tool-rules"
name = "no-deletes"
deny = ["delete_*"]
escalate = ["transfer_*"]

[[guards]]
type = "tool-rules"
name = "mail"
[[guards.arguments]]
tool = "send_email"
arg = "to"
match = '.+@example\\.com'
"""


def decide(stack, name, **args):
    return stack.check(Context(), ToolCall(name, args))


def test_stack_from_toml_behaves_like_the_same_stack_in_code(tmp_path):
    p = tmp_path / "agentguard.toml"
    p.write_text(TOML)
    cfg = load_config(p)
    assert cfg.recording_path == str(tmp_path / "traces.jsonl") and cfg.on_error is Decision.REJECT
    from_file = build_stack(cfg)
    in_code = GuardStack(
        [
            ToolRuleGuard(deny=["delete_*"], escalate=["transfer_*"], name="no-deletes"),
            ToolRuleGuard(
                arguments=[ArgumentRule("send_email", "to", match=r".+@example\.com")], name="mail"
            ),
        ],
        on_error="reject",
        timeout_s=0.5,
    )
    cases = [
        ("delete_file", {"path": "/"}),
        ("transfer_funds", {"amount": 5}),
        ("send_email", {"to": "x@evil.org"}),
        ("send_email", {"to": "x@example.com"}),
        ("read", {}),
    ]
    for name, args in cases:
        a, b = decide(from_file, name, **args), decide(in_code, name, **args)
        assert (a.decision, a.guard, a.reason) == (b.decision, b.guard, b.reason)
    assert [decide(from_file, n, **a).decision for n, a in cases] == [
        Decision.REJECT,
        Decision.ESCALATE,
        Decision.REJECT,
        Decision.ALLOW,
        Decision.ALLOW,
    ]
    v = decide(from_file, "delete_file")
    assert v.guard == "no-deletes"  # says which guard decided
    # "mail" is not asked: it can give nothing stricter than the REJECT in hand (GuardStack, session 24)
    assert [t["guard"] for t in v.details["verdicts"]] == ["no-deletes"]
    v = decide(from_file, "send_email", to="x@evil.org")
    assert [t["guard"] for t in v.details["verdicts"]] == ["no-deletes", "mail"]  # both asked, in order


def test_yaml_equivalent(tmp_path):
    p = tmp_path / "agentguard.yaml"
    p.write_text("guards:\n  - type: tool-rules\n    deny: [delete_*]\n")
    assert decide(load_stack(p), "delete_x").decision is Decision.REJECT


@pytest.mark.parametrize(
    "text, message",
    [
        ("[[guards]]\ntype = 'polcy'\n", "guards[0].type: unknown guard type 'polcy'"),
        (
            "[stack]\non_error = 'allow'\n[[guards]]\ntype='tool-rules'\n",
            "on_error must be reject, escalate or halt",
        ),
        (
            "[stack]\ntimeout_s = -1\n[[guards]]\ntype='tool-rules'\n",
            "stack.timeout_s: expected a positive number",
        ),
        ("[stak]\nname='x'\n", "unknown top-level key(s) stak"),
        ("[stack]\nname='x'\n", "no guards"),
        ("[[guards]]\nname='x'\n", "guards[0]: missing 'type'"),
        (
            "[[guards]]\ntype='tool-rules'\ndeny=['a']\nbogus=1\n",
            "guards[0]: bad parameters for 'tool-rules'",
        ),
        (
            "[[guards]]\ntype='tool-rules'\n[[guards.arguments]]\ntool='a'\narg='b'\nmatch='('\n",
            "bad regular expression",
        ),
        ("[[guards]]\ntype='tool-rules'\n[[guards]]\ntype='tool-rules'\n", "guard names must be unique"),
        ("[[guards]]\ntype='python'\n", "needs factory"),
        ("guards = [\n", "not valid TOML"),
    ],
)
def test_bad_files_give_one_line_errors(tmp_path, text, message):
    p = tmp_path / "agentguard.toml"
    p.write_text(text)
    with pytest.raises(InputError) as ei:
        load_stack(p)
    msg = str(ei.value)
    assert message in msg and "\n" not in msg and str(p) in msg


def test_missing_mechanism_is_a_clear_dependency_error():
    register_guard("not-installed", "agentguard_nowhere.mod:Guard", replace=True)
    try:
        with pytest.raises(DependencyError, match="cannot import agentguard_nowhere"):
            build_stack({"guards": [{"type": "not-installed"}]})
    finally:
        GUARD_TYPES.pop("not-installed")


class Fixed(BaseGuard):
    def __init__(self, decision="allow", name="fixed"):
        self.decision, self.name = Decision.parse(decision), name

    def check(self, context, proposal):
        return Verdict(self.decision, "fixed", self.name)


def test_python_factory_and_registry():
    s = build_stack({"guards": [{"type": "python", "factory": f"{__name__}:Fixed", "decision": "halt"}]})
    assert decide(s, "x").decision is Decision.HALT
    register_guard("fixed-test", Fixed, replace=True)
    try:
        s = build_stack(parse_config({"guards": [{"type": "fixed-test", "decision": "reject", "name": "f"}]}))
        assert decide(s, "x").guard == "f"
        with pytest.raises(InputError, match="already registered"):
            register_guard("fixed-test", Fixed)
    finally:
        GUARD_TYPES.pop("fixed-test")


def test_policy_guard_type_is_lazy():
    """Mechanism guards (and framework SDKs) are imported only when a configuration uses them."""
    assert GUARD_TYPES["policy"] == "agentguard.policies:ToolCallGuard"
    code = (
        "import agentguard.config, sys; "
        "print(*[m in sys.modules for m in ('langchain', 'mcp', 'agents', 'agentguard.policies')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False False False"


def test_cli_check_config(tmp_path, capsys):
    from agentguard.cli import main

    p = tmp_path / "agentguard.toml"
    p.write_text(TOML)
    main(["check-config", str(p)])
    out = capsys.readouterr().out
    assert "2 guard(s)" in out and "no-deletes" in out
    p.write_text("[[guards]]\ntype='nope'\n")
    with pytest.raises(SystemExit) as ei:
        main(["check-config", str(p)])
    err = capsys.readouterr().err
    assert ei.value.code == 2 and err.startswith("error: ") and "unknown guard type 'nope'" in err


def test_rule_guard_ignores_non_tool_proposals_and_validates():
    g = ToolRuleGuard(deny=["x"])
    assert g.check(Context(), "some text").decision is Decision.ALLOW
    with pytest.raises(InputError):
        ToolRuleGuard(decision="allow")
    with pytest.raises(InputError):
        ArgumentRule("t", "a")
    assert ToolRuleGuard(allow=["read_*"]).check(Context(), ToolCall("write", {})).decision is Decision.REJECT
    assert ToolRuleGuard(allow=["read_*"]).check(Context(), ToolCall("read_x", {})).decision is Decision.ALLOW


def test_server_table_may_share_the_file():
    from agentguard.config import parse_config

    cfg = parse_config({"server": {"token": "x"}, "guards": [{"type": "tool-rules", "deny": ["rm"]}]})
    assert cfg is not None


def test_recording_state_from_the_guard_file(tmp_path):
    """``[recording] state`` names the state function adapters record (and guards see): the built-in
    call history or ``package.module:attr``; ``load_recording`` sets up any adapter from the file."""
    from agentguard.config import load_config
    from agentguard.core import InputError as _InputError
    from agentguard.integrations.recording import load_recording
    from agentguard.spec.history import history_state

    f = tmp_path / "g.toml"
    f.write_text('[recording]\npath = "t.jsonl"\nstate = "history"\n\n[[guards]]\ntype = "tool-rules"\n')
    assert load_config(f).recording_state == "history"
    stack, rec, state_fn = load_recording(f)
    assert state_fn is history_state and rec is not None and rec.path == str(tmp_path / "t.jsonl")
    _, rec2, fn2 = load_recording(f, record=str(tmp_path / "o.jsonl"), state="agentguard.spec.history:history_state")
    assert rec2.path.endswith("o.jsonl") and fn2 is history_state
    for bad, words in [("state = 3", "recording.state"), ('state = "nope"', "unknown state function 'nope'")]:
        f.write_text(f"[recording]\n{bad}\n\n[[guards]]\ntype = \"tool-rules\"\n")
        with pytest.raises(_InputError, match=words):
            load_recording(f)
