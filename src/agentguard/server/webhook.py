"""Approval notifications: every ESCALATE the service answers is POSTed to a webhook, signed.

The request (one per escalation, after its decision is in the audit store) is generic JSON with a Slack
``text`` line, so a Slack incoming-webhook URL works as is and any other receiver reads the fields::

    {"event": "escalate", "delivery": "<id>", "decision_id": "...", "run_id": "...",
     "tool_call": {"name": ..., "arguments": ..., "call_id": ...}, "reason": "...", "guard": "...",
     "verdicts": [...], "time": 1700000000.0, "answer_with": "POST /v1/approvals",
     "text": "agentguard: run r1 asks for approval of transfer_funds: ..."}

The ``text`` line is read by people (Slack renders it as mrkdwn), and what it quotes is the agent's: the tool
name (any text up to 256 characters), the reason (which quotes the call) and the run id. Each is shown inert
(:func:`slack_inert`): ``&``, ``<`` and ``>`` as the HTML entities Slack documents (so no ``<url|label>`` link,
``<!channel>`` or ``<@user>`` mention), every control, format or line/paragraph separator character as a
``\\uXXXX`` escape (no forged second line, no bidi reordering), backticks replaced so the quoted value cannot
leave its code span (where Slack does not make links), and cut to 200 characters. The exact values are in the
JSON fields.

Headers: ``X-AgentGuard-Event: escalate``, ``X-AgentGuard-Delivery`` (the id, the same on every retry),
``X-AgentGuard-Timestamp`` (Unix seconds) and ``X-AgentGuard-Signature: sha256=<hex>``, the HMAC-SHA256
with the shared secret of ``"<timestamp>." + body`` (the GitHub/Stripe scheme: a receiver recomputes it
over the raw body, compares in constant time, and refuses old timestamps to stop replays;
:func:`verify_signature` does both).

Delivery: a background thread (the answer to the agent never waits for it) tries ``retries`` times,
``backoff_s`` apart and doubling, and counts any 2xx as delivered; after the last failure the event is
written to the ``webhook_dead_letters`` table (payload, last error, attempts) for an operator to replay.
Limit: an event still queued when the process is killed is lost (the escalation itself is in the audit
store and on the dashboard; the dead-letter table only holds deliveries that failed).

Bounded (session 22): the events waiting for delivery hold at most ``max_queue_bytes`` (default 64 MiB) of encoded
bodies. An event that would go over is not queued: it is counted (``dropped``) and dead-lettered with its ids and
the error ``not sent: the webhook queue was full`` (the last 10,000 such; beyond that only counted). Before, the
queue was unbounded: with a receiver that hangs (5 s timeout, 5 tries with back-off: one event every ~33 s), an
agent sending escalated calls with 0.9 MB of arguments grew the process by ~1.1 MiB per request (150 requests: +168
MiB, measured through the ASGI app) until it was killed for memory. Each event is encoded once, when it is queued
(the bytes are what waits, and what is signed and sent), with orjson (keys sorted; the standard library where orjson
cannot encode a value): ``benchmarks/results/server_s22_webhook_notify.json`` has what that adds to an ESCALATE.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import collections
import queue
import threading
import time
import uuid
from typing import Any, Mapping

import sqlalchemy as sa

from . import schema
from .jsonutil import dumps

__all__ = ["WebhookNotifier", "escalation_event", "sign", "slack_inert", "verify_signature"]


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>`` of HMAC-SHA256(secret, timestamp + "." + body)."""
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify_signature(secret: str, headers: Mapping[str, str], body: bytes, *, tolerance_s: float = 300.0,
                     now: float | None = None) -> bool:
    """What a receiver does: the signature header matches the raw body and the timestamp is recent."""
    h = {k.lower(): v for k, v in headers.items()}
    ts, sig = h.get("x-agentguard-timestamp", ""), h.get("x-agentguard-signature", "")
    try:
        age = abs((now if now is not None else time.time()) - int(ts))
    except ValueError:
        return False
    return age <= tolerance_s and hmac.compare_digest(sign(secret, ts, body), sig)


#: the characters Slack parses in a text (its formatting reference: replace them with these entities)
_SLACK_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "`": "\u02cb"})


def slack_inert(value: Any, limit: int = 200) -> str:
    """``value`` as text Slack shows as itself (see the module docstring), in a code span: no link, mention,
    formatting or new line can come from it."""
    import unicodedata

    text = str(value)
    text = text[:limit] + "\u2026" if len(text) > limit else text
    text = "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch)[0] in "CZ" and ch != " " else ch for ch in text)
    return "`" + text.translate(_SLACK_ENTITIES) + "`"


