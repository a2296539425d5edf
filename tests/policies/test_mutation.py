"""Issue 26: mutation testing of every shipped policy. Every mutant the AST tool generates is refused by the
sandbox or the specification's contract, killed by the generated tests, or proved equivalent (same verdict
on every fact of the finite domain); none is left for Nagini alone. The Nagini side (the named mutants and
a sample, verified for real) is benchmarks/policies_mutation.py -> benchmarks/results/policies_mutation.json."""

from __future__ import annotations

import pytest

from agentguard.policies import load_policy, shipped_policies
from agentguard.policies.conformance import behaviour, load_spec
from agentguard.policies.mutation import judge, mutants


@pytest.mark.parametrize("path", shipped_policies(), ids=lambda p: p.stem)
def test_no_mutant_of_a_shipped_policy_survives_the_checks(path):
    spec, pol = load_spec(path.stem), load_policy(path)
    table = behaviour(lambda f: pol.evaluate(f).code, spec)
    ms = mutants(path.read_text(encoding="utf-8"))
    assert len(ms) >= 40
    assert {m.operator for m in ms} >= {"ror", "const", "negate", "drop", "return"}
    assert {m.where for m in ms} >= {"code", "contract", "code+contract"}
    left = []
    for m in ms:
        stage, why = judge(m.source, spec, table, examples=20)
        if stage == "refused-contract":
            assert m.where != "code", (m.description, why)  # a code-only mutant keeps the contract
        if stage == "needs-nagini":
            left.append((m.id, m.description, why))
    assert left == []


def test_the_issue_mutants_are_generated_and_refused():
    from agentguard.policies.library import library_path

    path = library_path("mind2web_sc")
    ms = {m.description: m for m in mutants(path.read_text(encoding="utf-8"))}
    paired = [d for d in ms if "age < 18 -> " in d and "code and contract" in d]
    assert paired, sorted(ms)[:20]
    spec, pol = load_spec("mind2web_sc"), load_policy(path)
    table = behaviour(lambda f: pol.evaluate(f).code, spec)
    for d in paired:
        assert judge(ms[d].source, spec, table)[0] == "refused-contract"


def test_a_mutant_that_changes_nothing_is_equivalent_not_a_survivor():
    from agentguard.policies.library import library_path

    path = library_path("mind2web_sc")
    spec, pol = load_spec("mind2web_sc"), load_policy(path)
    table = behaviour(lambda f: pol.evaluate(f).code, spec)
    same = path.read_text().replace("    if category == CAR and not dr_license:", "    if not dr_license and category == CAR:")
    assert judge(same, spec, table)[0] == "equivalent"
    wrong = path.read_text().replace("    if category == FLIGHT and not vaccine:", "    if category == FLIGHT and not vaccine and age > 0:")
    assert judge(wrong, spec, table, examples=0)[0] in ("killed-by-tests", "needs-nagini")
