"""The LiteLLM guardrail endpoint as an attacker meets it: bearer token, body and depth limits (413 /
400), duplicate JSON keys refused, bounded concurrency, and the trace-id contract (one run per
litellm_trace_id)."""

from __future__ import annotations

import json
import socket
import threading

import pytest

httpx = pytest.importorskip("httpx")

from agentguard import BaseGuard, Decision, Verdict  # noqa: E402
from agentguard.integrations.litellm import (  # noqa: E402
    GUARDRAIL_PATH,
    BodyError,
    GuardrailEndpoint,
    parse_body,
    serve_in_thread,
)
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402


def body(calls, trace="t1"):
    return {"input_type": "response", "litellm_trace_id": trace, "texts": [],
            "tool_calls": [{"id": str(i), "type": "function",
                            "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(calls)]}


@pytest.fixture()
def server():
    guard = ToolRuleGuard(arguments=[{"tool": "shell", "arg": "command", "forbid": r"rm\s+-rf"}])
    srv = serve_in_thread(GuardrailEndpoint(guard), token="tok", max_body=4096, max_depth=16, timeout_s=2)
    url = f"http://127.0.0.1:{srv.server_address[1]}{GUARDRAIL_PATH}"
    yield srv, url
    srv.shutdown()
    srv.server_close()


AUTH = {"Authorization": "Bearer tok"}


def raw(srv, head: bytes, payload: bytes = b"") -> bytes:
    with socket.create_connection(srv.server_address, timeout=5) as s:
        s.sendall(head + payload)
        return s.recv(4096)


def test_token_required_and_compared_exactly(server):
    srv, url = server
    b = body([("shell", {"command": "ls"})])
    assert httpx.post(url, json=b).status_code == 401
    assert httpx.post(url, json=b, headers={"Authorization": "Bearer tok2"}).status_code == 401
    assert httpx.post(url, json=b, headers={"Authorization": "bearer tok"}).status_code == 401
    assert httpx.post(url, json=b, headers=AUTH).json() == {"action": "NONE"}


def test_duplicate_keys_are_refused_not_last_wins(server):
    srv, url = server
    args = '{"command": "rm -rf /", "command": "ls"}'
    payload = json.dumps(body([("shell", {})])).replace('"arguments": "{}"', '"arguments": ' + json.dumps(args))
    r = httpx.post(url, content=payload, headers={**AUTH, "Content-Type": "application/json"})
    # the outer body has no duplicates; the arguments string does: refused, never "last one wins"
    assert r.status_code == 400 and "duplicate key 'command'" in r.json()["error"]
    outer = '{"input_type": "response", "tool_calls": [], "tool_calls": []}'
    r = httpx.post(url, content=outer, headers=AUTH)
    assert r.status_code == 400 and "duplicate key 'tool_calls'" in r.json()["error"]


def test_body_limits(server):
    srv, url = server
    assert httpx.post(url, content=b"x" * 5000, headers=AUTH).status_code == 413
    assert b" 413 " in raw(srv, f"POST {GUARDRAIL_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n"
                                f"Content-Length: 3000000000\r\n\r\n".encode())
    assert b" 400 " in raw(srv, f"POST {GUARDRAIL_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n"
                                f"Content-Length: -5\r\n\r\n".encode())
    deep = "[" * 100 + "]" * 100
    r = httpx.post(url, content=deep, headers=AUTH)
    assert r.status_code == 400 and "nested deeper" in r.json()["error"]
    assert httpx.post(url, content=b"\xff\xfe", headers=AUTH).status_code == 400


def test_parse_body_depth_is_counted_outside_strings():
    assert parse_body(b'{"a": "[[[[[[[[[[[[[[[[[[[["}', max_depth=2) == {"a": "[" * 20}
    with pytest.raises(BodyError):
        parse_body(b'{"a": {"b": {"c": 1}}}', max_depth=2)
    with pytest.raises(BodyError):
        parse_body(b'{"a": 1, "a": 2}')


def test_concurrency_is_bounded():
    started, release = threading.Event(), threading.Event()

    class Slow(BaseGuard):
        name = "slow"

        def check(self, context, proposal):
            started.set()
            release.wait(10)
            return Verdict.allow(self.name)

    srv = serve_in_thread(GuardrailEndpoint(Slow()), max_concurrency=1)
    url = f"http://127.0.0.1:{srv.server_address[1]}{GUARDRAIL_PATH}"
    try:
        first = threading.Thread(target=lambda: httpx.post(url, json=body([("a", {})]), timeout=20))
        first.start()
        assert started.wait(10)
        r = httpx.post(url, json=body([("b", {})]), timeout=20)  # waits its 5 s for a slot, then 503
        assert r.status_code == 503 and r.headers["Retry-After"] == "1"
        release.set()
        first.join(20)
    finally:
        release.set()
        srv.shutdown()
        srv.server_close()


def test_trace_id_contract_one_run_per_trace_id():
    """Same litellm_trace_id: one run (a stateful guard sees the history); a new id: a new run."""
    seen = []

    class Counter(BaseGuard):
        name = "counter"

        def check(self, context, proposal):
            seen.append((context.run_id, len(context.trace.steps)))
            return Verdict(Decision.REJECT, "third call in a run", self.name) if len(context.trace.steps) >= 2 \
                else Verdict.allow(self.name)

    ep = GuardrailEndpoint(Counter())
    for trace in ("conv-1", "conv-1", "conv-2", "conv-1"):
        out = ep.handle(body([("read", {})], trace=trace))
    assert seen == [("conv-1", 0), ("conv-1", 1), ("conv-2", 0), ("conv-1", 2)]
    assert out["action"] == "BLOCKED"


def test_api_key_header_and_security_headers(server):
    srv, url = server
    r = httpx.post(url, json=body([("shell", {"command": "ls"})]), headers={"x-api-key": "tok"})
    assert r.json() == {"action": "NONE"}
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"
    r = httpx.post(url, json=body([("shell", {"command": "ls"})]), headers={"x-api-key": "nope"})
    assert r.status_code == 401 and r.headers["x-frame-options"] == "DENY"
    assert httpx.get(url.rsplit("/beta", 1)[0] + "/health").json() == {"status": "ok"}  # public


def test_escalate_is_blocked_and_strategy_applies_through_the_pipeline():
    """No human can be asked through LiteLLM's API: an ESCALATE is BLOCKED. The configured strategy
    applies: under TT a refusal stops the run, and the trace's later requests are refused too."""
    from agentguard.core.audit import MemoryAuditSink

    asking = GuardrailEndpoint(ToolRuleGuard(escalate=["transfer_*"]))
    out = asking.handle(body([("transfer_funds", {"amount": 5})]))
    assert out["action"] == "BLOCKED" and "human approval" in out["blocked_reason"]
    sink = MemoryAuditSink()
    ep = GuardrailEndpoint(ToolRuleGuard(deny=["delete_*"]), strategy="TT", audit=sink)
    assert ep.handle(body([("read", {})], trace="t")) == {"action": "NONE"}
    assert ep.handle(body([("delete_all", {})], trace="t"))["action"] == "BLOCKED"
    later = ep.handle(body([("read", {})], trace="t"))
    assert later["action"] == "BLOCKED" and "halted" in later["blocked_reason"]
    assert ep.handle(body([("read", {})], trace="other")) == {"action": "NONE"}
    assert [r.decision for r in sink.records] == ["ALLOW", "REJECT", "HALT", "ALLOW"]
    assert {r.extra["adapter"] for r in sink.records} == {"litellm"}
