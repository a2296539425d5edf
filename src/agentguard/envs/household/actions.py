"""Parsing of SafeAgentBench low-level instructions, exactly as the real controller parses them.

The SafeAgentBench low-level controller (``LowLevelPlanner.llm_skill_interact``) recognises an
instruction by its prefix, strips articles with plain ``str.replace`` calls, splits a trailing
instance number (``"find Mug 2"``) and turns the words into an AI2-THOR type name with
``''.join(capwords(w) for w in name.split())`` -- so ``"find SinkBasin"`` looks for ``Sinkbasin``
and ``"put Plate in Fridge"`` looks for a receptacle ``PlateInFridge``. The recorded messages
(``Cannot find Sinkbasin``, ``Cannot find PlateInFridge None``) depend on these quirks, so they are
reproduced here verbatim rather than "fixed".
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

__all__ = ["ParsedAction", "VERBS", "ithor_name", "parse_action"]

#: The low-level action vocabulary (SafeAgentBench), in the controller's order.
VERBS = ("find", "pick", "put", "open", "close", "slice", "turn on", "turn off", "drop", "throw", "break",
         "cook", "dirty", "clean", "fillLiquid", "emptyLiquid", "pour")
#: Verbs that take no object.
NO_OBJECT = frozenset({"drop", "throw", "pour"})
LIQUIDS = ("water", "coffee", "wine")


@dataclass(frozen=True)
class ParsedAction:
    """A parsed instruction: verb, AI2-THOR type name, instance number, liquid (fillLiquid only)."""

    text: str
    verb: str | None
    obj: str = ""
    num: int | None = None
    liquid: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.verb is not None and not self.error


def ithor_name(words: str) -> str:
    """``natural_word_to_ithor_name``: ``"floor lamp" -> "FloorLamp"``, ``"SinkBasin" -> "Sinkbasin"``."""
    if words == "CD":
        return words
    return "".join(string.capwords(x) for x in words.split())


def _split_num(s: str) -> tuple[str, int | None]:
    m = re.match(r"^(.*\D)\s*(\d+)?$", s)
    if m:
        return m.group(1).strip(), int(m.group(2)) if m.group(2) else None
    return s, None


def _strip(s: str, *prefixes: str) -> str:
    for p in prefixes:
        s = s.replace(p, "")
    return s


def parse_action(text: str) -> ParsedAction:
    """Parse one instruction like the controller does; ``verb=None`` with ``error`` for unknown verbs."""
    if not isinstance(text, str):
        return ParsedAction(str(text), None, error=f"action must be text, got {type(text).__name__}")
    t = text.strip()
    if t.startswith("find "):
        name = _strip(t, "find a ", "find an ", "find the ", "find ")
        verb = "find"
    elif t.startswith("pick "):
        name = _strip(t, "pick up ", "pick ", "a ", "an ", "the ")
        verb = "pick"
    elif t.startswith("put "):
        name = _strip(t, "put on ", "put down ", "put ", "the ", "a ", "an ")
        verb = "put"
    elif t.startswith("turn on ") or t.startswith("toggle on "):
        name = _strip(t, "turn on the ", "turn on a ", "turn on an ", "turn on ", "toggle on the ",
                      "toggle on a ", "toggle on an ", "toggle on ")
        verb = "turn on"
    elif t.startswith("turn off ") or t.startswith("toggle off "):
        name = _strip(t, "turn off the ", "turn off a ", "turn off an ", "turn off ", "toggle off the ",
                      "toggle off a ", "toggle off an ", "toggle off ")
        verb = "turn off"
    elif t.startswith("drop"):
        return ParsedAction(t, "drop")
    elif t.startswith("throw"):
        return ParsedAction(t, "throw")
    elif t.startswith("pour"):
        return ParsedAction(t, "pour")
    elif t.startswith("fillLiquid ") or t.startswith("fill "):
        rest = _strip(t.replace("fillLiquid", "fill"), "fill the ", "fill a ", "fill an ", "fill ")
        parts = rest.split()
        if not parts:
            return ParsedAction(t, None, error="fillLiquid needs an object and a liquid")
        part1, liquid = " ".join(parts[:-1]), parts[-1]
        obj, num = _split_num(part1)
        return ParsedAction(t, "fillLiquid", ithor_name(obj), num, liquid)
    elif t.startswith("emptyLiquid ") or t.startswith("empty "):
        name = _strip(t.replace("emptyLiquid", "empty"), "empty the ", "empty a ", "empty an ", "empty ")
        verb = "emptyLiquid"
    else:
        for v in ("open", "close", "slice", "break", "cook", "dirty", "clean"):
            if t.startswith(v + " "):
                name = _strip(t, f"{v} the ", f"{v} a ", f"{v} an ", f"{v} ")
                verb = v
                break
        else:
            word = t.split()[0] if t.split() else "(empty)"
            return ParsedAction(t, None, error=f"unknown action {word!r}; valid actions: {', '.join(VERBS)}")
    obj, num = _split_num(name)
    return ParsedAction(t, verb, ithor_name(obj), num)
