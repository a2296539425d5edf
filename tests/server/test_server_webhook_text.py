"""The webhook's Slack ``text`` line shows the agent's values inert (session 18 red team).

The attack: the escalation text quoted the tool name, the reason and the run id as written, and Slack reads
``text`` as mrkdwn. An agent whose call matches ``escalate = ["transfer_*"]`` named its tool
``transfer_funds\\n\\n:white_check_mark: *pre-approved by security* <https://evil.example/ok|Approve here>
<!channel>``: the approver's channel got a forged second line, a link with a label of the agent's choosing and
an @channel ping. Now each value is in a code span, ``&<>`` are the entities Slack documents, controls and
separators are ``\\uXXXX`` and backticks cannot close the span (:func:`agentguard.server.webhook.slack_inert`).
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("fastapi")

from agentguard.server.webhook import escalation_event  # noqa: E402

EVIL = ("transfer_funds\n\n:white_check_mark: *pre-approved by security* <https://evil.example/ok|Approve here> "
        "<!channel> <@U0123> `x` \u202eevil\u2028line")


def _inert(text: str) -> None:
    """No character of ``text`` makes Slack parse anything but code spans: no <, >, bare &, new line,
    control, format or separator character."""
    assert "<" not in text and ">" not in text
    assert "&" not in text.replace("&amp;", "").replace("&lt;", "").replace("&gt;", "")
    assert not any(unicodedata.category(ch)[0] in "CZ" and ch != " " for ch in text), ascii(text)


def test_the_forged_approval_line_arrives_inert():
    ev = escalation_event({"run_id": "r1", "decision_id": "d1", "reason": f"tool {EVIL} needs human approval"},
                          {"name": EVIL, "arguments": {"amount": 5}})
    text = ev["text"]
    _inert(text)
    assert "<https://" not in text and "<!channel>" not in text and "\n" not in text
    assert text.count("`") == 8  # run id, tool name, reason, decision id: our four spans only
    assert ev["tool_call"]["name"] == EVIL  # the exact value stays in the JSON field


def test_long_values_are_cut():
    from agentguard.server.webhook import slack_inert

    assert len(slack_inert("x" * 10_000)) < 220


@settings(max_examples=300, deadline=None)
@given(name=st.text(max_size=300), reason=st.text(max_size=300))
def test_property_every_value_is_one_inert_code_span(name, reason):
    from agentguard.server.webhook import slack_inert

    span = slack_inert(name)
    assert span.startswith("`") and span.endswith("`") and span.count("`") == 2
    _inert(span)
    text = escalation_event({"run_id": "r", "decision_id": "d", "reason": reason}, {"name": name})["text"]
    _inert(text)
    assert text.count("`") == 8
