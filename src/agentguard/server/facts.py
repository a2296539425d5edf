"""The run facts every decision is taken with: a ``/v1/check``'s ``metadata`` (the agent's claims) and the
server's own (the caller's credential), kept apart so an agent never grants itself anything. A step or a signal
claims nothing: its guards see the server's facts alone. (Session 26 red team: they saw no facts at all, so a
step's tool call was decided without the credential's facts its ``/v1/check`` is decided with; a policy field
reading one with a ``default`` read the default, and a call the check REJECTed for that credential was ALLOWed,
``execute: true``, as the action of a step.)

Guarantees:

- ``principal`` is the server's: ``{"identity": ..., "roles": [...]}`` of the credential that asked (a
  policy reads ``{from = "metadata", key = "principal.identity"}``). A request that sends ``principal`` is
  refused (422).
- The credential's own ``facts`` (a table of its entry in the credentials file, :mod:`.credentials`) are set
  by the operator: they are given to the guards as written, and a request that sends one of their keys is
  refused (422), never merged.
- A fact a guard in force reads as a **grant** (it declares it in ``grant_facts``: a flow rule's
  ``grant_fact``, adding recipients; the provenance guard's ``prompt``, minting the user's grants; a verified
  policy whose shipped extractor reads grants, e.g. the grounding extractor's ``prompt_lower`` and
  ``trusted_lower``, the declared-tools extractor's ``declared_tools``) is refused
  when the request sends it (422 naming the guard), unless the operator lists the key in the setting
  ``client_facts`` (the agent process is trusted to report it, e.g. the user's prompt). A grant a deployment
  gives an agent goes in the credential's ``facts``.
- Each request's facts are its own copies: a guard that changes them changes no other request's.

What stays the agent's claim (stated): any other key, e.g. the verified Mind2Web-SC policy's
``user_info`` (age, licence): a policy field ``from = "metadata"`` reads what the agent sent, and the guard
cannot tell a true claim from a false one. Read what must be trusted from ``principal`` or the
credential's ``facts`` instead. The stored input keeps the request's metadata as sent (what the agent
claimed); the server's facts are not stored with it.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from fastapi.exceptions import RequestValidationError

from ..core.runs import walk_guards
from .credentials import Principal

__all__ = ["RequestFacts", "SERVER_KEY", "grant_facts"]

#: the key under which the server gives the guards the caller's identity and roles
SERVER_KEY = "principal"


def grant_facts(guard: Any) -> dict[str, str]:
    """``{fact key: name of the guard that reads it as a grant}`` over ``guard`` and every guard inside it."""
    out: dict[str, str] = {}
    for g in walk_guards(guard):
        keys = getattr(g, "grant_facts", None)
        if isinstance(keys, (frozenset, set, tuple, list)):
            for k in keys:
                out.setdefault(str(k), str(getattr(g, "name", type(g).__name__)))
    return out


def _refused(problems: list[tuple[str, str]]) -> RequestValidationError:
    return RequestValidationError([{"type": "value_error", "loc": ("body", "metadata", k), "msg": msg,
                                    "input": None} for k, msg in problems])


class RequestFacts:
    """The facts of one service's checks (see the module docstring); :meth:`of` is asked once per check."""

    def __init__(self, source: Any, client_facts: tuple[str, ...] | list[str] = ()) -> None:
        self.source = source
        self.client_facts = frozenset(client_facts)
        self._cache: tuple[Any, dict[str, str]] = (None, {})  # (the guards, their grant facts)
        self._roles: dict[frozenset[str], tuple[str, ...]] = {}  # each role set, sorted once

    def grants(self, guards: Any = None) -> dict[str, str]:
        """The grant facts of the tool guards ``guards`` (a :class:`~.guards.ServiceGuards`; default: those in
        force), recomputed when a hot reload swapped them."""
        g = self.source.get() if guards is None else guards
        seen, grants = self._cache
        if g is not seen:
            grants = {k: n for k, n in grant_facts(g.tool).items() if k not in self.client_facts}
            self._cache = (g, grants)  # one pair: guards are never read with another generation's grants
        return grants

    def of(self, metadata: Mapping[str, Any], who: Principal, guards: Any = None) -> dict[str, Any]:
        """The facts the guards see for this request: ``metadata`` with the server's facts set over it; raises
        :class:`~fastapi.exceptions.RequestValidationError` (422) for a key the request may not send.

        ``guards``: the generation of guards that decides with these facts (the service passes the one its
        decision uses, so a hot reload between the request's arrival and its decision cannot let a key
        through that the deciding guards read as a grant); default: the guards in force now."""
        grants = self.grants(guards)
        own = who.facts or {}
        if metadata:
            problems = []
            for k in metadata:
                if k == SERVER_KEY:
                    problems.append((k, "set by the server (the caller's identity and roles), not the request"))
                elif k in own:
                    problems.append((k, "set by the server (the credential's facts), not the request"))
                elif k in grants:
                    problems.append((k, f"read as a grant by guard {grants[k]!r}: it comes from the server (the "
                                        "credential's facts, or the setting client_facts), not the request"))
            if problems:
                raise _refused(problems)
        roles = self._roles.get(who.roles)
        if roles is None:
            roles = self._roles[who.roles] = tuple(sorted(who.roles))  # at most 15 role sets (4 roles)
        out = dict(metadata)
        if own:
            out.update(copy.deepcopy(dict(own)))  # fresh per request, as the principal below: a guard that changes
        out[SERVER_KEY] = {"identity": who.identity, "roles": list(roles)}  # its facts changes no other request's
        return out
