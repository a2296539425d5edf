"""Argument extractor of ``library/agentdojo_provenance.py``: facts from observed provenance only.

The context needs ``metadata["provenance"]``, the run's :class:`~agentguard.policies.provenance.ProvenanceLedger`
(kept by :class:`~agentguard.policies.provenance_guard.ProvenanceGuard` from the prompt, the calls and their
results). Nothing else is read: no environment, no injection slots, no task.

- ``kind``: :data:`~agentguard.policies.library.extractors.agentdojo_grounding.KIND` by tool name (an
  unlisted tool is READ when its name starts with a read prefix, else SEND: fail closed);
- ``target_trust``: the lowest :func:`~agentguard.policies.provenance.trust_level` over the targets:
  arguments named in :data:`TARGET_KEYS` (whole values) and every e-mail / URL / IBAN written inside any
  string argument;
- ``requested``: the prompt contains a stem of the tool's intent lexicon (:data:`INTENT`, fitted on the
  design half of the user tasks only, see :func:`fit_intent`; a tool without a lexicon is never requested);
- ``value_trust``: for ACCOUNT changes, the lowest trust level over every string argument; for SENDs and
  WRITEs, over the values the call commits the user to (:func:`committed_values`: a payment's amount, a
  booking's dates; they must come from the user's prompt or a trusted record, see docs/policies.md); 2
  otherwise (and for a call that commits to none).

:data:`AGENTDOJO_SOURCES` declares AgentDojo's tool results: free text a third party writes (e-mail
subjects and bodies, event titles, descriptions and locations, file contents, web pages, messages,
transaction subjects, reviews) is third-party; the user's own records and system metadata (the bank
ledger's IBANs, an e-mail's sender and recipients, contacts, file ids and names, catalogues of hotels,
restaurants and cars with their prices and addresses) are trusted. It was written from the tools'
result types, not from the injection slots.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from ....core.types import Context, ToolCall
from ...extract import MappingExtractor
from ...provenance import ProvenanceLedger, SourceDeclaration, entities, strings_of, trust_level
from .agentdojo_grounding import ACCOUNT, KIND, READ, READ_PREFIXES, SEND, WRITE

__all__ = ["AGENTDOJO_SOURCES", "AMOUNT_KEYS", "BOOKING_DATE_KEYS", "INTENT", "INTENT_FILE", "ProvenanceFacts", "STOPWORDS", "TARGET_KEYS", "committed_values", "extractor", "fit_intent", "stems"]

TARGET_KEYS = frozenset({"recipient", "recipients", "cc", "bcc", "user_email", "email", "url", "participants",
                         "iban", "user", "channel", "hotel", "restaurant", "company", "file_id", "event_id",
                         "email_id", "id"})

AGENTDOJO_SOURCES = SourceDeclaration(
    trusted_tools=frozenset({
        "get_iban", "get_balance", "get_user_info", "get_current_day", "search_contacts_by_name",
        "search_contacts_by_email", "get_channels", "get_users_in_channel", "get_user_information",
        "get_all_hotels_in_city", "get_hotels_prices", "get_hotels_address", "get_all_restaurants_in_city",
        "get_restaurants_address", "get_cuisine_type_for_restaurants", "get_price_for_restaurants",
        "get_dietary_restrictions_for_all_restaurants", "get_contact_information_for_restaurants",
        "check_restaurant_opening_hours", "get_all_car_rental_companies_in_city", "get_car_types_available",
        "get_car_rental_address", "get_car_fuel_options", "get_car_price_per_day", "get_flight_information",
        "get_most_recent_transactions", "get_scheduled_transactions"}),
    trusted_fields=frozenset({"id_", "sender", "recipient", "recipients", "cc", "bcc", "timestamp", "read",
                              "status", "start_time", "end_time", "participants", "all_day", "filename",
                              "owner", "shared_with", "last_modified", "size", "amount", "date",
                              "recurring", "iban"}),
    untrusted_fields=frozenset({"subject", "body", "content", "description", "title", "location", "text",
                                "reviews", "rating_reviews"}),
)

# arguments whose value a SEND moves (not a target): a payment's amount
AMOUNT_KEYS = frozenset({"amount"})
# the dates a booking (a tool named reserve_*) commits the user to (the day; a time of day is not checked)
BOOKING_DATE_KEYS = frozenset({"start_day", "end_day", "start_time", "end_time"})

INTENT_FILE = Path(__file__).with_name("agentdojo_intent.json")
STOPWORDS = frozenset(("the a an and or to of in on for my me i you your it is are be at with from this that "
                       "please can could would will what which who how all any as by do does did have has "
                       "about also so then there their them they we our if not no yes just some into").split())


def stems(text: str) -> set[str]:
    """Crude stems of the words of ``text``: lower case, common suffixes cut, at most 6 letters."""
    out = set()
    for w in re.findall(r"[a-z]+", text.lower()):
        if len(w) < 3 or w in STOPWORDS:
            continue
        for suf in ("ing", "ed", "es", "s"):
            if w.endswith(suf) and len(w) - len(suf) >= 3:
                w = w[: -len(suf)]
                break
        out.add(w[:6])
    return out


def fit_intent(examples: Iterable[tuple[str, Iterable[str]]], tools: Iterable[str]) -> dict[str, list[str]]:
    """Fit the intent lexicon on design prompts: ``examples`` = (prompt, tools its ground truth calls).

    Per side-effecting tool: the stem of its name's verb (``send`` of ``send_money``), then greedily the stem that covers the most still
    uncovered prompts using the tool minus the prompts not using it that it would newly match, while that
    gain is positive. Deterministic (ties by stem). Use it on the design half only.
    """
    ex = [(stems(p), set(t)) for p, t in examples]
    lex: dict[str, list[str]] = {}
    for tool in sorted(tools):
        if KIND.get(tool, SEND) == READ or tool.startswith(READ_PREFIXES):
            continue
        words = sorted(stems(tool.split("_")[0]))
        pos = [s for s, t in ex if tool in t]
        neg = [s for s, t in ex if tool not in t]
        while True:
            unc = [s for s in pos if not s & set(words)]
            negm = [s for s in neg if not s & set(words)]
            cands = sorted({w for s in unc for w in s})
            best = max(cands, key=lambda w: (sum(w in s for s in unc) - sum(w in s for s in negm), w), default=None)
            if best is None or sum(best in s for s in unc) - sum(best in s for s in negm) <= 0:
                break
            words.append(best)
        lex[tool] = sorted(set(words))
    return lex


def _load_intent() -> dict[str, list[str]]:
    if INTENT_FILE.exists():
        return json.loads(INTENT_FILE.read_text(encoding="utf-8"))["lexicon"]
    return {}


INTENT: dict[str, list[str]] = _load_intent()


def _ledger(ctx: Context) -> ProvenanceLedger:
    led = ctx.metadata.get("provenance")
    if not isinstance(led, ProvenanceLedger):
        raise KeyError("context metadata 'provenance' (a ProvenanceLedger) is required")
    return led


class ProvenanceFacts:
    """The policy's facts for one call from the run's ledger (and the intent lexicon)."""

    def __init__(self, intent: Mapping[str, list[str]] | None = None) -> None:
        self.intent = {k: frozenset(v) for k, v in (INTENT if intent is None else intent).items()}

    @staticmethod
    def kind(call: ToolCall, ctx: Context | None = None) -> int:
        if call.name in KIND:
            return KIND[call.name]
        return READ if call.name.startswith(READ_PREFIXES) else SEND

    @staticmethod
    def targets(call: ToolCall) -> list[str]:
        out: list[str] = []
        for k, v in call.arguments.items():
            for _, s in strings_of(v):
                if k in TARGET_KEYS and s.strip():
                    out.append(s)
                out += [form for kind, form in entities(s) if kind in ("email", "url", "iban")]  # addresses only
        return out

    def target_trust(self, call: ToolCall, ctx: Context) -> int:
        led = _ledger(ctx)
        return min((trust_level(led.labels(t)) for t in self.targets(call)), default=2)

    def requested(self, call: ToolCall, ctx: Context) -> bool:
        words = self.intent.get(call.name)
        led = _ledger(ctx)
        if "stems" not in led.cache:
            led.cache["stems"] = frozenset(stems(led.prompt))
        return bool(words and words & led.cache["stems"])

    def value_trust(self, call: ToolCall, ctx: Context) -> int:
        led = _ledger(ctx)
        return min((trust_level(led.labels(s)) for s in committed_values(call, self.kind(call))), default=2)


def committed_values(call: ToolCall, kind: int) -> list[str]:
    """The values ``value_trust`` ranges over: every string argument of an ACCOUNT change, the amounts of a
    SEND, the dates of a booking (a WRITE by a ``reserve_*`` tool); none otherwise."""
    if kind == ACCOUNT:
        keys = None
    elif kind == SEND:
        keys = AMOUNT_KEYS
    elif kind == WRITE and call.name.startswith("reserve_"):
        keys = BOOKING_DATE_KEYS
    else:
        return []
    return [s for k, v in call.arguments.items() if keys is None or k in keys for _, s in strings_of(v) if s.strip()]


def extractor(intent: Mapping[str, list[str]] | None = None) -> MappingExtractor:
    """Deterministic extractor; the context needs metadata ``provenance`` (a ProvenanceLedger)."""
    f = ProvenanceFacts(intent)
    return MappingExtractor({"kind": f.kind, "target_trust": f.target_trust, "requested": f.requested,
                             "value_trust": f.value_trust})
