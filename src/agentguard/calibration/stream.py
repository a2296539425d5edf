"""The one stream cutter: watch a generator step by step and stop pulling from it at the alarm.

:class:`MonitoredStream` iterates (``for`` or ``async for``) any source of items: scores, reasoning
steps, ``(token, logprob)`` pairs, OpenAI-compatible chunks. A *segmenter* turns each item into
units ``(payload, proposal)``: the ``payload`` is what the consumer receives (None: nothing), the
``proposal`` what the guard checks first (None: released unchecked). Segmenters here:

* none (default): every item is released and checked as it is (a score, a ``Step``, a mapping);
* :class:`ScoredItems`: ``Step(signals={signal: score_fn(item)})`` per item (:func:`stop_at_alarm`);
* :class:`TokenSteps`: ``(token, logprob)`` pairs grouped into steps ending at a delimiter, scored
  by their minimum log-probability (section 4.3), each token released as it comes
  (:func:`monitor_tokens`); with ``early_below`` a step is checked at its first token below the
  threshold (the same decision as waiting for its end, since a minimum only falls);
* :class:`ChunkSteps`: the text deltas of chat-completions chunks (:func:`~.chunks.parse_chunk`)
  split into steps (``"line"``, ``"chunk"`` or a delimiter), each a ``Step(output=text,
  signals={"min_logprob": ...})`` released only once it has been checked.

Guarantee: once the guard answers a blocking verdict (REJECT, ESCALATE, HALT) no later payload is
released (the alarm's own payload only with ``include_alarm_item``), iteration ends and the source
is closed (``close``/``aclose``: a streamed HTTP response is closed, so the server stops
generating). A guard, scorer or segmenter that raises, or returns no Verdict, cuts the stream with
``fail_closed(..., on_error)``. The guard is usually a
:class:`~agentguard.calibration.ThresholdMonitor`; any Guard works. Each stream is one run
(``run_id``; a fresh one by default, forgotten by the guard's ``end_run`` when the stream ends).
"""

from __future__ import annotations

import inspect
import math
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, Protocol

from ..core.errors import InputError
from ..core.guard import Guard, fail_closed
from ..core.types import Context, Decision, Step, Verdict
from .chunks import parse_chunk
from .monitor import ThresholdMonitor, _score

__all__ = ["ChunkSteps", "MonitoredStream", "ScoredItems", "Segmenter", "TokenSteps", "monitor_tokens",
           "stop_at_alarm"]

Unit = tuple[Any, Any]


class Segmenter(Protocol):
    """Turns items into ``(payload, proposal)`` units, in order; ``flush`` ends the source."""

    def feed(self, item: Any) -> Iterable[Unit]: ...

    def flush(self) -> Iterable[Unit]: ...


class _Items:
    """Every item is released and checked as it is."""

    def feed(self, item: Any) -> list[Unit]:
        return [(item, item)]

    def flush(self) -> list[Unit]:
        return []


class ScoredItems:
    """``score_fn(item)`` as ``Step(signals={signal: ...})``; ``None`` scores pass unchecked."""

    def __init__(self, score_fn: Callable[[Any], float | None] = float, signal: str = "score"):
        self.score_fn, self.signal = score_fn, signal

    def feed(self, item: Any) -> list[Unit]:
        s = self.score_fn(item)
        if s is None:
            return [(item, None)]
        return [(item, Step(output=item if isinstance(item, str) else None, signals={self.signal: s}))]

    def flush(self) -> list[Unit]:
        return []


