"""Streaming: a per-step monitor wraps an OpenAI-compatible streamed completion and cuts it at the alarm.

The calibrated monitor of the online-safety-monitoring paper is a stopping rule (its Eq. 1): with a
verifier signal ``s_t`` computed on each step ``t`` of the output and a threshold ``lambda``
calibrated by risk control, the alarm is raised at the first step with ``s_t < lambda``, and
generation is halted there. :class:`GuardedStream` applies exactly that to a live stream:

- the stream's text deltas (``choices[0].delta.content`` of OpenAI-compatible chunks, as dicts or as
  the ``openai`` SDK's objects) are split into steps: ``step="line"`` (a step ends at a newline, the
  step segmentation of reasoning chains), ``"chunk"`` (every delta is a step), or any delimiter string;
- each completed step is shown to the guard as ``Step(output=step_text, signals=...)`` *before* it
  is released to the consumer; ``signals`` carries ``min_logprob`` (the per-step minimum token
  log-probability, the paper's log-prob signal) when the server streams ``logprobs``;
- the first blocking verdict is the alarm: the step is withheld, iteration ends, and the upstream
  stream is closed (the HTTP response is closed, so the server stops generating).

Any Guard works. The calibrated ``agentguard.calibration.ThresholdMonitor`` reads ``signals['score']``
(set by ``scorer=``, a per-step verifier such as a PRM or a safety classifier) or, with
``signal="min_logprob"``, the stream's own log-probabilities; it is ``reset()`` at the start of each
stream. :class:`ScoreMonitor` is the same rule with the scorer inside the guard.

Guarantee: no text of an alarmed step, nor of any later step, is ever yielded; a guard or scorer
error fails closed (the stream is cut).

What it can see: the text (and log-probabilities when sent) of one choice (``index=choice``) of a
chat-completions stream; not tool-call deltas (gate those with the other adapters when they execute).
"""

from __future__ import annotations

import inspect
import math
from typing import Any, AsyncIterator, Callable, Iterable, Iterator

from ..core.errors import InputError
from ..core.guard import BaseGuard, Guard, fail_closed
from ..core.types import Context, Decision, Step, Verdict
from .recording import TraceRecorder
from .runtime import GuardRuntime

__all__ = ["AsyncGuardedStream", "GuardedStream", "ScoreMonitor", "guarded_completion"]

Scorer = Callable[[str, Context], float]


class ScoreMonitor(BaseGuard):
    """Eq. 1 of the online-safety-monitoring paper: alarm at the first step whose score is < ``threshold``.

    ``scorer(step_text, context) -> float`` computes ``s_t`` (higher = safer); without a scorer the
    step's ``signals[signal]`` is used (for example ``min_logprob`` from the stream). ``scorer`` may
    also be a ``"module:function"`` path (configuration files). ``decision`` is what the alarm yields
    (HALT: stop generating).
    """

    def __init__(
        self,
        threshold: float,
        scorer: Scorer | str | None = None,
        *,
        signal: str = "score",
        decision: Decision | str = Decision.HALT,
        name: str = "score-monitor",
    ) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or math.isnan(threshold):
            raise InputError(f"{name}: threshold must be a number, got {threshold!r}")
        if isinstance(scorer, str):
            from ..config import _import

            scorer = _import(scorer, f"{name}.scorer")
        if scorer is not None and not callable(scorer):
            raise InputError(f"{name}: scorer must be callable or 'module:function'")
        self.threshold = float(threshold)
        self.scorer = scorer
        self.signal = signal
        self.decision = Decision.parse(decision)
        self.name = name

    def check(self, context: Context, proposal: Any) -> Verdict:
        if not isinstance(proposal, Step):
            return Verdict.allow(self.name, "not a stream step")
        if self.scorer is not None:
            s = float(self.scorer(proposal.output or "", context))
        elif self.signal in proposal.signals:
            s = float(proposal.signals[self.signal])
        else:
            return Verdict.allow(self.name, f"no '{self.signal}' signal on this step")
        if math.isnan(s):
            raise ValueError("the scorer returned NaN")
        if s < self.threshold:
            return Verdict(
                self.decision,
                f"score {s:.4g} fell below the threshold {self.threshold:.4g}",
                self.name,
                {"score": s, "threshold": self.threshold},
            )
        return Verdict(
            Decision.ALLOW, "score above threshold", self.name, {"score": s, "threshold": self.threshold}
        )


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _delta(chunk: Any, choice: int) -> tuple[str, list[float]]:
    """The text delta and token log-probabilities of one choice of a chat-completions chunk."""
    for ch in _get(chunk, "choices") or []:
        if (_get(ch, "index") or 0) != choice:
            continue
        delta = _get(ch, "delta") or {}
        text = _get(delta, "content") or ""
        lps = []
        lp = _get(ch, "logprobs")
        for tok in (_get(lp, "content") or []) if lp else []:
            v = _get(tok, "logprob")
            if v is not None:
                lps.append(float(v))
        return text, lps
    return "", []


class _Splitter:
    """Accumulates deltas into steps (per chunk, per line, or per custom delimiter)."""

    def __init__(self, step: str) -> None:
        if not isinstance(step, str) or not step:
            raise InputError("step must be 'line', 'chunk' or a non-empty delimiter")
        self.mode = step
        self.delim = "\n" if step == "line" else step
        self.buf, self.lps = "", []

    def feed(self, text: str, lps: list[float]) -> list[tuple[str, list[float]]]:
        if self.mode == "chunk":
            return [(text, lps)] if text else []
        self.buf += text
        self.lps.extend(lps)
        out = []
        while True:
            i = self.buf.find(self.delim)
            if i < 0:
                break
            piece, self.buf = self.buf[: i + len(self.delim)], self.buf[i + len(self.delim) :]
            out.append((piece, self.lps))  # log-probs of a chunk are attributed to the step it completes
            self.lps = []
        return out

    def flush(self) -> list[tuple[str, list[float]]]:
        if self.mode == "chunk" or not self.buf:
            return []
        piece, lps, self.buf, self.lps = self.buf, self.lps, "", []
        return [(piece, lps)]


