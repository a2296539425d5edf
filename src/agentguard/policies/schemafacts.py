"""Facts a tool's JSON schema states about one parameter, read by rules on the schema's structure (no tool names).

:mod:`agentguard.policies.toolinfer` reads each parameter's role from the words of its name; these rules read
what the schema itself says, for tool sets nobody wrote a rule for:

- **a format names the role** (:func:`format_role`): a string whose ``format`` is one of the JSON Schema
  2020-12 date and time formats (section 7.3.1, from RFC 3339: ``date-time``, ``date``, ``time``) is a time or a
  date, whatever its name (``end`` beside ``start``: both ``format: date-time``);
- **a `<noun>Id` names the kind of id it takes** (:func:`id_noun`): ``calendarId``, ``color_id``, ``eventIds``
  take an id of a calendar, a colour, an event, not of the tool's object; the inference lexicon's id words map
  a noun to its kind (``email`` -> ``message``) only where that noun is a word of the tool's name (an e-mail's
  id in ``delete_email``), or where the lexicon maps the noun to itself;
- **a value the schema offers is a schema constant** (:func:`constants`): its ``const``, its ``default``, and a
  quoted word its own description tells the agent to use (``use 'primary' for the main calendar``), never one
  it gives as an example (``e.g. 'abc'``). A constant is a plain word (letters, digits, ``_``, ``-``; at most
  32 characters): an address, a link or a path is never one. The data-flow check
  (:func:`agentguard.policies.schemagrants.expand_arguments`) skips an argument value **exactly** equal to one
  of its parameter's constants: it comes from the tool's schema, not from the run; any other spelling
  (``primary\\u200b``, ``Primary``) is checked as every value is.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from .toolnames import _singular, tokens
from .toolset import ToolDecl

if TYPE_CHECKING:
    from .toolinfer import ToolSchema

__all__ = ["FORMAT_ROLES", "constants", "format_role", "id_noun", "noun_ids"]

#: JSON Schema 2020-12, section 7.3.1 (Dates, Times, and Duration; RFC 3339): the format's role
FORMAT_ROLES = {"date-time": "time", "time": "time", "date": "date"}
_ID = frozenset({"id", "ids"})
#: words that stand before ``id`` in a name without naming a kind (``the_id``, ``new_id``, ``external_id``)
_NOT_NOUNS = frozenset({"the", "a", "an", "new", "old", "my", "own", "this", "that", "its", "external", "internal",
                        "unique", "primary", "parent", "target", "source", "custom", "api", "by", "of", "for", "or",
                        "and", "to", "from", "with", "in", "on", "at"})
_CONSTANT = r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}"
_OFFERED = re.compile(rf"(?P<pre>[^'\"`]{{0,24}})['\"`](?P<v>{_CONSTANT})['\"`]")
_EXAMPLE = re.compile(r"\b(?:e\.?\s?g|i\.?\s?e|example|examples|such as|like|eg)\b[\s.,:;(]*$", re.IGNORECASE)
_NEGATED = re.compile(r"\b(?:not|never|no|don't|do not|avoid)\b", re.IGNORECASE)
_USE = re.compile(r"\b(?:use|pass|set|specify|enter|give|put|send|choose|select)\b", re.IGNORECASE)


def format_role(fmt: str) -> str | None:
    """The role a string parameter's JSON-schema ``format`` gives it (:data:`FORMAT_ROLES`), else None."""
    return FORMAT_ROLES.get(fmt.strip().casefold()) if fmt else None


def id_noun(toks: list[str], name_words: list[str], ids: Mapping[str, str]) -> str | None:
    """The kind of id a parameter named ``<noun>Id`` / ``<noun>_id`` / ``<noun>Ids`` takes (its name's tokens
    ``toks``), else None (a bare ``id``, or a word before ``id`` that names no kind: :data:`_NOT_NOUNS`). The
    lexicon's ``ids`` map a noun to a kind only where that noun is a word of the tool's name (``name_words``) or
    where the map gives the noun itself; otherwise the noun, singular, is the kind (``calendarId`` of
    ``update-event`` takes a calendar's id, not an event's)."""
    at = max((i for i, t in enumerate(toks) if t in _ID), default=-1)
    if at <= 0:
        return None
    noun = toks[at - 1]
    if noun in _NOT_NOUNS or not noun.isalpha() or len(noun) < 3:
        return None
    own = _singular(noun) or noun
    if noun in ids and (noun in name_words or ids[noun] == own):
        return ids[noun]
    return own


def constants(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The values a parameter's own schema ``spec`` offers (see the module docstring): ``const``, ``default`` and
    the quoted words its description tells the agent to use, each a plain word; an ``enum`` is a closed set of
    its own (``choices``) and is not repeated here."""
    out: list[str] = []
    for key in ("const", "default"):
        v = spec.get(key)
        if isinstance(v, str) and re.fullmatch(_CONSTANT, v):
            out.append(v)
    desc = spec.get("description")
    if isinstance(desc, str):
        for m in _OFFERED.finditer(desc):
            pre = m.group("pre")
            if _USE.search(pre) and not _EXAMPLE.search(pre) and not _NEGATED.search(pre):
                out.append(m.group("v"))
    return tuple(dict.fromkeys(out))


def noun_ids(schemas: Iterable["ToolSchema"], tools: Mapping[str, ToolDecl],
             ids: Mapping[str, str]) -> tuple[dict[str, ToolDecl], frozenset[str]]:
    """The id kinds :func:`id_noun` made that the lexicon's ``ids`` do not know (``calendar``, ``color``), and
    ``tools`` with two structural facts applied (only inferred declarations are changed):

    - a **listing of those nouns** (a read with no declared results whose name's object is the plural noun:
      ``list-calendars``) returns records whose ``id`` is an id of that kind: the ledger trusts it as such, and the
      kinds are targets, ``ids`` (refused when third-party text also writes the id) and ``named_ids`` (only the
      id of a record the request names) of the tool set, as the record listings of
      :func:`agentguard.policies.toolinfer.listing_roles`;
    - a **constant one tool's schema offers** a parameter (``use 'primary'``) is offered to the parameters of the
      same name and role in the tool set's other tools (the same parameter, described once).
    """
    schemas = list(schemas)
    out = dict(tools)
    known = set(ids.values())
    kinds = frozenset(k for s in schemas if s.name in out and out[s.name].inferred for p in s.params
                      if (k := id_noun(tokens(p.name), s.words(), ids)) is not None and k not in known
                      and out[s.name].args.get(p.name) == k)
    offered: dict[tuple[str, str], frozenset[str]] = {}
    for decl in out.values():
        for arg, vals in decl.constants.items():
            key = (arg, decl.args.get(arg, "unknown"))
            offered[key] = offered.get(key, frozenset()) | vals
    for s in schemas:
        d = out.get(s.name)
        if d is None or not d.inferred:
            continue
        consts = {a: offered[(a, r)] for a, r in d.args.items() if (a, r) in offered}
        noun = next((n for w in s.words()[1:] if (n := _singular(w))), None)
        if d.kind == "read" and not d.results and noun in kinds:   # whole: a bare value only; these are records
            d = replace(d, results={"id": noun, "id_": noun})
        out[s.name] = replace(d, constants=consts)
    return out, kinds
