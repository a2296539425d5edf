"""The Guard protocol, a base class, fail-closed wrapping and composition (GuardStack).

Contract of a guard: ``check(context, proposal) -> Verdict`` never returns ALLOW because it failed.

The one fail-closed rule (every path, sync and async, goes through :func:`run_guard` /
:func:`arun_guard`, which :class:`GuardStack`, the service and the adapters use):

- anything a guard raises, any ``BaseException`` included (``SystemExit``, ``KeyboardInterrupt``,
  ``asyncio.CancelledError`` raised *by the guard*), becomes the configured fail-closed verdict
  (HALT by default) with the error as the reason; only the cancellation of the *caller's own* task is
  passed on (the caller is going away; nothing is allowed either way);
- a verdict that arrives after the deadline (``timeout_s``) never allows: it is replaced by the
  fail-closed verdict, on the synchronous and the asynchronous path alike;
- on the asynchronous path a synchronous guard (one whose ``acheck`` is :meth:`BaseGuard.acheck`) runs in
  a worker thread, never on the event loop, and is *abandoned* (not awaited) at its deadline: the
  caller gets the fail-closed verdict on time while the thread finishes on its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import math
import time
from typing import Any, Iterable, Protocol, runtime_checkable

from . import telemetry as _telemetry
from .errors import GuardError, GuardTimeout, InputError
from .limits import time_limit
from .runs import end_run
from .types import Context, Decision, Verdict

__all__ = ["ASK_EVERY", "BaseGuard", "Guard", "GuardStack", "arun_guard", "fail_closed", "run_guard"]

#: worker threads for synchronous guards on the async path (a guard stuck past its deadline keeps its
#: thread; when all are stuck, later calls queue, miss their deadline and fail closed)
_POOL_SIZE = 32
_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(_POOL_SIZE, thread_name_prefix="agentguard-guard")
    return _pool


@runtime_checkable
class Guard(Protocol):
    """Anything with a ``name`` and matching ``check``/``acheck`` methods returning a Verdict."""

    name: str

    def check(self, context: Context, proposal: Any) -> Verdict: ...

    async def acheck(self, context: Context, proposal: Any) -> Verdict: ...


class BaseGuard:
    """Convenience base: subclasses implement ``check``; ``acheck`` runs it in a worker thread.

    Inside a :class:`GuardStack` the stack runs all its synchronous members in one worker-thread hop
    (see :func:`arun_guard`), so a stack of cheap guards costs one thread switch per request. A guard
    whose own class sets ``inline_safe = True`` declares itself fast and pure (it decides from its input alone in
    bounded time: no I/O, no blocking, no lock held by another thread): the async path runs it on the
    event loop without a thread hop, and a verdict that returns after the deadline still fails closed.
    """

    name: str = "guard"

    def check(self, context: Context, proposal: Any) -> Verdict:  # pragma: no cover - abstract
        raise NotImplementedError

    async def acheck(self, context: Context, proposal: Any) -> Verdict:
        loop = asyncio.get_running_loop()  # the thread runs in a copy of the caller's context (its trace span)
        return await loop.run_in_executor(_executor(), contextvars.copy_context().run, self.check, context, proposal)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


def fail_closed(guard_name: str, error: BaseException, decision: Decision = Decision.HALT) -> Verdict:
    """The verdict a guard that errored yields: never ALLOW. ``decision`` must block."""
    if not decision.refuses:
        raise InputError(f"fail-closed decision must be REJECT, ESCALATE or HALT, not {decision.name}")
    kind = "timed out" if isinstance(error, (TimeoutError, GuardTimeout)) else "failed"
    return Verdict(
        decision,
        f"guard {guard_name} {kind}: {type(error).__name__}: {error}",
        guard_name,
        details={"error": type(error).__name__},
    )


def _name(guard: Any) -> str:
    return str(getattr(guard, "name", None) or type(guard).__name__)


def _accept(guard: Any, v: Any, t0: float, timeout_s: float | None) -> Verdict:
    """The guard's verdict if it is one and came in time; raises otherwise (the caller fails closed)."""
    if not isinstance(v, Verdict):
        raise GuardError(f"returned {type(v).__name__}, not a Verdict")
    if timeout_s is not None and not time.perf_counter() - t0 <= timeout_s:  # NaN: never in time (fail closed)
        raise GuardTimeout(f"took longer than {timeout_s}s (its {v.decision.name} came too late)")
    return v if v.guard else v.with_guard(_name(guard))


def _readable(guard: Any, proposal: Any) -> None:
    """Raise GuardError when the guard declares what it accepts (``accepts``: a type or a tuple of
    types) and ``proposal`` is not one of them (the caller fails closed)."""
    accepts = getattr(guard, "accepts", None)
    if accepts and not isinstance(proposal, accepts):
        raise GuardError(f"cannot read a proposal of type {type(proposal).__name__}")


