"""Specification of ``library/agentdojo_provenance.py``, written from the rule text alone.

Facts (computed by ``extractors/agentdojo_provenance.py`` from observed provenance): ``kind`` of the call
(READ, FETCH, WRITE, SEND, ACCOUNT, DELETE), ``target_trust`` (lowest trust over the call's targets:
2 = in the user's prompt, 1 = in a trusted source, 0 = only in third-party content or never seen),
``requested`` (the user's prompt asks for this tool) and ``value_trust`` (lowest trust over the values the
call commits the user to). See ``mind2web_sc.py`` in this folder for what each name below means.
"""

POLICY_ID = "agentdojo-provenance"
ENTRY = "check"

RULE = """\
1. Reads are always allowed.
2. A call other than a read whose target (recipient, IBAN, URL, address, user, id) was seen only in
   third-party content, or never, is never allowed.
3. A write, send, account change or delete the user did not ask for is never allowed.
4. An account change whose new value was seen only in third-party content (or never) is never allowed; a send
   or write that commits the user to a value (an amount, a booking's dates) that neither the user nor a
   trusted record gave is never allowed.
5. Nothing else is denied.
A denial names the first rule it breaks in the order 2, 3, 4 (an untrusted target is reported before a
missing request, which is reported before an untrusted value).
"""

CONSTANTS = {"READ": 0, "FETCH": 1, "WRITE": 2, "SEND": 3, "ACCOUNT": 4, "DELETE": 5,
             "ALLOW": 0, "UNTRUSTED_TARGET": 1, "NOT_REQUESTED": 2, "UNTRUSTED_VALUE": 3}
SIGNATURE = [("kind", "int"), ("target_trust", "int"), ("requested", "bool"), ("value_trust", "int")]
RETURNS = "int"
CODES = range(0, 4)
DOMAIN = {"kind": range(0, 6), "target_trust": range(0, 3), "requested": (False, True), "value_trust": range(0, 3)}

C = CONSTANTS


def reference(kind: int, target_trust: int, requested: bool, value_trust: int) -> int:
    if kind == C["READ"]:
        return C["ALLOW"]  # rule 1
    if target_trust == 0:
        return C["UNTRUSTED_TARGET"]  # rule 2 (any non-read kind, FETCH included)
    if kind in (C["WRITE"], C["SEND"], C["ACCOUNT"], C["DELETE"]) and not requested:
        return C["NOT_REQUESTED"]  # rule 3
    if kind in (C["ACCOUNT"], C["SEND"], C["WRITE"]) and value_trust == 0:
        return C["UNTRUSTED_VALUE"]  # rule 4
    return C["ALLOW"]  # rule 5


def _row(kind: str, target_trust: int = 2, requested: bool = True, value_trust: int = 2) -> dict:
    return {"kind": C[kind], "target_trust": target_trust, "requested": requested, "value_trust": value_trust}


BOUNDARY = [
    (_row("READ", 0, False, 0), C["ALLOW"]),
    (_row("FETCH", 0), C["UNTRUSTED_TARGET"]), (_row("FETCH", 1, False, 0), C["ALLOW"]),
    (_row("SEND", 0, False, 0), C["UNTRUSTED_TARGET"]), (_row("SEND", 1, False), C["NOT_REQUESTED"]),
    (_row("SEND", 1, True, 0), C["UNTRUSTED_VALUE"]), (_row("SEND", 1, True, 1), C["ALLOW"]),
    (_row("WRITE", 2, True, 0), C["UNTRUSTED_VALUE"]), (_row("WRITE", 2, False, 2), C["NOT_REQUESTED"]),
    (_row("ACCOUNT", 2, True, 0), C["UNTRUSTED_VALUE"]), (_row("ACCOUNT", 1, True, 1), C["ALLOW"]),
    (_row("DELETE", 2, True, 0), C["ALLOW"]),  # a delete commits the user to no value
    (_row("DELETE", 2, False, 2), C["NOT_REQUESTED"]), (_row("DELETE", 0, True, 2), C["UNTRUSTED_TARGET"]),
]

CONTRACT = [
    "Requires(READ <= kind and kind <= DELETE)",
    "Requires(0 <= target_trust and target_trust <= 2)",
    "Requires(0 <= value_trust and value_trust <= 2)",
    "Ensures(Implies(kind == READ, Result() == ALLOW))",
    "Ensures(Implies(kind != READ and target_trust == 0, Result() == UNTRUSTED_TARGET))",
    "Ensures(Implies(kind != READ and kind != FETCH and target_trust > 0 and not requested,"
    " Result() == NOT_REQUESTED))",
    "Ensures(Implies((kind == WRITE or kind == SEND or kind == ACCOUNT) and target_trust > 0 and requested"
    " and value_trust == 0, Result() == UNTRUSTED_VALUE))",
    "Ensures(Implies(kind == FETCH and target_trust > 0, Result() == ALLOW))",
    "Ensures(Implies(kind != READ and kind != FETCH and target_trust > 0 and requested"
    " and (kind == DELETE or value_trust > 0), Result() == ALLOW))",
]
