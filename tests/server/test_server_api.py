"""The guard service's HTTP API: auth, validation, limits, audit-before-answer, runs, traces."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

TOKEN = "test-token-123456"
RULES = Path(__file__).resolve().parents[2] / "src" / "agentguard" / "server" / "examples" / "rules.toml"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture()
def settings(tmp_path: Path) -> ServerSettings:
    # The deterministic rule stack (examples/rules.toml); the verified policy is tested in test_server_policy.
    return ServerSettings(token=TOKEN, state_dir=str(tmp_path / "data"), max_body_bytes=4096, run_ttl_s=60,
                          tool_guards=str(RULES))


@pytest.fixture()
def client(settings: ServerSettings):
    app = create_app(settings)
    with TestClient(app) as c:
        c.store = app.state.store  # type: ignore[attr-defined]
        c.app_state = app.state  # type: ignore[attr-defined]
        yield c


def test_health_needs_no_token(client):
    r = client.get("/health")
    assert r.status_code == 200
    assert r.json()["status"] == "ok"


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-token-xx"}, {"Authorization": TOKEN},
                                     {"Authorization": f"Basic {TOKEN}"}])
def test_requests_without_the_token_are_refused(client, headers):
    for method, path in [("post", "/v1/check"), ("get", "/v1/runs"), ("get", "/metrics"),
                         ("post", "/v1/runs/r1/steps"), ("post", "/v1/traces"), ("get", "/v1/decisions")]:
        r = getattr(client, method)(path, headers=headers, **({"json": {"tool_call": {"name": "x"}}}
                                                             if method == "post" else {}))
        assert r.status_code == 401, (path, r.text)
        assert "token" in r.json()["error"]
        assert r.headers["www-authenticate"].startswith("Bearer")
    assert client.store.count() == 0  # nothing was decided


def test_check_allows_and_rejects_and_audits_before_answering(client):
    r = client.post("/v1/check", headers=AUTH, json={"run_id": "run-1", "tool_call": {
        "name": "read_file", "arguments": {"path": "notes.txt"}}})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["decision"] == "ALLOW" and body["allowed"] is True
    # Already in the audit store when the answer arrives.
    rows = client.store.decisions(run_id="run-1")
    assert [d["decision_id"] for d in rows] == [body["decision_id"]]
    row = rows[0]
    assert row["kind"] == "check" and row["decision"] == "ALLOW" and len(row["input_digest"]) == 64
    r2 = client.post("/v1/check", headers=AUTH, json={"run_id": "run-1", "tool_call": {
        "name": "run_shell", "arguments": {"command": "ls"}}})
    assert r2.json()["decision"] == "REJECT" and "denied" in r2.json()["reason"]
    r3 = client.post("/v1/check", headers=AUTH, json={"run_id": "run-1", "tool_call": {
        "name": "write_file", "arguments": {"path": "../../etc/passwd"}}})
    assert r3.json()["decision"] == "REJECT"
    assert client.store.count() == 3
    # Same input, same digest.
    client.post("/v1/check", headers=AUTH, json={"run_id": "run-1", "tool_call": {
        "name": "read_file", "arguments": {"path": "notes.txt"}}})
    digests = [d["input_digest"] for d in client.store.decisions(run_id="run-1")]
    assert digests[0] == digests[-1] and digests[0] != digests[1]


def test_oversized_bodies_get_413(client):
    big = {"tool_call": {"name": "x", "arguments": {"blob": "a" * 10_000}}}
    r = client.post("/v1/check", headers=AUTH, json=big)
    assert r.status_code == 413
    assert "exceeds the limit of 4096 bytes" in r.json()["error"]

    def chunks():  # no Content-Length: counted while streaming
        for _ in range(10):
            yield b"x" * 1000

    r = client.post("/v1/check", headers={**AUTH, "Content-Type": "application/json"}, content=chunks())
    assert r.status_code == 413
    assert client.store.count() == 0


@pytest.mark.parametrize("raw,status,fragment", [
    (b"{not json", 400, "malformed JSON"),
    (b"", 400, "malformed JSON"),
    (b'{"tool_call": {"name": "x"}', 400, "malformed JSON"),
    (b"[1, 2]", 422, "invalid request"),
    (b'{"tool_call": {}}', 422, "tool_call.name: Field required"),
    (b'{"tool_call": {"name": ""}}', 422, "tool_call.name"),
    (b'{"tool_call": {"name": "x", "arguments": "rm -rf /"}}', 422, "tool_call.arguments"),
    (b'{"tool_call": {"name": "x"}, "run_id": "a b/../c"}', 422, "run_id"),
    (b'{"tool_call": {"name": "x"}, "surprise": 1}', 422, "surprise: Extra inputs are not permitted"),
    (b'{"tool_call": {"name": "x", "arguments": {"a": ' + b"[" * 1500 + b"]" * 1500 + b"}}}", 400,
     "nested deeper than 64"),
    ('{"tool_call": {"name": "\ud800"}}'.encode("utf-8", "surrogatepass"), 400, "malformed JSON"),
    (b"\xff\xfe{}", 400, "malformed JSON"),
])
def test_malformed_bodies_get_4xx_with_a_clear_message(client, raw, status, fragment):
    r = client.post("/v1/check", headers={**AUTH, "Content-Type": "application/json"}, content=raw)
    assert r.status_code == status, r.text
    msg = r.json()["error"]
    assert fragment in msg and "\n" not in msg
    assert client.store.count() == 0


def test_nothing_a_client_sends_is_executed(client, tmp_path):
    marker = tmp_path / "pwned"
    payloads = [
        f"__import__('os').system('touch {marker}')",
        f"$(touch {marker})",
        f"`touch {marker}`",
        "{{ config.__class__.__init__.__globals__ }}",
        "!!python/object/apply:os.system ['touch " + str(marker) + "']",
    ]
    for p in payloads:
        r = client.post("/v1/check", headers=AUTH, json={"run_id": "evil", "tool_call": {
            "name": p, "arguments": {"code": p, "path": p}}, "metadata": {"x": p}})
        assert r.status_code == 200
        assert r.json()["decision"] in ("ALLOW", "REJECT")
        r = client.post("/v1/runs/evil/steps", headers=AUTH, json={"state": p, "action": p, "observation": p})
        assert r.status_code == 200
    r = client.post("/v1/traces", headers=AUTH, json={"traces": [{"labels": {"x": payloads[0]}, "steps": [
        {"state": payloads[0], "action": {"name": payloads[0]}}]}]})
    assert r.status_code == 200
    assert not marker.exists()
    # Everything was kept verbatim, as data: the stored steps hold the exact strings sent.
    assert len(client.store.decisions(run_id="evil")) == 2 * len(payloads)
    assert [s["payload"]["state"] for s in client.store.run_steps("evil")] == payloads


def test_server_code_has_no_eval_exec_or_unpickling():
    """A static check over the service's source: no eval/exec/compile, pickle, marshal or yaml.load."""
    root = Path(__file__).resolve().parents[2] / "src" / "agentguard" / "server"
    banned_calls = {"eval", "exec", "compile", "__import__"}
    banned_modules = {"pickle", "marshal", "shelve", "dill", "cloudpickle"}
    found = []
    for py in root.rglob("*.py"):
        tree = ast.parse(py.read_text(), str(py))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if name in banned_calls and not (name == "compile" and isinstance(f, ast.Attribute)):  # re.compile
                    found.append(f"{py.name}:{node.lineno} {name}()")
                if isinstance(f, ast.Attribute) and f.attr in ("load", "unsafe_load") and \
                        isinstance(f.value, ast.Name) and f.value.id == "yaml":
                    found.append(f"{py.name}:{node.lineno} yaml.{f.attr}")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for n in names:
                    if n.split(".")[0] in banned_modules:
                        found.append(f"{py.name}:{node.lineno} import {n}")
    assert found == []


