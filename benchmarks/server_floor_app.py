"""A lower bound for ``POST /v1/check`` of this design (issue 32): the thinnest ASGI path that still does the
job's irreducible work with the library's own pieces, measured by ``server_check_ab.py --floor``.

Per request it does only: read the body, parse it with the service's strict JSON reader
(:func:`agentguard.server.jsonutil.loads_request`), decide the tool call with the same guard stack the service
runs (the shipped rules example, :func:`agentguard.config.load_stack`, called synchronously on the event loop),
digest the input (:func:`agentguard.server.audit.input_digest`), write the decision and the run's input row
through the same durable audit store (:class:`agentguard.server.audit.AuditStore`: SQLite WAL,
``synchronous=FULL``, the hash chain with signed checkpoints, the group-commit writer thread) and answer only
after the commit, under a per-run ``asyncio.Lock``.

Each worker keeps its own runs: the stored run id is the request's with the worker's process id appended, so no
two workers write one run's inputs (the service instead catches up with what the other worker stored). It leaves
out everything else the service does, so it is **not** a service and never a way to run one: no
request validation beyond the keys it reads (a malformed body raises), a token compared without roles or
credentials files, no body limit, concurrency limit or security headers, no run rebuilt or caught up from the
store (another worker's or replica's inputs are never seen), no run binding, facts, idempotency keys,
enforcement strategies, shadow mode, metrics or webhooks. What it measures is what this design's audit and
guards cost at the least: if the floor's ratio to the bare framework is under the target, no trimming of the
service reaches the target without changing the audit's durability or the guards.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import hmac
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from agentguard.config import load_stack
from agentguard.core.audit import AuditRecord
from agentguard.core.types import Context, ToolCall, Trace
from agentguard.server.audit import AuditStore, input_digest, new_decision_id
from agentguard.server.chain import Signer
from agentguard.server.jsonutil import dumps, loads_request

RULES = Path(__file__).resolve().parents[1] / "src" / "agentguard" / "server" / "examples" / "rules.toml"
_INITIAL = {"halted": None, "halted_tools": [], "replan_rounds": 0}
_HEAD = [(b"content-type", b"application/json")]


async def _lifespan(receive: Any, send: Any) -> None:
    msg = await receive()
    while msg["type"] != "lifespan.shutdown":
        await send({"type": msg["type"] + ".complete"})
        msg = await receive()
    await send({"type": "lifespan.shutdown.complete"})


async def _answer(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [*_HEAD, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def guards_app() -> Any:
    """The floor without any audit (``server_check_ab.py --guards``): read, parse, decide, answer. What it costs is
    what no design of the audit can go under with this guard stack; it is **not** a service (nothing is stored)."""
    return floor_app(audit=False)


def floor_app(audit: bool | str = True) -> Any:
    """The uvicorn factory: the state folder is ``AGENTGUARD_FLOOR_DIR`` (a new temporary folder otherwise), the
    token ``AGENTGUARD_TOKEN``, the guard stack ``AGENTGUARD_FLOOR_RULES`` (the shipped rules example)."""
    state = Path(os.environ.get("AGENTGUARD_FLOOR_DIR") or tempfile.mkdtemp(prefix="agentguard-floor-"))
    state.mkdir(parents=True, exist_ok=True)
    store: Any = None
    log: Any = _LogAudit(state / f"audit-{os.getpid()}.log") if audit == "log" else None
    if audit is True:
        with open(state / ".init.lock", "w") as lock:  # the workers start together: one creates the key and tables
            fcntl.flock(lock, fcntl.LOCK_EX)
            store = AuditStore(f"sqlite:///{state / 'audit.sqlite'}", sqlite_synchronous="FULL", chain=True,
                               signer=Signer.load_or_create(state / "audit_ed25519.pem"))
    suffix = f"@{os.getpid()}"
    stack = load_stack(os.environ.get("AGENTGUARD_FLOOR_RULES") or str(RULES))
    expected = hashlib.sha256(os.environ.get("AGENTGUARD_TOKEN", "").encode()).digest()
    runs: dict[str, list[Any]] = {}  # run id -> [context, stored inputs]
    locks: dict[str, asyncio.Lock] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await _lifespan(receive, send)
            return
        if scope["path"] == "/health":
            await _answer(send, 200, b"{}")
            return
        auth = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        if not hmac.compare_digest(hashlib.sha256(auth.removeprefix(b"Bearer ")).digest(), expected):
            await _answer(send, 401, b'{"error":"invalid bearer token"}')
            return
        msg = await receive()
        raw = msg.get("body", b"")
        while msg.get("more_body"):
            msg = await receive()
            raw += msg.get("body", b"")
        data = loads_request(raw)
        run_id, tc, facts = data["run_id"] + suffix, data["tool_call"], data.get("metadata") or {}
        call = ToolCall(tc["name"], tc.get("arguments") or {}, tc.get("call_id"))
        lock = locks.setdefault(run_id, asyncio.Lock())
        async with lock:
            run = runs.get(run_id)
            if run is None:
                run = runs[run_id] = [Context(run_id=run_id, trace=Trace(run_id=run_id)), 0]
            run[0].metadata = dict(facts)
            v = stack.check(run[0], call)
            as_dict = call.to_dict()
            did = new_decision_id()
            record = AuditRecord(time=time.time(), run_id=run_id, decision=v.decision.name, reason=v.reason,
                                 guard=v.guard or "?", numbers={}, decision_id=did, kind="check",
                                 input_digest=input_digest({"run_id": run_id, "tool_call": as_dict}),
                                 guard_version="floor", extra={"principal": "token"})
            inp = {"idx": run[1], "kind": "check", "payload": {"input": {"tool_call": as_dict, "metadata": facts},
                                                               "state": _INITIAL, "decision": v.decision.name}}
            if store is not None:
                await store.arecord(record, None, inp, None)
            elif log is not None:
                await log.arecord(record, inp)
            run[1] += 1
        allowed = v.decision.name == "ALLOW"
        await _answer(send, 200, dumps({"decision_id": did, "run_id": run_id, "decision": v.decision.name,
                                        "allowed": allowed, "reason": v.reason, "guard": v.guard, "numbers": {},
                                        "execute": allowed, "stop": False, "message": v.reason,
                                        "verdicts": [v.to_dict()]}))

    return app


class _LogAudit:
    """The audit as an append-only log (an experiment for issue 32, not the service's store): each record's
    :func:`~agentguard.server.audit.decision_row` and input row, hash-chained as the store chains them
    (:func:`~agentguard.server.chain.record_hash`, ``chain_hash``, ``run_hash``), one JSON line per record, written
    by a group-commit thread that appends every record waiting, calls ``os.fdatasync`` once and only then wakes
    their requests (the same durability as SQLite's ``synchronous=FULL``). One log file per worker process: the
    chain is this worker's (no cross-process lock); no SQL index, no run slots, no idempotency rows. What it costs
    is what a log-structured audit would cost at least."""

    def __init__(self, path: Path) -> None:
        import queue
        import threading

        self.q: Any = queue.SimpleQueue()
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.tail, self.seq, self.heads = "0" * 64, 0, {}
        threading.Thread(target=self._run, name="agentguard-audit-writer", daemon=True).start()

    def _run(self) -> None:
        from agentguard.server.chain import chain_hash, record_hash, run_hash
        from agentguard.server.jsonutil import canonical

        while True:
            batch = [self.q.get()]
            while True:
                try:
                    batch.append(self.q.get_nowait())
                except Exception:
                    break
            lines = []
            for row, inp, _loop, _fut in batch:
                self.seq += 1
                row["seq"] = self.seq
                rec = record_hash(row)
                self.tail = row["chain_hash"] = chain_hash(self.seq, self.tail, rec)
                self.heads[row["run_id"]] = row["run_hash"] = run_hash(self.heads.get(row["run_id"], "0" * 64), rec)
                lines.append(canonical({"decision": row, "input": inp}))
            os.write(self.fd, b"\n".join(lines) + b"\n")
            os.fdatasync(self.fd)
            loops: dict[Any, list[Any]] = {}
            for _row, _inp, loop, fut in batch:
                loops.setdefault(loop, []).append(fut)
            for loop, futs in loops.items():
                loop.call_soon_threadsafe(_set_all, futs)

    async def arecord(self, record: Any, inp: dict[str, Any]) -> None:
        from agentguard.server.audit import decision_row

        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self.q.put((decision_row(record), {**inp, "run_id": record.run_id, "decision_id": record.decision_id,
                                           "ts": record.time}, loop, fut))
        await fut


def _set_all(futs: list[Any]) -> None:
    for f in futs:
        if not f.done():
            f.set_result(None)


def logfloor_app() -> Any:
    """The floor with the audit as an fsynced, hash-chained append-only log per worker (:class:`_LogAudit`):
    ``server_check_ab.py --logfloor``. Not a service."""
    return floor_app(audit="log")