class TokenSteps:
    """``(token, logprob)`` pairs -> steps ending with the token holding ``delimiter`` (None: every
    token is a step); a step's score (``signals[signal]``) is its minimum log-prob, ``n_tokens`` its
    size, ``output`` its text. Tokens are released as they come; a trailing partial step is checked
    at the end. ``early_below``: check the open step as soon as its minimum drops below this."""

    def __init__(self, delimiter: str | None = "\n", signal: str = "score", early_below: float | None = None):
        self.delimiter, self.signal, self.early_below = delimiter, signal, early_below
        self._buf: list[str] = []
        self._low = math.inf

    def _step(self) -> Step:
        st = Step(output="".join(self._buf), signals={self.signal: self._low, "n_tokens": float(len(self._buf))})
        self._buf, self._low = [], math.inf
        return st

    def feed(self, item: tuple[str, float]) -> list[Unit]:
        tok, lp = item
        v = float(lp)
        if math.isnan(v):
            raise InputError(f"log-probability of token {tok!r} is NaN")
        self._buf.append(tok)
        self._low = min(self._low, v)
        ends = self.delimiter is None or self.delimiter in tok
        if ends or (self.early_below is not None and self._low < self.early_below):
            return [(tok, self._step())]
        return [(tok, None)]

    def flush(self) -> list[Unit]:
        return [(None, self._step())] if self._buf else []


class ChunkSteps:
    """Chat-completions chunks -> text steps: ``step="line"`` (a step ends at a newline), ``"chunk"``
    (every non-empty delta is a step) or any delimiter; ``signals["min_logprob"]`` is the step's
    minimum token log-probability when the server sends ``logprobs`` (a chunk's log-probs count
    for every step its text touches) for every piece of the step's text: a step with a text delta that came
    without log-probs, or with a token whose log-prob is null, has no ``min_logprob`` (a monitor on it
    fails closed). Each step's text is released after its check."""

    def __init__(self, step: str = "line", choice: int = 0):
        if not isinstance(step, str) or not step:
            raise InputError("step must be 'line', 'chunk' or a non-empty delimiter")
        self.mode, self.choice = step, choice
        self.delim = "\n" if step == "line" else step
        self._buf, self._lps = "", []
        self._gap = False  # some text of the open step came without (readable) log-probs

    @staticmethod
    def _unit(text: str, lps: list[float], gap: bool) -> Unit:
        # min_logprob only when every piece of the step's text was scored: a step with an unscored
        # piece has no minimum, so a monitor on min_logprob finds no signal and fails closed
        return text, Step(output=text, signals={"min_logprob": min(lps)} if lps and not gap else {})

    def feed(self, chunk: Any) -> list[Unit]:
        text, pairs = parse_chunk(chunk, self.choice)
        lps = [lp for _, lp in pairs]
        gap = bool(text) and (not lps or any(math.isnan(lp) for lp in lps))
        if self.mode == "chunk":
            return [self._unit(text, lps, gap)] if text else []
        self._buf += text
        self._lps.extend(lps)
        self._gap = self._gap or gap
        out = []
        while (i := self._buf.find(self.delim)) >= 0:
            end = i + len(self.delim)
            out.append(self._unit(self._buf[:end], self._lps, self._gap))
            # the rest of this chunk's text starts the next step: it carries this chunk's log-probs
            # (its tokens are not split by text, so they count for every step they touch) and gap
            rest = self._buf[end:]
            self._buf, self._lps, self._gap = rest, (list(lps) if rest else []), gap and bool(rest)
        return out

    def flush(self) -> list[Unit]:
        if self.mode == "chunk" or not self._buf:
            return []
        unit = self._unit(self._buf, self._lps, self._gap)
        self._buf, self._lps, self._gap = "", [], False
        return [unit]


class _Failed:
    """A unit whose segmentation failed: it checks as ``fail_closed``."""

    def __init__(self, where: str, error: BaseException):
        self.where, self.error = where, error


