"""Red team (session 21): one list of a streamed chunk holding an index twice.

The OpenAI SDK's stream accumulator (what an agent loop assembles) keeps the first ``tool_calls`` list it sees *as
it is*: two entries of index 0 there are two calls, and later fragments go by list position; LiteLLM's stream
builder (what agentguard is sent) joins every fragment of index 0 into one call. So
``[{index 0, '{"cmd": "rm -rf /'}, {index 0, 'tmp/x'}]`` then ``'"}'`` was judged as ``rm -rf /tmp/x`` (allowed)
and assembled by the client as ``run_shell {"cmd": "rm -rf /"}`` (plus a nameless call). The same for a choice
index twice in one chunk. Checked against the real LiteLLM proxy with the recipe's guardrail file, and with the
differential oracle of :mod:`test_litellm_shapes` (LiteLLM's builder against the OpenAI SDK, both real)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest

httpx = pytest.importorskip("httpx")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard import GuardStack  # noqa: E402
from agentguard.integrations.litellm import GuardrailEndpoint  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from litellm_run import LITELLM, MASTER, litellm_proxy  # noqa: E402

if not LITELLM.exists():
    pytest.skip("the LiteLLM venv is absent: run scripts/setup_litellm.sh (make test does)", allow_module_level=True)

from test_litellm_shapes import client_reads, delta, end, oracle, tc  # noqa: E402


def two_choices(first: tuple[int, dict], second: tuple[int, dict]) -> dict:
    return {"choices": [{"index": i, "delta": d, "finish_reason": None} for i, d in (first, second)]}


#: each was let through by the shape check and read otherwise by LiteLLM's builder and the OpenAI SDK
STREAMS = {
    "index_0_twice_in_the_first_list": [
        delta(0, role="assistant", tool_calls=[tc(0, "c1", "run_shell", '{"cmd": "rm -rf /'),
                                               tc(0, None, None, "tmp/x")]),
        delta(0, tool_calls=[tc(0, None, None, '"}')]), end()],
    "index_0_twice_then_index_1": [
        delta(0, role="assistant", tool_calls=[tc(0, "c1", "run_shell", '{"cmd": "ls /a"'), tc(0, None, None, "}")]),
        delta(0, tool_calls=[tc(1, "c2", "run_shell", '{"cmd": "ls /b"}')]), end()],
    "choice_0_twice_in_one_chunk": [
        two_choices((0, {"role": "assistant", "tool_calls": [tc(0, "c1", "run_shell", '{"cmd": "ls"}')]}),
                    (0, {"tool_calls": [tc(1, "c2", "run_shell", '{"cmd": "rm -rf /"}')]})), end()],
}
#: what providers send, still let through: several calls in one list, each index once
BENIGN = {
    "two_calls_in_one_list": [delta(0, role="assistant", tool_calls=[tc(0, "c1", "run_shell", '{"cmd": "ls"}'),
                                                                     tc(1, "c2", "run_shell", '{"cmd": "pwd"}')]),
                              end()],
}


class Model(BaseHTTPRequestHandler):
    def log_message(self, *a):
        return None

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for c in {**STREAMS, **BENIGN}[body["messages"][-1]["content"]]:
            c = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "stub", **c}
            self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


GUARD = GuardStack([ToolRuleGuard(allow=["run_shell"], arguments=[
    {"tool": "run_shell", "arg": "cmd", "forbid": r"^rm -rf /\s*$"}], name="no-wipe")])


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    with litellm_proxy(tmp_path_factory.mktemp("litellm"), GuardrailEndpoint(GUARD), Model, "post_call") as base:
        yield base


def chat(base, key):
    return httpx.post(base + "/v1/chat/completions", timeout=60, headers={"Authorization": f"Bearer {MASTER}"},
                      json={"model": "stub", "messages": [{"role": "user", "content": key}], "stream": True})


@pytest.mark.parametrize("key", sorted(STREAMS))
def test_an_index_twice_in_one_list_never_reaches_the_client(proxy, key):
    r = chat(proxy, key)
    assert not any(name for name, _ in client_reads(r.text)), r.text[:1500]
    assert "agentguard refused the response" in r.text and "twice" in r.text


@pytest.mark.parametrize("key", sorted(BENIGN))
def test_regression_calls_each_index_once_in_one_list_still_pass(proxy, key):
    got = client_reads(chat(proxy, key).text)
    assert [(n, json.loads(a)) for n, a in got] == [("run_shell", {"cmd": "ls"}), ("run_shell", {"cmd": "pwd"})]


def test_the_attacks_read_otherwise_to_the_two_readers_and_are_refused():
    """The differential oracle on the attacks: LiteLLM's builder and the SDK disagree (the first judged ``rm -rf
    /tmp/x``, the client assembled ``rm -rf /``), and the shape check refuses each."""
    results = oracle([STREAMS[k] for k in sorted(STREAMS) if not k.startswith("choice")])
    assert all(r["why"] is not None and r["builder"] != r["sdk"] for r in results), results
    assert ["run_shell", '{"cmd": "rm -rf /"}'] in [c[1:] for c in results[0]["sdk"]] or \
        ["run_shell", '{"cmd": "rm -rf /"}'] in [c[1:] for c in results[1]["sdk"]]


# -- property: lists holding several entries (several calls, one index twice, two choices) ---------------------------
NAMES = ["run_shell", "delete_file", "delete", "_file", ""]
PIECES = ['{"cmd"', ': "ls"}', "", '{"cmd": "rm -rf /', 'tmp/x"}', "}"]


@st.composite
def entry(draw):
    return tc(draw(st.integers(0, 2)), draw(st.sampled_from([None, None, "c1", "c2"])),
              draw(st.sampled_from([None, None, *NAMES])), draw(st.sampled_from([None, *PIECES])))


@st.composite
def chunk(draw):
    choices = draw(st.lists(st.sampled_from([0, 0, 0, 1]), min_size=1, max_size=2))
    return {"choices": [{"index": c, "delta": {"tool_calls": draw(st.lists(entry(), min_size=1, max_size=3))},
                         "finish_reason": None} for c in choices]}


@settings(max_examples=1, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(chunk(), min_size=1, max_size=4), min_size=300, max_size=300))
def test_property_a_stream_of_multi_entry_lists_let_through_reads_alike_to_litellm_and_the_client(batch):
    """Whatever the shape check lets through of 300 streams of multi-entry lists (one LiteLLM interpreter), LiteLLM's
    builder (judged) and the OpenAI SDK (run) read as the same calls."""
    streams = [s + [end()] for s in batch]
    for s, r in zip(streams, oracle(streams)):
        if r["why"] is None:
            assert r["builder"] == r["sdk"], (s, r)
