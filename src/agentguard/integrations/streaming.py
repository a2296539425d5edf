"""Streaming: cut an OpenAI-compatible streamed completion at the monitor's alarm, and record it.

The calibrated monitor of the online-safety-monitoring paper is a stopping rule (its Eq. 1): with a
verifier signal ``s_t`` computed on each step ``t`` of the output and a threshold ``lambda``
calibrated by risk control, the alarm is raised at the first step with ``s_t < lambda``, and
generation is halted there. :class:`GuardedStream` applies exactly that to a live stream. It is the
library's one stream cutter, :class:`agentguard.calibration.MonitoredStream`, with

- :class:`~agentguard.calibration.ChunkSteps` as segmenter: the text deltas of the chunks
  (``choices[choice].delta.content``, as dicts or as the ``openai`` SDK's objects, read by the one
  chunk parser :func:`agentguard.calibration.parse_chunk`) split into steps: ``step="line"`` (a step
  ends at a newline, the step segmentation of reasoning chains), ``"chunk"`` (every delta is a step),
  or any delimiter string; each completed step is shown to the guard as
  ``Step(output=step_text, signals=...)`` *before* it is released to the consumer; ``signals``
  carries ``min_logprob`` (the per-step minimum token log-probability, the paper's log-prob signal)
  when the server streams ``logprobs``, and ``score`` when a ``scorer=`` is given;
- the adapters' :class:`~agentguard.integrations.runtime.GuardRuntime`: fail closed with
  ``on_error``, and every step's verdict recorded in the run's trace (``recorder=``), labelled
  ``cut`` and ``alarm_step`` when the stream ends.

The first blocking verdict is the alarm: the step is withheld, iteration ends, and the upstream
stream is closed (the HTTP response is closed, so the server stops generating). ``for`` and
``async for`` (async clients such as ``AsyncOpenAI``) both work.

Any Guard works; the calibrated :class:`agentguard.calibration.ThresholdMonitor` reads
``signals['score']`` (set by ``scorer=``, or by its own ``scorer``) or, with
``signal="min_logprob"``, the stream's own log-probabilities. Each stream is its own run of the guard.

Guarantee: no text of an alarmed step, nor of any later step, is ever yielded; a guard or scorer
error fails closed (the stream is cut).

What it can see: the text (and log-probabilities when sent) of one choice (``choice=``) of a
chat-completions stream; not tool-call deltas (gate those with the other adapters when they execute).
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Callable, Iterable

from ..calibration.stream import ChunkSteps, MonitoredStream
from ..core.guard import Guard
from ..core.types import Context, Decision, Step, Verdict
from .recording import TraceRecorder
from .runtime import GuardRuntime

__all__ = ["GuardedStream", "guarded_completion"]

Scorer = Callable[[str, Context], float]


class GuardedStream(MonitoredStream):
    """Iterate (``for`` / ``async for``) the released text of a streamed completion; stop at the
    first alarm (see module doc).

    After iteration: ``text`` (what was released), ``cut`` (alarm raised), ``verdict`` (the alarm),
    ``alarm_step`` (0-based index of the withheld step), ``steps`` (released steps).
    """

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
        self.runtime = GuardRuntime(guard, recorder=recorder, adapter="streaming", on_error=on_error)
        super().__init__(chunks, guard, ChunkSteps(step, choice), scorer=scorer, run_id=run_id, on_error=on_error)

    def _new_context(self, run_id: str) -> Context:
        return self.runtime.context(run_id)

    def _check(self, proposal: Any) -> Verdict:
        return self.runtime.check(self.context, proposal)

    async def _acheck(self, proposal: Any) -> Verdict:
        return await self.runtime.acheck(self.context, proposal)

    def _observe(self, proposal: Any, verdict: Verdict) -> None:
        st = proposal if isinstance(proposal, Step) else Step()
        self.runtime.record(self.context, None, verdict, output=st.output)
        self.context.trace.steps[-1].signals.update(st.signals)

    def _ended(self) -> None:
        if self.cut:
            self.runtime.finish(self.context.run_id, cut=True, alarm_step=self.alarm_step)
        else:
            self.runtime.finish(self.context.run_id, cut=False)


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
