"""Issue 26: contracts derived from the rule. Each shipped policy has a specification written from the rule
text alone; its contract is equivalent to the rule's reference predicate over the whole (finite) domain of
extracted facts; the shipped policy carries that contract clause for clause; and its code returns exactly
what the rule says on every fact (exhaustive, no Nagini needed for this part)."""

from __future__ import annotations

import dataclasses

import pytest

from agentguard.policies import load_policy, shipped_policies
from agentguard.policies.conformance import behaviour, contract_problems, load_spec, shipped_specs, spec_problems
from agentguard.policies.library import library_path

SPECS = {s.name: s for s in shipped_specs()}


def test_every_shipped_policy_has_a_specification():
    assert sorted(SPECS) == sorted(p.stem for p in shipped_policies())


@pytest.mark.parametrize("name", sorted(SPECS))
def test_specification_contract_is_equivalent_to_the_rule(name):
    assert spec_problems(SPECS[name]) == []


@pytest.mark.parametrize("name", sorted(SPECS))
def test_shipped_policy_carries_the_specification_contract(name):
    spec = SPECS[name]
    assert contract_problems(library_path(name).read_text(encoding="utf-8"), spec) == []
    assert load_policy(library_path(name)).id == spec.policy_id


@pytest.mark.parametrize("name", sorted(SPECS))
def test_shipped_policy_returns_what_the_rule_says_on_every_fact(name):
    spec, pol = SPECS[name], load_policy(library_path(name))
    assert behaviour(lambda f: pol.evaluate(f).code, spec) == behaviour(lambda f: spec.reference(**f), spec)


def _with_contract(spec, replace: dict[str, str]):
    return dataclasses.replace(spec, contract=[replace.get(c, c) for c in spec.contract])


def test_the_old_mind2web_contract_is_not_equivalent_to_the_rule():
    """The issue's finding: 'Result() != ALLOW -> Result() == category' lets a policy deny every hotel."""
    spec = SPECS["mind2web_sc"]
    utility = spec.contract[-1]
    old = _with_contract(spec, {utility: "Ensures(Implies(Result() != ALLOW, Result() == category))"})
    problems = spec_problems(old)
    assert problems and "the contract admits" in problems[0]


def test_an_off_by_one_contract_is_not_equivalent_to_the_rule():
    spec = SPECS["mind2web_sc"]
    clause = "Ensures(Implies(category == HOTEL and age < 18, Result() == NEEDS_ADULT))"
    assert clause in spec.contract
    assert spec_problems(_with_contract(spec, {clause: clause.replace("age < 18", "age <= 18")}))


@pytest.mark.parametrize("edit", [
    ("age < 18", "age <= 18"),                                     # off-by-one in code and contract
    ("category == JOB and age < 15", "category == JOB and age < 18"),   # JOB under 18 in code and contract
])
def test_mind2web_policy_edited_in_code_and_contract_is_refused(edit):
    src = library_path("mind2web_sc").read_text(encoding="utf-8").replace(*edit)
    from agentguard.policies import policy_from_source

    policy_from_source(src, path="edited.py")  # the edited file still loads: conformance is what refuses it
    problems = contract_problems(src, SPECS["mind2web_sc"])
    assert problems and "not the specification's" in problems[0]


def test_provenance_policy_with_a_rule_removed_from_code_and_contract_is_refused():
    src = library_path("agentdojo_provenance").read_text(encoding="utf-8")
    clause = ("    Ensures(Implies(kind != READ and kind != FETCH and target_trust > 0 and not requested,\n"
              "                    Result() == NOT_REQUESTED))\n")
    code = "    if needs_request(kind) and not requested:\n        return NOT_REQUESTED\n"
    assert clause in src and code in src
    problems = contract_problems(src.replace(clause, "").replace(code, ""), SPECS["agentdojo_provenance"])
    assert problems and "lacks" in problems[0]


def test_constants_and_signature_must_match():
    src = library_path("mind2web_sc").read_text(encoding="utf-8")
    assert any("constant HOTEL" in p for p in contract_problems(src.replace("HOTEL = 3", "HOTEL = 4"),
                                                                 SPECS["mind2web_sc"]))
    assert any("signature" in p for p in contract_problems(src.replace("age: int", "age: bool"),
                                                            SPECS["mind2web_sc"]))


def test_a_boundary_row_that_contradicts_the_reference_is_reported():
    spec = SPECS["mind2web_sc"]
    facts, _ = spec.boundary[4]  # hotel, age 17: the rule denies
    bad = dataclasses.replace(spec, boundary=[(facts, 0)])
    assert "boundary row" in spec_problems(bad)[0]


def test_load_spec_errors_are_one_line(tmp_path):
    from agentguard.core.errors import InputError

    with pytest.raises(InputError, match="no specification"):
        load_spec("nope")
    f = tmp_path / "s.py"
    f.write_text("RULE = 'x'\n")
    with pytest.raises(InputError, match="lacks"):
        load_spec(f)
