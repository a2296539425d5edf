"""The Jira half of the Atlassian scenarios' environment (agentguard.bench.atlassian_jira): durations, JQL values and
words read as Jira reads them. The tools themselves are exercised through the whole environment in
tests/bench/test_jira_hijack.py."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentguard.bench.atlassian_jira import PRIORITIES, RESOLUTIONS, parse_duration, unquote, words


@pytest.mark.parametrize("text, seconds", [("2h 30m", 9000), ("1d", 28800), ("1w 2d", 201600), ("45m", 2700),
                                           ("3h", 10800), ("1h30m", 5400), ("1w", 144000)])
def test_durations_are_read_as_jira_reads_them(text, seconds):
    """A working day is 8 hours and a week 5 days (Jira's default time tracking)."""
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["90 minutes", "1.5h", "2h 2h", "", "0m", "h", "3x", "1h and 30m"])
def test_malformed_durations_are_refused(text):
    assert parse_duration(text) is None


@given(st.integers(0, 9), st.integers(0, 4), st.integers(0, 7), st.integers(0, 59))
def test_a_duration_is_the_sum_of_its_units(w, d, h, m):
    parts = [f"{n}{u}" for n, u in ((w, "w"), (d, "d"), (h, "h"), (m, "m")) if n]
    total = ((w * 5 + d) * 8 + h) * 3600 + m * 60
    assert parse_duration(" ".join(parts)) == (total or None)


def test_values_and_words():
    assert unquote("'In Review'") == "In Review" and unquote('"DOCS"') == "DOCS" and unquote(" TP ") == "TP"
    assert unquote("'mixed\"") == "'mixed\""
    assert words("Post-mortem: TP-140!") == {"post", "mortem", "tp", "140"}
    assert PRIORITIES[0] == "Highest" and "Fixed" in RESOLUTIONS