class _Base:
    """What the sync and async streams share: construction, scoring, the verdict and the cut."""

    def __init__(
        self,
        chunks: Iterable[Any] | AsyncIterator[Any],
        guard: Guard,
        *,
        step: str = "line",
        choice: int = 0,
        recorder: TraceRecorder | None = None,
        run_id: str | None = None,
        on_error: Decision | str = Decision.HALT,
        scorer: Scorer | None = None,
    ) -> None:
        self._chunks = chunks
        if scorer is not None and not callable(scorer):
            raise InputError("scorer must be callable: scorer(step_text, context) -> float")
        reset = getattr(guard, "reset", None)
        if callable(reset):  # a stateful per-sequence monitor (ThresholdMonitor) starts a new sequence
            reset()
        self.scorer = scorer
        self.runtime = GuardRuntime(guard, recorder=recorder, adapter="streaming", on_error=on_error)
        self.splitter = _Splitter(step)
        self.choice = choice
        self.context = self.runtime.context(run_id or f"stream-{id(self):x}")
        self.text = ""
        self.steps = 0
        self.cut = False
        self.verdict: Verdict | None = None
        self.alarm_step: int | None = None

    def _step(self, piece: str, lps: list[float]) -> Step:
        signals = {"min_logprob": min(lps)} if lps else {}
        self.context.metadata["text"] = self.text + piece  # the text so far, for scorers that want it
        self._score_error: Exception | None = None
        if self.scorer is not None:
            try:
                signals["score"] = float(self.scorer(piece, self.context))
            except Exception as exc:  # a failing verifier is a failing guard: the stream is cut
                self._score_error = exc
        return Step(output=piece, signals=signals)

    def _verdict(self, st: Step) -> Verdict:
        if self._score_error is not None:
            return fail_closed("scorer", self._score_error, self.runtime.on_error)
        return self.runtime.check(self.context, st)

    async def _averdict(self, st: Step) -> Verdict:
        if self._score_error is not None:
            return fail_closed("scorer", self._score_error, self.runtime.on_error)
        return await self.runtime.acheck(self.context, st)

    def _after(self, st: Step, v: Verdict) -> bool:
        self.runtime.record(self.context, None, v, output=st.output)
        self.context.trace.steps[-1].signals.update(st.signals)
        if v.blocks:
            self.cut, self.verdict, self.alarm_step = True, v, self.steps
            self.runtime.finish(self.context.run_id, cut=True, alarm_step=self.steps)
            return False
        self.steps += 1
        self.text += st.output or ""
        return True

    def _done(self) -> None:
        if not self.cut:
            self.runtime.finish(self.context.run_id, cut=False)


class GuardedStream(_Base):
    """Iterate the released text of a streamed completion; stop at the first alarm (see module doc).

    After iteration: ``text`` (what was released), ``cut`` (alarm raised), ``verdict`` (the alarm),
    ``alarm_step`` (0-based index of the withheld step), ``steps`` (released steps).
    """

    def __iter__(self) -> Iterator[str]:
        it = iter(self._chunks)
        try:
            for chunk in it:
                text, lps = _delta(chunk, self.choice)
                for piece, plps in self.splitter.feed(text, lps):
                    st = self._step(piece, plps)
                    if not self._after(st, self._verdict(st)):
                        return
                    yield piece
            for piece, plps in self.splitter.flush():
                st = self._step(piece, plps)
                if not self._after(st, self._verdict(st)):
                    return
                yield piece
            self._done()
        finally:
            close = getattr(it, "close", None)  # stop reading: closes the HTTP response upstream
            if close is not None:
                close()


class AsyncGuardedStream(_Base):
    """The async twin of :class:`GuardedStream` (``async for``), for async clients (``AsyncOpenAI``)."""

    async def __aiter__(self) -> AsyncIterator[str]:
        it = self._chunks.__aiter__()
        try:
            async for chunk in it:
                text, lps = _delta(chunk, self.choice)
                for piece, plps in self.splitter.feed(text, lps):
                    st = self._step(piece, plps)
                    if not self._after(st, await self._averdict(st)):
                        return
                    yield piece
            for piece, plps in self.splitter.flush():
                st = self._step(piece, plps)
                if not self._after(st, await self._averdict(st)):
                    return
                yield piece
            self._done()
        finally:
            for name in ("aclose", "close"):
                fn = getattr(it, name, None) or getattr(self._chunks, name, None)
                if fn is not None:
                    res = fn()
                    if inspect.isawaitable(res):
                        await res
                    break


def guarded_completion(
    client: Any,
    messages: list[dict[str, str]],
    guard: Guard,
    *,
    step: str = "line",
    recorder: TraceRecorder | None = None,
    scorer: Scorer | None = None,
    **options: Any,
) -> GuardedStream:
    """Stream a chat completion from an :class:`~agentguard.llm.OpenAICompatClient` through ``guard``
    (``logprobs`` are requested when the guard watches the ``min_logprob`` signal)."""
    if (
        "logprobs" not in options
        and getattr(guard, "signal", None) == "min_logprob"
        and getattr(guard, "scorer", None) is None
    ):
        options["logprobs"] = True
    return GuardedStream(
        client.stream(messages, **options), guard, step=step, recorder=recorder, scorer=scorer
    )
