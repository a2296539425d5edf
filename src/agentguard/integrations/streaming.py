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
- one :class:`~agentguard.core.pipeline.Pipeline` (``adapter="streaming"``) deciding each step
  (``decide`` / ``adecide`` on the ``Step``): fail closed with ``on_error``, the enforcement strategy
  (``strategy=``), the audit sink (``audit=``), and every step's outcome recorded in the run's trace
  (``recorder=``), labelled ``cut`` and ``alarm_step`` when the stream ends.

The first step whose outcome does not release it (a blocking verdict, a step the strategy refuses, a
stop) is the alarm: the step is withheld, iteration ends, and the upstream stream is closed (the HTTP
response is closed, so the server stops generating). ``for`` and ``async for`` (async clients such as
``AsyncOpenAI``) both work.

Any Guard works; the calibrated :class:`agentguard.calibration.ThresholdMonitor` reads
``signals['score']`` (set by ``scorer=``, or by its own ``scorer``) or, with
``signal="min_logprob"``, the stream's own log-probabilities. Each stream is its own run of the guard.

Guarantee: no text of an alarmed step, nor of any later step, is ever yielded; a guard or scorer
error fails closed (the stream is cut).

What it can see: the text (and log-probabilities when sent) of one choice (``choice=``) of a
chat-completions stream; not tool-call deltas (gate those with the other adapters when they execute).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, AsyncIterator, Callable, Iterable

from ..calibration.stream import ChunkSteps, MonitoredStream
from ..core.audit import AuditSink
from ..core.enforcement import Enforcement, Outcome
from ..core.guard import Guard
from ..core.pipeline import Pipeline
from ..core.types import Context, Decision, Step, Verdict
from .recording import TraceRecorder

__all__ = ["GuardedStream", "guarded_completion"]

Scorer = Callable[[str, Context], float]


class GuardedStream(MonitoredStream):
    """Iterate (``for`` / ``async for``) the released text of a streamed completion; stop at the
    first alarm (see module doc).

    After iteration: ``text`` (what was released), ``cut`` (alarm raised), ``verdict`` (the alarm),
    ``outcome`` (the last step's :class:`~agentguard.core.enforcement.Outcome`), ``alarm_step``
    (0-based index of the withheld step), ``steps`` (released steps).
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
        strategy: Enforcement | str | None = None,
        audit: AuditSink | None = None,
        pipeline: Pipeline | None = None,
    ) -> None:
        self.pipeline = pipeline if pipeline is not None else Pipeline(
            guard, strategy=strategy, audit=audit, recorder=recorder, on_error=on_error, adapter="streaming",
            escalate="reject")  # a stream cannot wait for a human: an ESCALATE cuts it
        self.outcome: Outcome | None = None
        super().__init__(chunks, guard, ChunkSteps(step, choice), scorer=scorer, run_id=run_id, on_error=on_error)

    def _new_context(self, run_id: str) -> Context:
        return self.pipeline.run(run_id).context

    def _verdict_of(self, out: Outcome) -> Verdict:
        """The verdict the cutter acts on: the outcome's, or a refusal when the outcome does not release
        the step although the verdict would (the strategy refused it)."""
        self.outcome = out
        v = out.verdict or Verdict(Decision.HALT, out.message or "no verdict", self.guard.name)
        if (not out.execute or out.stop) and not v.blocks:
            return Verdict(Decision.HALT if out.stop else Decision.REJECT, out.message or v.reason, v.guard,
                           v.numbers, details=v.details)
        return v

    def _check(self, proposal: Any) -> Verdict:
        return self._verdict_of(self.pipeline.decide(self.context.run_id, proposal))

    async def _acheck(self, proposal: Any) -> Verdict:
        return self._verdict_of(await self.pipeline.adecide(self.context.run_id, proposal))

    def _observe(self, proposal: Any, verdict: Verdict) -> None:
        st = proposal if isinstance(proposal, Step) else Step()
        out = self.outcome
        if out is None or out.run_id != self.context.run_id:  # answered without deciding (a failed scorer)
            out = Outcome(False, None, stop=verdict.decision is Decision.HALT, message=verdict.reason,
                          verdict=verdict, run_id=self.context.run_id)
        self.outcome = None
        step = self.pipeline.record(replace(out, proposal=None, verdict=verdict), output=st.output)
        if step is not None:
            step.signals.update(st.signals)

    def _ended(self) -> None:
        labels: dict[str, Any] = {"cut": True, "alarm_step": self.alarm_step} if self.cut else {"cut": False}
        run_id = self.context.run_id
        if self._own_run:  # the stream's own run ends with it
            self.pipeline.finish(run_id, **labels)
            return
        # an explicit run id is the caller's to end (a latched HALT stays); this stream's trace is written
        self.context.trace.labels.update(labels)
        recorder = self.pipeline.recorder
        if recorder is not None:
            recorder.finish(run_id)
            self.context.trace = recorder.trace(run_id, adapter="streaming")


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
