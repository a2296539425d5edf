"""Session-21 red team of the guard service: the audit store's disk fills up under a running ``agentguard serve``.

The full disk is real to the server: its file-size limit is lowered while it runs (``prlimit --fsize``; Python
ignores SIGXFSZ, so a write past it fails with EFBIG as a full disk fails with ENOSPC), and 100 KB checks are sent
until writes fail. SQLite only (a PostgreSQL server is another process, whose disk this test cannot fill).

Held (a regression): every answered decision is in the store after the server is killed, and every request whose
write failed is a 503 without a verdict; none is ALLOW.

Found (fixed): ``GET /health`` said ``ok`` throughout, while every decision failed (the check only read the
database, which answers). It now reports ``unavailable`` (503) with ``audit_error: "audit writes failing: ..."``
while the writer's last batch failed (for 30 s, so a replica a load balancer took out is tried again).
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from agentguard.server.testing import free_port  # noqa: E402

TOKEN = "full-disk-token-0123456789"
H = {"Authorization": f"Bearer {TOKEN}"}


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("prlimit") is None, reason="needs prlimit")
def test_a_full_disk_answers_no_verdict_it_did_not_store(tmp_path):
    (tmp_path / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_file"]\n')
    port = free_port()
    p = subprocess.Popen([sys.executable, "-m", "agentguard", "serve", "--port", str(port), "--state-dir",
                          str(tmp_path), "--tool-guards", str(tmp_path / "tools.toml")],
                         env={**os.environ, "AGENTGUARD_TOKEN": TOKEN}, stdout=subprocess.DEVNULL,
                         stderr=open(tmp_path / "err.log", "w"), start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        t0 = time.time()
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert p.poll() is None and time.time() - t0 < 60, (tmp_path / "err.log").read_text()[-2000:]
            time.sleep(0.2)
        # the run-slot file (4 MiB) exists already; the database and its WAL may grow to 2.5 MB from here
        subprocess.run(["prlimit", "--pid", str(p.pid), "--fsize=2500000"], check=True)
        answered, refused = [], 0
        pad = "x" * 100_000
        for i in range(60):
            r = httpx.post(f"{base}/v1/check", headers=H, timeout=30,
                           json={"run_id": f"r{i % 5}", "tool_call": {"name": "read_file", "arguments": {"pad": pad}}})
            if r.status_code == 200:
                answered.append(r.json()["decision_id"])
            else:
                assert r.status_code == 503 and "decision" not in r.json() and "no verdict" in r.json()["error"], r.text
                refused += 1
        assert refused, "the disk never filled up (the test did not test anything)"
        assert answered, "nothing was answered before the disk filled up"
        h = httpx.get(f"{base}/health", timeout=10)
        assert h.status_code == 503 and "audit writes failing" in h.json()["audit_error"], h.text
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    with sqlite3.connect(str(tmp_path / "audit.sqlite")) as db:
        stored = {r[0] for r in db.execute("SELECT decision_id FROM decisions")}
    assert set(answered) <= stored
