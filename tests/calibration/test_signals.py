"""Signal sources (calibration.signals): token log-probabilities, user scores, a classifier, and the
OpenAI-compatible client's log-probabilities."""

from __future__ import annotations

import json

import pytest

from agentguard.calibration import (
    ClassifierSignal, ThresholdMonitor, TokenLogprobSignal, UserScores, monitor_tokens, openai_response_tokens, openai_tokens,
)
from agentguard.core import Decision, InputError, Step
from agentguard.core.types import Context


def test_token_logprob_signal_takes_the_minimum_per_step():
    toks = [("a", -0.1), (" b", -2.0), ("\n", -0.3), ("c", -0.5), ("d\n", -0.05), ("e", -1.5)]
    steps = list(TokenLogprobSignal(toks))
    assert all(isinstance(s, Step) for s in steps)                     # core Steps, not a private record
    assert [s.signals["score"] for s in steps] == [-2.0, -0.5, -1.5]
    assert [s.output for s in steps] == ["a b\n", "cd\n", "e"]
    assert [s.signals["n_tokens"] for s in steps] == [3, 2, 1]
    assert [s.signals["score"] for s in TokenLogprobSignal(toks, delimiter=None)] == [t[1] for t in toks]
    named = list(TokenLogprobSignal(toks, signal="min_logprob"))
    assert [s.signals["min_logprob"] for s in named] == [-2.0, -0.5, -1.5]
    # a source's Steps go straight to the monitor
    mon = ThresholdMonitor(-1.0)
    assert [mon.check(Context(run_id="t"), s).decision for s in steps] == [Decision.HALT] * 3


def test_user_and_classifier_signals():
    assert [s.signals["score"] for s in UserScores([0.9, 0.4])] == [0.9, 0.4]
    assert [s.output for s in UserScores([0.9], texts=["a"], signal="p")] == ["a"]
    with pytest.raises(InputError, match="NaN"):
        list(UserScores([0.9, float("nan")]))
    seen = []

    def clf(prefix):
        seen.append(list(prefix))
        return 0.2 if "rm -rf" in prefix[-1] else 0.9

    out = list(ClassifierSignal(clf, ["ls", "cd /", "rm -rf /"]))
    assert [s.signals["score"] for s in out] == [0.9, 0.9, 0.2] and out[-1].output == "rm -rf /"
    assert seen[-1] == ["ls", "cd /", "rm -rf /"]


@pytest.fixture()
def logprob_server():
    """A tiny OpenAI-compatible endpoint (stdlib http.server) that returns token logprobs."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    pairs = [("Step", -0.1), (" one\n", -0.3), ("Step", -0.2), (" two", -4.5), ("\n", -0.1), ("Done", -0.1)]
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output quiet
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            self.send_response(200)
            if body.get("stream"):
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    for tok, lp in pairs:
                        chunk = {"choices": [{"index": 0, "delta": {"content": tok},
                                              "logprobs": {"content": [{"token": tok, "logprob": lp}]}}]}
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass
            else:
                resp = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(t for t, _ in pairs)},
                                     "logprobs": {"content": [{"token": t, "logprob": lp} for t, lp in pairs]}}]}
                data = json.dumps(resp).encode()
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", seen
    srv.shutdown()
    srv.server_close()


def test_openai_compat_client_logprob_signal(logprob_server):
    from agentguard.llm import OpenAICompatClient
    url, seen = logprob_server
    client = OpenAICompatClient(base_url=url, model="m", timeout_s=10)
    msgs = [{"role": "user", "content": "solve"}]
    watched = monitor_tokens(openai_tokens(client, msgs), ThresholdMonitor(-2.0))
    assert "".join(watched) == "Step one\nStep two" == watched.text and watched.cut
    assert watched.verdict.numbers["step"] == 2 and watched.verdict.numbers["score"] == -4.5
    assert seen[-1]["logprobs"] is True and seen[-1]["stream"] is True
    steps = list(TokenLogprobSignal(openai_response_tokens(client.chat(msgs, logprobs=True))))
    assert [s.signals["score"] for s in steps] == [-0.3, -4.5, -0.1]
