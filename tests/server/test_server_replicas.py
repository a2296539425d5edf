"""Two ``agentguard serve`` replicas on one PostgreSQL database give the decisions of one replica.

The replicas (A and B, separate processes) share the audit store; a reference service (one process, its
own SQLite store) is fed every run's stored inputs in their stored order. Every decision stored by the
replicas, and every decision they answered, must equal the reference's. The guards are stateful: a
proactive guard (Pro2Guard over a DTMC, HALT on alarm, latched by the service) stacked with a guard that
counts each run's steps (a wiped memory would count from 1 again), a threshold monitor with its latch on
signals, and tool rules that escalate one tool, with approvals created on one replica and answered on the
other. Scenarios:

- alternating: each run's inputs (steps, signals, checks, approvals) go to A and B in turn;
- concurrent: two clients per run, one through each replica, send signals and steps at once (the issue's
  failure: signals had no unique index per run, so decisions were taken without the other replica's
  signal and an ALLOW was stored after a HALT);
- expiry: a run fed steps through A and signals through B is alive for both (expiry is decided from the
  store's activity times, signals included), and expired for both once idle;
- kill -9: A is killed mid-run; the client retries each unanswered request on B with the same
  Idempotency-Key: no decision lost, none stored twice.
"""

from __future__ import annotations

import json
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
pytest.importorskip("psycopg")

from fastapi.testclient import TestClient  # noqa: E402

from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.audit import AuditStore  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402
from agentguard.server.testing import free_port  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from svc_roles import AGENT, APPROVER, credentials_file  # noqa: E402

TTL = 4.0
TRANSFER = {"name": "transfer_funds", "arguments": {"amount": 10}}


