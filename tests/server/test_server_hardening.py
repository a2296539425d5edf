"""The hardened service, started for real (``agentguard serve`` in a subprocess, uvicorn + httptools):

- idle and slow-header (slowloris) connections are closed within the configured timeouts, and a flood
  of them over ``max_connections`` evicts the oldest, while ``GET /health`` keeps answering;
- an idle keep-alive connection is closed after ``keep_alive_s``;
- ``limit=-1`` (and 0, and over the documented maximum) is refused on every listing;
- a failed hot reload shows on ``/health`` (``status: degraded``, ``guards_error``; 503 with ``?strict=true``)
  while the previous guards keep deciding;
- duplicate JSON keys, ``NaN`` and a negative Content-Length are refused;
- CSP, frame and nosniff headers on the dashboard, the API and errors; a public favicon;
- with ``--workers 2`` the token and database URL read from files are in no worker's environment, and
  ``kill -9`` of the master takes the workers (and the port) down with it.

Configured limits in these tests: header_timeout_s = 2, keep_alive_s = 1, max_connections = 100 (the
defaults are 10 s, 5 s, 4096; see docs/server.md "Limits").
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from agentguard.server.testing import free_port

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and Linux signals")

TOKEN = "hardening-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HEADER_TIMEOUT = 2.0
KEEP_ALIVE = 1.0
MAX_CONN = 100
SECRET_DB = "agentguard-secret-db-name"
GUARD_TOML = """[stack]
name = "rules"
[[guards]]
type = "tool-rules"
name = "no-deletes"
deny = ["delete_*"]
"""


def _config(tmp: Path, port: int, workers: int = 1) -> Path:
    (tmp / "token").write_text(TOKEN + "\n")
    (tmp / "guards.toml").write_text(GUARD_TOML)
    state = tmp / "state"
    state.mkdir(exist_ok=True)
    cfg = tmp / "server.toml"
    cfg.write_text(f"""[server]
