"""Verified-policy guards for the service, built from a declarative spec (usable from ``agentguard.toml``).

A verified policy (:mod:`agentguard.policies`) is a function over ints and bools. The service receives
tool calls as JSON, so each policy field is read from the request by a *declarative* rule, never by
code the client sends:

- ``{from = "tool", map = {rent_car = 1, ...}, default = 0}``: the tool name, through a lookup table;
- ``{from = "argument", key = "amount"}``: a tool-call argument (dotted path into nested objects);
- ``{from = "metadata", key = "user_info.age"}``: the request's ``metadata`` (user facts, session);
- ``{from = "constant", value = 3}``.

``map`` turns strings into the policy's enum ints; ``default`` is used when the value is absent
(without one, a missing value makes the policy refuse, fail closed). Values are type-checked by the
policy itself; anything outside its precondition is refused (the ToolCallGuard's fail-closed rule).

``verified_digest``: the SHA-256 prefix (``Policy.digest``) of the source Nagini proved. When given, a
policy file whose content differs refuses to load, so the service only ever runs the exact code that
was verified.

In ``agentguard.toml``::

    [[guards]]
    type = "python"
    factory = "agentguard.server.policy:verified_policy_guard"
    policy = "mind2web_sc"            # a shipped policy name, or a path
    verified_digest = "0123456789ab"
    [guards.fields]
    category = {from = "tool", map = {rent_car = 1, book_flight = 6}, default = 0}
    age = {from = "metadata", key = "user_info.age"}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..core.errors import InputError, PolicyError
from ..core.types import Context, ToolCall

__all__ = ["FieldRule", "SpecExtractor", "verified_policy_guard"]

_MISSING = object()
_SOURCES = ("tool", "argument", "metadata", "constant")


def _dig(obj: Any, parts: tuple[str, ...]) -> Any:
    for part in parts:
        # JSON objects arrive as dicts: test that first (an ABC isinstance check is slow on the hot path).
        if (type(obj) is dict or isinstance(obj, Mapping)) and part in obj:
            obj = obj[part]
        else:
            return _MISSING
    return obj


class FieldRule:
    """How one policy field is read from a request (see the module docstring)."""

    __slots__ = ("name", "source", "key", "parts", "table", "default", "value")

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        if not isinstance(spec, Mapping):
            raise InputError(f"field {name}: expected a table like {{from = \"argument\", key = \"x\"}}")
        unknown = set(spec) - {"from", "key", "map", "default", "value"}
        if unknown:
            raise InputError(f"field {name}: unknown key(s) {', '.join(sorted(unknown))}")
        self.name = name
        self.source = spec.get("from")
        if self.source not in _SOURCES:
            raise InputError(f"field {name}: 'from' must be one of {', '.join(_SOURCES)}, got {self.source!r}")
        self.key = spec.get("key")
        if self.source in ("argument", "metadata") and not (isinstance(self.key, str) and self.key):
            raise InputError(f"field {name}: from = {self.source!r} needs a 'key'")
        self.parts = tuple(self.key.split(".")) if isinstance(self.key, str) else ()
        if self.source == "constant" and "value" not in spec:
            raise InputError(f"field {name}: from = 'constant' needs a 'value'")
        self.value = spec.get("value")
        table = spec.get("map")
        if table is not None and not isinstance(table, Mapping):
            raise InputError(f"field {name}: 'map' must be a table")
        self.table = dict(table) if table is not None else None
        self.default = spec.get("default", _MISSING)

    def read(self, call: ToolCall, context: Context) -> Any:
        if self.source == "constant":
            v = self.value
        elif self.source == "tool":
            v = call.name
        elif self.source == "argument":
            v = _dig(call.arguments, self.parts)
        else:
            v = _dig(context.metadata, self.parts)
        if v is not _MISSING and self.table is not None:
            v = self.table.get(v, _MISSING) if type(v) in (str, int, bool) else _MISSING
        if v is _MISSING:
            if self.default is _MISSING:
                raise PolicyError(f"field {self.name}: no value in the request ({self.source}"
                                  + (f" {self.key}" if self.key else "") + ")")
            v = self.default
        return v


class SpecExtractor:
    """An :class:`agentguard.policies.ArgumentExtractor` from declarative field rules (deterministic)."""

    slow = False

    def __init__(self, fields: Mapping[str, Mapping[str, Any]]) -> None:
        self.rules = [FieldRule(k, v) for k, v in fields.items()]

    def extract(self, call: ToolCall, context: Context) -> dict[str, Any]:
        return {r.name: r.read(call, context) for r in self.rules}


def verified_policy_guard(*, policy: str, fields: Mapping[str, Mapping[str, Any]], tools: Sequence[str] = ("*",),
                          verified_digest: str | None = None, unknown_tool: str = "deny", name: str | None = None,
                          strategy: str = "AB", timeout_s: float = 0.05) -> Any:
    """A :class:`agentguard.policies.ToolCallGuard` over one verified policy, fed by :class:`SpecExtractor`.

    ``policy`` is a shipped policy name (``agentguard.policies.shipped_policies``) or a file path. Every
    field of the policy's schema must have a rule (checked here, at load time).
    """
    from ..policies import PolicyBinding, ToolCallGuard, library_path, load_policy

    path = Path(policy)
    if not path.suffix:
        path = library_path(policy)
    pol = load_policy(path, timeout_s=timeout_s)
    if verified_digest is not None and pol.digest != verified_digest:
        raise PolicyError(f"policy {pol.id} at {path} has digest {pol.digest}, not the verified {verified_digest}: "
                          "refusing to run unverified code")
    missing = [p for p in pol.param_names if p not in fields]
    extra = [f for f in fields if f not in pol.param_names]
    if missing or extra:
        raise InputError(f"policy {pol.id}: fields must match its schema {list(pol.param_names)}"
                         + (f"; missing {missing}" if missing else "") + (f"; unknown {extra}" if extra else ""))
    binding = PolicyBinding(pol, SpecExtractor(fields), tuple(tools))
    return ToolCallGuard([binding], name=name or f"policy:{pol.id}@{pol.version}", strategy=strategy,
                         unknown_tool=unknown_tool)
