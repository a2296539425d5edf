"""Specification of ``library/agentdojo_grounding.py``, written from the rule text alone.

Facts (``extractors/agentdojo_grounding.py``): ``kind`` (READ, FETCH, WRITE, SEND, ACCOUNT, DELETE),
``targets_trusted`` (every target occurs in the user's prompt or trusted data), ``requested`` (the prompt
asks for this kind of action on this tool), ``values_trusted`` (for ACCOUNT changes, every new value occurs
in the prompt or trusted data). See ``mind2web_sc.py`` in this folder for what each name below means.
"""

POLICY_ID = "agentdojo-grounding"
ENTRY = "check"

RULE = """\
1. Reads are always allowed.
2. Any other call with a target not grounded in the user's prompt or trusted data is denied.
3. A write, send, account or delete call the user did not ask for is denied.
4. An account change with a new value not grounded in the prompt or trusted data is denied.
5. Nothing else is denied.
A denial names the first rule it breaks in the order 2, 3, 4.
"""

CONSTANTS = {"READ": 0, "FETCH": 1, "WRITE": 2, "SEND": 3, "ACCOUNT": 4, "DELETE": 5,
             "ALLOW": 0, "UNGROUNDED_TARGET": 1, "NOT_REQUESTED": 2, "UNGROUNDED_VALUE": 3}
SIGNATURE = [("kind", "int"), ("targets_trusted", "bool"), ("requested", "bool"), ("values_trusted", "bool")]
RETURNS = "int"
CODES = range(0, 4)
DOMAIN = {"kind": range(0, 6), "targets_trusted": (False, True), "requested": (False, True),
          "values_trusted": (False, True)}

C = CONSTANTS


def reference(kind: int, targets_trusted: bool, requested: bool, values_trusted: bool) -> int:
    if kind == C["READ"]:
        return C["ALLOW"]
    if not targets_trusted:
        return C["UNGROUNDED_TARGET"]
    if kind in (C["WRITE"], C["SEND"], C["ACCOUNT"], C["DELETE"]) and not requested:
        return C["NOT_REQUESTED"]
    if kind == C["ACCOUNT"] and not values_trusted:
        return C["UNGROUNDED_VALUE"]
    return C["ALLOW"]


def _row(kind: str, targets_trusted: bool = True, requested: bool = True, values_trusted: bool = True) -> dict:
    return {"kind": C[kind], "targets_trusted": targets_trusted, "requested": requested,
            "values_trusted": values_trusted}


BOUNDARY = [
    (_row("READ", False, False, False), C["ALLOW"]),
    (_row("FETCH", False), C["UNGROUNDED_TARGET"]), (_row("FETCH", True, False, False), C["ALLOW"]),
    (_row("SEND", False, False), C["UNGROUNDED_TARGET"]), (_row("SEND", True, False), C["NOT_REQUESTED"]),
    (_row("SEND", True, True, False), C["ALLOW"]),  # rule 4 is about account changes only
    (_row("ACCOUNT", True, True, False), C["UNGROUNDED_VALUE"]), (_row("ACCOUNT"), C["ALLOW"]),
    (_row("DELETE", True, False), C["NOT_REQUESTED"]), (_row("WRITE"), C["ALLOW"]),
]

CONTRACT = [
    "Requires(READ <= kind and kind <= DELETE)",
    "Ensures(Implies(kind == READ, Result() == ALLOW))",
    "Ensures(Implies(kind != READ and not targets_trusted, Result() == UNGROUNDED_TARGET))",
    "Ensures(Implies(kind != READ and kind != FETCH and targets_trusted and not requested,"
    " Result() == NOT_REQUESTED))",
    "Ensures(Implies(kind == ACCOUNT and targets_trusted and requested and not values_trusted,"
    " Result() == UNGROUNDED_VALUE))",
    "Ensures(Implies(kind == FETCH and targets_trusted, Result() == ALLOW))",
    "Ensures(Implies(kind != READ and kind != FETCH and targets_trusted and requested"
    " and (kind != ACCOUNT or values_trusted), Result() == ALLOW))",
]
