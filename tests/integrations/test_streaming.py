"""Streaming: a per-step monitor cuts an OpenAI-compatible SSE stream (tiny local server on loopback)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentguard import BaseGuard, Decision, Verdict, read_traces
from agentguard.core.errors import InputError
from agentguard.integrations.recording import TraceRecorder
from agentguard.calibration import ThresholdMonitor
from agentguard.integrations.streaming import GuardedStream, guarded_completion
from agentguard.llm import OpenAICompatClient

STEPS = [f"Step {i}: {'UNSAFE plan' if i == 3 else 'fine reasoning'}\n" for i in range(8)]


def chunks_of(text, size=7):
    return [text[i : i + size] for i in range(0, len(text), size)]


class SSEServer:
    """Streams STEPS as chat.completion.chunk events, a few characters at a time, with logprobs."""

    def __init__(self, delay=0.003):
        self.sent = 0
        self.total = 0
        self.disconnected = threading.Event()
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                assert body["stream"] is True
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                pieces = [c for s in STEPS for c in chunks_of(s)]
                outer.total = len(pieces)
                try:
                    for i, p in enumerate(pieces):
                        lp = -5.0 if "UNSAFE" in p else -0.1
                        ev = {
                            "id": "c",
                            "object": "chat.completion.chunk",
                            "choices": [
                                {
                                    "index": 0,
                                    "delta": {"content": p},
                                    "logprobs": {"content": [{"token": p, "logprob": lp}]},
                                }
                            ],
                        }
                        self.wfile.write(f"data: {json.dumps(ev)}\n\n".encode())
                        self.wfile.flush()
                        outer.sent = i + 1
                        time.sleep(delay)
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    outer.disconnected.set()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = SSEServer()
    yield s
    s.close()


def unsafe_scorer(text, context):
    return 0.1 if "UNSAFE" in text else 0.9


def test_monitor_cuts_stream_at_alarm_and_stops_reading(server, tmp_path):
    client = OpenAICompatClient(base_url=server.url, model="m")
    rec = TraceRecorder(tmp_path / "s.jsonl")
    stream = guarded_completion(
        client, [{"role": "user", "content": "solve"}], ThresholdMonitor(0.5, scorer=unsafe_scorer), recorder=rec
    )
    released = list(stream)
    assert "".join(released) == "".join(STEPS[:3])  # steps 0..2 released, step 3 withheld
    assert stream.cut and stream.alarm_step == 3 and stream.verdict.decision is Decision.HALT
    assert stream.verdict.numbers == {"step": 4.0, "score": 0.1, "threshold": 0.5}
    assert server.disconnected.wait(5)  # the client closed the connection: the server stopped early
    assert server.sent < server.total
    [trace] = read_traces(str(tmp_path / "s.jsonl"))
    assert trace.labels["cut"] is True and len(trace.steps) == 4
    assert [s.signals["decision"] for s in trace.steps] == [0, 0, 0, Decision.HALT]


def test_safe_stream_passes_unchanged(server):
    client = OpenAICompatClient(base_url=server.url, model="m")
    stream = guarded_completion(client, [{"role": "user", "content": "x"}], ThresholdMonitor(0.05, scorer=unsafe_scorer))
    assert "".join(stream) == "".join(STEPS) and not stream.cut and stream.steps == len(STEPS)


def test_min_logprob_signal_from_stream(server):
    """The paper's log-prob signal: per-step minimum token log-probability, thresholded (Eq. 1)."""
    client = OpenAICompatClient(base_url=server.url, model="m")
    mon = ThresholdMonitor(-1.0, signal="min_logprob")
    stream = guarded_completion(client, [{"role": "user", "content": "x"}], mon)
    assert "".join(stream) == "".join(STEPS[:3]) and stream.alarm_step == 3
    assert stream.verdict.numbers["score"] == -5.0


def test_eq1_first_crossing_hand_worked():
    """Scores 0.9, 0.6, 0.5, 0.2, 0.9 with lambda = 0.5: alarm at the first s_t < 0.5, i.e. t = 3."""
    scores = iter([0.9, 0.6, 0.5, 0.2, 0.9])
    chunks = [{"choices": [{"index": 0, "delta": {"content": f"s{i}\n"}}]} for i in range(5)]
    st = GuardedStream(chunks, ThresholdMonitor(0.5, scorer=lambda text, ctx: next(scores)))
    assert list(st) == ["s0\n", "s1\n", "s2\n"] and st.alarm_step == 3


def test_chunk_mode_and_trailing_step_and_error_fails_closed():
    chunks = [{"choices": [{"index": 0, "delta": {"content": c}}]} for c in ["ab", "cd", "ef"]]
    seen = []

    class Rec(BaseGuard):
        name = "rec"

        def check(self, context, proposal):
            seen.append(proposal.output)
            return Verdict.allow()

    assert list(GuardedStream(chunks, Rec(), step="chunk")) == ["ab", "cd", "ef"] and seen == [
        "ab",
        "cd",
        "ef",
    ]
    assert list(GuardedStream(chunks, Rec())) == ["abcdef"]  # no newline: one trailing step

    class Boom(BaseGuard):
        name = "boom"

        def check(self, context, proposal):
            raise RuntimeError("verifier down")

    st = GuardedStream(chunks, Boom())
    assert list(st) == [] and st.cut and "verifier down" in st.verdict.reason
    with pytest.raises(InputError):
        ThresholdMonitor("high")


