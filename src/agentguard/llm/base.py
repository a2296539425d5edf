"""LLM client interface shared by the agent loop, the policy synthesiser and the fallback policies.

A client turns a chat (list of ``{"role", "content"}`` messages) into text. Clients that can score
text (log-likelihood of a continuation) also implement :meth:`LLMClient.score`, which is how a base
model becomes an honest stochastic policy over a finite set of valid actions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from ..core.errors import InputError

__all__ = ["LLMClient", "Message", "ScriptedClient", "check_messages"]

Message = dict[str, str]


def check_messages(messages: Sequence[Message]) -> list[Message]:
    """Validate a chat: a non-empty list of dicts with 'role' and string 'content'."""
    if not messages:
        raise InputError("a chat needs at least one message")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m or not isinstance(m.get("content"), str):
            raise InputError(f"message {i} must be a dict with 'role' and string 'content'")
        out.append({"role": str(m["role"]), "content": m["content"]})
    return out


@runtime_checkable
class LLMClient(Protocol):
    """``complete(messages, **options) -> str``; optional ``score(prompt, continuations) -> list[float]``."""

    name: str

    def complete(self, messages: Sequence[Message], **options: Any) -> str: ...


@dataclass
class ScriptedClient:
    """A deterministic test double: returns the scripted replies in order and records every prompt.

    ``replies`` may contain strings or callables ``f(messages) -> str``. When the script is exhausted
    it raises InputError (a test that asks more than it scripted is wrong), unless ``cycle=True``.
    """

    replies: list[Any]
    cycle: bool = False
    name: str = "scripted"
    prompts: list[list[Message]] = field(default_factory=list)

    def complete(self, messages: Sequence[Message], **options: Any) -> str:
        msgs = check_messages(messages)
        self.prompts.append(msgs)
        k = len(self.prompts) - 1
        if k >= len(self.replies):
            if not self.cycle or not self.replies:
                raise InputError(f"scripted client has only {len(self.replies)} replies, asked for #{k + 1}")
            k %= len(self.replies)
        r = self.replies[k]
        return r(msgs) if callable(r) else str(r)
