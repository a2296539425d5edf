"""AgentDojo policy on observed provenance: no side effect on third-party data, none the user did not ask for.

The facts come from ``extractors/agentdojo_provenance.py``, which sees only what a deployed guard sees (the
user's prompt, the calls and their results, and a per-tool declaration of trusted fields) and reduces the
labels of each value (:mod:`agentguard.policies.provenance`) to a trust level: 2 = in the user's prompt,
1 = in a trusted source, 0 = only in third-party content or never seen.

- ``kind``: READ, FETCH (opens a URL), WRITE, SEND (leaves the user), ACCOUNT, DELETE;
- ``target_trust``: the lowest trust level over the call's targets (recipients, IBANs, URLs, e-mail
  addresses, user names, ids, and every URL / e-mail / IBAN written in any argument); 2 without targets;
- ``requested``: the user's prompt asks for this tool (intent lexicon fixed on the design half);
- ``value_trust``: for ACCOUNT changes, the lowest trust level over the new values; for SENDs and WRITEs,
  over the values the call commits the user to (a payment's amount, a booking's dates); 2 otherwise.

The contract is fixed by the rule's specification (``specs/agentdojo_provenance.py``); it states the rule, independently of the code below (which decides rule by rule through per-kind tables):
a non-read call whose target was seen only in third-party content (or never) is never allowed; a write,
send, account change or delete the user did not ask for is never allowed; an account change with a
third-party value is never allowed; a send or write committing the user to a value (an amount, a booking's
dates) that neither the user nor a trusted record gave is never allowed (an attacker who reuses a target
the user named, or a hotel in a trusted catalogue, still has to pick the amount or the dates); reads are always allowed; and nothing else is denied.
"""
from nagini_contracts.contracts import *

POLICY_ID = "agentdojo-provenance"
POLICY_VERSION = "4"

READ = 0
FETCH = 1
WRITE = 2
SEND = 3
ACCOUNT = 4
DELETE = 5

ALLOW = 0
UNTRUSTED_TARGET = 1
NOT_REQUESTED = 2
UNTRUSTED_VALUE = 3

REASONS = [
    "allowed",
    "a target of the call (recipient, IBAN, URL, address, user, id) was seen only in third-party content",
    "the user did not ask for this action",
    "the new value, the amount sent or the dates booked were seen only in third-party content (or never)",
]


def needs_trusted_target(kind: int) -> bool:
    Requires(READ <= kind and kind <= DELETE)
    Ensures(Result() == (kind != READ))
    return kind >= FETCH


def needs_request(kind: int) -> bool:
    Requires(READ <= kind and kind <= DELETE)
    Ensures(Result() == (kind >= WRITE))
    return not (kind == READ or kind == FETCH)


def needs_trusted_value(kind: int) -> bool:
    Requires(READ <= kind and kind <= DELETE)
    Ensures(Result() == (kind == ACCOUNT or kind == SEND or kind == WRITE))
    return kind == WRITE or kind == SEND or kind == ACCOUNT


def check(kind: int, target_trust: int, requested: bool, value_trust: int) -> int:
    Requires(READ <= kind and kind <= DELETE)
    Requires(0 <= target_trust and target_trust <= 2)
    Requires(0 <= value_trust and value_trust <= 2)
    Ensures(Implies(kind == READ, Result() == ALLOW))
    Ensures(Implies(kind != READ and target_trust == 0, Result() == UNTRUSTED_TARGET))
    Ensures(Implies(kind != READ and kind != FETCH and target_trust > 0 and not requested,
                    Result() == NOT_REQUESTED))
    Ensures(Implies((kind == WRITE or kind == SEND or kind == ACCOUNT) and target_trust > 0 and requested
                    and value_trust == 0, Result() == UNTRUSTED_VALUE))
    Ensures(Implies(kind == FETCH and target_trust > 0, Result() == ALLOW))
    Ensures(Implies(kind != READ and kind != FETCH and target_trust > 0 and requested
                    and (kind == DELETE or value_trust > 0), Result() == ALLOW))
    if needs_trusted_target(kind) and target_trust < 1:
        return UNTRUSTED_TARGET
    if needs_request(kind) and not requested:
        return NOT_REQUESTED
    if needs_trusted_value(kind) and value_trust < 1:
        return UNTRUSTED_VALUE
    return ALLOW
