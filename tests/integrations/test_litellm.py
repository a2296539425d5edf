"""LiteLLM generic guardrail endpoint, over HTTP on loopback, with LiteLLM's documented request schema."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from agentguard import BaseGuard, Decision, GuardStack, Verdict, read_traces
from agentguard.integrations.litellm import GUARDRAIL_PATH, GuardrailEndpoint, serve_in_thread
from agentguard.integrations.recording import TraceRecorder
from agentguard.policies.rules import ToolRuleGuard


def policy():
    return GuardStack(
        [
            ToolRuleGuard(deny=["delete_*"], name="no-deletes"),
            ToolRuleGuard(
                arguments=[{"tool": "send_email", "arg": "to", "match": r".+@example\.com"}],
                name="internal-mail",
            ),
        ]
    )


def litellm_body(tool_calls=(), texts=(), input_type="response", trace="trace-1"):
    """A body with every field of LiteLLM's GenericGuardrailAPIRequest (model_dump of its pydantic model)."""
    return {
        "input_type": input_type,
        "litellm_call_id": "call-1",
        "litellm_trace_id": trace,
        "structured_messages": None,
        "images": None,
        "tools": None,
        "texts": list(texts),
        "request_data": {"user_api_key_hash": "h", "user_api_key_team_id": "t"},
        "request_headers": None,
        "litellm_version": "1.106.2",
        "additional_provider_specific_params": {},
        "tool_calls": [
            {"id": f"tc{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(tool_calls)
        ],
    }


@pytest.fixture
def endpoint(tmp_path):
    rec = TraceRecorder(tmp_path / "t.jsonl")
    ep = GuardrailEndpoint(policy(), recorder=rec)
    srv = serve_in_thread(ep)
    url = f"http://127.0.0.1:{srv.server_address[1]}{GUARDRAIL_PATH}"
    yield url, ep, rec
    srv.shutdown()
    srv.server_close()


def test_blocked_and_none_over_http(endpoint):
    url, ep, rec = endpoint
    with httpx.Client() as http:
        r = http.post(url, json=litellm_body([("delete_file", {"path": "/"})]))
        assert r.status_code == 200 and r.json()["action"] == "BLOCKED"
        assert "no-deletes" in r.json()["blocked_reason"]
        r = http.post(url, json=litellm_body([("send_email", {"to": "bob@evil.org", "body": "hi"})]))
        assert r.json()["action"] == "BLOCKED" and "internal-mail" in r.json()["blocked_reason"]
        r = http.post(url, json=litellm_body([("send_email", {"to": "bob@example.com", "body": "hi"})]))
        assert r.json() == {"action": "NONE"}
        r = http.post(url, json=litellm_body(texts=["hello"], input_type="request"))
        assert r.json() == {"action": "NONE"}
        assert http.get(url.rsplit("/beta", 1)[0] + "/health").json()["status"] == "ok"
    ctx = ep.pipeline.run("trace-1").context
    assert [s.signals["decision"] for s in ctx.trace.steps] == [
        Decision.REJECT,
        Decision.REJECT,
        Decision.ALLOW,
    ]


def test_malformed_body_is_blocked_never_none(endpoint):
    url, ep, _ = endpoint
    with httpx.Client() as http:
        for r in (http.post(url, content=b"{not json"),
                  http.post(url, json={**litellm_body(), "input_type": "sideways"})):
            assert r.status_code == 200 and r.json()["action"] == "BLOCKED" and "(400)" in r.json()["blocked_reason"]
        r = http.post(url, json={**litellm_body(trace="bad-args"),
                                 "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": "{oops"}}]})
        assert r.status_code == 200 and r.json()["action"] == "BLOCKED" and "not strict JSON" in r.text
    # a call with unreadable arguments is refused by the Pipeline: recorded in its run like any refusal
    [step] = ep.pipeline.run("bad-args").context.trace.steps
    assert step.signals["decision"] is not Decision.ALLOW


def test_agent_loop_behind_guardrail_never_runs_forbidden_tool(endpoint, tmp_path):
    """An agent loop as LiteLLM's post_call hook drives it: the model's tool calls go to the guardrail,
    and the client runs a tool only when the guardrail answers NONE (LiteLLM raises on BLOCKED)."""
    url, ep, rec = endpoint
    effects = []
    tools = {
        "delete_file": lambda path: effects.append(("delete", path)),
        "send_email": lambda to, body: effects.append(("mail", to)),
    }
    scripted = [
        [("send_email", {"to": "ann@example.com", "body": "report"})],
        [("delete_file", {"path": "/srv"})],
    ]
    with httpx.Client() as http:
        for turn in scripted:
            verdict = http.post(url, json=litellm_body(turn, trace="run-7")).json()
            if verdict["action"] == "NONE":
                for name, args in turn:
                    tools[name](**args)
    assert effects == [("mail", "ann@example.com")]
    rec.finish_all()
    traces = {t.run_id: t for t in read_traces(str(tmp_path / "t.jsonl"))}
    assert traces["run-7"].labels["blocked"] == 1 and len(traces["run-7"].steps) == 2


