"""Traffic-law guards: LawBreaker STL x a driving DTMC of the Pro2Guard release, in process, from a
guard-stack file, and in the service (monitor state per run, rebuilt by another process)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from agentguard.core.errors import InputError
from agentguard.core.types import Context, Decision
from agentguard.predictive.dtmc import DTMC
from agentguard.predictive.guard import ProductGuard
from agentguard.predictive.monitor import BoundedResponse, product
from agentguard.predictive.traffic import driving_abstraction

PRED = [["PriorityNPCAhead", "==", "0.0"], ["PriorityPedsAhead", "==", "0.0"], ["speed", ">", "0.5"],
        ["trafficLightAheadcolor", "==", "3.0"]]


def _signals(speed: float, light: int = 3, npc: int = 0, peds: int = 0) -> dict:
    return {"PriorityNPCAhead": npc, "PriorityPedsAhead": peds, "speed": speed, "trafficLightAheadcolor": light}


def test_driving_abstraction_names_states_like_the_release():
    f = driving_abstraction(PRED)
    assert f(_signals(0.0)) == "0001101" and f(_signals(2.0)) == "0001111" and f(_signals(2.0, npc=1)) == "0000111"
    assert f({**_signals(1.0), "collision": 1}) == "1000000" and f({"reach_destination": 1}) == "0100000"
    assert f({"law_violation": 1}) == "0010000"
    with pytest.raises(InputError, match="no signal 'speed'"):
        f({"PriorityNPCAhead": 0, "PriorityPedsAhead": 0, "trafficLightAheadcolor": 3})
    with pytest.raises(InputError, match="not a number"):
        f(_signals("fast"))  # type: ignore[arg-type]


def _toy_guard() -> tuple[ProductGuard, object]:
    P = sp.csr_matrix(np.array([[0, 1, 0, 0], [0, .3, .5, .2], [0, 0, 0, 1], [0, 0, 0, 1]]))
    m = DTMC(P, 0, {"on": np.array([0, 1, 0, 0], bool), "off": np.array([0, 0, 1, 0], bool)},
             state_names=["idle", "on", "off", "done"]).validate()
    prod = product(m, BoundedResponse("on", "off", 1))
    return ProductGuard(prod, 0.9).bind_names(m.state_names), prod


def test_product_guard_keeps_monitor_state_per_run_id_and_reset_forgets():
    g, prod = _toy_guard()
    a, b = Context(run_id="a"), Context(run_id="b")
    for s in ("idle", "on"):
        a.state = s
        g.check(a)
    b.state = "idle"
    g.check(b)                                    # another run, interleaved: its own monitor
    a.state = "on"
    va = g.check(Context(run_id="a", state="on"))   # a fresh Context of run "a" continues run "a"
    assert va.numbers["probability"] == 0.0 and "viol" in va.details["state"]
    vb = g.check(Context(run_id="b", state="on"))
    assert vb.numbers["probability"] == pytest.approx(0.5)
    g.reset()
    assert g.check(Context(run_id="a", state="on")).numbers["probability"] == pytest.approx(0.5)


def test_traffic_law_guard_from_a_guard_stack_file(data_dir, tmp_path):
    from agentguard.config import load_stack

    folder = data_dir / "pro2guard" / "av_dtmcs" / "s3"
    laws = data_dir / "pro2guard" / "av_laws.txt"
    cfg = tmp_path / "agentguard.toml"
    cfg.write_text(f'[[guards]]\ntype = "traffic-law"\nmodel = "{folder}"\nlaws = "{laws}"\n'
                   f'unknown = "true"\nthreshold = 0.8\n')
    stack = load_stack(cfg)
    ctx = Context(run_id="drive-1")
    verdicts = []
    for sig in (_signals(0.0, light=1), _signals(0.0), _signals(0.0), _signals(2.0)):
        ctx.state = sig
        verdicts.append(stack.check(ctx, None))
    g = stack.guards[0]
    assert "law38_sub1" not in g.property and "F[0,2] speed > 0.5" in g.property and "K = 100" in g.property
    states = [v.details["state"] for v in verdicts]
    assert states[0] == "(0001100,idle)" and states[1] == "(0001101,wait(99))" and states[2] == "(0001101,wait(98))"
    assert states[3] == "(0001111,idle)"          # the car moved off: obligation discharged
    p = [v.numbers["probability"] for v in verdicts]
    assert p[1] < p[0] and p[2] < p[1]            # waiting at a green light: risk of violation grows
    ctx.state = {"speed": 1.0}                    # a missing signal fails closed in the stack
    v = stack.check(ctx, None)
    assert v.blocks and "PriorityNPCAhead" in v.reason


def test_traffic_law_guard_refuses_a_law_with_several_rules(data_dir):
    from agentguard.predictive.traffic import traffic_law_guard

    with pytest.raises(InputError, match="reduces to 4 rules"):
        traffic_law_guard(model=str(data_dir / "pro2guard" / "av_dtmcs" / "s3"),
                          laws=str(data_dir / "pro2guard" / "av_laws.txt"), law="law38", unknown="true")
    with pytest.raises(InputError, match="does not observe"):
        traffic_law_guard(model=str(data_dir / "pro2guard" / "av_dtmcs" / "s3"),
                          laws=str(data_dir / "pro2guard" / "av_laws.txt"))


def test_service_keeps_the_monitor_per_run_across_processes(data_dir, tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from agentguard.predictive.traffic import traffic_law_guard
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    folder, laws = data_dir / "pro2guard" / "av_dtmcs" / "s3", data_dir / "pro2guard" / "av_laws.txt"
    # the in-process guard gives the numbers the service must reproduce
    ref = traffic_law_guard(model=str(folder), laws=str(laws), unknown="true", threshold=0.8)
    seq = [_signals(0.0, light=1), _signals(0.0), _signals(0.0)]
    want = [ref.check(Context(run_id="ref", state=sig)).numbers["probability"] for sig in seq]
    fresh = ref.check(Context(run_id="ref-2", state=_signals(0.0))).numbers["probability"]
    assert want[2] < want[1] and fresh == want[1]
    cfg = tmp_path / "steps.toml"
    cfg.write_text(f'[[guards]]\ntype = "traffic-law"\nmodel = "{folder}"\nlaws = "{laws}"\nunknown = "true"\n'
                   f'threshold = 0.8\n')
    settings = ServerSettings(token="t" * 32, state_dir=str(tmp_path / "data"), step_guards=str(cfg))
    auth = {"Authorization": f"Bearer {'t' * 32}"}
    a = create_app(settings)
    with TestClient(a) as ca:
        got = [ca.post("/v1/runs/car-1/steps", headers=auth, json={"state": sig}).json() for sig in seq[:2]]
        assert [g["numbers"]["probability"] for g in got] == pytest.approx(want[:2])
        other = ca.post("/v1/runs/car-2/steps", headers=auth, json={"state": _signals(0.0)}).json()
        assert other["numbers"]["probability"] == pytest.approx(fresh)          # its own monitor
        b = create_app(settings, store=a.state.store)                          # another worker/replica
        with TestClient(b) as cb:
            r = cb.post("/v1/runs/car-1/steps", headers=auth, json={"state": seq[2]}).json()
            assert r["numbers"]["probability"] == pytest.approx(want[2])      # monitor replayed from the store
            assert r["decision"] == Decision.REJECT.name and "K = 100 steps" in r["reason"]


def test_a_nan_signal_is_an_error_not_a_zero_bit():
    """``nan > 0.5`` is False: a NaN speed read as 'not fast', and a NaN collision flag as 'no collision'."""
    import math as _math

    import pytest as _pytest

    from agentguard.core.errors import InputError as _InputError
    from agentguard.predictive.traffic import driving_abstraction as _abstraction

    ab = _abstraction([["speed", ">", "0.5"], ["speed", "<=", "0.5"]])
    assert ab({"speed": 1.0}) == "00010" and ab({"speed": 0.1, "collision": 0}) == "00001"
    assert ab({"speed": 0.1, "collision": "1"}) == "10000" and ab({"speed": 0.1, "collision": None}) == "00001"
    for state in ({"speed": _math.nan}, {"speed": 1.0, "collision": _math.nan},
                  {"speed": 1.0, "law_violation": float("nan")}, {"speed": 1.0, "collision": "yes"}):
        with _pytest.raises(_InputError) as e:
            ab(state)
        assert "\n" not in str(e.value)
