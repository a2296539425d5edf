"""A conformance checker for guards, in the spirit of Gymnasium's ``check_env``.

Anyone who writes a guard (a class with ``name``, ``check`` and ``acheck``) can run::

    from agentguard.testing import check_guard
    check_guard(MyGuard(), proposals=[ToolCall("send_email", {"to": "a@b.c"})])

and get either nothing back (the guard keeps the contract) or a :class:`GuardCheckError` (an
``AssertionError``) whose ``prop`` names the property it broke:

``protocol``
    it is a :class:`~agentguard.core.Guard`: a non-empty ``name``, callable ``check`` and ``acheck``.
``repr``
    ``repr(guard)`` says what the guard is, not the default ``<... object at 0x...>``.
``returns_verdict``
    ``check`` and ``acheck`` return a :class:`~agentguard.core.Verdict` (raising is allowed: a stack
    turns it into the fail-closed verdict), and at least one of the proposals yields one.
``sync_async_agree``
    ``check`` and ``acheck`` give the same decision, guard and reason for the same input (or both
    raise).
``deterministic``
    the same input, in a fresh run, gives the same decision, guard and reason again.
``fail_closed``
    unreadable proposals (None, a random object, a malformed tool-call-like dict, NaN) never yield ALLOW: the guard answers a blocking verdict or raises.

Each probe runs in a fresh run (a new ``Context.run_id``, a copy of the context template), and the
guard forgets that run afterwards (``end_run``), so a stateful guard is compared with itself from
the same starting point. A stateful guard with ``reset()`` but no ``end_run`` is reset before each
probe.
"""

from __future__ import annotations

import asyncio
import copy
import re
import threading
import uuid
from typing import Any, Iterable

from .core.guard import Guard
from .core.runs import end_run
from .core.types import Context, Decision, Step, ToolCall, Trace, Verdict

__all__ = ["GuardCheckError", "UNREADABLE", "check_guard", "default_proposals"]

_DEFAULT_REPR = re.compile(r"^<[\w.]+ object at 0x[0-9a-fA-F]+>$")


class GuardCheckError(AssertionError):
    """A guard broke a property of the contract; ``prop`` names it, ``guard`` is the guard's repr."""

    def __init__(self, prop: str, guard: Any, message: str) -> None:
        self.prop = prop
        self.guard = _safe_repr(guard)
        super().__init__(f"check_guard: property {prop!r} failed for {self.guard}: {message}")


class _Opaque:
    """A random object no guard can read."""

    def __repr__(self) -> str:
        return "<opaque proposal>"


def _unreadable() -> list[tuple[str, Any]]:
    return [
        ("None", None),
        ("a random object", _Opaque()),
        ("a malformed tool-call-like dict", {"name": 17, "arguments": "not a mapping", "call_id": None}),
        ("NaN", float("nan")),
    ]


#: descriptions of the unreadable proposals ``check_guard`` tries (the values are built per call)
UNREADABLE = tuple(name for name, _ in _unreadable())


def default_proposals() -> list[Any]:
    """Readable proposals of every kind a shipped guard reads: a tool call, a step with a state, an
    action and a signal, and a bare score."""
    return [
        ToolCall("search", {"query": "weather"}, "c1"),
        Step(state={"s": 0}, action=ToolCall("search", {"query": "weather"}), signals={"score": 0.9}),
        0.9,
    ]


def _safe_repr(guard: Any) -> str:
    try:
        return repr(guard)
    except Exception as exc:  # noqa: BLE001 - a broken repr is reported, not raised
        return f"<repr raised {type(exc).__name__}>"


def _run_async(coro: Any) -> Any:
    """Run ``coro`` to completion, also when called from inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class _Prober:
    """Asks the guard in a fresh run per probe and cleans the run up afterwards."""

    def __init__(self, guard: Any) -> None:
        self.guard = guard
        self.reset_each = callable(getattr(guard, "reset", None)) and not callable(getattr(guard, "end_run", None))

    def _context(self, template: Context) -> Context:
        ctx = copy.deepcopy(template)
        ctx.run_id = f"check-guard-{uuid.uuid4().hex[:12]}"
        if isinstance(ctx.trace, Trace):
            ctx.trace.run_id = ctx.run_id
        return ctx

    def ask(self, template: Context, proposal: Any, *, asynchronous: bool) -> Verdict | BaseException:
        """The guard's answer (a Verdict, whatever else it returned, or the exception it raised)."""
        if self.reset_each:
            self.guard.reset()
        ctx = self._context(template)
        prop = copy.deepcopy(proposal)
        try:
            if asynchronous:
                return _run_async(self.guard.acheck(ctx, prop))
            return self.guard.check(ctx, prop)
        except Exception as exc:  # noqa: BLE001 - raising is a (fail-closed) answer
            return exc
        finally:
            try:
                end_run(self.guard, ctx.run_id)
            except Exception:  # noqa: BLE001 - cleanup only
                pass


