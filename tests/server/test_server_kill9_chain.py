"""``kill -9`` with approvals in flight (issue 28): a real ``agentguard serve`` (two workers, least-privilege
credentials, hash chain on) takes agents' checks and an approver's answers concurrently and is killed with
SIGKILL mid-burst; after a restart every acknowledged (200) decision and answer is in the store, the
service keeps writing, and ``agentguard audit verify`` passes the whole log with the service's key."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytest.importorskip("cryptography")

from agentguard.server.credentials import hash_token  # noqa: E402

from test_server_durability import _free_port, backend  # noqa: E402,F401 - the fixture is used by name

AGENT = "kill9-agent-token-0123"
APPROVER = "kill9-alice-token-0123"
EVERY = 25


def _config(folder: Path, db_url: str | None) -> Path:
    (folder / "credentials.toml").write_text(
        f'[[credentials]]\nidentity = "agent-1"\nrole = "agent"\ntoken_sha256 = "{hash_token(AGENT)}"\n\n'
        f'[[credentials]]\nidentity = "alice@corp"\nrole = "approver"\ntoken_sha256 = "{hash_token(APPROVER)}"\n')
    (folder / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["*"]\n'
                                       'escalate = ["delete_*"]\ndeny = ["format_*"]\n')
    cfg = folder / "serve.toml"
    cfg.write_text(f'[server]\ncredentials_file = "{folder / "credentials.toml"}"\n'
                   f'tool_guards = "{folder / "tools.toml"}"\ncheckpoint_every = {EVERY}\n'
                   + (f'db_url = "{db_url}"\n' if db_url else ""))
    return cfg


def _start(cfg: Path, data: Path, port: int, workers: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGUARD_") or k == "AGENTGUARD_TEST_PG_URL"}
    p = subprocess.Popen([sys.executable, "-m", "agentguard", "serve", "--config", str(cfg), "--port", str(port),
                          "--state-dir", str(data), "--workers", str(workers)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    t0 = time.time()
    while time.time() - t0 < 120:
        if p.poll() is not None:
            raise AssertionError("server exited: " + p.stderr.read().decode()[-2000:])
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return p
        except httpx.HTTPError:
            time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)
    raise AssertionError("server did not start")


def _kill(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass
    p.wait(timeout=20)


async def _burst(port: int, server: subprocess.Popen, checks: dict, answers: dict) -> int:
    """Agents check (every 4th call escalates), an approver answers each escalation as it comes; SIGKILL
    once enough of both were acknowledged. Returns how many requests the kill cut."""
    cut = 0
    killed: list[float] = []
    pending: asyncio.Queue = asyncio.Queue()
    base = f"http://127.0.0.1:{port}"
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
    agent = httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {AGENT}"}, limits=limits, timeout=5)
    human = httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {APPROVER}"}, limits=limits,
                              timeout=5)
    counter = iter(range(10**9))

    def over() -> bool:
        return bool(killed) and time.time() - killed[0] > 0.5

    async def check() -> None:
        nonlocal cut
        while not over():
            i = next(counter)
            run, tc = f"k9-{i % 9}", {"name": ("delete_file" if i % 4 == 0 else "read_file"), "arguments": {"i": i}}
            try:
                r = await agent.post("/v1/check", json={"run_id": run, "tool_call": tc})
            except httpx.HTTPError:
                cut += 1
                continue
            if r.status_code == 409 and "concurrently" in r.text:  # the other worker decided the run first:
                continue  # not acknowledged; a client retries (documented), this one moves on
            assert r.status_code == 200, r.text
            body = r.json()
            checks[body["decision_id"]] = body["decision"]
            if body["decision"] == "ESCALATE":
                pending.put_nowait((body["decision_id"], run, tc, i % 8 != 0))

    async def approve() -> None:
        nonlocal cut
        while not over():
            try:
                did, run, tc, yes = await asyncio.wait_for(pending.get(), 0.2)
            except asyncio.TimeoutError:
                continue
            try:
                r = await human.post("/v1/approvals", json={"decision_id": did, "run_id": run, "tool_call": tc,
                                                            "approved": yes})
            except httpx.HTTPError:
                cut += 1
                continue
            if r.status_code == 409 and "concurrently" in r.text:  # not acknowledged: answer again
                pending.put_nowait((did, run, tc, yes))
                continue
            assert r.status_code == 200, r.text
            answers[r.json()["decision_id"]] = (did, r.json()["decision"])

    async def killer() -> None:
        while len(checks) < 300 or len(answers) < 40:
            await asyncio.sleep(0.005)
        os.killpg(server.pid, signal.SIGKILL)  # master and workers
        killed.append(time.time())

    try:
        await asyncio.gather(killer(), *(check() for _ in range(16)), *(approve() for _ in range(8)))
    finally:
        await agent.aclose()
        await human.aclose()
    return cut


@pytest.mark.slow
def test_kill_9_keeps_every_acknowledged_decision_and_answer_and_the_chain(tmp_path, backend):  # noqa: F811
    port, data = _free_port(), tmp_path / "data"
    cfg = _config(tmp_path, backend)
    server = _start(cfg, data, port, workers=2)
    checks: dict[str, str] = {}
    answers: dict[str, tuple[str, str]] = {}
    try:
        cut = asyncio.run(_burst(port, server, checks, answers))
    finally:
        _kill(server, signal.SIGKILL)
    assert cut > 0, "the kill cut no request in flight"

    server = _start(cfg, data, port, workers=1)  # restart on the same store; it goes on writing the chain
    try:
        r = httpx.post(f"http://127.0.0.1:{port}/v1/check", headers={"Authorization": f"Bearer {AGENT}"},
                       json={"run_id": "after", "tool_call": {"name": "read_file", "arguments": {}}}, timeout=10)
        assert r.status_code == 200
    finally:
        _kill(server, signal.SIGTERM)

    from agentguard.server.audit import AuditStore

    url = backend or f"sqlite:///{data / 'audit.sqlite'}"
    store = AuditStore(url)
    try:
        stored = {d: store.decision(d) for d in [*checks, *answers]}
    finally:
        store.close()
    lost = [d for d, row in stored.items() if row is None]
    assert not lost, f"{len(lost)} acknowledged decisions or answers lost"
    assert all(stored[d]["decision"] == v for d, v in checks.items())
    for aid, (escalated, decision) in answers.items():
        row = stored[aid]
        assert row["kind"] == "approval" and row["decision"] == decision and escalated in row["reason"]
        assert row["guard"] == "human:alice@corp"

    res = subprocess.run([sys.executable, "-m", "agentguard", "audit", "verify", "--db", url, "--json",
                          "--checkpoint-every", str(EVERY), "--public-key", str(data / "audit_ed25519.pub.pem")],
                         capture_output=True, text=True, timeout=120)
    rep = json.loads(res.stdout)
    assert res.returncode == 0 and rep["ok"], rep["problems"]
    assert rep["chained"] == rep["records"] >= len(checks) + len(answers) + 1
    assert rep["signatures_checked"] == rep["checkpoints"] >= rep["records"] // EVERY
