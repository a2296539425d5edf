"""Signal sources: turn what an LLM produces into a stream of per-step scores for a monitor.

Section 3.1 of the online-safety-monitoring paper: the signal ``s_t`` may be an external verifier's
probability that the output so far is safe/correct (a process reward model, a guard model's
P(safe)), or the generator's own token log-probabilities aggregated per step by the minimum
(section 4.3: ``s_t = min_{i in step t} log p(y_i | y_<i, x)``).

Every source yields core :class:`~agentguard.core.Step` records, one per step in order: the score
in ``signals[signal]`` (``signal="score"`` by default, the name a
:class:`~agentguard.calibration.ThresholdMonitor` reads), the step's text (when there is one) in
``output``; :class:`TokenLogprobSignal` adds ``signals["n_tokens"]``. A ``Step`` goes straight to a
monitor's ``check`` or a :class:`~agentguard.calibration.MonitoredStream`.

* :class:`UserScores`: scores the caller already has;
* :class:`ClassifierSignal`: any callable ``classifier(steps_so_far: list[str]) -> float`` applied to
  each new prefix (a verifier, a guard model, a PRM);
* :class:`TokenLogprobSignal`: ``(token_text, logprob)`` pairs grouped into steps by a delimiter and
  aggregated by the minimum; token pairs come from the local gemma model (:func:`gemma_tokens`,
  ``LocalGemmaClient.token_logprobs``) or from an OpenAI-compatible endpoint that returns logprobs
  (:func:`~agentguard.calibration.openai_tokens` for streamed chunks,
  :func:`~agentguard.calibration.openai_response_tokens` for a complete response).

To stop generation at the alarm while the tokens stream, use
:func:`~agentguard.calibration.monitor_tokens` (the stream cutter over the same step grouping).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

from ..core.errors import InputError
from ..core.types import Step
from .stream import TokenSteps

__all__ = ["ClassifierSignal", "SignalSource", "TokenLogprobSignal", "UserScores", "gemma_tokens"]


class SignalSource(Protocol):
    """Anything iterable over :class:`~agentguard.core.Step` records (one per step, in order)."""

    def __iter__(self) -> Iterator[Step]: ...


def _num(x: Any, what: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a number, got {x!r}") from None
    if math.isnan(v):
        raise InputError(f"{what} is NaN")
    return v


class UserScores:
    """User-supplied per-step scores (a list, or any iterable consumed lazily), optional step texts."""

    def __init__(self, scores: Iterable[float], texts: Sequence[str] | None = None, *, signal: str = "score"):
        self.scores = scores
        self.texts = texts
        self.signal = signal

    def __iter__(self) -> Iterator[Step]:
        for i, s in enumerate(self.scores):
            yield Step(output=None if self.texts is None else self.texts[i],
                       signals={self.signal: _num(s, f"score of step {i + 1}")})


class ClassifierSignal:
    """``classifier(prefix)`` per step, where ``prefix`` is the list of step texts so far.

    ``classifier`` returns the probability (or any score, higher = safer) that the output so far
    is safe. Exceptions from the classifier propagate (a guard built on it fails closed).
    """

    def __init__(self, classifier: Callable[[list[str]], float], steps: Iterable[str], *, signal: str = "score"):
        if not callable(classifier):
            raise InputError("classifier must be callable: f(list of step texts) -> score")
        self.classifier = classifier
        self.steps = steps
        self.signal = signal

    def __iter__(self) -> Iterator[Step]:
        prefix: list[str] = []
        for i, text in enumerate(self.steps):
            prefix.append(str(text))
            score = _num(self.classifier(list(prefix)), f"classifier score of step {i + 1}")
            yield Step(output=text, signals={self.signal: score})


class TokenLogprobSignal:
    """Group ``(token_text, logprob)`` pairs into steps ending at ``delimiter``; score = min logprob.

    A step ends with the token that contains the delimiter (default a newline, i.e. one reasoning
    line per step); a trailing partial step is emitted when the stream ends.
    ``delimiter=None`` makes every token its own step (token-level monitoring).
    """

    def __init__(self, tokens: Iterable[tuple[str, float]], delimiter: str | None = "\n", *, signal: str = "score"):
        self.tokens = tokens
        self.delimiter = delimiter
        self.signal = signal

    def __iter__(self) -> Iterator[Step]:
        seg = TokenSteps(self.delimiter, self.signal)
        for tok, lp in self.tokens:
            for _, step in seg.feed((tok, _num(lp, f"log-probability of token {tok!r}"))):
                if step is not None:
                    yield step
        for _, step in seg.flush():
            yield step


def gemma_tokens(prompt: str, max_tokens: int = 128, *, client: Any = None, temperature: float = 0.0,
                 seed: int | None = None) -> Iterator[tuple[str, float]]:
    """``(token_text, logprob)`` pairs streamed from the local gemma-3-270m model (extra ``llm``)."""
    if client is None:
        from ..llm.local import LocalGemmaClient
        client = LocalGemmaClient()
    return client.token_logprobs(prompt, max_tokens, temperature=temperature, seed=seed)