def test_openapi_schema_is_published(client):
    r = client.get("/openapi.json")
    assert r.status_code == 200
    spec = r.json()
    assert {"/v1/check", "/v1/runs/{run_id}/steps", "/v1/runs/{run_id}/signals", "/v1/traces", "/health",
            "/metrics"} <= set(spec["paths"])
    body = spec["paths"]["/v1/check"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["$ref"] == "#/components/schemas/CheckRequest"
    assert "tool_call" in spec["components"]["schemas"]["CheckRequest"]["properties"]
    assert "ToolCallIn" in spec["components"]["schemas"]
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def test_metrics_in_prometheus_text_format(client):
    client.post("/v1/check", headers=AUTH, json={"tool_call": {"name": "read_file"}})
    client.post("/v1/check", headers=AUTH, json={"tool_call": {"name": "shell"}})
    r = client.get("/metrics", headers=AUTH)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'agentguard_decisions_total{kind="check",decision="ALLOW"} 1' in text
    assert 'agentguard_decisions_total{kind="check",decision="REJECT"} 1' in text
    assert 'agentguard_request_duration_seconds_count{route="/v1/check"} 2' in text
    assert "# TYPE agentguard_request_duration_seconds histogram" in text
    for line in text.splitlines():  # every sample line is "name{labels} value"
        if line and not line.startswith("#"):
            float(line.rsplit(" ", 1)[1])


def test_steps_keep_per_run_state_and_signals_alarm(client):
    for i, action in enumerate(["find Pot", {"name": "read_file", "arguments": {"path": "a"}},
                                {"name": "shell", "arguments": {}}]):
        r = client.post("/v1/runs/run-s/steps", headers=AUTH, json={"state": {"i": i}, "action": action})
        assert r.status_code == 200, r.text
        assert r.json()["step"] == i
    assert r.json()["decision"] == "REJECT"
    st = client.app_state.runs.peek("run-s")
    assert len(st.trace) == 3 and st.trace.steps[1].action.name == "read_file"
    assert [s["idx"] for s in client.store.run_steps("run-s")] == [0, 1, 2]
    r = client.post("/v1/runs/run-s/signals", headers=AUTH, json={"signals": {"score": 0.9}})
    assert r.json()["decision"] == "ALLOW" and r.json()["numbers"]["threshold"] == 0.5
    r = client.post("/v1/runs/run-s/signals", headers=AUTH, json={"signals": {"score": 0.2}})
    assert r.json()["decision"] == "HALT" and "calibrated threshold" in r.json()["reason"]
    # The monitor is per run: another run is not alarmed; this one stays alarmed (Eq. 1 latches).
    r = client.post("/v1/runs/other/signals", headers=AUTH, json={"signals": {"score": 0.9}})
    assert r.json()["decision"] == "ALLOW"
    r = client.post("/v1/runs/run-s/signals", headers=AUTH, json={"signals": {"score": 0.95}})
    assert r.json()["decision"] == "HALT"
    r = client.post("/v1/runs/other/signals", headers=AUTH, json={"signals": {"verifier": 0.95}})
    assert r.json()["decision"] == "HALT" and "no signal 'score'" in r.json()["reason"]  # fail closed
    r = client.post("/v1/runs/run-s/signals", headers={**AUTH, "Content-Type": "application/json"},
                    content=b'{"signals": {"score": NaN}}')
    assert r.status_code in (400, 422)
    run = client.get("/v1/runs/run-s", headers=AUTH).json()
    # after the latched HALT the monitor is not asked again: the series shows the value streamed (0.95)
    assert len(run["risk"]) == 3 and [s["value"] for s in run["signals"]] == [0.9, 0.2, 0.95]
    runs = {r["run_id"]: r for r in client.get("/v1/runs", headers=AUTH).json()["runs"]}
    assert runs["run-s"]["active"] and runs["run-s"]["steps"] == 3 and runs["run-s"]["n_decisions"] == 6


def test_run_state_is_rebuilt_from_the_store_by_another_process(settings):
    """A second app on the same store (another worker/replica) continues a run it never saw."""
    a = create_app(settings)
    with TestClient(a) as ca:
        for i in range(2):
            assert ca.post("/v1/runs/shared/steps", headers=AUTH, json={"state": i}).status_code == 200
        b = create_app(settings, store=a.state.store)
        with TestClient(b) as cb:
            r = cb.post("/v1/runs/shared/steps", headers=AUTH, json={"state": 2})
            assert r.json()["step"] == 2
            assert [s.state for s in b.state.runs.peek("shared").trace.steps] == [0, 1, 2]
        # a's cache is stale (2 steps, store has 3): it notices and rebuilds
        r = ca.post("/v1/runs/shared/steps", headers=AUTH, json={"state": 3})
        assert r.json()["step"] == 3
        # A latched monitor alarm survives the move to another process (replayed from the store).
        assert ca.post("/v1/runs/shared/signals", headers=AUTH, json={"signals": {"score": 0.1}}
                       ).json()["decision"] == "HALT"
        c = create_app(settings, store=a.state.store)
        with TestClient(c) as cc:
            r = cc.post("/v1/runs/shared/signals", headers=AUTH, json={"signals": {"score": 0.99}})
            assert r.json()["decision"] == "HALT"
            assert cc.post("/v1/runs/fresh-run/signals", headers=AUTH, json={"signals": {"score": 0.99}}
                           ).json()["decision"] == "ALLOW"


def test_runs_expire(settings):
    import agentguard.server.runs as runs_mod

    now = [1000.0]
    app = create_app(settings.with_(run_ttl_s=10))
    reg = app.state.runs
    reg.clock = lambda: now[0]
    with TestClient(app) as c:
        assert c.post("/v1/runs/old/steps", headers=AUTH, json={"state": 0}).status_code == 200
        now[0] += 5
        assert c.post("/v1/runs/old/steps", headers=AUTH, json={"state": 1}).status_code == 200
        now[0] += 11
        assert c.post("/v1/runs/fresh/steps", headers=AUTH, json={"state": 0}).status_code == 200
        assert "old" not in reg and reg.expired_total == 1
        r = c.post("/v1/runs/old/steps", headers=AUTH, json={"state": 2})
        assert r.status_code == 410 and "expired" in r.json()["error"]
        r = c.post("/v1/runs/old/signals", headers=AUTH, json={"signals": {"s": 1.0}})
        assert r.status_code == 410
    assert isinstance(runs_mod.RunExpired("x"), Exception)


def test_traces_ingest_to_parquet_and_read_back(client, settings):
    from agentguard.core import ToolCall
    from agentguard.server.traces import load_traces, query

    traces = [{"run_id": f"t{i}", "labels": {"unsafe": i % 2 == 1}, "steps": [
        {"state": {"s": j}, "action": {"name": "find", "arguments": {"obj": "Pot"}}, "signals": {"score": j / 10},
         "time": float(j)} for j in range(3)]} for i in range(4)]
    traces.append({"run_id": "empty", "labels": {"unsafe": False}, "steps": []})
    r = client.post("/v1/traces", headers=AUTH, json={"traces": traces})
    assert r.status_code == 200, r.text
    assert r.json()["stored_runs"] == 5 and r.json()["rows"] == 13
    back = load_traces(settings.traces_dir)
    assert [t.run_id for t in back] == ["t0", "t1", "t2", "t3", "empty"]
    assert back[1].labels == {"unsafe": True} and len(back[4]) == 0
    s = back[2].steps[1]
    assert s.state == {"s": 1} and s.action == ToolCall("find", {"obj": "Pot"}) and s.signals == {"score": 0.1}
    assert [t.run_id for t in load_traces(settings.traces_dir, unsafe=True)] == ["t1", "t3"]
    rows = query(settings.traces_dir, "SELECT run_id, count(*) AS n FROM traces WHERE step >= 0 "
                                      "GROUP BY run_id ORDER BY run_id")
    assert rows == [{"run_id": f"t{i}", "n": 3} for i in range(4)]
    assert client.get("/v1/traces/summary", headers=AUTH).json() == {"runs": 5, "steps": 12, "unsafe_runs": 2,
                                                                     "uploads_by_identity": {"token": 1}}


def test_guard_that_raises_fails_closed(settings):
    from agentguard.core import BaseGuard
    from agentguard.server.guards import ServiceGuards, default_guards

    class Broken(BaseGuard):
        name = "broken"

        def check(self, context, proposal):
            raise RuntimeError("boom")

    g = default_guards(settings)
    app = create_app(settings, ServiceGuards(tool=Broken(), step=g.step, signal=g.signal))
    with TestClient(app) as c:
        r = c.post("/v1/check", headers=AUTH, json={"tool_call": {"name": "read_file"}})
        assert r.status_code == 200 and r.json()["decision"] == "HALT" and "boom" in r.json()["reason"]
        assert app.state.store.decisions()[0]["decision"] == "HALT"


def test_audit_failure_gives_503_and_no_verdict(client):
    assert client.get("/health").json()["audit_error"] is None
    client.store.close()  # writes now fail
    h = client.get("/health")
    assert h.status_code == 503 and h.json()["audit_error"] == "audit writer not running"
    r = client.post("/v1/check", headers=AUTH, json={"tool_call": {"name": "read_file"}})
    assert r.status_code == 503 and "decision" not in r.json()
    assert "no verdict" in r.json()["error"]


def test_settings_from_toml_and_env(tmp_path, monkeypatch):
    from agentguard.core.errors import InputError
    from agentguard.server.settings import load_settings

    (tmp_path / "tok").write_text("file-token-abcdef\n")
    cfg = tmp_path / "agentguard.toml"
    cfg.write_text('[server]\nport = 9001\ntoken_file = "tok"\nrun_ttl_s = 5\n')
    monkeypatch.delenv("AGENTGUARD_TOKEN", raising=False)
    s = load_settings(cfg)
    assert s.port == 9001 and s.token == "file-token-abcdef" and s.run_ttl_s == 5
    assert "file-token" not in repr(s)
    monkeypatch.setenv("AGENTGUARD_TOKEN", "env-token-abcdef")
    assert load_settings(cfg, port=9002).token == "env-token-abcdef"
    assert load_settings(cfg, port=9002).port == 9002
    cfg.write_text("[server]\nprot = 1\n")
    with pytest.raises(InputError, match="unknown \\[server\\] keys: prot"):
        load_settings(cfg)


def test_the_state_folder_is_not_the_data_folder(tmp_path, monkeypatch):
    """The service's folder is ``state_dir``/``AGENTGUARD_STATE_DIR`` (``AGENTGUARD_DATA`` is the benchmark
    data folder); the old names are refused with a message naming the new one, or kept as an alias."""
    from agentguard.core.errors import InputError
    from agentguard.server.settings import load_settings

    monkeypatch.delenv("AGENTGUARD_DATA_DIR", raising=False)
    monkeypatch.setenv("AGENTGUARD_STATE_DIR", str(tmp_path / "state"))
    s = load_settings(None)
    assert s.state_dir == str(tmp_path / "state") and s.database_url.endswith("state/audit.sqlite")
    assert s.traces_dir == tmp_path / "state" / "traces"
    monkeypatch.setenv("AGENTGUARD_DATA_DIR", str(tmp_path / "old"))
    with pytest.raises(InputError, match="AGENTGUARD_DATA_DIR was renamed AGENTGUARD_STATE_DIR"):
        load_settings(None)
    monkeypatch.delenv("AGENTGUARD_DATA_DIR")
    monkeypatch.delenv("AGENTGUARD_STATE_DIR")
    cfg = tmp_path / "agentguard.toml"
    cfg.write_text('[server]\ndata_dir = "x"\n')
    with pytest.raises(InputError, match="data_dir was renamed state_dir"):
        load_settings(cfg)
    cfg.write_text('[server]\nstate_dir = "x"\n')
    assert load_settings(cfg).state_dir == str((tmp_path / "x").resolve())
    with pytest.warns(DeprecationWarning, match="state_dir"):
        old = ServerSettings(data_dir=str(tmp_path / "o"))
    assert old.state_dir == str(tmp_path / "o") and "data_dir" not in old.to_json()
    assert ServerSettings.from_json(old.to_json()) == old


def test_serve_without_token_is_a_clear_error(tmp_path, monkeypatch, capsys):
    from agentguard.cli import main

    monkeypatch.delenv("AGENTGUARD_TOKEN", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--state-dir", str(tmp_path), "--port", "8799"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "no credentials" in err and "AGENTGUARD_TOKEN" in err and "--credentials" in err


def test_dashboard_shell_is_public_but_data_is_not(client):
    r = client.get("/dashboard")
    assert r.status_code == 200 and "<title>agentguard dashboard</title>" in r.text
    assert client.get("/static/dashboard.js").status_code == 200
    assert client.get("/v1/model").status_code == 401
    m = client.get("/v1/model", headers=AUTH).json()
    assert m["model"] is None and len(m["guards_version"]) == 16


def test_guard_files_are_versioned_and_hot_reloaded(tmp_path):
    pytest.importorskip("agentguard.config")
    rules = tmp_path / "tools.toml"
    rules.write_text('[[guards]]\ntype = "tool-rules"\nname = "deploy-rules"\ndeny = ["delete_*"]\n')
    s = ServerSettings(token=TOKEN, state_dir=str(tmp_path / "d"), tool_guards=str(rules), reload_s=0.01)
    app = create_app(s)
    src = app.state.guard_source

    def decide(c, name):
        return c.post("/v1/check", headers=AUTH, json={"tool_call": {"name": name}}).json()["decision"]

    with TestClient(app) as c:
        v1 = c.get("/health").json()["guards_version"]
        assert len(v1) == 16
        assert decide(c, "delete_db") == "REJECT" and decide(c, "send_mail") == "ALLOW"
        rules.write_text('[[guards]]\ntype = "tool-rules"\nname = "deploy-rules"\ndeny = ["send_*"]\n')
        import time as _t

        _t.sleep(0.05)
        assert decide(c, "delete_db") == "ALLOW" and decide(c, "send_mail") == "REJECT"
        v2 = c.get("/health").json()["guards_version"]
        assert v2 != v1 and src.reloads == 1
        versions = [d["guard_version"] for d in app.state.store.decisions()]
        assert versions == [v1, v1, v2, v2]
        # A broken file keeps the previous guards (never fails open) and is reported.
        rules.write_text('[[guards]]\ntype = "no-such-guard"\n')
        _t.sleep(0.05)
        assert decide(c, "send_mail") == "REJECT"
        h = c.get("/health").json()
        assert h["guards_version"] == v2 and h["guards_error"] and "no-such-guard" in src.last_error
        assert "no-such-guard" not in h["guards_error"]  # public /health: that it failed; the detail is logged


def test_a_changed_model_file_is_a_new_version(tmp_path):
    """Files referenced by guard files (models, calibration) are versioned and reloaded too."""
    cal = tmp_path / "cal.json"
    cal.write_text('{"threshold": 0.4}')
    sig = tmp_path / "signals.toml"
    sig.write_text('[[guards]]\ntype = "python"\nfactory = "agentguard.calibration:ThresholdMonitor"\n'
                   'calibration = "cal.json"\n')
    s = ServerSettings(token=TOKEN, state_dir=str(tmp_path / "d"), signal_guards=str(sig), reload_s=0.01)
    import os as _os

    cwd = _os.getcwd()
    _os.chdir(tmp_path)  # the factory reads the relative path from the working directory
    try:
        app = create_app(s)
        with TestClient(app) as c:
            v1 = c.get("/health").json()["guards_version"]
            assert c.post("/v1/runs/a/signals", headers=AUTH, json={"signals": {"score": 0.45}}
                          ).json()["decision"] == "ALLOW"
            cal.write_text('{"threshold": 0.5}')
            import time as _t

            _t.sleep(0.05)
            r = c.post("/v1/runs/b/signals", headers=AUTH, json={"signals": {"score": 0.45}})
            assert r.json()["decision"] == "HALT" and r.json()["numbers"]["threshold"] == 0.5
            assert c.get("/health").json()["guards_version"] != v1
    finally:
        _os.chdir(cwd)


def test_published_openapi_file_is_current(client):
    """docs/server_openapi.json (for clients in other languages) matches the running service's schema.

    Regenerate: python -c "from agentguard.server.app import write_openapi; write_openapi()"."""
    published = json.loads((Path(__file__).resolve().parents[2] / "docs" / "server_openapi.json").read_text())
    live = client.get("/openapi.json").json()
    for spec in (published, live):
        spec["info"].pop("version", None)  # the package version may move on
    assert live == published


def test_serve_with_a_broken_guard_file_is_a_clear_error(tmp_path, monkeypatch, capsys):
    from agentguard.cli import main

    bad = tmp_path / "g.toml"
    bad.write_text('[[guards]]\ntype = "polcy"\n')
    monkeypatch.setenv("AGENTGUARD_TOKEN", TOKEN)
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--data-dir", str(tmp_path), "--port", "8798", "--tool-guards", str(bad)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "polcy" in err and len(err.strip().splitlines()) == 1


def test_package_exports_are_lazy_and_sorted():
    import subprocess
    import sys

    import agentguard.server as srv

    assert srv.__all__ == sorted(srv.__all__)
    for name in srv.__all__:
        assert getattr(srv, name) is not None
    # The command line imports agentguard.server.commands without FastAPI/SQLAlchemy/pyarrow.
    code = ("import sys, agentguard.cli; bad = [m for m in ('fastapi', 'sqlalchemy', 'pyarrow', 'duckdb') "
            "if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_guards_are_shared_across_runs_and_forget_a_run_when_it_ends(settings):
    """One guard instance serves every run (per-run memory keyed by run id); an expired run's memory is
    dropped with end_run; a third-party guard with reset() but no end_run still gets a per-run copy."""
    from agentguard.calibration import ThresholdMonitor
    from agentguard.core import BaseGuard, Verdict
    from agentguard.server.guards import ServiceGuards, default_guards

    class Latching(BaseGuard):  # keeps its state in itself: must be copied per run
        name = "latching"

        def __init__(self):
            self.seen = 0

        def reset(self):
            self.seen = 0

        def check(self, context, proposal):
            self.seen += 1
            return Verdict.allow(self.name, f"seen {self.seen}", seen=self.seen)

    ended = []

    class Monitor(ThresholdMonitor):
        def end_run(self, run_id):
            ended.append(run_id)
            super().end_run(run_id)

    now = [1000.0]
    g = default_guards(settings)
    monitor = Monitor(0.5)
    app = create_app(settings.with_(run_ttl_s=10), ServiceGuards(tool=g.tool, step=Latching(), signal=monitor))
    app.state.runs.clock = lambda: now[0]
    with TestClient(app) as c:
        for run in ("r1", "r2"):
            assert c.post(f"/v1/runs/{run}/signals", headers=AUTH, json={"signals": {"score": 0.9}}).status_code == 200
            assert c.post(f"/v1/runs/{run}/steps", headers=AUTH, json={"state": 0}).json()["numbers"]["seen"] == 1
        pipes = app.state.service.pipelines()
        assert pipes.raw["signal"] is monitor        # shared
        copies = pipes.raw["step"]  # a PerRunCopy: one reset copy of Latching per run
        assert copies.copy_for("r1") is not copies.copy_for("r2") and copies.guard.seen == 0
        now[0] += 11
        c.post("/v1/runs/r3/signals", headers=AUTH, json={"signals": {"score": 0.9}})
        assert {"r1", "r2"} <= set(ended)


def test_check_accepts_the_openai_id_as_the_call_id_alias(client):
    """An OpenAI-style tool call names its id ``id`` (issue 29: was 422); ``args`` or a second, different id is
    still refused."""
    r = client.post("/v1/check", headers=AUTH, json={"run_id": "run-id", "tool_call": {
        "id": "call_abc", "name": "read_file", "arguments": {"path": "notes.txt"}}})
    assert r.status_code == 200, r.text
    assert r.json()["decision"] == "ALLOW"
    stored = client.store.run_input(r.json()["decision_id"])["payload"]["input"]["tool_call"]
    assert stored["call_id"] == "call_abc" and "id" not in stored
    for bad in ({"id": "a", "call_id": "b", "name": "read_file"}, {"name": "read_file", "args": {"path": "x"}}):
        r = client.post("/v1/check", headers=AUTH, json={"run_id": "run-id", "tool_call": bad})
        assert r.status_code == 422, r.text


def test_two_authorization_headers_are_refused_and_nothing_is_decided(client):
    # red team: the gate read the first Authorization header, the generic check the last; any request
    # with two credentials is now 401 whatever their order
    body = {"tool_call": {"name": "read_file", "arguments": {"path": "a.txt"}}}
    for pair in ([("Authorization", f"Bearer {TOKEN}"), ("Authorization", "Bearer other-token-xyz")],
                 [("Authorization", "Bearer other-token-xyz"), ("authorization", f"Bearer {TOKEN}")],
                 [("Authorization", f"Bearer {TOKEN}"), ("Authorization", f"Bearer {TOKEN}")]):
        r = client.post("/v1/check", headers=pair, json=body)
        assert r.status_code == 401 and "more than one credential" in r.json()["error"], r.text
    assert client.store.count() == 0
    assert client.post("/v1/check", headers=AUTH, json=body).json()["allowed"] is True