def run_guard(guard: Any, context: Context, proposal: Any, *, timeout_s: float | None = None,
              on_error: Decision = Decision.HALT) -> Verdict:
    """``guard.check`` under the fail-closed rule (synchronous path; see the module docstring).

    A synchronous call cannot be interrupted without a thread, so a guard that *returns* after
    ``timeout_s`` gets the fail-closed verdict instead of its answer.
    """
    t0 = time.perf_counter()
    try:
        _readable(guard, proposal)
        return _accept(guard, guard.check(context, proposal), t0, timeout_s)
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt... from a guard: fail closed
        return fail_closed(_name(guard), exc, on_error)


def _run_member(guard: Any, context: Context, proposal: Any, timeout_s: float | None,
                on_error: Decision) -> Verdict:
    """:func:`run_guard` for a guard inside a stack: in its own span when telemetry is on."""
    tel = _telemetry.active()
    if tel is None or not tel.guard_spans:
        return run_guard(guard, context, proposal, timeout_s=timeout_s, on_error=on_error)
    entered = tel.guard_enter(_name(guard))
    v = run_guard(guard, context, proposal, timeout_s=timeout_s, on_error=on_error)  # never raises
    tel.guard_exit(entered, v)
    return v


async def _arun_member(guard: Any, context: Context, proposal: Any, timeout_s: float | None,
                       on_error: Decision) -> Verdict:
    tel = _telemetry.active()
    if tel is None or not tel.guard_spans:
        return await _arun_async(guard, context, proposal, timeout_s, on_error)
    entered = tel.guard_enter(_name(guard))
    try:
        v = await _arun_async(guard, context, proposal, timeout_s, on_error)
    except BaseException:  # the caller's own cancellation: the span ends with it
        tel.guard_exit(entered, fail_closed(_name(guard), asyncio.CancelledError("cancelled"), on_error))
        raise
    tel.guard_exit(entered, v)
    return v


def _is_sync(guard: Any) -> bool:
    """True when the guard's ``acheck`` is BaseGuard's (its real work is the synchronous ``check``)."""
    return getattr(type(guard), "acheck", None) is BaseGuard.acheck


def declares_inline_safe(guard: Any) -> bool:
    """True when the guard's own class declares ``inline_safe`` (a subclass that may override ``check`` does
    not inherit it) and the guard answers True: it decides from its input alone, keeps no per-run memory
    and needs no I/O. The MCP relay's one-client loop and the service's replay shortcut read this; the shared
    async path of :func:`_arun_many` asks more (:func:`_inline_safe`)."""
    return "inline_safe" in vars(type(guard)) and getattr(guard, "inline_safe", False) is True


def _inline_safe(guard: Any) -> bool:
    """True when the guard's own class declares ``inline_safe = True`` as a plain class attribute (fast and
    pure; a subclass that may override ``check`` does not inherit it): the async path decides it on the event
    loop. A per-instance answer (a property, e.g. :class:`~agentguard.policies.ToolCallGuard`'s, whose
    sandboxed policy may run up to its timeout) does not count: the loop serves every other run meanwhile."""
    return vars(type(guard)).get("inline_safe", False) is True


def _ceiling(guard: Any, on_error: Decision) -> int | None:
    """The strictness of the strictest verdict ``guard`` may give in a stack whose fail-closed decision is
    ``on_error``, when it may go unasked: it is decided inline (:func:`_inline_safe`: synchronous, fast and pure),
    keeps no per-run memory (neither ``end_run`` nor ``reset``) and its own class defines ``strictest()`` (the
    strictest decision its ``check`` gives); None (ask it) otherwise."""
    if not (_is_sync(guard) and _inline_safe(guard)) or "strictest" not in vars(type(guard)) or callable(
            getattr(guard, "end_run", None)) or callable(getattr(guard, "reset", None)):
        return None
    try:
        own = guard.strictest()
    except Exception:  # noqa: BLE001 - it cannot say: ask it
        return None
    return max(own.strictness, on_error.strictness) if isinstance(own, Decision) else None


#: True while a shadow part is asked (:class:`~.shadow.Shadowed`): its report lists every member's would-be verdict,
#: so a stack asks every member there (:meth:`GuardStack._settled` answers False)
ASK_EVERY: contextvars.ContextVar[bool] = contextvars.ContextVar("agentguard_ask_every", default=False)


def _best(verdicts: list[Verdict]) -> Verdict:
    """The first of the strictest verdicts."""
    best = verdicts[0]
    for v in verdicts[1:]:
        if v.stricter_than(best):
            best = v
    return best