def test_async_stream_with_openai_sdk_objects():
    """Chunks as the openai SDK's ChatCompletionChunk objects, consumed with async for."""
    from openai.types.chat import ChatCompletionChunk

    def mk(i, text):
        return ChatCompletionChunk.model_validate(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "delta": {"content": text}}],
            }
        )

    async def gen():
        for i, s in enumerate(STEPS):
            yield mk(i, s)

    async def main():
        st = GuardedStream(gen(), ThresholdMonitor(0.5, scorer=unsafe_scorer))
        return [p async for p in st], st

    out, st = asyncio.run(main())
    assert out == STEPS[:3] and st.cut


def test_calibrated_threshold_monitor_cuts_the_stream(server):
    """The calibration mechanism's ThresholdMonitor, calibrated by CRC on synthetic safe/unsafe
    sequences, cuts the live stream; the verifier score reaches it as signals['score']."""
    calibration = pytest.importorskip("agentguard.calibration")
    import numpy as np

    rng = np.random.default_rng(0)
    safe = [list(rng.uniform(0.6, 1.0, 6)) for _ in range(200)]
    unsafe = [list(np.r_[rng.uniform(0.6, 1.0, 3), rng.uniform(0.0, 0.3, 3)]) for _ in range(200)]
    cal = calibration.ThresholdCalibrator("false_alarm", "crc", alpha=0.1).calibrate(
        safe + unsafe, [1] * 200 + [0] * 200
    )
    assert 0.3 < cal.threshold_ <= 0.7
    client = OpenAICompatClient(base_url=server.url, model="m")
    mon = cal.monitor()
    stream = guarded_completion(
        client,
        [{"role": "user", "content": "x"}],
        mon,
        scorer=lambda text, ctx: 0.1 if "UNSAFE" in text else 0.95,
    )
    assert "".join(stream) == "".join(STEPS[:3]) and stream.cut
    assert stream.verdict.guard == "risk-controlled-monitor" and stream.verdict.numbers["score"] == 0.1
    # the same monitor object watches the next stream as a new sequence (each stream is its own run)
    ok = GuardedStream(
        [{"choices": [{"index": 0, "delta": {"content": "fine\n"}}]}], mon, scorer=lambda t, c: 0.9
    )
    assert list(ok) == ["fine\n"] and not ok.cut


def test_threshold_monitor_on_stream_logprobs(server):
    calibration = pytest.importorskip("agentguard.calibration")
    client = OpenAICompatClient(base_url=server.url, model="m")
    stream = guarded_completion(
        client, [{"role": "user", "content": "x"}], calibration.ThresholdMonitor(-1.0, signal="min_logprob")
    )
    assert "".join(stream) == "".join(STEPS[:3]) and stream.verdict.numbers["score"] == -5.0


def test_failing_scorer_fails_closed():
    chunks = [{"choices": [{"index": 0, "delta": {"content": "a\n"}}]}]

    def bad(text, ctx):
        raise RuntimeError("PRM offline")

    st = GuardedStream(chunks, ThresholdMonitor(0.5, signal="score"), scorer=bad)
    assert list(st) == [] and st.cut and "PRM offline" in st.verdict.reason


def test_steps_without_the_watched_signal_cut_the_stream():
    """A monitor on ``min_logprob`` over a server that sends no logprobs cannot read its signal: it
    fails closed at the first step (it used to pass every step silently)."""
    chunks = [{"choices": [{"index": 0, "delta": {"content": c}}]} for c in ["a\n", "b\n"]]
    st = GuardedStream(chunks, ThresholdMonitor(-1.0, signal="min_logprob"))
    assert list(st) == [] and st.cut and "no signal 'min_logprob'" in st.verdict.reason


def test_each_stream_is_its_own_run_and_is_forgotten_at_the_end():
    mon = ThresholdMonitor(0.5, scorer=unsafe_scorer)
    chunks = [{"choices": [{"index": 0, "delta": {"content": s}}]} for s in STEPS]
    first = GuardedStream(chunks, mon)
    assert list(first) == STEPS[:3] and first.cut
    assert len(mon._runs) == 0                       # the finished stream's run was ended
    shared = GuardedStream(chunks[:2], mon, run_id="r1")
    assert list(shared) == STEPS[:2] and "r1" in mon._runs   # an explicit run id is the caller's to end
    mon.end_run("r1")


def test_each_step_is_decided_through_the_pipeline_with_audit_and_a_latched_halt():
    """Every step is one Pipeline decision (audited); a HALT on a stream with an explicit run id stays
    latched: the run's next stream is cut at its first step."""
    from agentguard.core.audit import MemoryAuditSink
    from agentguard.core.pipeline import Pipeline

    mon = ThresholdMonitor(0.5, scorer=unsafe_scorer)
    sink = MemoryAuditSink()
    pipe = Pipeline(mon, audit=sink, adapter="streaming")
    chunks = [{"choices": [{"index": 0, "delta": {"content": s}}]} for s in STEPS]
    first = GuardedStream(chunks, mon, run_id="conv", pipeline=pipe)
    assert list(first) == STEPS[:3] and first.cut
    assert [r.decision for r in sink.records] == ["ALLOW", "ALLOW", "ALLOW", "HALT"]
    again = GuardedStream(chunks[:1], mon, run_id="conv", pipeline=pipe)
    assert list(again) == [] and again.cut and "halted earlier" in again.verdict.reason
    mon.end_run("conv")


def test_an_escalate_cuts_the_stream():
    class Ask(BaseGuard):
        name = "ask"

        def check(self, context, proposal):
            return Verdict(Decision.ESCALATE, "a human must read this", self.name)

    chunks = [{"choices": [{"index": 0, "delta": {"content": "a\n"}}]}]
    st = GuardedStream(chunks, Ask())
    assert list(st) == [] and st.cut
