"""Who uploaded each trace is recorded, and learning can be limited to the identities one trusts (session 20).

The hole: any credential with the ``agent`` role may ``POST /v1/traces``, and the service's trace folder is what
``agentguard learn`` reads for the proactive guard's model. An agent (or whoever holds its token) uploading made-up
runs in which the unsafe state is never reached pulled the learned probability of reaching it down, and nothing
told its uploads from the collector's. Now every upload file records the uploading credential's identity, the
summary counts uploads per identity, and ``load_traces(identities=...)`` / ``agentguard learn --from-identity``
learn only from the named ones.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")
pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from svc_roles import AGENT, Cred, entry  # noqa: E402

COLLECTOR = Cred("collector", "agent", "collector-token-012345")
SPEC = """name: two-bits
predicates:
  armed: armed
  fired: fired
unsafe: fired
valid_transition: any
unseen: pessimistic
alpha: 0
"""


def _trace(run_id: str, reaches: bool) -> dict:
    states = [{"armed": False, "fired": False}, {"armed": True, "fired": False},
              {"armed": True, "fired": reaches}]
    return {"run_id": run_id, "steps": [{"state": s} for s in states], "labels": {"unsafe": reaches}}


@pytest.fixture()
def service(tmp_path):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    creds = tmp_path / "credentials.toml"
    creds.write_text(entry(AGENT) + "\n" + entry(COLLECTOR))
    app = create_app(ServerSettings(state_dir=str(tmp_path / "state"), credentials_file=str(creds)))
    with serve_in_thread(app) as base:
        yield base, app.state.settings.traces_dir


def _upload(base, who, traces):
    r = httpx.post(f"{base}/v1/traces", headers=who.headers, json={"traces": traces})
    assert r.status_code == 200, r.text


def test_uploads_carry_their_identity_and_learning_names_whom_it_trusts(service, tmp_path):
    from typer.testing import CliRunner

    from agentguard.cli import app as cli
    from agentguard.predictive.dtmc import DTMC
    from agentguard.server.traces import load_traces, select_uploads, upload_identity

    base, folder = service
    _upload(base, COLLECTOR, [_trace(f"c{i}", reaches=i % 2 == 0) for i in range(10)])  # half reach "fired"
    _upload(base, AGENT, [_trace(f"a{i}", reaches=False) for i in range(90)])  # the poison: it never fires
    files = sorted(folder.glob("*.parquet"))
    assert sorted(upload_identity(f) for f in files) == ["agent-1", "collector"]
    assert [upload_identity(f) for f in select_uploads(folder, ["collector"])] == ["collector"]
    summary = httpx.get(f"{base}/v1/traces/summary", headers=AGENT.headers)
    assert summary.status_code == 403  # an agent does not read
    assert {t.run_id for t in load_traces(folder, identities=["collector"])} == {f"c{i}" for i in range(10)}
    assert load_traces(folder, identities=["nobody"]) == []
    assert len(load_traces(folder)) == 100

    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    fired = {}  # P(armed -> fired) in the model learned (alpha = 0: the observed frequency)
    for name, extra in (("all", []), ("trusted", ["--from-identity", "collector"])):
        out = tmp_path / f"{name}.json"
        res = CliRunner().invoke(cli, ["learn", str(folder), "--spec", str(spec), "--out", str(out), "--json", *extra])
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)["traces"] == (100 if name == "all" else 10)
        m = DTMC.load(out)
        fired[name] = float(m.matrix.toarray()[m.index_of("10"), m.index_of("11")])
    assert fired["trusted"] == pytest.approx(0.5) and fired["all"] == pytest.approx(5 / 100)
    res = subprocess.run([sys.executable, "-m", "agentguard", "learn", str(folder), "--spec", str(spec), "--out",
                          str(tmp_path / "x.json"), "--from-identity", "nobody"], capture_output=True, text=True)
    err = res.stdout + res.stderr
    assert res.returncode != 0 and "were uploaded by 'nobody'" in err and "Traceback" not in err, err


def test_the_identity_recorded_is_the_credentials_not_the_bodys(service):
    from agentguard.server.traces import upload_identity

    base, folder = service
    body = {"traces": [_trace("x1", False)], "identity": "collector"}
    r = httpx.post(f"{base}/v1/traces", headers=AGENT.headers, json=body)
    assert r.status_code in (200, 422), r.text
    assert all(upload_identity(f) == "agent-1" for f in folder.glob("*.parquet"))
