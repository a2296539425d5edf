"""The public face of agentguard.predictive (issue 12): one DTMC loader, ``from_config``, the shared
unseen-state policy, per-run memory, one ``draw_dtmc``, the environment-free AgentSpec baseline."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from agentguard import Context, Decision, InputError, Step
from agentguard.predictive import (
    DTMC,
    ProactiveGuard,
    ProductGuard,
    RuleGuard,
    TrafficLawGuard,
    draw_dtmc,
    load_dtmc,
)
from agentguard.predictive.prism import to_prism
from agentguard.predictive.reactive import embodied_predicates, parse_rules
from agentguard.spec import UNSEEN_POLICIES, resolve_unseen
from agentguard.spec.unseen import resolve_state

NAMES = ["00", "10", "01", "END"]


def chain() -> DTMC:
    P = sp.csr_matrix(np.array([[0, .5, 0, .5], [0, 0, .8, .2], [0, 0, 1, 0], [0, 0, 0, 1]]))
    return DTMC(P, 0, {"unsafe": np.array([0, 0, 1, 0], bool)}, state_names=NAMES).validate()


def test_import_is_light_and_never_imports_stormpy():
    code = ("import sys, agentguard.predictive, agentguard.spec; "
            "print(sorted(m for m in ('scipy', 'matplotlib', 'stormpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_load_dtmc_reads_json_prism_with_or_without_suffix(tmp_path):
    m = chain()
    m.save(tmp_path / "m.json")
    (tmp_path / "m.prism").write_text(to_prism(m))
    (tmp_path / "m.txt").write_text(to_prism(m))
    (tmp_path / "saved").write_text((tmp_path / "m.json").read_text())
    for name in ("m.json", "m.prism", "m.txt", "saved"):
        got = load_dtmc(tmp_path / name)
        assert np.allclose(got.matrix.toarray(), m.matrix.toarray()), name
    with pytest.raises(InputError, match="model file not found"):
        load_dtmc(tmp_path / "nope.json")
    with pytest.raises(InputError, match="directory without"):
        load_dtmc(tmp_path)


def test_load_dtmc_reads_a_release_folder(data_dir):
    folder = data_dir / "pro2guard" / "av_dtmcs" / "s1"
    if not folder.is_dir():
        pytest.skip("Pro2Guard release not available")
    m = load_dtmc(folder)
    assert m.state_names and "unsafe" in m.labels


def test_from_config_builds_the_same_guard_as_the_constructor(tmp_path):
    chain().save(tmp_path / "m.json")
    g = ProactiveGuard.from_config({"model": str(tmp_path / "m.json"), "threshold": 0.5, "unseen": "alarm",
                                    "decision": "HALT", "name": "p"})
    ref = ProactiveGuard(chain(), "G !unsafe", 0.5, unseen="alarm", decision=Decision.HALT, name="p")
    assert g.model_path == str(tmp_path / "m.json")
    for s in ("00", "10", "01", "END", "11", "junk"):
        a, b = g.check(Context(state=s)), ref.check(Context(state=s))
        assert (a.decision, a.numbers) == (b.decision, b.numbers), s
    with pytest.raises(InputError, match="unknown keys"):
        ProactiveGuard.from_config({"model": str(tmp_path / "m.json"), "treshold": 0.5})
    with pytest.raises(InputError, match="'model'"):
        ProactiveGuard.from_config({})
    with pytest.raises(InputError, match="unknown keys"):
        TrafficLawGuard.from_config({"model": "x", "laws": "y", "bogus": 1})


def test_one_unseen_policy_for_specs_and_the_guard():
    m = chain()
    assert set(UNSEEN_POLICIES) == {"nearest", "pessimistic", "alarm", "allow", "error"}
    for policy in UNSEEN_POLICIES:
        ProactiveGuard(m, "unsafe", 0.5, unseen=policy)  # every name is accepted by the guard
    with pytest.raises(InputError, match="unseen policy"):
        ProactiveGuard(m, "unsafe", 0.5, unseen="guess")
    # the guard's decisions (P_safe of an unseen state) come from spec.unseen
    g = {p: ProactiveGuard(m, "unsafe", 0.5, unseen=p) for p in ("nearest", "pessimistic", "alarm", "allow")}
    assert g["alarm"].probability("11")[0] == 0.0 and g["allow"].probability("100")[0] == 1.0
    # a state whose own unsafe bit is set is unsafe under every policy, as unsafe_fn is (was P_safe = 1)
    assert g["allow"].probability("11")[0] == 0.0
    assert g["nearest"].probability("11")[0] == 0.0  # last (unsafe) bit set: unsafe
    assert g["pessimistic"].probability("11")[0] == min(g["pessimistic"].table_[s] for s in ("00", "10", "01"))
    with pytest.raises(InputError, match="never seen"):
        ProactiveGuard(m, "unsafe", 0.5, unseen="error").probability("11")
    # the spec function: alarm/allow name no stand-in state
    assert resolve_unseen("11", NAMES, "alarm").unsafe and not resolve_unseen("11", NAMES, "allow").unsafe
    with pytest.raises(InputError, match="no model state stands in"):
        resolve_state("11", NAMES, "alarm")
    assert resolve_state("11", NAMES, "nearest", np.array([0.6, 0.8, 1.0, 0.0])) == 2  # ties to the riskiest


def _toy_product_guard() -> ProductGuard:
    from agentguard.predictive import BoundedResponse, product

    P = sp.csr_matrix(np.array([[0.5, 0.5, 0], [0, 0.5, 0.5], [0, 0, 1.0]]))
    m = DTMC(P, 0, {"a": np.array([0, 1, 0], bool), "b": np.array([0, 0, 1], bool)}, state_names=["x", "y", "z"])
    prod = product(m.validate(), BoundedResponse("a", "b", 2))
    return ProductGuard(prod, 0.5, max_runs=2).bind_names(m.state_names)


def test_product_guard_keeps_runs_in_a_bounded_run_memory():
    g = _toy_product_guard()
    for run in ("r1", "r2", "r3"):
        g.check(Context(state="y", run_id=run))
    assert len(g._runs) == 2 and "r1" not in g._runs  # least recently used forgotten
    g.end_run("r2")
    assert "r2" not in g._runs and "r3" in g._runs
    g.reset()
    assert len(g._runs) == 0


def test_draw_dtmc_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")

    class Ab:
        names = ["a", "b"]

    draw_dtmc(chain(), tmp_path / "a.png")
    draw_dtmc(chain(), tmp_path / "b.png", risk=[0.4, 0.8, 1.0, 0.0], title="t", unsafe="unsafe",
              state_label=lambda i, s: f"{i}:{s}", abstraction=Ab(), min_prob=0.3)
    for f in ("a.png", "b.png"):
        assert (tmp_path / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rule_guard_needs_its_predicates_from_the_environment():
    rules = parse_rules("rule @no_candles\ntrigger\n    turn on\ncheck\n    is_candle\nenforce\n    stop\nend\n"
                        "rule @no_forks\ntrigger\n    put\ncheck\n    is_holding_none_microwave_obj\n    is_into_microwave\n"
                        "enforce\n    llm_self_reflect\nend\n")
    with pytest.raises(InputError, match="unknown predicate 'is_candle'"):
        RuleGuard(rules)
    preds = embodied_predicates(target=lambda text: text.split()[-1].casefold(),
                                microwave_unsafe=lambda t: t == "Fork")
    g = RuleGuard(rules, preds)
    assert g.check(Context(state={}), "turn on Candle").decision is Decision.HALT
    assert g.check(Context(state={}), "turn on Lamp").decision is Decision.ALLOW
    assert g.check(Context(state={"heldType": "Fork"}), "put Microwave").decision is Decision.REJECT
    assert g.check(Context(state={"heldType": "Potato"}), "put Microwave").decision is Decision.ALLOW


def test_predictive_public_names_resolve():
    import agentguard.predictive as P

    assert P.__all__ == sorted(P.__all__)
    for name in P.__all__:
        assert getattr(P, name) is not None
    assert json.loads(json.dumps(P.__all__))


def test_an_evicted_product_run_never_restarts_its_monitor():
    """Attack: run r1 is one step from violating G(a -> F[0,2] b) (trigger y seen twice, no response);
    two other runs evict r1's monitor state from the bounded memory. Before: r1's next y started a fresh
    monitor (wait(1), P_safe 0.75, ALLOW) instead of entering viol (P_safe 0, REJECT). Now: RunEvicted,
    which the pipeline turns into HALT; without eviction the third y is rejected."""
    from agentguard.core.pipeline import Pipeline
    from agentguard.core.runs import RunEvicted

    g = _toy_product_guard()
    for _ in range(2):
        assert g.check(Context(state="y", run_id="r1")).decision is Decision.ALLOW
    assert g.check(Context(state="y", run_id="r1")).decision is Decision.REJECT  # the reference run
    g = _toy_product_guard()
    for _ in range(2):
        g.check(Context(state="y", run_id="r1"))
    for other in ("r2", "r3"):
        g.check(Context(state="x", run_id=other))
    with pytest.raises(RunEvicted):
        g.check(Context(state="y", run_id="r1"))
    out = Pipeline(g).decide("r1", Step(state="y"))
    assert not out.execute and out.verdict.decision is Decision.HALT
