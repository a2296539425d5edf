"""Guards the service builds from guard files through the mechanisms' own ``from_config``: the proactive
guard from model files (the one DTMC loader), the calibrated monitor from a calibration file."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("fastapi")

from agentguard.core import Context, Decision, Step  # noqa: E402
from agentguard.predictive.dtmc import DTMC  # noqa: E402
from agentguard.calibration import ThresholdMonitor  # noqa: E402
from agentguard.predictive import ProactiveGuard  # noqa: E402


def proactive_guard(**params):
    return ProactiveGuard.from_config(params)


def threshold_monitor(**params):
    return ThresholdMonitor.from_config(params)


def _toy(tmp_path):
    P = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]])
    m = DTMC(P, 0, labels={"unsafe": [0, 0, 1]}, state_names=["a", "b", "bad"]).validate()
    path = tmp_path / "m.json"
    m.save(path)
    return path


def test_proactive_guard_from_a_json_model(tmp_path):
    g = proactive_guard(model=str(_toy(tmp_path)), threshold=0.5)
    # every state eventually reaches "bad": P_safe = 0 everywhere, the alarm fires
    v = g.check(Context(state="a"), Step(state="a"))
    assert v.decision is Decision.REJECT and v.numbers["probability"] == pytest.approx(0.0)
    assert g.model.n == 3


def test_proactive_guard_from_a_pro2guard_folder(data_dir):
    folder = data_dir / "pro2guard" / "embodied_dtmcs" / "log_raw_t103"
    if not folder.is_dir():
        pytest.skip(f"{folder} missing")
    g = proactive_guard(model=str(folder), threshold=0.5)
    assert g.model.n >= 3 and len(g.table_) == g.model.n


def test_guard_file_with_proactive_and_monitor_in_the_service(tmp_path):
    from fastapi.testclient import TestClient

    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    model = _toy(tmp_path)
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"threshold": 0.4, "alpha": 0.1, "method": "crc", "curves": {
        "false alarms": {"x": [0, 0.5, 1], "y": [0, 0.1, 1], "xlabel": "threshold", "ylabel": "rate"}}}))
    steps = tmp_path / "steps.toml"
    steps.write_text(f'[[guards]]\ntype = "python"\nfactory = "agentguard.predictive:ProactiveGuard"\n'
                     f'model = "{model}"\nthreshold = 0.5\n')
    sig = tmp_path / "signals.toml"
    sig.write_text(f'[[guards]]\ntype = "python"\nfactory = "agentguard.calibration:ThresholdMonitor"\n'
                   f'calibration = "{cal}"\nsignal = "verifier"\n')
    s = ServerSettings(token="factory-token-1", state_dir=str(tmp_path / "d"), step_guards=str(steps),
                       signal_guards=str(sig))
    h = {"Authorization": "Bearer factory-token-1"}
    with TestClient(create_app(s)) as c:
        r = c.post("/v1/runs/x/steps", headers=h, json={"state": "b"})
        assert r.json()["decision"] == "REJECT" and r.json()["numbers"]["threshold"] == 0.5
        assert c.post("/v1/runs/x/signals", headers=h, json={"signals": {"verifier": 0.5}}).json()["decision"] == "ALLOW"
        r = c.post("/v1/runs/x/signals", headers=h, json={"signals": {"verifier": 0.3}})
        assert r.json()["decision"] == "HALT" and r.json()["numbers"]["threshold"] == 0.4
        assert c.get("/v1/model", headers=h).json()["model"]["unsafe"] == [2]
        assert "false alarms" in c.get("/v1/calibration", headers=h).json()["curves"]
    with pytest.raises(Exception, match="needs 'threshold' or 'calibration'"):
        threshold_monitor()
