"""Model bundles (agentguard.predictive.bundle): a learned model carries its spec, so a proactive guard
built from a guard file abstracts concrete states itself."""

from __future__ import annotations

import json

import pytest

from agentguard.config import load_stack
from agentguard.core import Context, Decision, InputError, Step, ToolCall, Trace
from agentguard.core.pipeline import Pipeline
from agentguard.predictive.bundle import bundle_spec, load_bundle
from agentguard.predictive.guard import ProactiveGuard
from agentguard.predictive.learn import DTMCLearner
from agentguard.spec.predicates import Abstraction, Predicate

SPEC = {
    "name": "leak", "state": "history",
    "predicates": {"secret": '"read_secret" in tools', "out": 'call.tool == "send" and "@corp" not in call.text',
                   "asks": 'call.tool == "read_secret"'},
    "unsafe": "secret and out", "terminal": "finish", "unseen": "pessimistic",
}


def state(tools, call, to=""):
    return {"n": len(tools), "tools": tools, "refused": [], "results": ["ok"] * len(tools),
            "last": tools[-1] if tools else "", "call": {"tool": call, "args": {}, "text": to}}


def runs():
    leak = [state([], "search"), state(["search"], "read_secret"), state(["search", "read_secret"], "send", "x@evil")]
    safe = [state([], "search"), state(["search"], "send", "t@corp")]
    return [Trace([Step(state=s) for s in r]) for r in [leak] * 6 + [safe] * 4]


@pytest.fixture()
def bundle(tmp_path):
    learner = DTMCLearner(Abstraction.from_dict(SPEC), alpha=1)
    learner.add(runs())
    p = tmp_path / "model.json"
    learner.model().save(p)
    return p


def test_the_learned_model_carries_its_spec(bundle):
    model, ab = load_bundle(bundle)
    assert ab is not None and ab.names == ["secret", "out", "asks"] and ab.state_fn == "history"
    assert ab.unseen == "pessimistic" and ab.terminal == "finish"
    assert ab.abstract(state(["read_secret"], "send", "x@evil")) == "110"


def test_a_guard_file_deploys_it_on_concrete_states(bundle, tmp_path):
    toml = tmp_path / "g.toml"
    toml.write_text('[[guards]]\ntype = "proactive"\nmodel = "model.json"\nthreshold = 0.5\ndecision = "HALT"\n')
    g = load_stack(toml).guards[0]
    v = g.check(Context(run_id="r", state=state(["search"], "read_secret")), None)
    assert v.decision is Decision.HALT and v.details["state"] == "001"
    ok = g.check(Context(run_id="r", state=state([], "search")), None)
    risky = g.check(Context(run_id="r", state=state(["search"], "read_secret")), None)
    assert ok.numbers["probability"] > risky.numbers["probability"]
    # abstract states (bit strings) are still accepted
    assert g.check(Context(run_id="r", state="110"), None).numbers["probability"] == 0.0


def test_no_state_given_the_bundle_computes_the_history(bundle):
    g = ProactiveGuard.from_config({"model": str(bundle), "threshold": 0.4, "decision": "HALT"})
    p = Pipeline(g)
    out = p.decide("r", ToolCall("search", {}))
    assert out.execute
    p.record(out, observation="ok")
    out2 = p.decide("r", ToolCall("read_secret", {}))
    # every run that asked for the secret leaked it: stopped at the ask, before the send
    assert not out2.execute and out2.stop and out2.verdict.details["state"] == "001"
    assert out2.verdict.numbers["probability"] < out.verdict.numbers["probability"]


