"""Approval notifications (issue 28) with a real local HTTP receiver: an ESCALATE of the real service
arrives signed (HMAC-SHA256 over timestamp and raw body, checked as a receiver would); a receiver that
keeps failing is retried, then the event is dead-lettered in the store; ALLOW and REJECT send nothing."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
import sqlalchemy as sa  # noqa: E402

from agentguard.server.webhook import verify_signature  # noqa: E402

TOKEN = "webhook-token-123456"
SECRET = "webhook-secret-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Receiver:
    """A loopback HTTP server that records every POST and answers ``status`` (a list: one per request,
    the last repeated)."""

    def __init__(self, statuses: list[int]) -> None:
        self.requests: list[tuple[dict, bytes]] = []
        self.statuses = statuses
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers["content-length"]))
                outer.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                code = outer.statuses[min(len(outer.requests) - 1, len(outer.statuses) - 1)]
                self.send_response(code)
                self.end_headers()
                self.wfile.write(b"ok" if code < 300 else b"nope")

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def _service(tmp_path, store_url, url, retries=3):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    (tmp_path / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["*"]\nescalate = ["transfer_*"]\n'
                                         'deny = ["format_*"]\n')
    return create_app(ServerSettings(token=TOKEN, db_url=store_url, state_dir=str(tmp_path),
                                     tool_guards=str(tmp_path / "tools.toml"), webhook_url=url, webhook_secret=SECRET,
                                     webhook_retries=retries, webhook_backoff_s=0.05))


def _wait(pred, timeout=15.0):
    t0 = time.time()
    while time.time() - t0 < timeout and not pred():
        time.sleep(0.05)
    return pred()


def test_an_escalation_arrives_signed(tmp_path, store_url):
    from agentguard.server.testing import serve_in_thread

    rx = Receiver([200])
    try:
        app = _service(tmp_path, store_url, rx.url)
        with serve_in_thread(app) as base:
            for name in ("read_file", "format_disk"):  # ALLOW, REJECT: no notification
                assert httpx.post(f"{base}/v1/check", headers=AUTH, json={"run_id": "w", "tool_call": {"name": name}}
                                  ).status_code == 200
            r = httpx.post(f"{base}/v1/check", headers=AUTH, json={"run_id": "w", "tool_call": {
                "name": "transfer_funds", "arguments": {"amount": 10}}})
            assert r.json()["decision"] == "ESCALATE"
            assert _wait(lambda: len(rx.requests) >= 1)
            time.sleep(0.3)
        assert len(rx.requests) == 1
        headers, body = rx.requests[0]
        assert verify_signature(SECRET, headers, body)
        assert not verify_signature(SECRET, headers, body.replace(b"10", b"11"))  # tampered body
        assert not verify_signature("another-secret-0000000", headers, body)
        ev = json.loads(body)
        assert ev["decision_id"] == r.json()["decision_id"] and ev["run_id"] == "w"
        assert ev["tool_call"]["arguments"] == {"amount": 10} and "transfer_funds" in ev["text"]
        assert headers["x-agentguard-event"] == "escalate"
    finally:
        rx.close()


def test_a_failing_receiver_is_retried_then_dead_lettered(tmp_path, store_url):
    from agentguard.server.testing import serve_in_thread

    rx = Receiver([500, 503, 502])  # every attempt fails
    try:
        app = _service(tmp_path, store_url, rx.url, retries=3)
        store = app.state.store
        with serve_in_thread(app) as base:
            r = httpx.post(f"{base}/v1/check", headers=AUTH, json={"run_id": "d", "tool_call": {"name": "transfer_x"}})
            assert r.json()["decision"] == "ESCALATE"  # the agent is answered whatever the webhook does

            def dead():
                with store.engine.connect() as c:
                    return c.execute(sa.text("SELECT decision_id, attempts, error, payload FROM webhook_dead_letters")
                                     ).fetchall()

            assert _wait(lambda: len(dead()) == 1), rx.requests
        assert len(rx.requests) == 3  # tried 3 times, the same delivery id each time
        assert len({h["x-agentguard-delivery"] for h, _ in rx.requests}) == 1
        [(did, attempts, error, payload)] = dead()
        assert did == r.json()["decision_id"] and attempts == 3 and "HTTP 502" in error
        assert json.loads(payload)["run_id"] == "d"
    finally:
        rx.close()


def test_a_receiver_that_recovers_gets_the_event_once(tmp_path, store_url):
    from agentguard.server.testing import serve_in_thread

    rx = Receiver([500, 200])
    try:
        app = _service(tmp_path, store_url, rx.url, retries=4)
        with serve_in_thread(app) as base:
            httpx.post(f"{base}/v1/check", headers=AUTH, json={"run_id": "r", "tool_call": {"name": "transfer_y"}})
            assert _wait(lambda: len(rx.requests) >= 2)
            time.sleep(0.4)
        assert len(rx.requests) == 2 and app.state.service.webhook.dead_letters == 0
    finally:
        rx.close()
