"""Red team (session 21): the LiteLLM guardrail judged a call's arguments as the model spelled them, while the client
that runs it reads them through its own lax validation: the OpenAI Agents SDK's function tool (a typical client of
LiteLLM's proxy) ran ``{"dry_run": "off", "keep": "00"}`` as ``dry_run=False, keep=0`` and ``{}`` as the declared
default ``path="/"``, none of which the guard saw. A call of a tool the request declares is now refused unless its
arguments already have the declared types, and judged with the declared defaults; the recipe's guardrail file sends
the request's tools with the response (LiteLLM sends them only with a request). Real Agents SDK as the executor, the
real LiteLLM proxy end to end."""

from __future__ import annotations

import asyncio
import json
from http.server import BaseHTTPRequestHandler

import pytest

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard import GuardStack  # noqa: E402
from agentguard.integrations.common import Unreadable  # noqa: E402
from agentguard.integrations.litellm import GuardrailEndpoint  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

agents = pytest.importorskip("agents")

RAN: list = []


@agents.function_tool(strict_mode=False)
def purge(path: str = "/", dry_run: bool = True, keep: int = 1) -> str:
    """Purge old files under path."""
    RAN.append({"path": path, "dry_run": dry_run, "keep": keep})
    return "ok"


TOOLS = [{"type": "function", "function": {"name": "purge", "description": "Purge.",
                                           "parameters": purge.params_json_schema}}]
GUARD = GuardStack([ToolRuleGuard(allow=["purge", "read_file"], arguments=[
    {"tool": "purge", "arg": "path", "forbid": "^/$"}], name="no-root")])


def executed(arguments: str) -> dict:
    """What the Agents SDK hands the function for the model's argument text (the differential oracle)."""
    from agents.tool_context import ToolContext

    RAN.clear()
    ctx = ToolContext(context=None, tool_name="purge", tool_call_id="1", tool_arguments=arguments)
    asyncio.run(purge.on_invoke_tool(ctx, arguments))
    return RAN[0] if RAN else {}


def payload(arguments: str, tools=TOOLS) -> dict:
    body = {"input_type": "response", "litellm_call_id": "c", "texts": [], "request_data": {},
            "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "purge", "arguments": arguments}}]}
    return {**body, "tools": tools} if tools is not None else body


#: (arguments, what the Agents SDK ran): each was allowed as spelled before the fix
ATTACKS = [
    ('{}', {"path": "/", "dry_run": True, "keep": 1}),                      # the default path "/" runs
    ('{"path": "/srv", "dry_run": "off"}', {"path": "/srv", "dry_run": False, "keep": 1}),
    ('{"path": "/srv", "keep": "00"}', {"path": "/srv", "dry_run": True, "keep": 0}),
    ('{"path": "/srv", "keep": 2.0}', {"path": "/srv", "dry_run": True, "keep": 2}),
]


@pytest.mark.parametrize("arguments,ran", ATTACKS)
def test_the_client_runs_other_values_than_the_model_spelled(arguments, ran):
    assert executed(arguments) == ran


@pytest.mark.parametrize("arguments,ran", ATTACKS)
def test_a_call_is_judged_as_the_declared_tool_reads_it(arguments, ran):
    answer = GuardrailEndpoint(GUARD).handle(payload(arguments))
    assert answer["action"] == "BLOCKED", answer
    assert "no-root" in answer["blocked_reason"] or "declared parameters" in answer["blocked_reason"]


def test_regression_typed_arguments_run_and_undeclared_tools_are_judged_as_spelled():
    ep = GuardrailEndpoint(GUARD)
    assert ep.handle(payload('{"path": "/srv", "dry_run": false, "keep": 3}'))["action"] == "NONE"
    assert ep.handle(payload('{"path": "/srv", "keep": "00"}', tools=None))["action"] == "NONE"  # no tools sent
    other = payload('{"path": "/srv"}')
    other["tool_calls"][0]["function"]["name"] = "read_file"
    assert ep.handle(other)["action"] == "NONE"


def test_responses_api_tools_are_read_too():
    flat = [{"type": "function", "name": "purge", "parameters": purge.params_json_schema}]
    assert GuardrailEndpoint(GUARD).handle(payload('{"keep": "00", "path": "/srv"}', tools=flat))["action"] == "BLOCKED"


_value = st.one_of(st.sampled_from(["/", "/srv", "off", "on", "00", " 5 ", "true", "1", "0.0"]), st.integers(-3, 3),
                   st.booleans(), st.floats(allow_nan=False, allow_infinity=False, width=32), st.none())


@settings(max_examples=300, deadline=None)
@given(args=st.dictionaries(st.sampled_from(["path", "dry_run", "keep"]), _value))
def test_property_a_call_judged_runnable_runs_exactly_the_judged_values(args):
    """Whatever arguments the model writes: when the guardrail reads a call (not refused as unreadable), the values
    the Agents SDK hands the function are exactly the judged ones, defaults included."""
    text = json.dumps(args)
    [call] = GuardrailEndpoint.parse(payload(text))[3]
    if isinstance(call, Unreadable):
        return
    try:
        ran = executed(text)
    except Exception:  # noqa: BLE001 - the SDK refuses them itself: nothing runs
        return
    if ran:
        assert ran == dict(call.arguments)


# -- end to end: the real LiteLLM proxy with the recipe's guardrail file sends the request's tools with the response --
class Model(BaseHTTPRequestHandler):
    """Answers with a ``purge`` call whose argument text is the last user message (streamed when asked)."""

    def log_message(self, *a):
        return None

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        args = body["messages"][-1]["content"]
        call = {"id": "c1", "type": "function", "function": {"name": "purge", "arguments": args}}
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for c in [{"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{**call, "index": 0}]},
                                    "finish_reason": None}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]:
                c = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "stub", **c}
                self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            return
        data = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "stub",
                           "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                               "role": "assistant", "content": None, "tool_calls": [call]}}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    pytest.importorskip("httpx")
    from litellm_run import LITELLM, litellm_proxy

    if not LITELLM.exists():
        pytest.skip("the LiteLLM venv is absent: run scripts/setup_litellm.sh (make test does)")
    with litellm_proxy(tmp_path_factory.mktemp("litellm"), GuardrailEndpoint(GUARD), Model, "post_call") as base:
        yield base


def ask(base, arguments, stream):
    import httpx
    from litellm_run import MASTER

    return httpx.post(base + "/v1/chat/completions", timeout=60, headers={"Authorization": f"Bearer {MASTER}"},
                      json={"model": "stub", "messages": [{"role": "user", "content": arguments}], "tools": TOOLS,
                            "stream": stream})


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("arguments", ['{}', '{"path": "/srv", "dry_run": "off"}'])
def test_through_the_real_proxy_the_call_is_judged_against_the_declared_tool(proxy, arguments, stream):
    r = ask(proxy, arguments, stream)
    assert "agentguard refused tool call purge" in r.text, r.text[:1500]
    assert '"name":"purge"' not in r.text.replace(" ", "") or r.status_code == 400


@pytest.mark.parametrize("stream", [False, True])
def test_regression_a_typed_call_still_passes_the_real_proxy(proxy, stream):
    r = ask(proxy, '{"path": "/srv", "dry_run": false, "keep": 3}', stream)
    assert "agentguard refused" not in r.text and "purge" in r.text, r.text[:1500]
