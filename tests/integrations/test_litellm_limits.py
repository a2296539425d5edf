"""The LiteLLM guardrail endpoint as an attacker meets it: bearer token, body and depth limits, duplicate
JSON keys refused, bounded concurrency, and the trace-id contract (one run per litellm_trace_id). Every
refusal of a guardrail request is BLOCKED with HTTP 200 (never an HTTP error, which LiteLLM may read as
"proceed": ``fail_on_error: false``, ``unreachable_fallback: fail_open``)."""

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


def blocked(r, status, why=""):
    """A refusal of the guardrail request: HTTP 200, BLOCKED, naming the status it stands for."""
    assert r.status_code == 200, r.text
    assert r.json()["action"] == "BLOCKED" and f"({status})" in r.json()["blocked_reason"], r.text
    assert why in r.json()["blocked_reason"], r.text
    return True


def test_token_required_and_compared_exactly(server):
    srv, url = server
    b = body([("shell", {"command": "ls"})])
    assert blocked(httpx.post(url, json=b), 401, "missing bearer token")
    assert blocked(httpx.post(url, json=b, headers={"Authorization": "Bearer tok2"}), 401)
    assert blocked(httpx.post(url, json=b, headers={"Authorization": "bearer tok"}), 401)
    assert httpx.post(url, json=b, headers=AUTH).json() == {"action": "NONE"}
    assert httpx.get(url.rsplit("/beta", 1)[0] + "/other").status_code == 401  # other paths: HTTP errors


def test_duplicate_keys_are_refused_not_last_wins(server):
    srv, url = server
    args = '{"command": "rm -rf /", "command": "ls"}'
    payload = json.dumps(body([("shell", {})])).replace('"arguments": "{}"', '"arguments": ' + json.dumps(args))
    r = httpx.post(url, content=payload, headers={**AUTH, "Content-Type": "application/json"})
    # the outer body has no duplicates; the arguments string does: refused, never "last one wins"
    assert r.status_code == 200 and r.json()["action"] == "BLOCKED" and "duplicate key 'command'" in r.text
    outer = '{"input_type": "response", "tool_calls": [], "tool_calls": []}'
    assert blocked(httpx.post(url, content=outer, headers=AUTH), 400, "duplicate key 'tool_calls'")


def test_body_limits(server):
    srv, url = server
    assert blocked(httpx.post(url, content=b"x" * 5000, headers=AUTH), 413)
    head = f"POST {GUARDRAIL_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n".encode()
    got = raw(srv, head + b"Content-Length: 3000000000\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 200 ") and b'"BLOCKED"' in got and b"(413)" in got, got
    # a negative length is a framing error the HTTP parser answers itself (400) before any app runs; LiteLLM's
    # client (httpx) never sends one
    assert raw(srv, head + b"Content-Length: -5\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    deep = "[" * 100 + "]" * 100
    assert blocked(httpx.post(url, content=deep, headers=AUTH), 400, "nested deeper")
    assert blocked(httpx.post(url, content=b"\xff\xfe", headers=AUTH), 400)


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
        r = httpx.post(url, json=body([("b", {})]), timeout=20)  # waits its 5 s for a slot, then refused
        assert blocked(r, 503, "over the limit") and r.headers["Retry-After"] == "1"
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
    assert blocked(r, 401) and r.headers["x-frame-options"] == "DENY"
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


def test_a_guard_slower_than_the_deadline_is_refused_and_audited_before_litellm_times_out():
    """Red team (pass 3): a slow guard had no deadline on the HTTP path: LiteLLM's own client timeout answered,
    and LiteLLM configured ``fail_on_error: false`` proceeds without the guardrail on that error. Now what is
    not decided within ``timeout_s`` is BLOCKED through the Pipeline (audited), with HTTP 200."""
    release = threading.Event()
    records = []

    class Sink:
        def write(self, rec):
            records.append(rec)

    class Slow(BaseGuard):
        name = "slow"

        def check(self, context, proposal):
            release.wait(10)
            return Verdict.allow(self.name)

    srv = serve_in_thread(GuardrailEndpoint(Slow(), audit=Sink()), timeout_s=0.5)
    url = f"http://127.0.0.1:{srv.server_address[1]}{GUARDRAIL_PATH}"
    try:
        r = httpx.post(url, json=body([("a", {}), ("b", {})]), timeout=5)
        assert r.status_code == 200 and r.json()["action"] == "BLOCKED", r.text
        assert "no decision within 0.5 s" in r.json()["blocked_reason"]
        assert [(rec.decision, rec.call["name"]) for rec in records] == [("REJECT", "a"), ("REJECT", "b")]
    finally:
        release.set()
        srv.shutdown()
        srv.server_close()
