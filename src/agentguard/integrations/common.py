"""What every adapter shares besides the core Pipeline: reading the framework's per-run facts and the text
an agent sees when its call is refused. (Deciding, enforcing, auditing and per-run state are the core's
:class:`~agentguard.core.pipeline.Pipeline`; an adapter only translates.)"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from ..core.errors import InputError
from ..core.strict_json import StrictJSONError, loads_strict
from ..core.types import ToolCall, Verdict

__all__ = ["Unreadable", "as_facts", "plain", "read_arguments", "refusal_message", "tool_call_of"]


def as_facts(obj: Any) -> dict[str, Any]:
    """Per-run facts as a plain dict for ``Context.metadata``: a mapping, a dataclass, a pydantic model
    or any object with public attributes (the framework's run context: LangChain's runtime
    ``context``, the Agents SDK's ``RunContextWrapper.context``); ``None`` and scalars give ``{}``.

    These facts are what policies read with ``{from = "metadata", key = "user_info.age"}``: the
    application sets them (trusted), the model never writes them.
    """
    if obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return {}
    if isinstance(obj, dict):
        return dict(obj)
    try:
        import dataclasses

        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    except Exception:  # pragma: no cover - defensive
        pass
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            out = dump()
            return dict(out) if isinstance(out, dict) else {}
        except Exception:
            return {}
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        return {k: v for k, v in attrs.items() if not k.startswith("_")}
    return {}


def plain(value: Any) -> Any:
    """A framework's validated argument value as plain data for the guard: a pydantic model as its
    ``model_dump()``, a dataclass instance as its fields, lists, tuples and dicts walked; anything else as is.
    (A tool receives the model object; the guards read data: a secret or a path inside a nested model must
    be as visible to them as inside the dict the model sent.)"""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return plain(dump())
        except Exception:  # noqa: BLE001 - a model that cannot dump itself is shown as is
            return value
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def refusal_message(verdict: Verdict, call: ToolCall | Unreadable | None = None) -> str:
    """The text an agent sees when its call is refused (names the guard, the decision and the reason)."""
    what = f"tool call {call.name}" if call is not None else "action"
    return (
        f"agentguard refused {what} ({verdict.decision.name} by {verdict.guard or 'guard'}): {verdict.reason}"
    )


def read_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as the one reading every consumer agrees on, or :class:`InputError` (one
    line). A JSON text (what a model emits and a framework hands a tool) is read by the strict reader
    (:func:`agentguard.core.strict_json.loads_strict`): a key given twice (``{"path": "a", "path":
    "/etc/shadow"}``: Python keeps the last, other parsers the first or refuse), ``NaN``/``Infinity``,
    a number that overflows (``1e999``), a lone surrogate, text that is not JSON (which a lenient tool
    parser, e.g. a JSON-repair library, might still read as a call) and anything but an object are
    refused; empty text is ``{}``. A mapping is taken as is (a framework parsed it already)."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None or (isinstance(raw, (str, bytes)) and not raw.strip()):
        return {}
    if not isinstance(raw, (str, bytes, bytearray)):
        raise InputError(f"arguments must be a JSON object, got {type(raw).__name__}")
    try:
        val = loads_strict(bytes(raw) if isinstance(raw, bytearray) else raw)
    except StrictJSONError as exc:
        raise InputError(f"arguments are not strict JSON: {exc}") from None
    if not isinstance(val, dict):
        raise InputError(f"arguments must be a JSON object, got {type(val).__name__}")
    return val


class Unreadable(Mapping[str, Any]):
    """A proposed call whose arguments could not be read (:func:`read_arguments` refused them), handed to
    the Pipeline like any proposal: reading its ``arguments`` raises the refusal, so the Pipeline's own
    conversion fails closed (its ``on_error`` decision, audited with the reason), never a made-up call.
    It is a mapping of ``name``, ``raw`` (the text, cut to 200 characters) and ``error``."""

    def __init__(self, name: str, raw: Any, error: str) -> None:
        self.name, self.error = name, error
        self._items = {"name": name, "raw": str(raw)[:200], "error": error}

    def __getitem__(self, key: str) -> Any:
        if key in ("arguments", "args"):
            raise InputError(f"tool call {self.name!r}: {self.error}")
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Unreadable({self.name!r}, error={self.error!r})"


def tool_call_of(name: str, raw: Any, call_id: str = "") -> ToolCall | Unreadable:
    """The proposal of a call whose arguments arrive as JSON text: a :class:`ToolCall` of the strictly read
    arguments, or an :class:`Unreadable` that the Pipeline refuses."""
    try:
        return ToolCall(name, read_arguments(raw), call_id)
    except InputError as exc:
        return Unreadable(name, raw, str(exc))
