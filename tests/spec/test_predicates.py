"""Predicates and abstraction (spec.predicates): bits, valid transitions, infeasible states, spec files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentguard import InputError
from agentguard.demo.dtmc_example import EXAMPLE_SPEC
from agentguard.spec.predicates import Abstraction, Predicate, exists, forall, hamming1, load_spec, where


KITCHEN = {
    "objects": [
        {"objectType": "Microwave", "isToggled": True, "isOpen": False, "receptacleObjectIds": ["Fork|1"]},
        {"objectType": "Fork", "isPickedUp": False, "parentReceptacles": ["Microwave"]},
        {"objectType": "Apple", "isPickedUp": True, "parentReceptacles": None, "temperature": 21.5},
    ],
    "agent": {"holding": "Apple"},
    "step": 4,
}


def test_python_combinators_match_text_predicates():
    py = Predicate.of("mw_on", exists(where(objectType="Microwave", isToggled=True)))
    txt = Predicate.of("mw_on", 'exists(objects, objectType == "Microwave" and isToggled)')
    assert py(KITCHEN) is txt(KITCHEN) is True
    nothing_held = forall(where(isPickedUp=lambda v: not v))
    assert nothing_held(KITCHEN) is False
    assert Predicate.of("fast", lambda s: s["step"] > 3)(KITCHEN) is True
    bad = Predicate.of("boom", lambda s: 1 / 0)
    with pytest.raises(InputError, match="predicate 'boom' failed: ZeroDivisionError"):
        bad(KITCHEN)
    with pytest.raises(InputError, match="not a Boolean"):
        Predicate.of("s", lambda s: "yes")(KITCHEN)


def test_abstraction_bits_valid_transitions_and_infeasible_states():
    ab = Abstraction.from_dict({
        "predicates": {"a": "x > 0", "b": "y", "c": "z == 'on'"},
        "infeasible": ["a and b and c"],
        "valid_transition": "changed <= 1 or (not src.a and dst.a)",
        "unsafe": "a and c",
        "labels": {"quiet": "not b"},
        "terminal": "end",
    })
    assert ab.abstract({"x": 1, "y": False, "z": "on"}) == "101"
    with pytest.raises(InputError, match="infeasible"):
        ab.abstract({"x": 1, "y": True, "z": "on"})
    assert ab.is_valid("000", "100") and ab.is_valid("000", "111")  # a switches on: anything may change
    assert not ab.is_valid("100", "011")
    assert ab.is_valid("011", "end") and not ab.is_valid("end", "000") and ab.is_valid("end", "end")
    names = ["000", "100", "011", "end"]
    V = ab.valid_matrix(names)
    for i, x in enumerate(names):
        for j, y in enumerate(names):
            assert V[i, j] == ab.is_valid(x, y)
    labels = ab.all_labels(["101", "001", "end"])
    assert labels["unsafe"].tolist() == [True, False, False]
    assert labels["quiet"].tolist() == [True, True, False] and labels["end"].tolist() == [False, False, True]
    assert labels["a"].tolist() == [True, False, False]


def test_hamming1_matrix_matches_the_function():
    ab = Abstraction([Predicate.of(f"p{i}", "True") for i in range(3)], valid_transition="hamming1", terminal="finish")
    names = ["000", "001", "011", "111", "finish"]
    V = ab.valid_matrix(names)
    for i, x in enumerate(names):
        for j, y in enumerate(names):
            assert V[i, j] == ab.is_valid(x, y), (x, y)
    assert hamming1("000", "001") and not hamming1("000", "011")


def test_example_spec_file_is_the_embedded_spec(tmp_path):
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    import yaml

    assert yaml.safe_load((repo / "examples" / "microwave_spec.yaml").read_text()) == EXAMPLE_SPEC
    ab = load_spec(repo / "examples" / "microwave_spec.yaml")
    assert ab.names == list(EXAMPLE_SPEC["predicates"]) and ab.options["epsilon"] == 0.1
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(EXAMPLE_SPEC))
    assert load_spec(p).describe() == ab.describe()


def test_example_traces_file_is_what_the_generator_writes(tmp_path):
    from pathlib import Path

    from agentguard.demo.dtmc_example import write_example_files

    repo = Path(__file__).resolve().parents[2]
    write_example_files(tmp_path)
    assert (tmp_path / "microwave_traces.jsonl").read_text() == (repo / "examples" / "microwave_traces.jsonl").read_text()


def test_locate_applies_the_unseen_policy_and_python_infeasible_hooks():
    ab = Abstraction([Predicate.of("a", "x > 0"), Predicate.of("b", "y")], unseen="pessimistic",
                     infeasible=[lambda bits: bits == "11"])
    with pytest.raises(InputError, match="infeasible"):
        ab.abstract({"x": 1, "y": True})
    known = ["00", "10"]
    assert ab.locate({"x": 1, "y": False}, known, np.array([0.2, 0.9])) == (1, "10")
    assert ab.locate({"x": 0, "y": True}, known, np.array([0.2, 0.9])) == (1, "01")  # unseen: riskiest
    ab.unseen = "error"
    with pytest.raises(InputError, match="never seen"):
        ab.locate({"x": 0, "y": True}, known)


def test_state_space_prunes_infeasible_valuations():
    ab = Abstraction.from_dict(EXAMPLE_SPEC)
    space = ab.state_space()
    assert len(space) == 16 - 4  # microwave open and on: 4 of the 16 valuations are infeasible
    assert all(not (b[2] == "1" and b[3] == "1") for b in space)
    wide = Abstraction([Predicate.of(f"p{i}", "True") for i in range(20)])
    with pytest.raises(InputError, match="exceed"):
        wide.state_space()


def _outcome(fn, state):
    try:
        return ("value", fn(state))
    except InputError as exc:
        return ("InputError", str(exc))


def test_abstractor_equals_abstract_including_errors():
    from agentguard.demo.dtmc_example import generate_example_traces

    spec = Abstraction.from_dict(EXAMPLE_SPEC)
    fast = spec.abstractor()
    for tr in generate_example_traces(20, seed=3):
        for s in tr.states:
            assert fast(s) == spec.abstract(s)
    for bad in ({"objects": "no list"}, {}, {"objects": [{"objectType": "Microwave", "isOpen": True, "isToggled": True}]}):
        assert _outcome(fast, bad) == _outcome(spec.abstract, bad)
