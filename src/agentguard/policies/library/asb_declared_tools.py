"""ASB policy: an agent may call only the tools it declares (derived from each agent's declared tools).

ASB's tools take no arguments, so the only fact is the tool's identity: ``tool`` is the index of the called
tool in the benchmark's tool registry (computed by the extractor; -1 for a name it has never seen) and
``declared`` the indices of the agent's declared tools. Verified property: a tool outside the declared
list is always denied, and a declared tool is always allowed (list membership, Nagini-supported).
"""
from nagini_contracts.contracts import *
from typing import List

POLICY_ID = "asb-declared-tools"
POLICY_VERSION = "1"

ALLOW = 0
UNDECLARED = 1

REASONS = [
    "allowed",
    "tool is not among the agent's declared tools",
]


def check(tool: int, declared: List[int]) -> int:
    Requires(Acc(list_pred(declared), 1/2))
    Requires(-1 <= tool and tool <= 100000)
    Ensures(Acc(list_pred(declared), 1/2))
    Ensures(Implies(not (tool in declared), Result() == UNDECLARED))
    Ensures(Implies(tool in declared, Result() == ALLOW))
    if tool in declared:
        return ALLOW
    return UNDECLARED
