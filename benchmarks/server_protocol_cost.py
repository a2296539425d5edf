"""The Python cost per request of uvicorn's HTTP protocol, plain and the service's limited class (issue 32).

No sockets, no load generator: a uvicorn httptools protocol object on a uvloop loop is fed one keep-alive
``POST /v1/check`` at a time through a stand-in transport (which counts the ``write`` calls and does nothing)
and a plain ASGI callable answers it with a fixed body and either the 2 headers of ``server_check_ab.py``'s raw
app or the 7 the service sends (content type and length and :mod:`agentguard.asgi.hardening`'s security
headers). CPU per request (``time.thread_time``) is the minimum over ``--repeats`` runs of ``--n`` requests, so a
shared machine's noise mostly drops out; what the socket's ``send`` costs in the kernel is not here (each
``write`` the transport gets is one ``send`` on a real socket: ``writes_per_request``).

    python benchmarks/server_protocol_cost.py --n 20000 --repeats 5 --out benchmarks/results/x.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

BODY = b'{"decision":"REJECT","allowed":false,"reason":"tool rent_car is not in the allow list"}'
SERVICE_HEADERS = [
    (b"content-length", str(len(BODY)).encode()), (b"content-type", b"application/json"),
    (b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                  b"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
                                  b"frame-ancestors 'none'")]
RAW_HEADERS = SERVICE_HEADERS[:2]
REQUEST = (b"POST /v1/check HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n"
           b"Authorization: Bearer load-test-token-0123456789\r\nContent-Length: 64\r\n\r\n" + b"x" * 64)


class _Transport:
    """What the protocol needs of a transport; counts writes."""

    def __init__(self) -> None:
        self.writes = 0
        self.closing = False

    def write(self, data: bytes) -> None:
        self.writes += 1

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8080), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _app(headers: list[tuple[bytes, bytes]]) -> Any:
    async def app(scope: dict, receive: Any, send: Any) -> None:
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": list(headers)})
        await send({"type": "http.response.body", "body": BODY})

    return app


async def _run(cls: type, headers: list, n: int) -> tuple[float, float]:
    import uvicorn
    from uvicorn.server import ServerState

    from agentguard.server.protocol import Limits

    cfg = uvicorn.Config(_app(headers), loop="uvloop", access_log=False, log_level="warning", server_header=False,
                         date_header=False, lifespan="off")
    cfg.load()
    cfg.agentguard_limits = Limits()  # type: ignore[attr-defined]
    state = ServerState()
    proto = cls(config=cfg, server_state=state, app_state={}, _loop=asyncio.get_running_loop())
    tr = _Transport()
    proto.connection_made(tr)
    t0 = time.thread_time()
    for _ in range(n):
        proto.data_received(REQUEST)
        cycle = proto.cycle
        while not cycle.response_complete:
            await asyncio.sleep(0)
        await asyncio.sleep(0)  # the held write's flush (limited class) and the task's end
    dt = time.thread_time() - t0
    proto.connection_lost(None)
    return dt / n * 1e6, tr.writes / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    import uvloop
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from agentguard.server.protocol import HttpToolsLimited

    cases = {"plain, 2 headers": (HttpToolsProtocol, RAW_HEADERS), "plain, service's 7 headers":
             (HttpToolsProtocol, SERVICE_HEADERS), "limited, service's 7 headers": (HttpToolsLimited, SERVICE_HEADERS)}
    best: dict[str, list[float]] = {k: [] for k in cases}
    writes: dict[str, float] = {}
    for _ in range(a.repeats):
        for k, (cls, hdr) in cases.items():  # interleaved, so a busy moment hits each case alike
            us, w = uvloop.run(_run(cls, hdr, a.n))
            best[k].append(us)
            writes[k] = w
    res = {"benchmark": "Python CPU per request of uvicorn's httptools protocol (plain vs the service's limited "
                        "class) with a stand-in transport and a constant ASGI answer",
           "command": "python " + " ".join([f"benchmarks/{Path(__file__).name}", *sys.argv[1:]]),
           "label": a.label, "n": a.n, "repeats": a.repeats,
           "min_cpu_us_per_request": {k: round(min(v), 2) for k, v in best.items()},
           "all_cpu_us_per_request": {k: [round(x, 2) for x in v] for k, v in best.items()},
           "writes_per_request": writes, "loadavg_1_5_15": list(os.getloadavg()),
           "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(json.dumps({k: res[k] for k in ("min_cpu_us_per_request", "writes_per_request")}, indent=1))
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
