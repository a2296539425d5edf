"""The one parser of OpenAI-compatible chat-completions output (streamed chunks and complete bodies).

A streamed chunk (``chat.completion.chunk``) carries, for each choice, a text delta in
``choices[i].delta.content`` and, when the request asked for ``logprobs=True``, the tokens of that
delta with their log-probabilities in ``choices[i].logprobs.content[j].{token, logprob}``. A complete
body (``chat.completion``) carries the same ``logprobs.content`` list next to ``message``.

:func:`parse_chunk` reads one chunk, given as a plain dict (``OpenAICompatClient.stream``, raw SSE
JSON) or as the ``openai`` SDK's pydantic objects; every consumer (the token signal
:func:`openai_tokens`, the stream cutter of :mod:`agentguard.integrations.streaming`) goes through it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from ..core.errors import AgentGuardError

__all__ = ["openai_response_tokens", "openai_tokens", "parse_chunk"]

_NO_LOGPROBS = "the endpoint returned no token logprobs (does it support logprobs=True?)"


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _pairs(logprobs: Any) -> list[tuple[str, float]]:
    """``(token, logprob)`` pairs of a ``logprobs`` object (``{"content": [{token, logprob}, ...]}``)."""
    if not logprobs:
        return []
    content = _get(logprobs, "content")
    if content is None:
        raise AgentGuardError(_NO_LOGPROBS)
    out = []
    for tok in content:
        v = _get(tok, "logprob")
        # a token without a numeric log-prob is NaN, never dropped: dropped, the step's minimum would be
        # taken over the other tokens only, and the unscored token (the improbable one) would pass
        lp = math.nan if v is None or isinstance(v, bool) else float(v)
        out.append((str(_get(tok, "token") or ""), lp))
    return out


def parse_chunk(chunk: Any, choice: int = 0) -> tuple[str, list[tuple[str, float]]]:
    """The text delta and the ``(token, logprob)`` pairs of choice ``choice`` in one streamed chunk.
    A token whose ``logprob`` is missing, null or a Boolean has the log-prob NaN (unreadable: every
    consumer fails closed on it); a non-numeric one raises ValueError.

    A chunk without that choice (a usage-only chunk, another choice's delta) gives ``("", [])``.
    """
    for ch in _get(chunk, "choices") or []:
        if (_get(ch, "index") or 0) != choice:
            continue
        delta = _get(ch, "delta") or {}
        return _get(delta, "content") or "", _pairs(_get(ch, "logprobs"))
    return "", []


def openai_response_tokens(response: Any) -> list[tuple[str, float]]:
    """The ``(token, logprob)`` pairs of a (non-streamed) chat completion made with ``logprobs=True``."""
    try:
        choice = _get(response, "choices")[0]
    except (KeyError, IndexError, TypeError):
        raise AgentGuardError(f"unexpected chat completion body: {str(response)[:200]}") from None
    if not _get(choice, "logprobs"):
        raise AgentGuardError(_NO_LOGPROBS)
    return _pairs(_get(choice, "logprobs"))


def openai_tokens(client: Any, messages: Sequence[dict[str, str]], *, choice: int = 0,
                  **options: Any) -> Iterator[tuple[str, float]]:
    """Stream ``(token, logprob)`` pairs from ``OpenAICompatClient.stream(messages, logprobs=True)``.

    Fails closed: a chunk that carries text but no log-probabilities raises AgentGuardError (a
    monitor fed nothing would never alarm). Stopping iteration closes the HTTP stream (the
    generation stops on the server side too, for servers that cancel on disconnect).
    """
    stream = client.stream(messages, logprobs=True, **options)
    try:
        for chunk in stream:
            text, pairs = parse_chunk(chunk, choice)
            if text and not pairs:
                raise AgentGuardError(_NO_LOGPROBS)
            yield from pairs
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
