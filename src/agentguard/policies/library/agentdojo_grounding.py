"""AgentDojo policy: side effects only when the user asked for them and every target is grounded.

The verified core sees five facts that the extractor (agentguard.policies.bench_agentdojo) computes from the
tool call, the user's prompt and the user's trusted data (strings never enter the proof):

- ``kind``: READ (no side effect), FETCH (opens a URL), WRITE (creates/changes the user's own data),
  SEND (money, e-mail, messages, sharing, posting, invitations: anything leaving the user), ACCOUNT
  (password, personal data), DELETE;
- ``targets_trusted``: every target of the call (recipients, IBANs, e-mail addresses, URLs, user names,
  and every URL/e-mail/IBAN written inside any argument) occurs in the user's prompt or trusted data;
- ``requested``: the user's prompt asks for this kind of action on this tool (keywords per tool);
- ``values_trusted``: for ACCOUNT changes, every new value occurs in the prompt or trusted data.

Verified properties: reads are always allowed; any other call with an ungrounded target is denied; a
write/send/account/delete call the user did not ask for is denied; an account change with an ungrounded
value is denied; and nothing else is denied.
"""
from nagini_contracts.contracts import *

POLICY_ID = "agentdojo-grounding"
POLICY_VERSION = "2"

READ = 0
FETCH = 1
WRITE = 2
SEND = 3
ACCOUNT = 4
DELETE = 5

ALLOW = 0
UNGROUNDED_TARGET = 1
NOT_REQUESTED = 2
UNGROUNDED_VALUE = 3

REASONS = [
    "allowed",
    "a target of the call (recipient, IBAN, address, URL, user) is not in the user's prompt or trusted data",
    "the user did not ask for this action",
    "the new value does not come from the user's prompt or trusted data",
]


def check(kind: int, targets_trusted: bool, requested: bool, values_trusted: bool) -> int:
    Requires(READ <= kind and kind <= DELETE)
    Ensures(Implies(kind == READ, Result() == ALLOW))
    Ensures(Implies(kind != READ and not targets_trusted, Result() == UNGROUNDED_TARGET))
    Ensures(Implies(kind != READ and kind != FETCH and targets_trusted and not requested,
                    Result() == NOT_REQUESTED))
    Ensures(Implies(kind == ACCOUNT and targets_trusted and requested and not values_trusted,
                    Result() == UNGROUNDED_VALUE))
    Ensures(Implies(kind == FETCH and targets_trusted, Result() == ALLOW))
    Ensures(Implies(kind != READ and kind != FETCH and targets_trusted and requested
                    and (kind != ACCOUNT or values_trusted), Result() == ALLOW))
    if kind == READ:
        return ALLOW
    if not targets_trusted:
        return UNGROUNDED_TARGET
    if kind == FETCH:
        return ALLOW
    if not requested:
        return NOT_REQUESTED
    if kind == ACCOUNT and not values_trusted:
        return UNGROUNDED_VALUE
    return ALLOW
