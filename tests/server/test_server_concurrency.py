"""Concurrent clients on one run (2, 4, 8), against one service process and against two replicas (two
``agentguard serve`` processes on one database): every step after the latched HALT is HALT, the guard's
per-run memory is never wiped mid-run, and the stored run equals a serial replay of its stored steps."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from fastapi.testclient import TestClient  # noqa: E402

from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.audit import AuditStore  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402
from agentguard.server.testing import free_port, serve_in_thread  # noqa: E402

TOKEN = "concurrency-token-123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HERE = Path(__file__).resolve().parent
STEPS_PER_CLIENT = 30


def _guard_file(tmp: Path, halt_at: int) -> Path:
    f = tmp / "steps.toml"
    f.write_text(f'[[guards]]\ntype = "python"\nfactory = "svc_counting:counting"\nhalt_at = {halt_at}\n')
    return f


def _hammer(bases: list[str], run_id: str, clients: int) -> list[dict]:
    """``clients`` threads, each posting STEPS_PER_CLIENT steps to ``run_id`` (client i talks to
    ``bases[i % len(bases)]``); a 409 (another replica decided that index first) is retried."""
    out: list[dict] = []
    lock = threading.Lock()
    errors: list[str] = []
    start = threading.Barrier(clients)

    def work(i: int) -> None:
        with httpx.Client(base_url=bases[i % len(bases)], headers=AUTH, timeout=60) as c:
            start.wait()
            mine = []
            for j in range(STEPS_PER_CLIENT):
                for _ in range(50):
                    r = c.post(f"/v1/runs/{run_id}/steps", json={"state": {"client": i, "k": j}})
                    if r.status_code != 409:
                        break
                if r.status_code != 200:
                    errors.append(f"{r.status_code} {r.text[:200]}")
                    return
                mine.append(r.json())
            # once this client was told HALT, everything it was told later is HALT
            first = next((k for k, b in enumerate(mine) if b["decision"] == "HALT"), len(mine))
            if any(b["decision"] != "HALT" for b in mine[first:]):
                errors.append(f"client {i}: ALLOW after HALT: {[b['decision'] for b in mine]}")
            with lock:
                out.extend(mine)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors[:5]
    return out


def _check_stored(store: AuditStore, run_id: str, answers: list[dict], halt_at: int, n: int) -> list[dict]:
    steps = store.run_steps(run_id)
    assert [s["idx"] for s in steps] == list(range(n))  # every step stored once, in one sequence
    by_id = {d["decision_id"]: d for d in store.decisions(run_id=run_id, limit=10_000)}
    stored = [by_id[s["decision_id"]] for s in steps]
    decisions = [d["decision"] for d in stored]
    # the guard's memory of the run was never wiped: step k was its (k+1)-th step, up to the HALT
    assert decisions == ["ALLOW"] * (halt_at - 1) + ["HALT"] * (n - halt_at + 1), decisions
    assert [d["numbers"].get("seen") for d in stored[:halt_at]] == [float(k + 1) for k in range(halt_at)]
    # what each client was answered is what is stored for its step
    answered = {b["step"]: b for b in answers}
    assert sorted(answered) == list(range(n))
    assert all(answered[k]["decision"] == decisions[k] and answered[k]["decision_id"] == steps[k]["decision_id"]
               for k in range(n))
    return [{"payload": s["payload"], "decision": d["decision"], "reason": d["reason"], "numbers": d["numbers"]}
            for s, d in zip(steps, stored)]


def _serial_replay(tmp: Path, guard_file: Path, stored: list[dict]) -> None:
    """A fresh service fed the stored steps one by one answers exactly what is stored."""
    settings = ServerSettings(token=TOKEN, state_dir=str(tmp / "replay"), step_guards=str(guard_file))
    with TestClient(create_app(settings)) as c:
        for k, s in enumerate(stored):
            b = c.post("/v1/runs/replay/steps", headers=AUTH, json=s["payload"]).json()
            assert (b["decision"], b["reason"], b["numbers"]) == (s["decision"], s["reason"], s["numbers"]), k


@pytest.mark.parametrize("clients", [2, 4, 8])
def test_concurrent_clients_one_process(tmp_path, clients, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    n = clients * STEPS_PER_CLIENT
    halt_at = n // 3
    gf = _guard_file(tmp_path, halt_at)
    app = create_app(ServerSettings(token=TOKEN, state_dir=str(tmp_path / "svc"), step_guards=str(gf)))
    with serve_in_thread(app) as base:
        answers = _hammer([base], "shared-run", clients)
        stored = _check_stored(app.state.store, "shared-run", answers, halt_at, n)
    _serial_replay(tmp_path, gf, stored)


def _serve(tmp: Path, name: str, gf: Path, db: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGUARD_")}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *sys.path])
    env["AGENTGUARD_TOKEN"] = TOKEN
    p = subprocess.Popen([sys.executable, "-m", "agentguard", "serve", "--port", str(port), "--db-url", db,
                          "--state-dir", str(tmp / name), "--step-guards", str(gf)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    t0 = time.time()
    while time.time() - t0 < 60:
        if p.poll() is not None:
            raise RuntimeError(f"serve exited {p.returncode}: {p.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return p, base
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    p.kill()
    raise RuntimeError("service did not start")


@pytest.mark.parametrize("clients, backend", [(2, "sqlite"), (4, "sqlite"), (8, "sqlite"), (4, "postgresql")])
def test_concurrent_clients_two_replicas(tmp_path, clients, backend):
    n = clients * STEPS_PER_CLIENT
    halt_at = n // 3
    gf = _guard_file(tmp_path, halt_at)
    db = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    if backend == "postgresql":
        from agentguard.server.testing import postgres_test_url, reset_postgres

        url, problem = postgres_test_url(str(HERE.parents[1]))
        if problem:
            pytest.skip(problem)
        reset_postgres(url)
        db = url
    procs = []
    try:
        a, base_a = _serve(tmp_path, "a", gf, db)
        procs.append(a)
        b, base_b = _serve(tmp_path, "b", gf, db)
        procs.append(b)
        answers = _hammer([base_a, base_b], "shared-run", clients)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
    store = AuditStore(db)
    try:
        stored = _check_stored(store, "shared-run", answers, halt_at, n)
    finally:
        store.close()
    sys.path.insert(0, str(HERE))
    try:
        _serial_replay(tmp_path, gf, stored)
    finally:
        sys.path.remove(str(HERE))
