"""What session 22's bounded webhook queue adds to the answer of an ESCALATE (the only request path it touches):
:meth:`agentguard.server.webhook.WebhookNotifier.notify` now encodes the event on the caller's thread (the event loop)
to count its bytes, where before it only queued a copy of the dict (encoded later in the delivery thread). Timed
alone, in microseconds per call (best of 5 rounds), for a typical escalation event and one carrying 0.9 MB of
arguments (the largest a 1 MiB body allows), against the old ``q.put(dict(event))`` and the old encoding the
delivery thread then did (standard-library ``json``, holding the GIL the event loop needs as well). ALLOW, REJECT
and HALT answers do not call it.

    python benchmarks/server_s22_webhook_notify.py
"""

from __future__ import annotations

import argparse
import json
import platform
import queue
import socket
import sys
import timeit
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def main() -> None:
    from agentguard.server.webhook import WebhookNotifier, escalation_event

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_s22_webhook_notify.json"))
    a = ap.parse_args()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)  # accepts, never answers: the delivery thread stays on its first event
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/hook"
    body = {"decision_id": "d" * 32, "run_id": "run-1", "reason": "tool transfer_funds needs approval",
            "guard": "tool-rules", "verdicts": [{"decision": "ESCALATE", "guard": "tool-rules", "reason": "x"}]}
    cases = {"typical (60 B of arguments)": {"name": "transfer_funds", "arguments": {"amount": 100, "to": "acct-1"}},
             "0.9 MB of arguments": {"name": "transfer_funds", "arguments": {"memo": "x" * 900_000}}}
    out: dict[str, dict[str, float]] = {}
    for label, call in cases.items():
        ev = escalation_event(body, call)
        n = 2000 if "typical" in label else 40
        w = WebhookNotifier(url, "s" * 20, None, retries=1, timeout_s=60, max_queue_bytes=1 << 62)
        new = min(timeit.repeat(lambda: w.notify(ev), number=n, repeat=5)) / n
        q: queue.SimpleQueue = queue.SimpleQueue()
        old = min(timeit.repeat(lambda: q.put(dict(ev)), number=n, repeat=5)) / n
        thread = min(timeit.repeat(lambda: json.dumps(ev, sort_keys=True, separators=(",", ":")).encode(), number=n,
                                   repeat=5)) / n
        out[label] = {"notify_now_us": round(new * 1e6, 1), "notify_before_us": round(old * 1e6, 1),
                      "encode_before_in_delivery_thread_us": round(thread * 1e6, 1)}
    res = {"us_per_call": out, "python": platform.python_version(),
           "command": "nice -n 19 python benchmarks/server_s22_webhook_notify.py"}
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    sock.close()


if __name__ == "__main__":
    main()