def _all_inline(guard: Any) -> bool:
    """True for a plain :class:`GuardStack` whose every member is decided inline (:func:`_inline_safe`): its
    ``acheck`` would run each of them on the loop in turn, which is its ``check``."""
    return type(guard) is GuardStack and all(_is_sync(g) and _inline_safe(g) for g in guard.guards)


def _own_cancellation() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _await_deadline(fut: Any, timeout_s: float | None) -> Any:
    """Await ``fut``; at the deadline abandon it (cancel, do not wait for it) and raise GuardTimeout."""
    if timeout_s is None:
        return await fut
    done, _ = await asyncio.wait({fut}, timeout=timeout_s)
    if not done:
        fut.cancel()
        raise GuardTimeout(f"no verdict within {timeout_s}s (abandoned)")
    return fut.result()


async def arun_guard(guard: Any, context: Context, proposal: Any, *, timeout_s: float | None = None,
                     on_error: Decision = Decision.HALT) -> Verdict:
    """``guard.acheck`` under the fail-closed rule (asynchronous path; see the module docstring).

    A synchronous guard runs in a worker thread (never on the event loop) and is abandoned at its
    deadline; an asynchronous guard runs as a task cancelled at its deadline; either way a late verdict
    never allows.
    """
    results = await _arun_many([guard], context, proposal, timeout_s, on_error, short_circuit=False)
    return results[0]


def _sync_batch(guards: list[Any], context: Context, proposal: Any, timeout_s: float | None,
                on_error: Decision, short_circuit: bool, out: list[Verdict], traced: bool = False) -> None:
    run = _run_member if traced else _run_top
    for g in guards:  # runs in a worker thread; ``out`` is read by the caller when this returns in time
        v = run(g, context, proposal, timeout_s, on_error)
        out.append(v)
        if short_circuit and v.decision is Decision.HALT:
            return


def _run_top(guard: Any, context: Context, proposal: Any, timeout_s: float | None, on_error: Decision) -> Verdict:
    return run_guard(guard, context, proposal, timeout_s=timeout_s, on_error=on_error)


async def _arun_many(guards: list[Any], context: Context, proposal: Any, timeout_s: float | None,
                     on_error: Decision, short_circuit: bool, traced: bool = False,
                     settled: Any = None) -> list[Verdict]:
    """Verdicts of ``guards`` in order; consecutive synchronous guards share one worker-thread hop (run in
    a copy of the caller's context, so a guard's span keeps its parent); ``traced``: each guard of a
    stack in its own span when telemetry is on; ``settled(guard, verdicts)``: True when an inline guard need
    not be asked (a stack's rule: :meth:`GuardStack._settled`)."""
    verdicts: list[Verdict] = []
    loop = asyncio.get_running_loop()
    i = 0
    while i < len(guards):
        if (_is_sync(guards[i]) and _inline_safe(guards[i])) or _all_inline(guards[i]):
            # declared fast and pure (no I/O, bounded work): decided on the loop, no thread hop; a verdict
            # that returns after the deadline still fails closed (run_guard's synchronous rule). A plain stack of
            # such guards is one too (its acheck would run each on the loop in turn: its check)
            if settled is not None and verdicts and settled(guards[i], verdicts):
                i += 1
                continue
            verdicts.append((_run_member if traced else _run_top)(guards[i], context, proposal, timeout_s, on_error))
            i += 1
            if short_circuit and verdicts[-1].decision is Decision.HALT:
                break
            continue
        j = i
        while j < len(guards) and _is_sync(guards[j]) and not _inline_safe(guards[j]):
            j += 1
        if j > i:  # guards[i:j] are synchronous: one hop, a deadline of timeout_s per guard
            batch = guards[i:j]
            out: list[Verdict] = []
            fut = loop.run_in_executor(_executor(), contextvars.copy_context().run, _sync_batch, batch, context,
                                       proposal, timeout_s, on_error, short_circuit, out, traced)
            budget = None if timeout_s is None else timeout_s * len(batch)
            try:
                await _await_deadline(fut, budget)
                got = list(out)
            except BaseException as exc:  # noqa: BLE001 - fail closed on anything
                if isinstance(exc, asyncio.CancelledError) and _own_cancellation():
                    raise
                got = list(out)[: len(batch)]  # verdicts finished before the deadline still count
                got += [fail_closed(_name(g), exc, on_error) for g in batch[len(got):]]
            verdicts += got
            i = j
        else:
            verdicts.append(await (_arun_member if traced else _arun_async)(guards[i], context, proposal, timeout_s,
                                                                            on_error))
            i += 1
        if short_circuit and verdicts and verdicts[-1].decision is Decision.HALT:
            break
    return verdicts


async def _captured(coro: Any) -> tuple[bool, Any]:
    """Run ``coro`` and return ``(True, result)`` or ``(False, exception)``: a task that let SystemExit or
    KeyboardInterrupt escape would have asyncio re-raise it out of the event loop itself."""
    try:
        return True, await coro
    except BaseException as exc:  # noqa: BLE001 - handed to the caller, which fails closed
        return False, exc


