"""Example verified policy: a transfer may not exceed the limit (VeriGuard-style, Nagini contracts).

Used by the integration tests and examples through ``ToolCallGuard`` (agentguard.policies).
"""
from nagini_contracts.contracts import *

POLICY_ID = "transfer-limit"
POLICY_VERSION = "1"

ALLOW = 0
OVER_LIMIT = 1

REASONS = [
    "allowed",
    "the amount exceeds the transfer limit",
]


def check(amount: int, limit: int) -> int:
    Requires(0 <= amount and amount <= 1000000000)
    Requires(0 <= limit and limit <= 1000000000)
    Ensures(Implies(amount > limit, Result() == OVER_LIMIT))
    Ensures(Implies(amount <= limit, Result() == ALLOW))
    if amount > limit:
        return OVER_LIMIT
    return ALLOW
