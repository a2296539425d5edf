"""The secret scanner's format gate (:mod:`agentguard.policies.secret_gate`, session 22): each plugin pattern's required
literal is taken from the parsed regex and found in one Aho-Corasick pass, and only the patterns whose literal appears
are searched, so the gate answers exactly as searching every pattern would (moved from test_secret_windows.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("detect_secrets")

from agentguard.policies.secret_gate import Gate, required_literals  # noqa: E402
from agentguard.policies.secrets import LeakScanner  # noqa: E402

SCANNER = LeakScanner()

_PLUGINS = SCANNER._gates.plugins_all
_PATTERNS = [(p, rx) for p in _PLUGINS for rx in p.denylist]


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_every_match_of_a_pattern_holds_its_required_literal(data):
    """The gate's literals are sound: any string a pattern matches contains one of them (hypothesis draws matches)."""
    p, rx = data.draw(st.sampled_from(_PATTERNS))
    lits = required_literals(rx.pattern, rx.flags)
    text = data.draw(st.from_regex(rx))
    assert rx.search(text)
    if lits is not None:
        folded = text.casefold()
        assert any(s in (folded if rx.flags & re.IGNORECASE else text) for s in lits)
    assert p in Gate(_PLUGINS).plugins(text)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["ghp_", "AKIA", "xoxb-", "AC", "SK", "aws", " key=", "'", "-us1", "AP", "0", "a",
                                 "Z", " ", "sk-", "T3BlbkFJ", "eyJ", ".", "A" * 16, "ab12" * 8])
                | st.text(max_size=3), max_size=40).map("".join))
def test_the_gate_answers_as_searching_every_pattern(text: str):
    expected = [p for p in _PLUGINS if any(rx.search(text) for rx in p.denylist)]
    assert Gate(_PLUGINS).plugins(text) == expected
    assert Gate(_PLUGINS).open(text) == bool(expected)


# session 23: the two patterns without a literal of two characters (Discord, Telegram) are searched only where their
# literal-led tail matches; the tail must be found in every text a pattern matches, and the kept answers equal fresh ones
_PIECES = ["MTA", "NzE", "O", ".", ":", "_", "-", "1234567890", "AbCdEfGhIjKlMnOpQrStUvWx", "a1B2c3", "x" * 27,
           "\n", " ", "ZZZZZZ"]


def test_the_literal_less_patterns_get_a_literal_led_tail():
    gate = Gate(_PLUGINS)
    tails = {gate._patterns[k][1].pattern: t.pattern for k, t in gate._tails.items() if t is not None}
    assert any(t.startswith("\\.") for t in tails.values()) and any(t.startswith(":") for t in tails.values()), tails


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(_PIECES) | st.text(alphabet="Mo.:9_-aZ", max_size=8), max_size=30).map("".join))
def test_a_pattern_without_a_literal_matches_only_where_its_tail_does(text: str):
    from agentguard.policies.secret_gate import required_tail

    for p in _PLUGINS:
        for rx in p.denylist:
            tail = required_tail(rx)
            if tail is not None and rx.search(text):
                assert tail.search(text), (rx.pattern, text)
    expected = [p for p in _PLUGINS if any(rx.search(text) for rx in p.denylist)]
    gate = Gate(_PLUGINS)
    assert gate.open(text) == bool(expected) and gate.plugins(text) == expected == gate.plugins(text)


def test_a_tail_is_kept_only_when_it_parses_to_the_patterns_own_items():
    from agentguard.policies.secret_gate import required_tail

    assert required_tail(re.compile(r"\d{8,10}:[0-9A-Za-z_-]{35}")).pattern == ":[0-9A-Za-z_-]{35}"
    assert required_tail(re.compile(r"(a+)b\1")) is None            # a group would be renumbered
    assert required_tail(re.compile(r"[ab]+")) is None               # no literal
    assert required_tail(re.compile(r"x[ab]+")) is None              # a leading literal: the pattern is its own tail