def _key(answer: Any) -> tuple:
    if isinstance(answer, BaseException):
        return ("raised", type(answer).__name__)
    if isinstance(answer, Verdict):
        return (answer.decision.name, answer.guard, answer.reason)
    return ("returned", type(answer).__name__)


def _describe(answer: Any) -> str:
    if isinstance(answer, BaseException):
        return f"raised {type(answer).__name__}: {answer}"
    if isinstance(answer, Verdict):
        return str(answer)
    return f"returned {type(answer).__name__} {answer!r}"


def _check_protocol(guard: Any) -> None:
    name = getattr(guard, "name", None)
    if not isinstance(name, str) or not name:
        raise GuardCheckError("protocol", guard, f"needs a non-empty str `name`, has {name!r}")
    if not isinstance(guard, Guard) or not callable(getattr(guard, "check", None)) \
            or not callable(getattr(guard, "acheck", None)):
        raise GuardCheckError("protocol", guard, "needs `check(context, proposal)` and `acheck(context, proposal)`")
    r = _safe_repr(guard)
    if _DEFAULT_REPR.match(r) or r.startswith("<repr raised"):
        raise GuardCheckError("repr", guard, f"repr is {r!r}; define __repr__ to say what the guard checks")


def _check_readable(guard: Any, prober: _Prober, contexts: list[Context], proposals: list[Any]) -> None:
    verdicts = 0
    for ctx in contexts:
        for p in proposals:
            first = prober.ask(ctx, p, asynchronous=False)
            other = prober.ask(ctx, p, asynchronous=True)
            again = prober.ask(ctx, p, asynchronous=False)
            for answer, how in ((first, "check"), (other, "acheck")):
                if not isinstance(answer, (Verdict, BaseException)):
                    raise GuardCheckError("returns_verdict", guard, f"{how}(context, {p!r}) {_describe(answer)}, "
                                                                    "not a Verdict")
            if _key(first) != _key(other):
                raise GuardCheckError("sync_async_agree", guard, f"for {p!r}: check {_describe(first)} but "
                                                                 f"acheck {_describe(other)}")
            if _key(first) != _key(again):
                raise GuardCheckError("deterministic", guard, f"for {p!r}: first {_describe(first)}, then "
                                                              f"{_describe(again)}")
            verdicts += isinstance(first, Verdict)
    if not verdicts:
        raise GuardCheckError("returns_verdict", guard, "no proposal yielded a Verdict (every call raised); pass "
                                                        "`proposals` the guard can read")


def _check_unreadable(guard: Any, prober: _Prober, contexts: list[Context]) -> None:
    for ctx in contexts:
        for what, p in _unreadable():
            for asynchronous in (False, True):
                answer = prober.ask(ctx, p, asynchronous=asynchronous)
                if isinstance(answer, Verdict) and answer.decision is Decision.ALLOW:
                    how = "acheck" if asynchronous else "check"
                    raise GuardCheckError("fail_closed", guard, f"{how} ALLOWed an unreadable proposal ({what}): "
                                                                f"{answer}")
                if not isinstance(answer, (Verdict, BaseException)):
                    raise GuardCheckError("returns_verdict", guard, f"for an unreadable proposal ({what}) it "
                                                                    f"{_describe(answer)}")


def check_guard(guard: Any, contexts: Iterable[Context] | None = None,
                proposals: Iterable[Any] | None = None) -> None:
    """Check that ``guard`` keeps the Guard contract; raise :class:`GuardCheckError` naming the first
    property it breaks (see the module docstring for the list). Returns None when all hold.

    ``contexts``: context templates to probe with (default: one empty :class:`~agentguard.core.Context`);
    each probe gets a copy with a fresh ``run_id``. ``proposals``: readable proposals (default:
    :func:`default_proposals`). Both are used as given; pass what your guard reads.
    """
    _check_protocol(guard)
    ctxs = list(contexts) if contexts is not None else [Context()]
    props = list(proposals) if proposals is not None else default_proposals()
    if not ctxs or not props:
        raise ValueError("check_guard needs at least one context and one proposal")
    prober = _Prober(guard)
    _check_readable(guard, prober, ctxs, props)
    _check_unreadable(guard, prober, ctxs)

