"""``links.deobfuscate`` reads a text in one pass (session 19): its spelled-out-dot rule used to backtrack over
every split of a run of blanks (``\\s*(...|\\s+dot\\s+)\\s*``), so 2,000 spaces in any outgoing text or tool argument
took 19 s of CPU in every guard that reads links (provenance, secret leak, network rules). The rule now starts a
match only where a blank run starts and never gives blanks back; these tests check it means what it meant (the old
pattern as the oracle on short texts) and that hostile texts finish (an alarm, not a timing)."""

from __future__ import annotations

import re
import signal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.policies.links import _SPELLED_DOT, client_hosts, deobfuscate, links, url_tokens
from agentguard.policies.networks import destinations

OLD = re.compile(r"\s*(?:\[\s*(?:\.|dot)\s*\]|\(\s*(?:\.|dot)\s*\)|\{\s*(?:\.|dot)\s*\}|\s+dot\s+)\s*", re.I)

HOSTILE = {"spaces": "a" + " " * 50000 + "b", "zero-width": "x" + "\u200b " * 20000, "dots": "a" + "." * 50000,
           "dot words": " dot" * 10000, "brackets": "[" * 30000, "spelled": "a [ . ] " * 5000,
           "labels": "a." * 20000 + "com", "ats": "@" * 30000, "ports": "a:1 " * 10000, "slashes": "/" * 30000,
           "schemes": "http://" * 5000, "tabs": "\t" * 50000 + "dot"}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_texts_are_read_in_one_pass(name: str) -> None:
    def _stop(*_: object) -> None:
        raise TimeoutError(f"{name}: the link reading did not finish in 60 s")

    old = signal.signal(signal.SIGALRM, _stop)
    signal.alarm(60)
    try:
        text = HOSTILE[name]
        deobfuscate(text), url_tokens(text), links(text), client_hosts(text), destinations({"q": text})
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(" \t\n.[](){}dotDOTax")), max_size=30))
def test_the_linear_rule_replaces_what_the_old_one_did(text: str) -> None:
    assert _SPELLED_DOT.sub(".", text) == OLD.sub(".", text), text
