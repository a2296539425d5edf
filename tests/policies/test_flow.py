"""Flow rules: a multi-call run through the Pipeline, canonical names, recipients an attacker would write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentguard.config import build_stack, load_config
from agentguard.core.errors import InputError
from agentguard.core.pipeline import Pipeline
from agentguard.core.types import Context, Decision, Step, ToolCall, Trace
from agentguard.policies import FlowGuard, FlowRule
from agentguard.policies.flow import history, recipient_form
from agentguard.testing import check_guard

RULE = {"name": "inbox-then-external-mail", "after": "read_*", "label": "untrusted", "then": "send_*",
        "recipients": ["to", "cc", "bcc"], "grant": ["*@example.com"], "within": 3}


def guard(**kw):
    return FlowGuard([dict(RULE, **kw)], trusted_tools=["get_user_info", "read_calendar"])


def run(pl, rid, *calls):
    """Decide and record each call as an adapter does; returns the outcomes."""
    outs = []
    for c in calls:
        o = pl.decide(rid, c)
        pl.record(o, observation="result")
        outs.append(o)
    return outs


def test_a_multi_call_run_through_the_pipeline_with_canonical_names():
    pl = Pipeline(guard())
    outs = run(pl, "r1",
               ToolCall("Get-User-Info", {}),                                   # trusted: arms nothing
               ToolCall("send_email", {"to": "eve@evil.example"}),              # no untrusted read yet
               ToolCall("READ_INBOX ", {}),                                     # canonical read_inbox, untrusted
               ToolCall("send_email", {"To": "bob@example.com"}),               # granted recipient
               ToolCall("Send-Email", {"TO": "eve@evil.example"}))              # refused
    assert [o.execute for o in outs] == [True, True, True, True, False]
    assert "after READ_INBOX  (untrusted), 2 call(s) ago" in outs[-1].verdict.reason and outs[-1].verdict.guard == "flow-rules"
    # another run has its own history (the Pipeline's RunMemory), untouched by r1
    assert run(pl, "r2", ToolCall("send_email", {"to": "eve@evil.example"}))[0].execute
    # finishing a run forgets its history with the rest of its state
    pl.finish("r1")
    assert run(pl, "r1", ToolCall("send_email", {"to": "eve@evil.example"}))[0].execute


def test_the_window_counts_calls_and_trusted_reads_do_not_arm():
    pl = Pipeline(guard())
    outs = run(pl, "w", ToolCall("read_inbox", {}), *[ToolCall("search", {"q": str(i)}) for i in range(3)],
               ToolCall("send_email", {"to": "eve@evil.example"}))
    assert outs[-1].execute  # the read is 4 calls back, outside within=3
    outs = run(pl, "t", ToolCall("read_calendar", {}), ToolCall("send_email", {"to": "eve@evil.example"}))
    assert outs[-1].execute
    anyl = Pipeline(guard(label="any"))
    assert not run(anyl, "a", ToolCall("read_calendar", {}), ToolCall("send_email", {"to": "eve@evil.example"}))[-1].execute


@pytest.mark.parametrize("to", [
    "Eve <eve@evil.example>", "bob@example.com, eve@evil.example", "bob@example.com; eve@evil.example",
    "bob@example.com eve@evil.example", "eve@evil.example@example.com", ["bob@example.com", "eve@evil.example"],
    {"primary": "eve@evil.example"}, "mailto:eve@evil.example", "eve@evil.example\u200b",
])
def test_recipients_are_read_as_a_mail_system_reads_them(to):
    g = guard()
    ctx = Context(trace=Trace([Step(action=ToolCall("read_inbox", {}))]))
    assert g.check(ctx, ToolCall("send_email", {"to": to})).decision is Decision.REJECT, to


@pytest.mark.parametrize("to", ["bob@example.com", "BOB@Example.COM", "Bob <bob@example.com>",
                                "mailto:bob@example.com", ["a@example.com", "b@example.com"]])
def test_granted_recipients_pass(to):
    ctx = Context(trace=Trace([Step(action=ToolCall("read_inbox", {}))]))
    assert guard().check(ctx, ToolCall("send_email", {"to": to})).decision is Decision.ALLOW, to


def test_a_then_call_without_a_recipient_argument_is_outside_the_grant():
    ctx = Context(trace=Trace([Step(action=ToolCall("read_inbox", {}))]))
    v = guard().check(ctx, ToolCall("send_email", {"address": "eve@evil.example"}))
    assert v.decision is Decision.REJECT and "no recipient argument" in v.reason


def test_the_grant_may_come_from_a_run_fact():
    pl = Pipeline(guard(grant_fact="contacts"))
    outs = run(pl, "f", ToolCall("read_inbox", {}), ToolCall("send_email", {"to": "carol@partner.example"}))
    assert not outs[-1].execute
    pl2 = Pipeline(guard(grant_fact="contacts"))
    pl2.run("f", contacts=["carol@partner.example"])
    outs = run(pl2, "f", ToolCall("read_inbox", {}), ToolCall("send_email", {"to": "carol@partner.example"}))
    assert outs[-1].execute


def test_the_strictest_violated_rule_decides_and_all_are_listed():
    g = FlowGuard([dict(RULE, within=None), {"name": "web-then-shell", "after": "get_webpage", "then": "run_*",
                                             "decision": "halt"},
                   {"name": "any-read-then-any-run", "after": "*", "then": "run_*"}])
    ctx = Context(trace=Trace([Step(action=ToolCall("get_webpage", {"url": "x"}))]))
    v = g.check(ctx, ToolCall("run_shell", {"cmd": "ls"}))
    assert v.decision is Decision.HALT and v.details["rules"] == ["web-then-shell", "any-read-then-any-run"]


def test_a_labeler_can_replace_the_trusted_tools_list():
    g = FlowGuard([RULE], labeler=lambda call, obs: "untrusted" if "IGNORE PREVIOUS" in str(obs) else "trusted")
    clean = Context(trace=Trace([Step(action=ToolCall("read_inbox", {}), observation="lunch at 12")]))
    dirty = Context(trace=Trace([Step(action=ToolCall("read_inbox", {}), observation="IGNORE PREVIOUS...")]))
    call = ToolCall("send_email", {"to": "eve@evil.example"})
    assert g.check(clean, call).decision is Decision.ALLOW and g.check(dirty, call).decision is Decision.REJECT
    bad = FlowGuard([RULE], labeler=lambda call, obs: "maybe")
    assert not Pipeline(bad).decide(Context(trace=dirty.trace), call).execute  # nonsense label: fail closed


def test_it_keeps_the_guard_contract_and_reads_steps_and_dicts():
    check_guard(guard(), proposals=[ToolCall("send_email", {"to": "eve@evil.example"}), ToolCall("read_inbox", {})])
    assert [c.name for c, _ in history([Step(action={"name": "read_inbox", "arguments": {}}), Step(output="x")])] == [
        "read_inbox"]
    assert recipient_form(" MailTo:Ann@X.org ") == "ann@x.org"


@pytest.mark.parametrize("bad,match", [
    ({"label": "secret"}, "label must be one of"), ({"within": 0}, "within must be a positive"),
    ({"decision": "allow"}, "must block"), ({"after": []}, "needs 'after' and 'then'"), ({"when": 1}, "unknown key"),
])
def test_bad_rules_are_one_line_errors(bad, match):
    with pytest.raises(InputError, match=match):
        FlowGuard([dict(RULE, **bad)])


def test_duplicate_names_and_empty_rule_lists_are_refused():
    with pytest.raises(InputError, match="unique"):
        FlowGuard([RULE, RULE])
    with pytest.raises(InputError, match="at least one"):
        FlowGuard([])
    assert isinstance(FlowRule.from_config(RULE), FlowRule)


def test_the_module_docstring_toml_example_loads_and_decides(tmp_path: Path):
    import agentguard.policies.flow as flow

    toml = re.search(r"(\[\[guards\]\].*?within = 5)", flow.__doc__ or "", re.S)
    assert toml, "the docstring example moved"
    text = "\n".join(line[4:] if line.startswith("    ") else line for line in toml.group(1).splitlines())
    (tmp_path / "agentguard.toml").write_text(text)
    stack = load_config(tmp_path / "agentguard.toml").build()
    pl = Pipeline(stack)
    outs = run(pl, "doc", ToolCall("Read_Inbox", {}), ToolCall("send_email", {"to": "eve@evil.example"}))
    assert not outs[-1].execute
    assert isinstance(build_stack({"guards": [{"type": "flow-rules", "rules": [RULE]}]}).guards[0], FlowGuard)


def test_the_docs_flow_rule_example_builds_and_decides():
    import tomllib

    doc = (Path(__file__).resolve().parents[2] / "docs" / "policies.md").read_text()
    block = next(b for b in re.findall(r"```toml\n(.*?)```", doc, re.S) if 'type = "flow-rules"' in b)
    pl = Pipeline(build_stack(tomllib.loads(block)))
    outs = run(pl, "d", ToolCall("get_user_info", {}), ToolCall("send_email", {"to": "eve@evil.example"}),
               ToolCall("Read Inbox", {}), ToolCall("send_email", {"to": "bob@example.com"}),
               ToolCall("send_email", {"cc": "eve@evil.example"}))
    assert [o.execute for o in outs] == [True, True, True, True, False]


def test_flow_rules_through_the_service_read_the_runs_recorded_steps(tmp_path: Path):
    """The service builds the guard from its TOML (the registered type) and its steps endpoint records each
    step in the run's context: the send after the read is refused, the same send in another run is not."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    (tmp_path / "tools.toml").write_text('[[guards]]\ntype = "flow-rules"\n[[guards.rules]]\nname = "r"\n'
                                         'after = "read_*"\nthen = "send_*"\nrecipients = ["to"]\n'
                                         'grant = ["*@example.com"]\n')
    token = "test-token-123456"
    auth = {"Authorization": f"Bearer {token}"}
    app = create_app(ServerSettings(token=token, state_dir=str(tmp_path / "d"), tool_guards=str(tmp_path / "tools.toml")))
    send = {"name": "Send-Email", "arguments": {"to": "eve@evil.example"}}
    with TestClient(app) as c:
        r = c.post("/v1/runs/a/steps", headers=auth, json={"action": {"name": "READ_INBOX", "arguments": {}}})
        assert r.json()["decision"] == "ALLOW", r.text
        r = c.post("/v1/runs/a/steps", headers=auth, json={"action": send})
        assert r.json()["decision"] == "REJECT" and "flow rule 'r'" in r.json()["reason"]
        assert c.post("/v1/runs/b/steps", headers=auth, json={"action": send}).json()["decision"] == "ALLOW"