class MonitoredStream:
    """Iterate the released payloads of ``items`` while ``guard`` checks each unit; cut at the alarm.

    ``scorer(step_text, context) -> float`` (optional) sets the signal the guard reads
    (``guard.signal``, ``"score"`` for a guard without one) of each ``Step`` before the check (a
    per-step verifier); a value the monitor would not read as a score (text, NaN, +inf) cuts the
    stream like a failing scorer. (Before, it always set ``"score"``: a guard reading another
    signal decided on that one and the scorer was silently ignored.) After (or during) iteration: ``cut`` (a blocking
    verdict stopped the stream), ``verdict`` (the alarm, else the last verdict), ``alarm_step``
    (0-based index of the alarmed unit among the checked ones), ``steps`` (checked and allowed),
    ``n_items`` (payloads released), ``text`` (released text), ``step_scores`` (the guard's signal
    in each checked step), ``context`` (the run's :class:`~agentguard.core.Context`).
    """

    def __init__(self, items: Iterable[Any] | AsyncIterator[Any], guard: Guard, segmenter: Segmenter | None = None,
                 *, scorer: Callable[[str, Context], float] | None = None, include_alarm_item: bool = False,
                 run_id: str | None = None, on_error: Decision | str = Decision.HALT):
        if not callable(getattr(guard, "check", None)):
            raise InputError(f"{guard!r} is not a Guard (needs check and acheck)")
        if scorer is not None and not callable(scorer):
            raise InputError("scorer must be callable: scorer(step_text, context) -> float")
        self.items, self.guard, self.scorer = items, guard, scorer
        self.segmenter: Segmenter = segmenter if segmenter is not None else _Items()
        self.include_alarm_item = include_alarm_item
        self.on_error = Decision.parse(on_error)
        self._own_run = run_id is None
        self.context = self._new_context(run_id or f"stream-{uuid.uuid4().hex}")
        self.signal = getattr(guard, "signal", "score")
        self.cut = False
        self.verdict: Verdict | None = None
        self.alarm_step: int | None = None
        self.steps = 0
        self.n_items = 0
        self.step_scores: list[float] = []
        self._pieces: list[str] = []

    def __repr__(self) -> str:
        return f"MonitoredStream(guard={self.guard!r}, run_id={self.context.run_id!r}, cut={self.cut})"

    @property
    def text(self) -> str:
        return "".join(self._pieces)

    # -- hooks (an adapter overrides them to record what it sees) -------------------------------
    def _new_context(self, run_id: str) -> Context:
        return Context(run_id=run_id)

    def _check(self, proposal: Any) -> Verdict:
        try:
            return _verdict(self.guard.check(self.context, proposal))
        except Exception as exc:  # noqa: BLE001 - a failing guard cuts the stream
            return fail_closed(getattr(self.guard, "name", "guard"), exc, self.on_error)

    async def _acheck(self, proposal: Any) -> Verdict:
        try:
            return _verdict(await self.guard.acheck(self.context, proposal))
        except Exception as exc:  # noqa: BLE001 - a failing guard cuts the stream
            return fail_closed(getattr(self.guard, "name", "guard"), exc, self.on_error)

    def _observe(self, proposal: Any, verdict: Verdict) -> None:
        """Called after every check."""

    def _ended(self) -> None:
        """Called once when the stream completes or is cut."""

    # -- the cut (shared by both iterations) ----------------------------------------------------
    def _units(self, item: Any, flush: bool = False) -> list[Unit]:
        try:
            return list(self.segmenter.flush() if flush else self.segmenter.feed(item))
        except Exception as exc:  # noqa: BLE001 - unreadable item: checked as a failure
            return [(None, _Failed("segmenter", exc))]

    def _before(self, proposal: Any) -> Verdict | None:
        """A verdict without asking the guard (a failed segmentation or scorer), or None."""
        if isinstance(proposal, _Failed):
            return fail_closed(proposal.where, proposal.error, self.on_error)
        if isinstance(proposal, Step):
            self.context.metadata["text"] = self.text + (proposal.output or "")  # for scorers that want it
            if self.scorer is not None:
                try:
                    proposal.signals[self.signal] = _score(self.scorer(proposal.output or "", self.context))
                except Exception as exc:  # noqa: BLE001 - a failing verifier is a failing guard
                    return fail_closed("scorer", exc, self.on_error)
        return None

    def _after(self, payload: Any, proposal: Any, v: Verdict | None) -> list[Any]:
        """Account for one unit; the payloads to release (sets ``cut`` at the alarm)."""
        release = payload is not None
        if v is not None:
            self._observe(proposal, v)
            self.verdict = v
            if isinstance(proposal, Step) and self.signal in proposal.signals:
                self.step_scores.append(proposal.signals[self.signal])
            if v.blocks:
                self.cut, self.alarm_step = True, self.steps
                release = release and self.include_alarm_item
            else:
                self.steps += 1
        if not release:
            return []
        self.n_items += 1
        if isinstance(payload, str):
            self._pieces.append(payload)
        return [payload]

    def _finish(self) -> None:
        if self._own_run:
            end_run = getattr(self.guard, "end_run", None)
            if callable(end_run):
                end_run(self.context.run_id)

    def __iter__(self) -> Iterator[Any]:
        it = iter(self.items)
        try:
            for item in _then_flush(it):
                for payload, proposal in self._units(item, item is _FLUSH):
                    v = None if proposal is None else (self._before(proposal) or self._check(proposal))
                    yield from self._after(payload, proposal, v)
                    if self.cut:
                        self._ended()
                        return
            self._ended()
        finally:
            close = getattr(it, "close", None)  # stop reading: closes the HTTP response upstream
            if close is not None:
                close()
            self._finish()

    async def __aiter__(self) -> AsyncIterator[Any]:
        src = self.items
        it = src.__aiter__() if hasattr(src, "__aiter__") else _aiter(iter(src))
        try:
            while True:
                try:
                    item = await it.__anext__()
                except StopAsyncIteration:
                    item = _FLUSH
                for payload, proposal in self._units(item, item is _FLUSH):
                    v = None if proposal is None else (self._before(proposal) or await self._acheck(proposal))
                    for out in self._after(payload, proposal, v):
                        yield out
                    if self.cut:
                        self._ended()
                        return
                if item is _FLUSH:
                    break
            self._ended()
        finally:
            await _aclose(it, src)
            self._finish()