def test_text_guard_intervenes_and_guard_error_blocks():
    class Redact(BaseGuard):
        name = "redact"

        def check(self, context, proposal):
            t = proposal.output or ""
            return (
                Verdict(Decision.MODIFY, "redacted", action=t.replace("4111", "****"))
                if "4111" in t
                else Verdict.allow()
            )

    class Boom(BaseGuard):
        name = "boom"

        def check(self, context, proposal):
            raise RuntimeError("down")

    ep = GuardrailEndpoint(ToolRuleGuard(deny=["x"]), text_guard=Redact())
    assert ep.handle(litellm_body(texts=["card 4111", "ok"])) == {
        "action": "GUARDRAIL_INTERVENED",
        "texts": ["card ****", "ok"],
    }
    out = GuardrailEndpoint(Boom()).handle(litellm_body([("send_email", {"to": "a@example.com"})]))
    assert out["action"] == "BLOCKED" and "down" in out["blocked_reason"]


def test_real_litellm_generic_guardrail_client(endpoint):
    """LiteLLM's own GenericGuardrailAPI hook as the client (runs only where litellm is installed)."""
    mod = pytest.importorskip("litellm.proxy.guardrails.guardrail_hooks.generic_guardrail_api")
    url, _, _ = endpoint
    g = mod.GenericGuardrailAPI(api_base=url.rsplit(GUARDRAIL_PATH, 1)[0], guardrail_name="agentguard")

    def tc(name, args):
        return [{"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]

    async def main():
        ok = await g.apply_guardrail(
            inputs={"texts": ["hi"], "tool_calls": tc("send_email", {"to": "a@example.com"})},
            request_data={},
            input_type="response",
        )
        with pytest.raises(Exception, match="no-deletes"):
            await g.apply_guardrail(
                inputs={"texts": [], "tool_calls": tc("delete_file", {"path": "/"})},
                request_data={},
                input_type="response",
            )
        return ok

    assert asyncio.run(main())["texts"] == ["hi"]


def test_cli_litellm_guardrail_server(tmp_path):
    """`agentguard litellm-guardrail --config ... --port 0` serves; traces land in [recording]."""
    import re
    import subprocess
    import sys

    cfg = tmp_path / "agentguard.toml"
    cfg.write_text('[recording]\npath = "t.jsonl"\n[[guards]]\ntype = "tool-rules"\ndeny = ["delete_*"]\n')
    import os

    (tmp_path / "token").write_text("s3cret\n")
    env = {k: v for k, v in os.environ.items() if k != "AGENTGUARD_TOKEN"}
    no_token = subprocess.run([sys.executable, "-m", "agentguard", "litellm-guardrail", "--guards", str(cfg)],
                              capture_output=True, text=True, env=env, timeout=120)
    assert no_token.returncode == 2 and no_token.stderr.startswith("error: no bearer token")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentguard", "litellm-guardrail", "--guards", str(cfg), "--port", "0",
         "--token-file", str(tmp_path / "token")],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)(/beta/litellm_basic_guardrail_api)", line)
        assert m, line
        url = f"http://127.0.0.1:{m.group(1)}{m.group(2)}"
        body = litellm_body([("delete_file", {"path": "/"})])
        anon = httpx.post(url, json=body, timeout=10).json()  # no token: refused as BLOCKED, not decided
        assert anon["action"] == "BLOCKED" and "(401)" in anon["blocked_reason"]
        r = httpx.post(url, json=body, timeout=10, headers={"Authorization": "Bearer s3cret"})
        assert r.json()["action"] == "BLOCKED" and "delete_file is denied" in r.json()["blocked_reason"]
    finally:
        proc.terminate()
        proc.wait(10)
    [trace] = read_traces(str(tmp_path / "t.jsonl"))
    assert trace.run_id == "trace-1" and trace.steps[0].signals["decision"] == Decision.REJECT


def test_records_the_state_each_call_was_decided_in(tmp_path):
    """With ``state_fn`` each recorded step has the state its own call was decided in (two calls of one
    request each get theirs), so the traces can be learned from (docs/recipe.md)."""
    from agentguard.spec.history import history_state

    rec = TraceRecorder(tmp_path / "t.jsonl")
    ep = GuardrailEndpoint(policy(), recorder=rec, state_fn=history_state)
    ep.handle(litellm_body([("send_email", {"to": "a@example.com", "body": "x"}), ("delete_file", {"path": "/"})]))
    ep.handle(litellm_body([("send_email", {"to": "b@example.com", "body": "y"})]))
    rec.finish_all()
    [t] = read_traces(str(tmp_path / "t.jsonl"))
    assert [s.state["call"]["tool"] for s in t.steps] == ["send_email", "delete_file", "send_email"]
    assert [s.action.name for s in t.steps] == ["send_email", "delete_file", "send_email"]
    assert t.steps[2].state["tools"] == ["send_email"] and t.steps[2].state["refused"] == ["delete_file"]
