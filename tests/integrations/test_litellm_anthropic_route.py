"""Red team (session 20): LiteLLM's Anthropic-format route (``/v1/messages``, what Claude Code and Anthropic SDK
clients call through the proxy), streamed and not, in front of an OpenAI model that LiteLLM reaches through its
Responses API. Checked against the real proxy (1.106) with the docs recipe's guardrail file: a forbidden
``tool_use`` never reaches the client (HTTP 400, agentguard's refusal as the message), streamed or not; an allowed
one arrives. No fix needed: kept as a regression (the route is another translation of the same tool call)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest

httpx = pytest.importorskip("httpx")

from agentguard.integrations.litellm import GuardrailEndpoint  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from litellm_run import LITELLM, MASTER, litellm_proxy  # noqa: E402

if not LITELLM.exists():
    pytest.skip("the LiteLLM venv is absent: run scripts/setup_litellm.sh (make test does)", allow_module_level=True)


def _text(body: dict) -> str:
    for item in body.get("input") or []:
        for part in item.get("content") or []:
            if isinstance(part, dict) and part.get("text"):
                return str(part["text"])
    return ""


class ResponsesModel(BaseHTTPRequestHandler):
    """An OpenAI Responses endpoint proposing the function call named in the user's text (``name path``)."""

    def log_message(self, *a):
        return None

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        name, _, path = _text(body).partition(" ")
        call = {"type": "function_call", "id": "fc1", "call_id": "call_1", "name": name,
                "arguments": json.dumps({"path": path}), "status": "completed"}
        done = {"id": "r1", "object": "response", "created_at": 0, "status": "completed", "model": "stub",
                "output": [call], "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}
        if not body.get("stream"):
            data = json.dumps(done).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        events = [
            {"type": "response.created", "response": {**done, "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "output_index": 0, "item": {**call, "arguments": "",
                                                                                "status": "in_progress"}},
            {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc1",
             "delta": call["arguments"]},
            {"type": "response.function_call_arguments.done", "output_index": 0, "item_id": "fc1",
             "arguments": call["arguments"]},
            {"type": "response.output_item.done", "output_index": 0, "item": call},
            {"type": "response.completed", "response": done},
        ]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i, e in enumerate(events):
            e["sequence_number"] = i
            self.wfile.write(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode())
            self.wfile.flush()


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    endpoint = GuardrailEndpoint(ToolRuleGuard(deny=["delete_*"], name="no-deletes"))
    with litellm_proxy(tmp_path_factory.mktemp("litellm"), endpoint, ResponsesModel, "post_call") as base:
        yield base


def messages(base: str, text: str, stream: bool) -> httpx.Response:
    body = {"model": "stub", "max_tokens": 100, "stream": stream, "messages": [{"role": "user", "content": text}],
            "tools": [{"name": n, "description": "d", "input_schema": {"type": "object", "properties": {
                "path": {"type": "string"}}}} for n in ("delete_file", "read_file")]}
    return httpx.post(base + "/v1/messages", json=body, timeout=60,
                      headers={"x-api-key": MASTER, "anthropic-version": "2023-06-01"})


@pytest.mark.parametrize("stream", [False, True])
def test_a_forbidden_tool_use_never_reaches_an_anthropic_route_client(proxy, stream):
    r = messages(proxy, "delete_file /srv/db", stream)
    assert r.status_code == 400 and "agentguard refused tool call delete_file" in r.text
    assert '"tool_use"' not in r.text and "input_json_delta" not in r.text


@pytest.mark.parametrize("stream", [False, True])
def test_regression_an_allowed_tool_use_arrives(proxy, stream):
    r = messages(proxy, "read_file /srv/a", stream)
    assert r.status_code == 200 and "read_file" in r.text and "/srv/a" in r.text.replace("\\", "")