def _files(tmp: Path) -> dict[str, Path]:
    import numpy as np

    from agentguard.predictive.dtmc import DTMC

    # a: safe (P_safe 1); b: P_safe 0.3 < 0.5, the proactive guard halts
    P = np.array([[0.5, 0.0, 0.5, 0.0], [0.0, 0.0, 0.3, 0.7], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    DTMC(P, 0, labels={"unsafe": [0, 0, 0, 1]}, state_names=["a", "b", "done", "bad"]).validate().save(tmp / "m.json")
    f = {"tools": tmp / "tools.toml", "steps": tmp / "steps.toml", "signals": tmp / "signals.toml",
         "creds": credentials_file(tmp, (AGENT, APPROVER))}
    f["tools"].write_text('[[guards]]\ntype = "tool-rules"\nname = "tool-rules"\n'
                          'allow = ["read_file", "search", "transfer_funds"]\nescalate = ["transfer_funds"]\n')
    f["steps"].write_text(f'[[guards]]\ntype = "proactive"\nmodel = "{tmp / "m.json"}"\nthreshold = 0.5\n'
                          'decision = "HALT"\n\n[[guards]]\ntype = "python"\nfactory = "svc_counting:counting"\n'
                          'halt_at = 1000\n')
    f["signals"].write_text('[[guards]]\ntype = "threshold-monitor"\nthreshold = 0.5\nsignal = "score"\n')
    return f


def _pg_url() -> str:
    from agentguard.server.testing import postgres_test_url, reset_postgres

    url, problem = postgres_test_url(str(HERE.parents[1]))
    if url is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{problem} (CI is set: scripts/setup_postgres.sh must provide it)")
        pytest.skip(problem or "no PostgreSQL")
    reset_postgres(url)
    return url


class Replica:
    def __init__(self, tmp: Path, name: str, files: dict[str, Path], db: str) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGUARD_")}
        env["PYTHONPATH"] = os.pathsep.join([str(HERE), *sys.path])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentguard", "serve", "--port", str(self.port), "--db-url", db,
             "--state-dir", str(tmp / name), "--tool-guards", str(files["tools"]), "--step-guards",
             str(files["steps"]), "--signal-guards", str(files["signals"]), "--credentials", str(files["creds"]),
             "--run-ttl", str(TTL)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True)
        self.base = f"http://127.0.0.1:{self.port}"

    def wait(self) -> "Replica":
        t0 = time.time()
        while time.time() - t0 < 90:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited {self.proc.returncode}: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(f"{self.base}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("service did not start")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def _post(base: str, path: str, body: dict, who=AGENT, key: str | None = None) -> dict:
    """POST, retrying a 409 (another replica decided that index first); returns the answer (200 only)."""
    h = dict(who.headers)
    if key:
        h["Idempotency-Key"] = key
    for _ in range(50):
        r = httpx.post(base + path, json=body, headers=h, timeout=30)
        if r.status_code != 409 or "concurrently" not in r.text:
            break
    assert r.status_code == 200, (path, r.status_code, r.text)
    return r.json()


def _op(base: str, run: str, op: tuple, key: str | None = None) -> dict:
    kind, arg = op
    if kind == "step":
        return _post(base, f"/v1/runs/{run}/steps", {"state": arg}, key=key)
    if kind == "signal":
        return _post(base, f"/v1/runs/{run}/signals", {"signals": {"score": arg}}, key=key)
    return _post(base, "/v1/check", {"run_id": run, "tool_call": arg}, key=key)


def _stored(store: AuditStore, run: str) -> list[dict]:
    """The run's decisions in stored input order."""
    by_id = {d["decision_id"]: d for d in store.decisions(run_id=run, limit=10_000)}
    return [{"idx": r["idx"], "kind": r["kind"], "input": r["payload"]["input"], "decision_id": r["decision_id"],
             **{k: by_id[r["decision_id"]][k] for k in ("decision", "reason", "numbers", "guard")}}
            for r in store.run_inputs(run)]


def _replay(ref: TestClient, run: str, stored: list[dict], answered: dict[str, dict]) -> None:
    """Feed the stored inputs to the reference in their stored order; each decision must equal the stored
    one (escalation ids mapped to the reference's own), and each guard's verdict in it (the counting
    guard's ``seen``: a memory wiped mid-run counts from 1 again) must equal what the replica answered."""
    ids: dict[str, str] = {}
    checks: dict[str, dict] = {}
    for s in stored:
        inp = s["input"]
        if s["kind"] == "step":
            r = ref.post(f"/v1/runs/{run}/steps", headers=AGENT.headers, json=inp["step"])
        elif s["kind"] == "signal":
            r = ref.post(f"/v1/runs/{run}/signals", headers=AGENT.headers, json=inp)
        elif s["kind"] == "check":
            r = ref.post("/v1/check", headers=AGENT.headers, json={"run_id": run, "tool_call": inp["tool_call"],
                                                                     "metadata": inp.get("metadata") or {}})
            checks[s["decision_id"]] = inp["tool_call"]
        else:
            r = ref.post("/v1/approvals", headers=APPROVER.headers, json={
                "decision_id": ids[inp["decision_id"]], "run_id": run, "tool_call": checks[inp["decision_id"]],
                "approved": inp["approved"]})
        assert r.status_code == 200, (run, s["idx"], r.text)
        b = r.json()
        ids[s["decision_id"]] = b["decision_id"]
        reason = s["reason"]
        for mine, theirs in ids.items():
            reason = reason.replace(mine, theirs)
        nums = {k: v for k, v in s["numbers"].items() if not k.startswith("signal:")}
        assert (b["decision"], b["reason"], b["numbers"], b["guard"]) == (s["decision"], reason, nums, s["guard"]), \
            (run, s["idx"], s["kind"])
        if s["kind"] != "approval":
            assert b["verdicts"] == answered[s["decision_id"]]["verdicts"], (run, s["idx"])


def _latched(stored: list[dict]) -> None:
    """Once a run was HALTed nothing after it is allowed (the issue: an ALLOW stored after a HALT)."""
    first = next((i for i, s in enumerate(stored) if s["decision"] == "HALT"), len(stored))
    assert all(s["decision"] != "ALLOW" for s in stored[first:]), [s["decision"] for s in stored]


def _check_answers(stored: list[dict], answers: list[dict]) -> None:
    got = {s["decision_id"]: s for s in stored}
    assert len(answers) == len(stored) and {a["decision_id"] for a in answers} == set(got)
    for a in answers:
        assert (a["decision"], a["reason"]) == (got[a["decision_id"]]["decision"], got[a["decision_id"]]["reason"])


def _script(i: int) -> list[tuple]:
    if i % 2:  # the proactive guard halts on state b
        return [("step", "a"), ("signal", 0.9), ("check", {"name": "read_file", "arguments": {"path": "x"}}),
                ("check", TRANSFER), ("approve", True), ("step", "a"), ("step", "b"), ("signal", 0.9),
                ("step", "a"), ("check", {"name": "search", "arguments": {}})]
    return [("signal", 0.9), ("step", "a"), ("check", TRANSFER), ("approve", i % 4 == 0), ("signal", 0.8),
            ("step", "a"), ("signal", 0.2), ("step", "a"), ("signal", 0.95), ("check", TRANSFER)]


def _alternating(bases: list[str], run: str, script: list[tuple]) -> list[dict]:
    answers: list[dict] = []
    for k, op in enumerate(script):
        base = bases[k % 2]
        if op[0] == "approve":  # the escalation just before, answered on the other replica
            esc = answers[-1]
            assert esc["decision"] == "ESCALATE", esc
            answers.append(_post(base, "/v1/approvals", {"decision_id": esc["decision_id"], "run_id": run,
                                                         "tool_call": TRANSFER, "approved": op[1]}, who=APPROVER))
        else:
            answers.append(_op(base, run, op))
    return answers


def _concurrent(bases: list[str], runs: list[str], n: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {r: [] for r in runs}
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(2 * len(runs))

    def client(run: str, side: int) -> None:
        try:
            start.wait()
            for j in range(n):
                if side == 0:  # through A: signals, the last ones low (the monitor halts)
                    b = _op(bases[0], run, ("signal", 0.9 if j < n - 3 else 0.2))
                else:  # through B: steps, one of them risky for the proactive guard in some runs
                    b = _op(bases[1], run, ("step", "b" if (j == n - 2 and run.endswith("1")) else "a"))
                with lock:
                    out[run].append(b)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(r, s)) for r in runs for s in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    return out


def test_two_replicas_agree_with_one(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    db = _pg_url()
    files = _files(tmp_path)
    a = Replica(tmp_path, "a", files, db)
    b = Replica(tmp_path, "b", files, db)
    ref_settings = ServerSettings(state_dir=str(tmp_path / "ref"), tool_guards=str(files["tools"]),
                                  step_guards=str(files["steps"]), signal_guards=str(files["signals"]),
                                  credentials_file=str(files["creds"]))
    try:
        a.wait()
        b.wait()
        bases = [a.base, b.base]
        answers = {f"alt-{i}": _alternating(bases, f"alt-{i}", _script(i)) for i in range(6)}
        answers.update(_concurrent(bases, [f"con-{i}" for i in range(4)], 12))
        _expiry(bases)
        killed = _kill9(a, b)
    finally:
        a.stop()
        b.stop()
    store = AuditStore(db, run_migrations=False)
    try:
        stored = {run: _stored(store, run) for run in [*answers, "kill-0"]}
    finally:
        store.close()
    answers["kill-0"] = killed
    with TestClient(create_app(ref_settings)) as ref:
        for run, got in stored.items():
            _check_answers(got, answers[run])
            _latched(got)
            _replay(ref, run, got, {x["decision_id"]: x for x in answers[run]})
    # the concurrent runs really interleaved both replicas' inputs and the latch was reached
    for i in range(4):
        kinds = [s["kind"] for s in stored[f"con-{i}"]]
        assert kinds.count("signal") == kinds.count("step") == 12
        assert any(s["decision"] == "HALT" for s in stored[f"con-{i}"])
    assert sum(s["kind"] == "approval" for got in stored.values() for s in got) == 6


def _expiry(bases: list[str]) -> None:
    """Steps through A, signals through B: the run lives as long as either feeds it; idle, both expire it."""
    a, b = bases
    _op(a, "exp", ("step", "a"))
    for _ in range(3):
        time.sleep(TTL / 2.5)
        _op(b, "exp", ("signal", 0.9))
    time.sleep(TTL / 2.5)  # A's own last-seen is now older than the expiry; the store's is not
    assert _op(a, "exp", ("step", "a"))["decision"] == "ALLOW"
    time.sleep(TTL + 0.5)
    for base in (a, b):
        for path, body in (("steps", {"state": "a"}), ("signals", {"signals": {"score": 0.9}})):
            r = httpx.post(f"{base}/v1/runs/exp/{path}", json=body, headers=AGENT.headers, timeout=30)
            assert r.status_code == 410 and "expired" in r.text, (base, path, r.status_code, r.text)


def _kill9(a: Replica, b: Replica) -> list[dict]:
    """A client drives one run through A with an Idempotency-Key per request; A is killed -9 mid-run and
    the client retries the request in flight (and the rest) on B with the same keys."""
    run, n = "kill-0", 40
    ops = [("signal", 0.9) if j % 3 == 0 else ("step", "a") for j in range(n)]
    answers: list[dict] = []
    killer = threading.Timer(0.0, lambda: None)
    for j, op in enumerate(ops):
        key = f"{run}-{j}"
        if j == 15:  # kill A while the next request is in flight
            killer = threading.Timer(0.005, a.stop, args=(signal.SIGKILL,))
            killer.start()
        try:
            got = _op(a.base, run, op, key=key) if a.proc.poll() is None else None
        except (httpx.HTTPError, AssertionError):
            got = None
        if got is None:  # no answer: the same request, the same key, on B
            got = _op(b.base, run, op, key=key)
        answers.append(got)
        if j < 20:
            time.sleep(0.002)
    killer.join()
    assert a.proc.poll() is not None  # A really died
    again = _op(b.base, run, ops[-1], key=f"{run}-{n - 1}")  # a plain retry is answered from the store
    assert again == answers[-1]
    conflicting = httpx.post(f"{b.base}/v1/runs/{run}/steps", json={"state": "b"},
                             headers={**AGENT.headers, "Idempotency-Key": f"{run}-{n - 1}"}, timeout=30)
    assert conflicting.status_code == 422
    return answers


def test_replica_test_reference_files_parse(tmp_path):
    """The guard files of the replica test load (a fast check that runs without PostgreSQL)."""
    sys.path.insert(0, str(HERE))
    files = _files(tmp_path)
    s = ServerSettings(state_dir=str(tmp_path / "s"), tool_guards=str(files["tools"]), step_guards=str(files["steps"]),
                       signal_guards=str(files["signals"]), credentials_file=str(files["creds"]))
    with TestClient(create_app(s)) as c:
        run = "x"
        assert c.post(f"/v1/runs/{run}/steps", headers=AGENT.headers, json={"state": "a"}).json()["decision"] == "ALLOW"
        b = c.post(f"/v1/runs/{run}/steps", headers=AGENT.headers, json={"state": "a"}).json()
        assert [v["numbers"].get("seen") for v in b["verdicts"]] == [None, 2.0]  # the counting guard's memory
        b = c.post(f"/v1/runs/{run}/steps", headers=AGENT.headers, json={"state": "b"}).json()
        assert b["decision"] == "HALT" and b["guard"] == "proactive"
        assert c.post("/v1/check", headers=AGENT.headers, json={"run_id": "y", "tool_call": TRANSFER}
                      ).json()["decision"] == "ESCALATE"
        assert json.loads(json.dumps(b))["stop"] is True
