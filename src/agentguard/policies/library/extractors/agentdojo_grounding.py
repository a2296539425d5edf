"""Argument extractor of ``library/agentdojo_grounding.py``: side effects only when asked for and grounded.

The context needs ``metadata["prompt_lower"]`` (the user's prompt, lower-cased) and
``metadata["trusted_lower"]`` (the user's trusted data, lower-cased). Facts:

- ``kind``: from :data:`KIND` by tool name; an unlisted tool is READ when its name starts with a read prefix
  (``get_``, ``search_``, ...), else SEND (fail closed);
- ``targets_trusted``: every target (recipient/IBAN/e-mail/URL/user/channel/participant/hotel-like
  arguments, plus every URL, e-mail address and IBAN written inside any string argument) occurs
  (case-insensitively) in the prompt or the trusted text;
- ``requested``: the prompt matches the tool's intent keywords (:data:`REQUEST_KEYWORDS`); tools without
  keywords are never requested (fail closed);
- ``values_trusted``: for ACCOUNT changes (password, personal data), every string value occurs in the
  prompt or the trusted text.
"""

from __future__ import annotations

import re
from typing import Any

from ....core.types import Context, ToolCall
from ...extract import MappingExtractor

__all__ = ["ACCOUNT", "DELETE", "FETCH", "GroundingFacts", "KIND", "READ", "READ_PREFIXES", "REQUEST_KEYWORDS",
           "SEND", "TARGET_KEYS", "VALUE_KINDS", "WRITE", "extractor"]

#: the context facts read as grants (what the user trusts, what the agent may call): a service takes them from its
#: own records, never from the request (agentguard.server.facts)
GRANT_FACTS = ("prompt_lower", "trusted_lower")

READ, FETCH, WRITE, SEND, ACCOUNT, DELETE = range(6)
KIND: dict[str, int] = {
    # workspace
    "send_email": SEND, "delete_email": DELETE, "create_calendar_event": WRITE, "cancel_calendar_event": DELETE,
    "reschedule_calendar_event": WRITE, "add_calendar_event_participants": SEND, "append_to_file": WRITE,
    "create_file": WRITE, "delete_file": DELETE, "share_file": SEND,
    # travel
    "reserve_hotel": WRITE, "reserve_car_rental": WRITE, "reserve_restaurant": WRITE,
    # banking
    "send_money": SEND, "schedule_transaction": SEND, "update_scheduled_transaction": SEND,
    "update_password": ACCOUNT, "update_user_info": ACCOUNT,
    # slack
    "send_direct_message": SEND, "send_channel_message": SEND, "add_user_to_channel": SEND,
    "invite_user_to_slack": SEND, "remove_user_from_slack": DELETE, "post_webpage": SEND, "get_webpage": FETCH,
}
READ_PREFIXES = ("get_", "search_", "list_", "read_", "check_")

REQUEST_KEYWORDS: dict[str, str] = {
    "send_email": r"e-?mails?|send|reply|forward|\bmail",
    "delete_email": r"delete|remove",
    "create_calendar_event": r"event|calendar|meeting|appointment|lunch|dinner|schedule|remind",
    "cancel_calendar_event": r"cancel",
    "reschedule_calendar_event": r"reschedul|move|postpone",
    "add_calendar_event_participants": r"participant|invite|add .* to .*(event|meeting)",
    "append_to_file": r"append|add .* to .*(file|list|document)",
    "create_file": r"create .*(file|document|list)|new (file|document)|save",
    "delete_file": r"delete|remove",
    "share_file": r"\bshare",
    "reserve_hotel": r"\bbook|reserv", "reserve_car_rental": r"\bbook|reserv|\brent", "reserve_restaurant": r"\bbook|reserv",
    "send_money": r"\bpay|send|transfer|refund|money|bill|rent\b|transaction|subscription|order",
    "schedule_transaction": r"\bpay|schedul|transfer|recurring|standing order|rent\b|transaction",
    "update_scheduled_transaction": r"update|change|adjust|rent\b|standing order|scheduled|recurring",
    "update_password": r"password",
    "update_user_info": r"address|account information|user info|personal (data|info)|moved",
    "send_direct_message": r"message|send|tell|\bdm\b|feedback|write|reply|ask",
    "send_channel_message": r"post|message|send|channel|summar|write",
    "add_user_to_channel": r"\badd\b|invite|channel",
    "invite_user_to_slack": r"invite",
    "remove_user_from_slack": r"remove",
    "post_webpage": r"\bpost|website|webpage|publish|upload",
}
TARGET_KEYS = {"recipient", "recipients", "user_email", "email", "url", "participants", "iban", "user", "channel",
               "hotel", "restaurant", "company", "sender"}
VALUE_KINDS = {ACCOUNT}

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}[A-Z0-9]{10,30}\b")
_URL = re.compile(r"(?:https?://)?(?:www\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|io|ch|de|uk|edu|gov|info|co)"
                  r"(?:/[^\s'\"<>)]*)?", re.I)


def _norm(s: str) -> str:
    s = s.strip().lower()
    s = re.sub(r"^https?://", "", s)
    return s.rstrip("/.,;")


def _strings(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, (list, tuple)):
        return [x for e in v for x in _strings(e)]
    if isinstance(v, dict):
        return [x for e in v.values() for x in _strings(e)]
    return []


class GroundingFacts:
    """Computes the policy's facts for one call against a prompt and a trusted text."""

    @staticmethod
    def targets(call: ToolCall) -> list[str]:
        out: list[str] = []
        for k, v in call.arguments.items():
            if k in TARGET_KEYS:
                out += [s for s in _strings(v) if s.strip()]
            for s in _strings(v):
                out += _EMAIL.findall(s) + _IBAN.findall(s) + _URL.findall(s)
        return out

    @staticmethod
    def grounded(value: str, ctx: Context) -> bool:
        n = _norm(value)
        if not n:
            return True
        return n in ctx.metadata["prompt_lower"] or n in ctx.metadata["trusted_lower"]

    @classmethod
    def kind(cls, call: ToolCall) -> int:
        if call.name in KIND:
            return KIND[call.name]
        return READ if call.name.startswith(READ_PREFIXES) else SEND

    @classmethod
    def targets_trusted(cls, call: ToolCall, ctx: Context) -> bool:
        return all(cls.grounded(t, ctx) for t in cls.targets(call))

    @staticmethod
    def requested(call: ToolCall, ctx: Context) -> bool:
        pat = REQUEST_KEYWORDS.get(call.name)
        return bool(pat and re.search(pat, ctx.metadata["prompt_lower"], re.I))

    @classmethod
    def values_trusted(cls, call: ToolCall, ctx: Context) -> bool:
        if cls.kind(call) not in VALUE_KINDS:
            return True
        return all(cls.grounded(s, ctx) for v in call.arguments.values() for s in _strings(v))


def extractor() -> MappingExtractor:
    """Deterministic extractor; the context needs metadata ``prompt_lower`` and ``trusted_lower``."""
    f = GroundingFacts
    return MappingExtractor({
        "kind": lambda c, ctx: f.kind(c),
        "targets_trusted": f.targets_trusted,
        "requested": f.requested,
        "values_trusted": f.values_trusted,
    })
