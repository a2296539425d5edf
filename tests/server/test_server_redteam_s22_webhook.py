"""Session-22 red team: the webhook's delivery queue is bounded (a receiver that hangs, a real loopback socket).

Hole found (fixed): every ESCALATE's event waited in an unbounded queue for the one delivery thread. With a receiver
that accepts and never answers (5 s timeout, 5 tries with back-off: one event per ~33 s), an agent sending escalated
calls with 0.9 MB of arguments grew the service by ~1.1 MiB per request (150 requests: +168 MiB RSS, through the ASGI
app) until it was killed for memory. Fix: :class:`agentguard.server.webhook.WebhookNotifier` encodes each event once
when it is queued and keeps at most ``max_queue_bytes`` of them waiting; one over is dropped (counted) and
dead-lettered with its ids, and the agent's answer is the same either way.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("fastapi")
sa = pytest.importorskip("sqlalchemy")

from agentguard.server.jsonutil import dumps  # noqa: E402
from agentguard.server.webhook import WebhookNotifier  # noqa: E402


class Hang:
    """A loopback receiver that accepts connections and answers nothing until ``release()`` (then it closes
    them, and every later one at once)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        self.held: list[socket.socket] = []
        self.released = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.released.is_set():
                conn.close()
            else:
                self.held.append(conn)

    def release(self) -> None:
        self.released.set()
        for c in self.held:
            c.close()
        self.sock.close()


def _engine(tmp_path):
    from agentguard.server import schema

    e = sa.create_engine(f"sqlite:///{tmp_path / 'dl.sqlite'}")
    schema.metadata.create_all(e)
    return e


def _event(i: int, size: int) -> dict:
    return {"event": "escalate", "delivery": f"d{i}", "decision_id": f"id{i}", "run_id": "r",
            "tool_call": {"name": "transfer_x", "arguments": {"memo": "x" * size}}}


def _wait(pred, timeout=10.0):
    t0 = time.time()
    while time.time() - t0 < timeout and not pred():
        time.sleep(0.02)
    return pred()


def test_a_hanging_receiver_cannot_grow_the_queue_past_its_bound(tmp_path):
    rx = Hang()
    engine = _engine(tmp_path)
    n = WebhookNotifier(rx.url, "s" * 20, engine, retries=1, timeout_s=30, max_queue_bytes=100_000)
    try:
        for i in range(40):  # 40 x ~20 KB: 800 KB offered, 100 KB allowed to wait
            n.notify(_event(i, 20_000))
            assert n.queued_bytes <= 100_000
        assert n.dropped >= 35 and n.queued_bytes > 0
    finally:
        rx.release()
    assert _wait(lambda: n.dead_letters == 40)  # the held ones failed, the dropped ones were recorded
    n.close()
    with engine.connect() as c:
        rows = c.execute(sa.text("SELECT decision_id, attempts, error, payload FROM webhook_dead_letters")).fetchall()
    dropped = [r for r in rows if r[2].startswith("not sent: the webhook queue was full")]
    assert len(dropped) == n.dropped and all(r[1] == 0 and json.loads(r[3])["dropped"] is True for r in dropped)
    assert {r[0] for r in rows} == {f"id{i}" for i in range(40)}  # every event is accounted for once
    assert n.queued_bytes == 0


def test_the_service_answers_escalations_alike_when_the_queue_is_full(tmp_path):
    from fastapi.testclient import TestClient

    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    rx = Hang()
    (tmp_path / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["*"]\nescalate = ["transfer_*"]\n')
    app = create_app(ServerSettings(token="tok-12345678", state_dir=str(tmp_path), tool_guards=str(tmp_path / "tools.toml"),
                                    webhook_url=rx.url, webhook_secret="s" * 20, webhook_retries=1))
    try:
        with TestClient(app) as c:
            w = app.state.service.webhook
            w.max_queue_bytes = 300_000
            for i in range(8):
                r = c.post("/v1/check", headers={"Authorization": "Bearer tok-12345678"},
                           json={"run_id": f"w{i}", "tool_call": {"name": "transfer_funds",
                                                                  "arguments": {"memo": "x" * 100_000}}})
                assert r.status_code == 200 and r.json()["decision"] == "ESCALATE", r.text
                assert w.queued_bytes <= 300_000
            assert w.dropped >= 5
            rx.release()  # before the app's shutdown waits for the delivery thread
    finally:
        rx.release()


@settings(max_examples=15, deadline=None)
@given(sizes=st.lists(st.integers(0, 30_000), min_size=1, max_size=25), bound=st.integers(2_000, 120_000))
def test_property_the_waiting_bytes_never_exceed_the_bound_and_no_event_is_lost(sizes, bound):
    rx = Hang()
    n = WebhookNotifier(rx.url, "s" * 20, None, retries=1, timeout_s=30, max_queue_bytes=bound)
    try:
        accepted = 0
        for i, size in enumerate(sizes):
            n.notify(_event(i, size))
            assert n.queued_bytes <= bound
            body = len(dumps(_event(i, size), sort_keys=True))
            if accepted + body <= bound:  # the first one is in flight, still counted: nothing leaves meanwhile
                accepted += body
        assert n.queued_bytes == accepted
    finally:
        rx.release()
    assert _wait(lambda: n.dead_letters == len(sizes))  # each event failed or was dropped, exactly once
    n.close()
    assert n.delivered == 0 and n.queued_bytes == 0
