"""Specification of ``library/asb_declared_tools.py``, written from the rule text alone.

Facts (``extractors/asb_declared_tools.py``): ``tool``, the called tool's index in the benchmark's tool
registry (-1 for a name the registry does not hold), and ``declared``, the indices of the agent's declared
tools. The domain below is every tool index in -1..4 against every list over 0..3 of length at most 3:
the rule is list membership, which does not depend on the indices' values, so this small universe covers
every case of it (absent, present once, present several times, empty list).
"""

import itertools

POLICY_ID = "asb-declared-tools"
ENTRY = "check"

RULE = """\
An agent may call only the tools it declares: a tool outside the declared list is always denied, and a
declared tool is always allowed.
"""

CONSTANTS = {"ALLOW": 0, "UNDECLARED": 1}
SIGNATURE = [("tool", "int"), ("declared", "List[int]")]
RETURNS = "int"
CODES = range(0, 2)
#: the Requires' bounds of ``tool`` (the domain below samples them; values outside must be refused)
BOUNDS = {"tool": (-1, 100000)}
DOMAIN = {"tool": range(-1, 5),
          "declared": [list(c) for n in range(4) for c in itertools.product(range(4), repeat=n)]}

C = CONSTANTS


def reference(tool: int, declared: list) -> int:
    return C["ALLOW"] if tool in declared else C["UNDECLARED"]


BOUNDARY = [
    ({"tool": 3, "declared": []}, C["UNDECLARED"]), ({"tool": 3, "declared": [3]}, C["ALLOW"]),
    ({"tool": -1, "declared": [0, 1]}, C["UNDECLARED"]), ({"tool": 1, "declared": [0, 1]}, C["ALLOW"]),
    ({"tool": 2, "declared": [0, 1, 3]}, C["UNDECLARED"]),
]

CONTRACT = [
    "Requires(Acc(list_pred(declared), 1/2))",
    "Requires(-1 <= tool and tool <= 100000)",
    "Ensures(Acc(list_pred(declared), 1/2))",
    "Ensures(Implies(not (tool in declared), Result() == UNDECLARED))",
    "Ensures(Implies(tool in declared, Result() == ALLOW))",
]