def escalation_event(body: Mapping[str, Any], tool_call: Mapping[str, Any] | None) -> dict[str, Any]:
    name = slack_inert((tool_call or {}).get("name", "?"))
    return {"event": "escalate", "delivery": uuid.uuid4().hex, "decision_id": body.get("decision_id"),
            "run_id": body.get("run_id"), "tool_call": dict(tool_call or {}), "reason": body.get("reason", ""),
            "guard": body.get("guard", ""), "verdicts": body.get("verdicts", []), "time": time.time(),
            "answer_with": "POST /v1/approvals",
            "text": f"agentguard: run {slack_inert(body.get('run_id'))} asks for approval of {name}: "
                    f"{slack_inert(body.get('reason', ''), 400)} (decision {slack_inert(body.get('decision_id'))})"}


class WebhookNotifier(threading.Thread):
    """Delivers events to ``url`` (see the module docstring); ``dead_letters`` counts the given-up ones."""

    #: the ids of events dropped for a full queue that wait for their dead-letter row (older ones only counted)
    MAX_DROPPED_KEPT = 10_000

    def __init__(self, url: str, secret: str, engine: sa.Engine | None, *, retries: int = 5,
                 backoff_s: float = 0.5, timeout_s: float = 5.0, max_queue_bytes: int = 64 * 1024 * 1024) -> None:
        super().__init__(name="agentguard-webhook", daemon=True)
        self.url, self.secret, self.engine = url, secret, engine
        self.retries, self.backoff_s, self.timeout_s = max(1, int(retries)), float(backoff_s), float(timeout_s)
        self.max_queue_bytes = int(max_queue_bytes)
        self.q: queue.SimpleQueue = queue.SimpleQueue()
        self.queued_bytes = 0  # encoded bodies waiting (or being delivered); never above max_queue_bytes
        self.dropped = 0
        self._dropped: collections.deque[dict[str, Any]] = collections.deque(maxlen=self.MAX_DROPPED_KEPT)
        self._lock = threading.Lock()
        self.delivered = 0
        self.dead_letters = 0
        self.attempts = 0
        self.start()

    def notify(self, event: Mapping[str, Any]) -> None:
        """Queue ``event`` for delivery, or, when its encoded body would take the queue over ``max_queue_bytes``,
        drop it (counted, dead-lettered by the delivery thread). Never blocks."""
        body = dumps(event, sort_keys=True)  # orjson: this runs on the event loop (a few ms for 0.9 MB)
        head = {k: event.get(k) for k in ("event", "delivery", "decision_id", "run_id")}
        with self._lock:
            if self.queued_bytes + len(body) > self.max_queue_bytes:
                self.dropped += 1
                self._dropped.append(head)
                body = b""
            else:
                self.queued_bytes += len(body)
        self.q.put((head, body))  # an empty body: a drop, dead-lettered in order by the thread

    def close(self) -> None:
        self.q.put(None)
        self.join(timeout=10)

    def _post(self, client: Any, body: bytes, event: Mapping[str, Any]) -> str | None:
        ts = str(int(time.time()))
        headers = {"content-type": "application/json", "x-agentguard-event": str(event.get("event", "escalate")),
                   "x-agentguard-delivery": str(event.get("delivery", "")), "x-agentguard-timestamp": ts,
                   "x-agentguard-signature": sign(self.secret, ts, body)}
        try:
            r = client.post(self.url, content=body, headers=headers)
        except Exception as exc:  # httpx.HTTPError and friends
            return f"{type(exc).__name__}: {exc}"[:500]
        return None if 200 <= r.status_code < 300 else f"HTTP {r.status_code}: {r.text[:200]}"

    def run(self) -> None:
        import httpx

        with httpx.Client(timeout=self.timeout_s, follow_redirects=False) as client:
            while True:
                item = self.q.get()
                if item is None:
                    return
                event, body = item
                if not body:  # dropped for a full queue
                    with self._lock:
                        kept = bool(self._dropped) and self._dropped[0] is event
                        if kept:
                            self._dropped.popleft()
                    if kept:
                        self._dead_letter(event, "not sent: the webhook queue was full", json.dumps(
                            {**event, "dropped": True}, sort_keys=True), attempts=0)
                    continue
                error: str | None = "not tried"
                try:
                    for attempt in range(self.retries):
                        if attempt:
                            time.sleep(self.backoff_s * (2 ** (attempt - 1)))
                        self.attempts += 1
                        error = self._post(client, body, event)
                        if error is None:
                            self.delivered += 1
                            break
                    if error is not None:
                        self._dead_letter(event, error, body.decode())
                finally:
                    with self._lock:
                        self.queued_bytes -= len(body)

    def _dead_letter(self, event: Mapping[str, Any], error: str, payload: str, attempts: int | None = None) -> None:
        self.dead_letters += 1
        if self.engine is None:
            return
        try:
            with self.engine.begin() as c:
                c.execute(schema.webhook_dead_letters.insert(), {
                    "ts": time.time(), "delivery": str(event.get("delivery", ""))[:64],
                    "decision_id": str(event.get("decision_id", ""))[:32], "url": self.url[:500],
                    "attempts": self.retries if attempts is None else attempts, "error": error, "payload": payload})
        except Exception:  # the store is down: the count above still tells
            pass