def test_an_unseen_state_the_spec_calls_unsafe_is_unsafe(bundle):
    g = ProactiveGuard.from_config({"model": str(bundle), "unseen": "allow"})
    model, _ = load_bundle(bundle)
    assert "111" not in model.state_names and "010" not in model.state_names
    assert g.probability(state(["read_secret"], "read_secret", ""))[0] == 1.0  # "101" unseen, allowed
    unsafe_unseen = {"tools": ["read_secret"], "call": {"tool": "send", "text": "x@evil"}}
    assert g.probability(unsafe_unseen)[1] == "110"
    g2 = ProactiveGuard.from_config({"model": str(bundle), "unseen": "allow"})
    g2.table_.pop("110")  # as if never seen: unsafe by the spec, P_safe 0 whatever the policy says
    assert g2.probability(unsafe_unseen)[0] == 0.0
    assert g2.probability(state([], "send", "z@evil"))[0] == 1.0  # "010": unseen, not unsafe: allowed


def test_a_model_without_spec_refuses_concrete_states_in_one_line(bundle, tmp_path):
    d = json.loads(bundle.read_text())
    del d["meta"]["abstraction"]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(d))
    g = ProactiveGuard.from_config({"model": str(bare)})
    with pytest.raises(InputError, match="no spec to abstract it") as exc:
        g.check(Context(run_id="r", state={"tools": []}), None)
    assert "\n" not in str(exc.value)
    assert Pipeline(g).decide("r", Step(state={"tools": []})).verdict.decision is Decision.HALT  # fail closed
    # a spec file gives it one
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    g2 = ProactiveGuard.from_config({"model": str(bare), "spec": str(spec)})
    assert g2.check(Context(run_id="r", state=state([], "search")), None).details["state"] == "000"


def test_models_saved_before_bundles_still_load(bundle, tmp_path):
    d = json.loads(bundle.read_text())
    for k in ("state", "states"):
        d["meta"]["abstraction"].pop(k)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(d))
    model, ab = load_bundle(old)
    assert ab is not None and ab.state_fn is None and ab.abstract(state([], "search")) == "000"


def test_python_predicates_and_a_wrong_width_are_one_line_errors(tmp_path, bundle):
    ab = Abstraction([Predicate.of("a", lambda s: s["a"])], unsafe="a")
    learner = DTMCLearner(ab, alpha=1)
    learner.add([Trace([Step(state={"a": 0}), Step(state={"a": 1})])])
    with pytest.raises(InputError, match="Python predicates"):
        bundle_spec(learner.model())
    spec = tmp_path / "one.json"
    spec.write_text(json.dumps({"predicates": {"a": "a"}}))
    with pytest.raises(InputError, match="spec has 1 predicates but the model's states have 3 bits"):
        load_bundle(bundle, spec)
    with pytest.raises(InputError, match="unknown keys"):
        ProactiveGuard.from_config({"model": str(bundle), "spek": "x"})


# --- red team: a model learned on one spec, deployed with another of the same width ----------------
def test_a_spec_with_the_same_width_but_other_predicates_is_refused_not_mis_indexed(bundle, tmp_path):
    """Attack: the guard file names a spec whose predicates are the model's in another order (or another
    meaning) but of the same width. Before: the width check passed and every bit was read under the
    wrong predicate (the leaking state "110" abstracted as "101"). Now: one-line InputError."""
    swapped = dict(SPEC, predicates={"out": SPEC["predicates"]["out"], "secret": SPEC["predicates"]["secret"],
                                     "asks": SPEC["predicates"]["asks"]})
    other = dict(SPEC, predicates={**SPEC["predicates"], "out": 'call.tool == "send"'})
    for i, bad in enumerate([swapped, other]):
        f = tmp_path / f"bad{i}.json"
        f.write_text(json.dumps(bad))
        with pytest.raises(InputError, match="does not match the predicates") as exc:
            ProactiveGuard.from_config({"model": str(bundle), "spec": str(f)})
        assert "\n" not in str(exc.value)
    # the same spec, written with other white space, is the same spec
    same = dict(SPEC, predicates={k: "  " + v.replace(" and ", "  and ") for k, v in SPEC["predicates"].items()})
    f = tmp_path / "same.json"
    f.write_text(json.dumps(same))
    g = ProactiveGuard.from_config({"model": str(bundle), "spec": str(f)})
    assert g.check(Context(run_id="r", state=state(["read_secret"], "send", "x@evil")), None).details["state"] == "110"
