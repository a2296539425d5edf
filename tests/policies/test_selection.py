"""Selection computed over a listing's structured fields (agentguard.policies.selection): the words read from the
request, the record computed from structured fields only, a negated selection and one bound to another listing
selecting nothing. The guard-level tests (the selected record's id becomes a target) are in test_platformids.py
and test_provenance_redteam.py."""

from __future__ import annotations

from agentguard.policies.selection import bound_selections, computed_selection, selections

from .test_platformids import _PIS, _TWICE, _pi


def test_selections_are_read_from_the_request() -> None:
    assert selections(_TWICE) == (("twice", "dup", ""), ("later", "max", "time"))   # "10 most recent": a size
    assert selections("Fork the most-starred result.") == (("most starred", "max", "star"),)
    assert selections("Refund the 'latest' one.") == ()   # quoted: content


def test_computed_selection_uses_structured_fields_only() -> None:
    chosen = selections(_TWICE)
    assert computed_selection(_PIS, chosen) == 3
    assert computed_selection(_PIS, selections("Refund the earlier of the two duplicate charges.")) == 2
    assert computed_selection(_PIS, selections("Refund the largest payment.")) == 4
    assert computed_selection(_PIS, selections("Refund the newest payment.")) == 4
    # two duplicate groups: "the later of the two" is ambiguous, nothing is selected
    two = _PIS + [_pi("Sofia1", "cus_S", 1600, "1041", 600), _pi("Sofia2", "cus_S", 1600, "1041", 700)]
    assert computed_selection(two, chosen) is None
    # a tie selects nothing; a duplicate without an order selects nothing
    assert computed_selection([_pi("a", "c", 1, "1", 5), _pi("b", "c", 1, "2", 5)], selections("the latest")) is None
    assert computed_selection(_PIS, selections("refund the duplicate")) is None
    # mixed kinds in the ordering field (a number here, a date there) order nothing
    mixed = [{"id": "a", "created": 5}, {"id": "b", "created": "2024-01-01"}]
    assert computed_selection(mixed, selections("the newest")) is None


def test_a_negated_selection_selects_nothing() -> None:
    assert selections("Refund the newest payment.")
    for text in ("Refund pi_Ben1, not the newest one.", "never the largest", "other than the most recent one"):
        assert selections(text) == (), text


def test_a_selection_applies_only_to_the_listing_its_object_names() -> None:
    text = "Refund pi_Ben1, and tell me who the newest customer is."
    nouns = {"customer", "intent"}   # the listings' nouns of the tool set
    assert bound_selections(text, "list_customers", nouns) == selections(text)
    assert bound_selections(text, "list_payment_intents", nouns) == ()


def test_a_record_amount_counts_only_as_a_plain_decimal() -> None:
    """Session 23: float() read a record's "１２３" (fullwidth), "١٢٣" (Arabic-Indic), " 5", "+5" and "5." as
    amounts, so a payment of 123 had a record behind it that a bank's reader does not see; such a text selects
    nothing now (the amount then has no record behind it: refused), a plain decimal still selects its value."""
    from hypothesis import given, settings, strategies as st

    from agentguard.policies.selection import selected_amounts

    def sel(value: object) -> set[float]:
        return selected_amounts([({"amount": value, "iban": "X"}, ["amount"])], lambda r: True, lambda r: set())

    for text in ("１２３", "١٢٣", " 5", "+5", "5.", ".5", "1e3", "1_000", "007", "5 ", "0x10", "inf", "nan"):
        assert sel(text) == set(), text
    for value, want in (("123", 123.0), ("-40.5", -40.5), (123, 123.0), (10.0, 10.0), ("0.25", 0.25)):
        assert sel(value) == {want}, value

    @settings(max_examples=150, deadline=None)
    @given(st.text(alphabet="0123456789+-. _e\u0661\uff11x", max_size=8))
    def agree(text: str) -> None:
        import json
        try:
            as_json = json.loads(text)
        except ValueError:
            as_json = None
        got = sel(text)
        if got:  # whatever is read is what JSON reads the same text as
            assert isinstance(as_json, (int, float)) and got == {float(as_json)}, text

    agree()