async def _arun_async(guard: Any, context: Context, proposal: Any, timeout_s: float | None,
                      on_error: Decision) -> Verdict:
    t0 = time.perf_counter()
    try:
        _readable(guard, proposal)
        coro = _captured(guard.acheck(context, proposal))
        ok, v = await (_await_deadline(asyncio.ensure_future(coro), timeout_s) if timeout_s is not None else coro)
        if not ok:
            raise v
        return _accept(guard, v, t0, timeout_s)
    except BaseException as exc:  # noqa: BLE001 - SystemExit, CancelledError... from a guard: fail closed
        if isinstance(exc, asyncio.CancelledError) and _own_cancellation():
            raise
        return fail_closed(_name(guard), exc, on_error)


class GuardStack(BaseGuard):
    """Ask guards in order; the strictest verdict wins and says which guard decided.

    - ``short_circuit``: stop asking once a verdict reaches HALT (nothing can be stricter).
    - ``on_error``: the decision for a guard that raises anything (fail closed; HALT by default).
    - ``timeout_s``: per-guard time limit. ``check`` (synchronous) fails closed on a verdict that
      *returned* after the limit; ``acheck`` runs synchronous members in a worker thread and abandons
      them at the limit (see :func:`arun_guard`).
    The returned verdict's ``details['verdicts']`` lists the verdict of every guard asked, in order. A guard
    whose verdict cannot change the answer is not asked (nor listed, nor given a span): one decided inline
    (its class declares ``inline_safe``), without per-run memory (no ``end_run``/``reset``), whose own class
    defines ``strictest()``, when a verdict in hand is at least as strict as both ``strictest()`` and ``on_error``
    (the stack's answer, its decision, reason and deciding guard, is the same either way); every member is asked
    while :data:`ASK_EVERY` is set (a shadow part: its report lists each member's would-be verdict)."""

    def __init__(
        self,
        guards: Iterable[Guard],
        *,
        name: str = "stack",
        on_error: Decision | str = Decision.HALT,
        timeout_s: float | None = None,
        short_circuit: bool = True,
    ) -> None:
        self.guards = list(guards)
        if not self.guards:
            raise InputError("GuardStack needs at least one guard")
        for g in self.guards:
            if not isinstance(g, Guard):
                raise InputError(f"{g!r} is not a Guard (needs name, check and acheck)")
        self.name = name
        self.on_error = Decision.parse(on_error)
        if not self.on_error.refuses:
            raise InputError(f"on_error must block (REJECT, ESCALATE or HALT), not {self.on_error.name}")
        # finite and positive: with nan no verdict is ever late (elapsed > nan is False), so a late ALLOW stood
        self.timeout_s = None if timeout_s is None else time_limit(timeout_s, "GuardStack timeout_s", most=math.inf)
        self.short_circuit = short_circuit

    def __repr__(self) -> str:
        return f"GuardStack([{', '.join(repr(g) for g in self.guards)}], on_error={self.on_error.name})"

    def end_run(self, run_id: str) -> None:
        """Forget ``run_id`` in every member that keeps per-run memory (see :func:`agentguard.core.runs.end_run`)."""
        for g in self.guards:
            end_run(g, run_id)

    def _combine(self, verdicts: list[Verdict]) -> Verdict:
        best = _best(verdicts)
        trail = [v.to_dict() for v in verdicts]
        return Verdict(best.decision, best.reason, best.guard, best.numbers, best.action,
                       {**dict(best.details), "verdicts": trail})

    def _settled(self, guard: Any, verdicts: list[Verdict]) -> bool:
        """True when ``guard`` need not be asked after ``verdicts`` (see the class docstring)."""
        best = _best(verdicts).decision
        if not best.refuses or ASK_EVERY.get():  # a guard may always refuse (its on_error does); a shadow report
            return False  # lists every member: ask it
        top = _ceiling(guard, self.on_error)
        return top is not None and top <= best.strictness

    def check(self, context: Context, proposal: Any) -> Verdict:
        verdicts: list[Verdict] = []
        for g in self.guards:
            if verdicts and self._settled(g, verdicts):
                continue
            v = _run_member(g, context, proposal, self.timeout_s, self.on_error)
            verdicts.append(v)
            if self.short_circuit and v.decision is Decision.HALT:
                break
        return self._combine(verdicts)

    async def acheck(self, context: Context, proposal: Any) -> Verdict:
        if _all_inline(self):  # every member decided on the loop in turn: what check does
            return self.check(context, proposal)
        verdicts = await _arun_many(self.guards, context, proposal, self.timeout_s, self.on_error,
                                    self.short_circuit, traced=True, settled=self._settled)
        return self._combine(verdicts)


