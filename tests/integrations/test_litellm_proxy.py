"""End to end against the real LiteLLM proxy (from PyPI, in its own venv made by scripts/setup_litellm.sh,
which `make test` runs): the docs recipe (guardrail `default_on: true`, `api_key` = agentguard's token,
`LITELLM_MASTER_KEY`) protects by default: a forbidden tool call proposed by the model never reaches the
client, which gets agentguard's refusal as the error message instead; an allowed one passes; the trace id
the client sends is the run agentguard keys its state on. The model behind LiteLLM is a local
OpenAI-compatible stub (stdlib HTTP) that proposes the tool calls; nothing leaves the machine."""

from __future__ import annotations

import json
import os
import subprocess
from http.server import BaseHTTPRequestHandler

import pytest

httpx = pytest.importorskip("httpx")

from agentguard import BaseGuard, Decision, GuardStack, Verdict  # noqa: E402
from agentguard.integrations.litellm import GuardrailEndpoint, serve_in_thread  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from litellm_run import LITELLM, MASTER, TOKEN, litellm_proxy  # noqa: E402

if not LITELLM.exists():
    pytest.skip("the LiteLLM venv is absent: run scripts/setup_litellm.sh (make test does)", allow_module_level=True)


class Model(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint proposing the tool call named in the last user message."""

    def log_message(self, *a):
        return None

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        name, _, arg = body["messages"][-1]["content"].partition(" ")
        if body.get("stream"):
            return self._stream(name, arg)
        out = {"id": "c1", "object": "chat.completion", "created": 0, "model": "stub",
               "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                   "role": "assistant", "content": None,
                   "tool_calls": [{"id": "call_1", "type": "function",
                                   "function": {"name": name, "arguments": json.dumps({"path": arg})}}]}}],
               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


    def _stream(self, name: str, arg: str) -> None:
        """The proposal streamed as OpenAI chat-completion chunks: the name first, the arguments in
        fragments, then ``finish_reason: tool_calls`` (what an agent loop executes on). ``a x; b y`` streams
        two parallel calls with their fragments interleaved; a leading ``choices:`` puts each call in a
        choice of its own (``n`` > 1)."""
        text = f"{name} {arg}"
        per_choice = text.startswith("choices:")
        calls = [c.strip().partition(" ") for c in text.removeprefix("choices:").split(";")]
        frags: list[list[tuple[int, int, dict]]] = []
        for i, (n, _, a) in enumerate(calls):
            choice, index, args = (i, 0, json.dumps({"path": a})) if per_choice else (0, i, json.dumps({"path": a}))
            head = {"index": index, "id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": ""}}
            frags.append([(choice, index, head)] + [(choice, index, {"index": index, "function": {
                "arguments": args[j:j + 4]}}) for j in range(0, len(args), 4)])
        order = [f for group in zip(*frags) for f in group] + [f for g in frags for f in g[min(map(len, frags)):]]
        chunks = [{"choices": [{"index": ch, "delta": {"role": "assistant", "tool_calls": [d]}, "finish_reason": None}]}
                  for ch, _, d in order]
        chunks += [{"choices": [{"index": ch, "delta": {}, "finish_reason": "tool_calls"}]}
                   for ch in sorted({ch for ch, _, _ in order})]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for c in chunks:
            c.update({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "stub"})
            self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("litellm")
    seen = []

    class Spy(BaseGuard):
        name = "spy"

        def check(self, context, proposal):
            seen.append((context.run_id, len(context.trace.steps)))
            return Verdict.allow(self.name)

    guard = GuardStack([Spy(), ToolRuleGuard(deny=["delete_*"], name="no-deletes")])
    with litellm_proxy(tmp, GuardrailEndpoint(guard), Model, "post_call") as base:
        yield base, seen


def chat(base, text, trace=None, stream=False):
    body = {"model": "stub", "messages": [{"role": "user", "content": text}], "stream": stream}
    if trace:
        body["litellm_trace_id"] = trace
    return httpx.post(base + "/v1/chat/completions", json=body, timeout=60,
                      headers={"Authorization": f"Bearer {MASTER}"})


def test_forbidden_tool_call_never_reaches_the_client_and_the_refusal_does(proxy):
    base, _ = proxy
    r = chat(base, "delete_file /srv/db")
    assert r.status_code == 400, r.text
    assert "agentguard refused tool call delete_file (REJECT by no-deletes)" in r.text
    assert "choices" not in r.json()  # an error body: the proposed call is not handed to the client


def streamed_calls(text: str) -> tuple[dict[tuple[int, int], dict], list]:
    """The tool calls an agent loop assembles from a streamed answer (deltas by index, as the OpenAI SDK's
    stream helpers do), and the SSE error events it saw."""
    calls: dict[tuple[int, int], dict] = {}
    errors = []
    for ln in text.splitlines():
        if not ln.startswith("data: ") or ln == "data: [DONE]":
            continue
        ev = json.loads(ln[6:])
        if "error" in ev:
            errors.append(ev["error"])
            continue
        for ch in ev.get("choices") or []:
            for tc in (ch.get("delta") or {}).get("tool_calls") or []:
                c = calls.setdefault((ch.get("index", 0), tc.get("index", 0)), {"name": "", "arguments": ""})
                fn = tc.get("function") or {}
                c["name"] += fn.get("name") or ""
                c["arguments"] += fn.get("arguments") or ""
    return calls, errors


def test_a_streamed_forbidden_tool_call_never_reaches_the_client(proxy):
    """Red team: the same forbidden proposal, streamed (``stream: true``). With ``guardrail:
    generic_guardrail_api`` LiteLLM 1.106 checked the assembled tool call only at the end of the stream,
    after sending every delta of it and ``finish_reason: "tool_calls"``: the client had ``delete_file``
    (the refusal came as a trailing error event). The recipe's guardrail file holds the stream until the
    verdict: no delta of the call reaches the client, only the refusal."""
    base, _ = proxy
    r = chat(base, "delete_file /srv/db", stream=True)
    calls, errors = streamed_calls(r.text)
    assert not any(c["name"] for c in calls.values()), (r.status_code, r.text[:1500])
    assert "agentguard refused tool call delete_file" in r.text


@pytest.mark.parametrize("text", ["read_file /a; delete_file /srv/db", "delete_file /srv/db; read_file /a",
                                  "choices:read_file /a; delete_file /srv/db"])
def test_a_streamed_turn_with_one_forbidden_call_among_allowed_ones_releases_none(text, proxy):
    """Parallel calls streamed with their fragments interleaved (index reuse), or in separate choices:
    nothing of the turn reaches the client when one call is refused."""
    base, _ = proxy
    calls, _errors = streamed_calls(chat(base, text, stream=True).text)
    assert calls == {}


def test_a_streamed_allowed_tool_call_arrives_whole(proxy):
    base, _ = proxy
    r = chat(base, "read_file /srv/notes", stream=True)
    calls, errors = streamed_calls(r.text)
    assert errors == [] and [(c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("read_file", {"path": "/srv/notes"})], r.text[:1500]


def test_allowed_tool_call_passes(proxy):
    base, _ = proxy
    r = chat(base, "read_file /srv/notes")
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "read_file"


def test_trace_id_sent_by_the_client_is_one_run(proxy):
    base, seen = proxy
    seen.clear()
    for _ in range(2):
        assert chat(base, "read_file /a", trace="conversation-7").status_code == 200
    assert chat(base, "read_file /b").status_code == 200
    assert seen[0] == ("conversation-7", 0) and seen[1] == ("conversation-7", 1)
    assert seen[2][0] != "conversation-7" and seen[2][1] == 0  # no trace id: LiteLLM makes a fresh one


HOOK_SCRIPT = r'''
import asyncio, json, sys
from litellm.proxy.guardrails.guardrail_hooks.generic_guardrail_api import GenericGuardrailAPI

async def main(base, key):
    out = {}
    for conf, kw in (("fail_on_error_false", {"fail_on_error": False}),
                     ("unreachable_fail_open", {"unreachable_fallback": "fail_open"})):
        for label, args, api_key in (("duplicate", '{"path": "/etc/shadow", "path": "a"}', key),
                                     ("oversized", json.dumps({"path": "a", "pad": "x" * 5000}), key),
                                     ("not_json", "{'path': '/etc/shadow'}", key),
                                     ("wrong_key", '{"path": "a"}', "wrong")):
            g = GenericGuardrailAPI(api_base=base, api_key=api_key, guardrail_name="agentguard", **kw)
            call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": args}}
            try:
                await g.apply_guardrail(inputs={"texts": [], "tool_calls": [call]}, request_data={},
                                        input_type="response")
                out[f"{conf}:{label}"] = "passed"
            except Exception as exc:
                out[f"{conf}:{label}"] = "blocked: " + str(exc)[:200]
    print(json.dumps(out))

asyncio.run(main(sys.argv[1], sys.argv[2]))
'''


def test_litellm_configured_to_fail_open_still_blocks_what_cannot_be_checked(tmp_path):
    """Red team with LiteLLM's own guardrail client: configured ``fail_on_error: false`` (or
    ``unreachable_fallback: fail_open``) it lets a response through whenever the guardrail answers an HTTP
    error. A model-made tool call with a repeated key, arguments over the body limit, non-JSON arguments,
    or a wrong key got 400/413/401 and PASSED (checked here before the fix); every refusal is now BLOCKED."""
    gsrv = serve_in_thread(GuardrailEndpoint(ToolRuleGuard(allow=["read_file"])), token=TOKEN, max_body=4096)
    script = tmp_path / "hook.py"
    script.write_text(HOOK_SCRIPT)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        got = subprocess.run([str(LITELLM.parent / "python"), str(script), f"http://127.0.0.1:{gsrv.server_address[1]}",
                              TOKEN], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    finally:
        gsrv.shutdown()
        gsrv.server_close()
    assert got.returncode == 0, got.stderr[-2000:]
    verdicts = json.loads(got.stdout.strip().splitlines()[-1])
    assert len(verdicts) == 8
    for case, answer in verdicts.items():
        assert answer.startswith("blocked") and "agentguard refused" in answer, (case, answer)