_FLUSH = object()


def _then_flush(it: Iterator[Any]) -> Iterator[Any]:
    yield from it
    yield _FLUSH


async def _aiter(it: Iterator[Any]) -> AsyncIterator[Any]:
    for x in it:
        yield x


async def _aclose(it: Any, src: Any) -> None:
    for name in ("aclose", "close"):
        fn = getattr(it, name, None) or getattr(src, name, None)
        if fn is not None:
            res = fn()
            if inspect.isawaitable(res):
                await res
            return


def _verdict(v: Any) -> Verdict:
    if not isinstance(v, Verdict):
        raise TypeError(f"guard returned {type(v).__name__}, not a Verdict")
    return v


def stop_at_alarm(items: Iterable[Any], monitor: Guard, score_fn: Callable[[Any], float | None] = float,
                  *, include_alarm_item: bool = True) -> MonitoredStream:
    """Release ``items`` (tokens, reasoning steps) until ``monitor`` alarms on ``score_fn(item)``.

    The item that triggered the alarm has been generated and scored already; it is released with
    ``include_alarm_item=True`` (default) and withheld otherwise. ``score_fn`` may return None for
    items that carry no score (they pass unchecked).
    """
    seg = ScoredItems(score_fn, getattr(monitor, "signal", "score"))
    return MonitoredStream(items, monitor, seg, include_alarm_item=include_alarm_item)


def monitor_tokens(tokens: Iterable[tuple[str, float]], monitor: Guard, delimiter: str | None = "\n",
                   *, early: bool = True) -> MonitoredStream:
    """Watch a ``(token, logprob)`` stream with ``monitor`` (minimum log-prob per step, section 4.3).

    Tokens are released as they come, the alarm token included. With ``early`` (default) and a
    :class:`ThresholdMonitor` reading the stream's own log-probs, generation stops at the first
    token below the threshold: the same alarm step and decision as waiting for the step to end.
    """
    signal = getattr(monitor, "signal", "score")
    below = None
    if early and isinstance(monitor, ThresholdMonitor) and monitor.scorer is None:
        below = monitor.threshold
    return MonitoredStream(tokens, monitor, TokenSteps(delimiter, signal, below), include_alarm_item=True)