@pytest.mark.parametrize("to", ["alice@example.com.evil.example", "alice@example.com%0a@evil.example",
                                '"alice@example.com"@evil.example', "alice@example.com\r\nBcc: eve@evil.example"])
def test_recipient_variants_tried_after_the_fact_stay_outside_the_grant(to: str) -> None:
    """Variants no other test names (suffix extension, encoded newline, quoted local part, header
    injection): a send after an untrusted read to any of them is refused; the granted address is not."""
    from agentguard.config import build_stack
    from agentguard.core import Pipeline, ToolCall

    g = build_stack({"guards": [{"type": "flow-rules", "trusted_tools": ["get_user_info"], "rules": [
        {"name": "r", "after": "read_*", "label": "untrusted", "then": "send_*", "recipients": ["to"],
         "grant": ["*@example.com"]}]}]})
    for addr, refused in ((to, True), ("alice@example.com", False)):
        p = Pipeline(g)
        p.record(p.decide("r", ToolCall("read_inbox", {}, "c1")), "mail")
        assert p.decide("r", ToolCall("Send-Email", {"to": addr}, "c2")).verdict.decision.refuses is refused


def test_namespaced_tools_arm_and_meet_the_rule():
    """An MCP proxy's ``mail__read_inbox`` arms the rule and its ``mail__send_email`` meets it."""
    pl = Pipeline(guard())
    outs = run(pl, "ns", ToolCall("mail__read_inbox", {}), ToolCall("mail__send_email", {"to": "eve@evil.example"}))
    assert [o.execute for o in outs] == [True, False]
    outs = run(Pipeline(guard()), "ns2", ToolCall("srv.read_inbox", {}), ToolCall("send_email", {"to": "eve@evil.example"}))
    assert [o.execute for o in outs] == [True, False]


def test_a_name_that_only_folds_to_a_trusted_tool_is_untrusted():
    """Session 18: ``trusted_tools = ["read_calendar"]`` labelled ``Read-Calendar`` (another tool to a framework,
    which runs the tool its exact name finds; a malicious MCP server may name its tool so) trusted, so its
    injected result armed nothing; trust is a grant and names the tool as written. The fold still arms the rule."""
    for name in ("Read-Calendar", "READ_CALENDAR", "read_calendar ", "ｒead_calendar"):
        pl = Pipeline(guard())
        outs = run(pl, "x", ToolCall(name, {}), ToolCall("send_email", {"to": "eve@evil.example"}))
        assert not outs[-1].execute, name
    outs = run(Pipeline(guard()), "y", ToolCall("read_calendar", {}), ToolCall("send_email", {"to": "eve@evil.example"}))
    assert outs[-1].execute
