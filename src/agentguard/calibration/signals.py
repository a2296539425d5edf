"""Signal sources: turn what an LLM produces into a per-step score stream for a monitor.

Section 3.1 of the online-safety-monitoring paper: the signal ``s_t`` may be an external verifier's
probability that the output so far is safe/correct (a process reward model, a guard model's
P(safe)), or the generator's own token log-probabilities aggregated per step by the minimum
(section 4.3: ``s_t = min_{i in step t} log p(y_i | y_<i, x)``).

Every source yields :class:`StepSignal` records (``step``, ``score``, ``text``, ``tokens``):

* :class:`UserScores`: scores the caller already has;
* :class:`ClassifierSignal`: any callable ``classifier(steps_so_far: list[str]) -> float`` applied to
  each new prefix (a verifier, a guard model, a PRM);
* :class:`TokenLogprobSignal`: ``(token_text, logprob)`` pairs grouped into steps by a delimiter and
  aggregated by the minimum; token pairs come from the local gemma model
  (:func:`gemma_tokens`, ``LocalGemmaClient.token_logprobs``) or from an OpenAI-compatible endpoint
  that returns logprobs (:func:`openai_tokens` for streamed chunks, :func:`openai_response_tokens`
  for a complete response).

:func:`monitor_tokens` watches a token stream with a monitor and stops generation at the alarm.
Because the step score is a minimum, ``s_t < lambda`` iff some token of step ``t`` has log-prob below
``lambda``; a :class:`ThresholdMonitor` therefore fires at the first such token (same step, same
decision as waiting for the step to end, fewer tokens generated).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.errors import AgentGuardError, InputError
from ..core.types import Decision, Verdict

__all__ = ["ClassifierSignal", "MonitoredTokens", "SignalSource", "StepSignal", "TokenLogprobSignal",
           "UserScores", "gemma_tokens", "monitor_tokens", "openai_response_tokens", "openai_tokens"]


@dataclass(frozen=True)
class StepSignal:
    """One step of a signal stream: 1-based ``step``, its ``score``, and what produced it."""

    step: int
    score: float
    text: str | None = None
    tokens: tuple[tuple[str, float], ...] = field(default=())


class SignalSource(Protocol):
    """Anything iterable over :class:`StepSignal` (one per step, in order)."""

    def __iter__(self) -> Iterator[StepSignal]: ...


def _num(x: Any, what: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a number, got {x!r}") from None
    if math.isnan(v):
        raise InputError(f"{what} is NaN")
    return v


class UserScores:
    """User-supplied per-step scores (a list, or any iterable consumed lazily)."""

    def __init__(self, scores: Iterable[float], texts: Sequence[str] | None = None):
        self.scores = scores
        self.texts = texts

    def __iter__(self) -> Iterator[StepSignal]:
        for i, s in enumerate(self.scores):
            yield StepSignal(i + 1, _num(s, f"score of step {i + 1}"),
                             None if self.texts is None else self.texts[i])


class ClassifierSignal:
    """``classifier(prefix)`` per step, where ``prefix`` is the list of step texts so far.

    ``classifier`` returns the probability (or any score, higher = safer) that the output so far
    is safe. Exceptions from the classifier propagate (a guard built on it fails closed).
    """

    def __init__(self, classifier: Callable[[list[str]], float], steps: Iterable[str]):
        if not callable(classifier):
            raise InputError("classifier must be callable: f(list of step texts) -> score")
        self.classifier = classifier
        self.steps = steps

    def __iter__(self) -> Iterator[StepSignal]:
        prefix: list[str] = []
        for i, text in enumerate(self.steps):
            prefix.append(str(text))
            yield StepSignal(i + 1, _num(self.classifier(list(prefix)), f"classifier score of step {i + 1}"), text)


class TokenLogprobSignal:
    """Group ``(token_text, logprob)`` pairs into steps ending at ``delimiter``; score = min logprob.

    A step ends with the token that contains the delimiter (default a newline, i.e. one reasoning
    line per step); a trailing partial step is emitted when the stream ends.
    ``delimiter=None`` makes every token its own step (token-level monitoring).
    """

    def __init__(self, tokens: Iterable[tuple[str, float]], delimiter: str | None = "\n"):
        self.tokens = tokens
        self.delimiter = delimiter

    def __iter__(self) -> Iterator[StepSignal]:
        step, buf, toks, low = 0, [], [], math.inf
        for tok, lp in self.tokens:
            lp = _num(lp, f"log-probability of token {tok!r}")
            buf.append(tok)
            toks.append((tok, lp))
            low = min(low, lp)
            if self.delimiter is None or self.delimiter in tok:
                step += 1
                yield StepSignal(step, low, "".join(buf), tuple(toks))
                buf, toks, low = [], [], math.inf
        if toks:
            yield StepSignal(step + 1, low, "".join(buf), tuple(toks))


def gemma_tokens(prompt: str, max_tokens: int = 128, *, client: Any = None, temperature: float = 0.0,
                 seed: int | None = None) -> Iterator[tuple[str, float]]:
    """``(token_text, logprob)`` pairs streamed from the local gemma-3-270m model (extra ``llm``)."""
    if client is None:
        from ..llm.local import LocalGemmaClient
        client = LocalGemmaClient()
    return client.token_logprobs(prompt, max_tokens, temperature=temperature, seed=seed)


def _content_logprobs(lp: Any) -> list[tuple[str, float]]:
    if not lp:
        return []
    content = lp.get("content") if isinstance(lp, dict) else None
    if content is None:
        raise AgentGuardError("the endpoint returned no token logprobs (does it support logprobs=True?)")
    return [(str(c.get("token", "")), float(c["logprob"])) for c in content]


def openai_response_tokens(response: dict[str, Any]) -> list[tuple[str, float]]:
    """The ``(token, logprob)`` pairs of a (non-streamed) chat completion made with ``logprobs=True``."""
    try:
        choice = response["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise AgentGuardError(f"unexpected chat completion body: {str(response)[:200]}") from None
    if not choice.get("logprobs"):
        raise AgentGuardError("the endpoint returned no token logprobs (does it support logprobs=True?)")
    return _content_logprobs(choice["logprobs"])


def openai_tokens(client: Any, messages: Sequence[dict[str, str]], **options: Any) -> Iterator[tuple[str, float]]:
    """Stream ``(token, logprob)`` pairs from ``OpenAICompatClient.stream(messages, logprobs=True)``.

    Stopping iteration closes the HTTP stream (the generation stops on the server side too, for
    servers that cancel on disconnect).
    """
    stream = client.stream(messages, logprobs=True, **options)
    try:
        for chunk in stream:
            for choice in chunk.get("choices", [])[:1]:
                for pair in _content_logprobs(choice.get("logprobs")):
                    yield pair
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


class MonitoredTokens:
    """Iterate tokens while a per-step monitor watches their min-aggregated log-probs; stop at the alarm.

    After iteration: ``verdict`` (the alarm, or the last ALLOW), ``text`` (tokens yielded),
    ``step_scores`` (completed or alarmed steps' scores), ``stopped``.
    """

    def __init__(self, tokens: Iterable[tuple[str, float]], monitor: Any, delimiter: str | None = "\n",
                 early: bool = True):
        self.tokens = tokens
        self.monitor = monitor
        self.delimiter = delimiter
        self.early = early and hasattr(monitor, "threshold") and type(monitor).__name__ == "ThresholdMonitor"
        self.verdict: Verdict | None = None
        self.step_scores: list[float] = []
        self.pieces: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def stopped(self) -> bool:
        return self.verdict is not None and self.verdict.decision is not Decision.ALLOW

    def _feed(self, low: float) -> bool:
        self.step_scores.append(low)
        self.verdict = self.monitor.update(low)
        return self.verdict.decision is not Decision.ALLOW

    def __iter__(self) -> Iterator[str]:
        it = iter(self.tokens)
        low, open_step = math.inf, False
        try:
            for tok, lp in it:
                lp = _num(lp, f"log-probability of token {tok!r}")
                low, open_step = min(low, lp), True
                self.pieces.append(tok)
                yield tok
                if self.early and low < self.monitor.threshold:
                    self._feed(low)
                    return
                if self.delimiter is None or self.delimiter in tok:
                    if self._feed(low):
                        return
                    low, open_step = math.inf, False
            if open_step:
                self._feed(low)
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()


def monitor_tokens(tokens: Iterable[tuple[str, float]], monitor: Any, delimiter: str | None = "\n",
                   *, early: bool = True) -> MonitoredTokens:
    """Watch a ``(token, logprob)`` stream with ``monitor`` (min per step); see :class:`MonitoredTokens`."""
    return MonitoredTokens(tokens, monitor, delimiter, early)
