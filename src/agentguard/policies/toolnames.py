"""The words of a tool's name (issue 27): identifier tokens, plural nouns, the published verb and property
vocabularies (``library/verbs_external.json``), and a tool set's **namespace** before its names' verbs
(:func:`namespaced`). Split from :mod:`agentguard.policies.toolinfer`, which applies them."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:   # pragma: no cover
    from .toolinfer import InferenceLexicon, ToolSchema

__all__ = ["external_kinds", "external_param_role", "namespaced", "tokens"]


def tokens(name: str) -> list[str]:
    """The words of an identifier: ``user_email`` / ``userEmail`` / ``user-email`` -> ``['user', 'email']``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^a-z0-9]+", spaced.casefold()) if w]


@lru_cache(maxsize=1)
def external_kinds() -> dict[str, str]:
    """Verb -> kind from ``library/verbs_external.json``: RFC 9110 methods, Google AIP standard methods and the
    schema.org Action hierarchy, transcribed with their sources (never written from a benchmark's tools)."""
    return {verb: kind for kind, verbs in _external()["kinds"].items() for verb in verbs}


@lru_cache(maxsize=1)
def _external() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(__file__).parent / "library" / "verbs_external.json").read_text(
        encoding="utf-8"))
    return data


def external_param_role(name: str) -> str | None:
    """The role of a parameter named as a schema.org property (``amount``, ``start_time``, ``url``), from
    ``library/verbs_external.json``; ``None`` when it is none."""
    table: dict[str, str] = _external()["params"]
    toks = tokens(name)
    return table.get("".join(toks)) or next((table[t] for t in toks if t in table), None)


def _singular(word: str) -> str | None:
    """The singular of a plural noun written in a tool's name (``channels`` -> ``channel``), else ``None``."""
    if len(word) <= 3 or not word.endswith("s") or word.endswith("ss"):
        return None
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("ies") and len(word) > 4:   # companies -> company, entries -> entry
        return word[:-3] + "y"
    return word[:-1]


def _known_verb(word: str, lex: "InferenceLexicon") -> bool:
    return any(word in verbs for _, verbs, _ in lex.kinds) or word in external_kinds()


def _reads(word: str, lex: "InferenceLexicon") -> bool:
    """Whether the first kind rule (or published vocabulary) that knows verb ``word`` makes it a read."""
    kind = next((k for k, verbs, _ in lex.kinds if word in verbs), None) or external_kinds().get(word)
    return kind == "read"


def namespaced(schemas: Iterable["ToolSchema"], lex: "InferenceLexicon") -> list["ToolSchema"]:
    """``schemas`` with each name's **namespace** marked (``ToolSchema.prefix``), so that the verb is the word after
    it: an MCP server may put its service or object before the verb (``crm_search_contacts``, ``notes_list``).
    The first word of a name is a namespace when no kind rule or published vocabulary knows it as a verb, the
    next word is a known verb, and the word starts the names of two or more tools of the set, one of them
    followed by a verb that is no read (``crm_search_contacts`` beside ``crm_create_contact``), or is a plural
    noun (``notes_list``). A shared first word followed by reads only is a verb of its own, so its tools stay
    consequential writes (``clear_search_history`` and ``clear_view_history``, ``rerun_check_run`` and
    ``rerun_check_suite`` had been read as the free reads ``search``, ``view``, ``check``). Otherwise nothing is
    skipped: an unknown first word stays the verb, and an
    unknown verb is a consequential ``write`` (``unsubscribe_list_members`` keeps ``unsubscribe``; a lone
    ``acme_get_x`` keeps ``acme``: the rule only ever skips a word no vocabulary calls a verb)."""
    schemas = list(schemas)
    firsts: dict[str, int] = {}
    writes: set[str] = set()   # first words some tool follows with a known verb that is no read (crm_create_x)
    for s in schemas:
        w = tokens(s.name)
        if w:
            firsts[w[0]] = firsts.get(w[0], 0) + 1
        if len(w) >= 2 and _known_verb(w[1], lex) and not _reads(w[1], lex):
            writes.add(w[0])
    out = []
    for s in schemas:
        w = tokens(s.name)
        skip = (len(w) >= 2 and not _known_verb(w[0], lex) and _known_verb(w[1], lex)
                and (firsts[w[0]] >= 2 and w[0] in writes or _singular(w[0]) is not None))
        out.append(replace(s, prefix=1 if skip else 0))
    return out
