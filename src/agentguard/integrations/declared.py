"""What a tool's declared JSON Schema makes of a call's arguments, for the adapters that forward a call to a tool
they do not run (the MCP proxy, the LiteLLM guardrail): whether the arguments already have the declared types
(:func:`type_refusal`: a tool's validation, pydantic in lax mode, would otherwise run another value than the one
judged), and the call with the declared defaults of the arguments it leaves out (:func:`judged_call`: the values the
tool's function receives for them).

jsonschema (the MCP SDK's own dependency) reads the schemas, with ``integer`` meaning a JSON integer only.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from ..core.types import ToolCall

__all__ = ["judged_call", "type_refusal"]

_STRICT_CLASSES: dict[Any, Any] = {}  # jsonschema validator class -> its strict-integer extension
_VALIDATORS: dict[int, tuple[Any, Any]] = {}  # id(schema) -> (schema, validator): schemas are listed once, used often


def _strict_validator(schema: dict[str, Any]) -> Any:
    """A JSON Schema validator for ``schema`` whose ``integer`` is a JSON integer only (not ``5.0``), made
    once per schema object (building one costs milliseconds; checking a call with it, microseconds)."""
    held = _VALIDATORS.get(id(schema))
    if held is not None and held[0] is schema:
        return held[1]
    from jsonschema import validators

    base = validators.validator_for(schema, default=validators.Draft202012Validator)
    cls = _STRICT_CLASSES.get(base)
    if cls is None:
        checker = base.TYPE_CHECKER.redefine("integer", lambda _c, v: isinstance(v, int) and not isinstance(v, bool))
        cls = _STRICT_CLASSES[base] = validators.extend(base, type_checker=checker)
    validator = cls(schema)
    if len(_VALIDATORS) > 4096:
        _VALIDATORS.clear()
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


def type_refusal(schema: Any, arguments: dict[str, Any], what: str = "schema") -> str | None:
    """Why ``arguments`` do not have the types ``schema`` declares (None when they do, or there is no schema), read
    strictly, with no coercion: only arguments that already have them are forwarded, so what a tool's lax validation
    makes of them (``"5000"`` or ``" 5000 "`` as ``5000``, ``"off"`` as ``False``) is what the guard read."""
    if not isinstance(schema, dict) or not schema:
        return None
    try:
        error = next(iter(_strict_validator(schema).iter_errors(arguments)), None)
    except Exception as exc:  # noqa: BLE001 - a schema no validator reads: the call cannot be checked
        return f"the tool's {what} cannot be read ({type(exc).__name__})"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "arguments"
    return f"{where}: {error.message[:200]}"


def _resolve(root: dict[str, Any], schema: Any) -> Any:
    """``schema`` with a local ``$ref`` (``#/$defs/Name``, what pydantic lists for a model parameter) followed."""
    for _ in range(32):
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return schema
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        schema = target
    return None


def _filled(root: dict[str, Any], schema: Any, value: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    schema = _resolve(root, schema)
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or depth > 32:
        return value
    out = dict(value)
    for key, prop in props.items():
        prop = _resolve(root, prop)
        if key not in out and isinstance(prop, dict) and "default" in prop:
            out[key] = copy.deepcopy(prop["default"])
        elif isinstance(out.get(key), dict):
            out[key] = _filled(root, prop, out[key], depth + 1)
    return out


def judged_call(schemas: Mapping[str, Any], call: ToolCall) -> ToolCall:
    """``call`` as its tool runs it: every property its listed ``inputSchema`` gives a ``default`` for and the call
    leaves out (at the top, and inside an object argument whose schema lists properties, ``$ref`` followed) filled in
    with that default, which is what the guard judges. ``MCPServer`` (pydantic) hands the function the default of an
    argument left out: ``purge(path: str = "/")`` called with ``{}`` ran ``purge("/")`` while a rule forbidding
    ``path = "/"`` saw no path. The request forwarded is still the client's (the server fills in the same default;
    sending a default such as ``None`` for a ``str`` parameter explicitly would fail its validation)."""
    schema = schemas.get(call.name)
    if not isinstance(schema, dict):
        return call
    filled = _filled(schema, schema, dict(call.arguments))
    return call if filled == dict(call.arguments) else ToolCall(call.name, filled, call.call_id)
