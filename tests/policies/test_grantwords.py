"""The request's words as the schema grants read them (agentguard.policies.grantwords): the declared morphology, a
negation bounded by its sentence, a boolean stated by its opposite, closed-set values and values left out. The
grant-level tests are in test_schemagrants.py and test_provenance_redteam.py."""

from __future__ import annotations

from agentguard.policies.grantwords import closed_value, imperatives, opposites, stated, stem
from agentguard.policies.toolset import BOOLEAN


def test_stem_is_the_declared_morphology() -> None:
    assert stem("labelled") == stem("label")
    assert stem("closed") == stem("close")
    assert stem("assignees") == "assign"


def test_a_negation_reaches_no_further_than_its_sentence() -> None:
    assert stated("Do not submit it.", ["submit"]) == (False, True)   # written, only negated
    assert stated("The order never arrived. Submit evidence now.", ["submit"]) == (True, False)


def test_imperatives_are_clause_initial_words() -> None:
    assert "refund" in imperatives("Please refund the payment")
    assert "payment" not in imperatives("Please refund the payment")


def test_a_boolean_stated_by_its_opposite() -> None:
    assert "public" in opposites("private") and "unlisted" in opposites("listed")
    assert closed_value("Make it public.", "private", "true", BOOLEAN, "create_repository")[0] == 0
    assert closed_value("Make it public.", "private", "false", BOOLEAN, "create_repository")[0] == 2
    # a name holding the opposite word states nothing: the flag stays the request's ('private')
    said = "Create a private repository named public-site-mirror."
    assert closed_value(said, "private", "false", BOOLEAN, "create_repository")[0] == 0