port = {port}
token_file = "token"
db_url = "sqlite:///{state / (SECRET_DB + '.sqlite')}"
state_dir = "state"
workers = {workers}
tool_guards = "guards.toml"
reload_s = 0.3
header_timeout_s = {HEADER_TIMEOUT}
keep_alive_s = {KEEP_ALIVE}
max_connections = {MAX_CONN}
graceful_shutdown_s = 2
""")
    return cfg


def _start(cfg: Path, port: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGUARD_")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    p = subprocess.Popen([sys.executable, "-m", "agentguard", "serve", "--config", str(cfg)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    t0 = time.time()
    while time.time() - t0 < 60:
        if p.poll() is not None:
            raise RuntimeError(f"serve exited {p.returncode}: {p.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return p
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    p.kill()
    raise RuntimeError("service did not start")


def _stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hardened")
    port = free_port()
    p = _start(_config(tmp, port), port)
    try:
        yield f"http://127.0.0.1:{port}", port, tmp
    finally:
        _stop(p)


def _health_ok(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_idle_and_slow_header_connections_are_closed_while_health_answers(service):
    base, port, _ = service
    sel = selectors.DefaultSelector()
    opened: dict[socket.socket, tuple[str, float]] = {}
    closed: dict[str, list[float]] = {"idle": [], "slow": []}
    for i in range(150):  # 150 idle (nothing sent) and 30 slowloris, against max_connections = 100
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        opened[s] = ("idle", time.monotonic())
        sel.register(s, selectors.EVENT_READ)
    slow = []
    for i in range(30):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        s.setblocking(False)
        opened[s] = ("slow", time.monotonic())
        sel.register(s, selectors.EVENT_READ)
        slow.append(s)
    health, t_end, next_drip = [], time.monotonic() + HEADER_TIMEOUT + 4, 0.0
    while opened and time.monotonic() < t_end:
        now = time.monotonic()
        if now >= next_drip:  # one header byte every 0.3 s: resets no timer of ours
            for s in slow:
                if s in opened:
                    try:
                        s.send(b"X")
                    except OSError:
                        pass
            health.append(_health_ok(base))
            next_drip = now + 0.3
        for key, _ in sel.select(0.05):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except (ConnectionResetError, BlockingIOError):
                data = b""
            if not data:
                kind, t0 = opened.pop(s)
                closed[kind].append(time.monotonic() - t0)
                sel.unregister(s)
                s.close()
    for s in list(opened):
        s.close()
    assert not opened, f"{len(opened)} connections still open after {HEADER_TIMEOUT + 4} s"
    assert len(closed["idle"]) == 150 and len(closed["slow"]) == 30
    assert max(closed["idle"] + closed["slow"]) < HEADER_TIMEOUT + 1.5, closed
    # the flood over max_connections was cut at once: the oldest idle connections made room
    assert sum(t < HEADER_TIMEOUT / 2 for t in closed["idle"]) >= 150 + 30 - MAX_CONN
    assert health and all(health), health
    assert _health_ok(base)


def test_idle_keep_alive_connection_closes_after_keep_alive_s(service):
    base, port, _ = service
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    s.settimeout(5)
    first = s.recv(65536)
    assert first.startswith(b"HTTP/1.1 200"), first[:100]
    t0 = time.monotonic()
    while True:
        if not s.recv(65536):
            break
    s.close()
    assert KEEP_ALIVE * 0.5 <= time.monotonic() - t0 < KEEP_ALIVE + 1.5


@pytest.mark.parametrize("path", ["/v1/decisions", "/v1/runs", "/v1/runs/r1"])
@pytest.mark.parametrize("limit", ["-1", "0", "1000000000", "abc"])
def test_listing_limits_are_bounded(service, path, limit):
    base, _, _ = service
    r = httpx.get(f"{base}{path}?limit={limit}", headers=AUTH)
    assert r.status_code == 422, (r.status_code, r.text)
    assert "limit" in r.json()["error"]


def test_bad_json_bodies_are_refused(service):
    base, port, _ = service
    h = {**AUTH, "Content-Type": "application/json"}
    dup = b'{"run_id": "d1", "tool_call": {"name": "delete_all", "name": "ls"}}'
    r = httpx.post(f"{base}/v1/check", headers=h, content=dup)
    assert r.status_code == 400 and "duplicate key 'name'" in r.json()["error"], r.text
    r = httpx.post(f"{base}/v1/check", headers=h, content=b'{"run_id": "d1", "run_id": "d2", "tool_call": {"name": "x"}}')
    assert r.status_code == 400
    r = httpx.post(f"{base}/v1/runs/d1/signals", headers=h, content=b'{"signals": {"score": NaN}}')
    assert r.status_code == 400 and "NaN" in r.json()["error"]
    # the same call without the duplicate is decided (the rules deny delete_*)
    r = httpx.post(f"{base}/v1/check", headers=h, content=b'{"run_id": "d1", "tool_call": {"name": "delete_all"}}')
    assert r.status_code == 200 and r.json()["decision"] != "ALLOW"
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"POST /v1/check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
              "Content-Length: -5\r\n\r\n".encode())
    s.settimeout(5)
    assert s.recv(100).split(b" ")[1] == b"400"  # refused (by the HTTP parser or the gate), no thread blocked
    s.close()


def test_security_headers_and_public_favicon(service):
    base, _, _ = service
    for path, headers in (("/dashboard", {}), ("/v1/runs", AUTH), ("/v1/runs", {}), ("/health", {}),
                          ("/static/dashboard.js", {})):
        r = httpx.get(base + path, headers=headers)
        assert r.headers["x-frame-options"] == "DENY", path
        assert r.headers["x-content-type-options"] == "nosniff", path
        csp = r.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp, path
    r = httpx.get(base + "/docs")
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    r = httpx.get(base + "/favicon.ico")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/")


def test_failed_reload_is_visible_on_health(service):
    base, _, tmp = service
    g = tmp / "guards.toml"
    before = httpx.get(f"{base}/health").json()
    assert before["status"] == "ok" and before["guards_error"] is None
    try:
        tmp_file = tmp / "guards.toml.new"
        tmp_file.write_text(GUARD_TOML.replace('type = "tool-rules"', 'type = "no-such-guard-type"'))
        os.replace(tmp_file, g)
        t0 = time.time()
        while time.time() - t0 < 10:
            h = httpx.get(f"{base}/health")
            if h.json()["status"] == "degraded":
                break
            time.sleep(0.2)
        body = h.json()
        assert h.status_code == 200 and body["status"] == "degraded" and body["guards_error"], body
        assert body["guards_version"] == before["guards_version"]  # the previous guards are in force
        assert httpx.get(f"{base}/health?strict=true").status_code == 503
        r = httpx.post(f"{base}/v1/check", headers=AUTH, json={"run_id": "rl", "tool_call": {"name": "delete_x"}})
        assert r.status_code == 200 and r.json()["decision"] != "ALLOW"  # still checked, by the old guards
    finally:
        tmp_file.write_text(GUARD_TOML.replace("delete_*", "remove_*"))
        os.replace(tmp_file, g)
    t0 = time.time()
    while time.time() - t0 < 10 and httpx.get(f"{base}/health").json()["status"] != "ok":
        time.sleep(0.2)
    after = httpx.get(f"{base}/health").json()
    assert after["status"] == "ok" and after["guards_error"] is None and after["guards_version"] != before["guards_version"]


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d.name))
    return out


def _read(pid: int, name: str) -> bytes:
    try:
        return (Path("/proc") / str(pid) / name).read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_workers_hold_no_secrets_and_die_with_their_master(tmp_path):
    port = free_port()
    p = _start(_config(tmp_path, port, workers=2), port)
    try:
        t0 = time.time()
        workers: list[int] = []
        while time.time() - t0 < 30:  # the two uvicorn workers (multiprocessing spawn children)
            workers = [c for c in _children(p.pid) if b"spawn_main" in _read(c, "cmdline")]
            if len(workers) == 2:
                break
            time.sleep(0.2)
        assert len(workers) == 2, workers
        for pid in [p.pid, *workers]:
            env = _read(pid, "environ")
            assert env, pid
            assert TOKEN.encode() not in env and SECRET_DB.encode() not in env, pid
            recipe = json.loads(dict(kv.split(b"=", 1) for kv in env.split(b"\0") if b"=" in kv)
                                .get(b"AGENTGUARD_SERVER_RECIPE", b"{}") or b"{}")
            assert TOKEN not in json.dumps(recipe)
        assert httpx.get(f"http://127.0.0.1:{port}/v1/runs", headers=AUTH).status_code == 200
        os.kill(p.pid, signal.SIGKILL)
        p.wait(5)
        t0 = time.time()
        while time.time() - t0 < 15 and any(_alive(w) for w in workers):
            time.sleep(0.1)
        took = time.time() - t0
        assert not any(_alive(w) for w in workers), f"workers still alive {took:.1f} s after kill -9 of the master"
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
