"""A client for any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

Configuration comes from arguments or the environment: ``AGENTGUARD_LLM_BASE_URL`` (or
``OPENAI_BASE_URL``), ``AGENTGUARD_LLM_MODEL``, ``AGENTGUARD_LLM_API_KEY`` (or ``OPENAI_API_KEY``).
Uses only the standard library (urllib), so it adds no dependency.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from ..core.errors import AgentGuardError, InputError
from .base import Message, check_messages

__all__ = ["OpenAICompatClient"]


@dataclass
class OpenAICompatClient:
    base_url: str = field(default_factory=lambda: os.environ.get("AGENTGUARD_LLM_BASE_URL")
                          or os.environ.get("OPENAI_BASE_URL") or "")
    model: str = field(default_factory=lambda: os.environ.get("AGENTGUARD_LLM_MODEL", ""))
    api_key: str = field(default_factory=lambda: os.environ.get("AGENTGUARD_LLM_API_KEY")
                         or os.environ.get("OPENAI_API_KEY") or "")
    timeout_s: float = 60.0
    name: str = "openai-compat"

    def __post_init__(self) -> None:
        if not self.base_url:
            raise InputError("no LLM endpoint configured: set AGENTGUARD_LLM_BASE_URL (e.g. http://localhost:8000/v1)")
        if not self.model:
            raise InputError("no LLM model configured: set AGENTGUARD_LLM_MODEL")
        self.base_url = self.base_url.rstrip("/")

    @classmethod
    def configured(cls) -> bool:
        """True when the environment names an endpoint and a model."""
        return bool((os.environ.get("AGENTGUARD_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL"))
                    and os.environ.get("AGENTGUARD_LLM_MODEL"))

    def _request(self, payload: dict[str, Any]) -> urllib.request.Request:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return urllib.request.Request(f"{self.base_url}/chat/completions", json.dumps(payload).encode(), headers)

    def chat(self, messages: Sequence[Message], **options: Any) -> dict[str, Any]:
        """The raw JSON response of one (non-streaming) chat completion."""
        payload = {"model": self.model, "messages": check_messages(messages), **options}
        try:
            with urllib.request.urlopen(self._request(payload), timeout=self.timeout_s) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as exc:
            raise AgentGuardError(f"LLM endpoint {self.base_url} answered HTTP {exc.code}: {exc.read()[:200]!r}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise AgentGuardError(f"LLM endpoint {self.base_url} unreachable: {exc}") from None

    def complete(self, messages: Sequence[Message], **options: Any) -> str:
        resp = self.chat(messages, **options)
        try:
            return resp["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise AgentGuardError(f"LLM endpoint returned an unexpected body: {str(resp)[:200]}") from None

    def stream(self, messages: Sequence[Message], **options: Any) -> Iterator[dict[str, Any]]:
        """Yield the server-sent-event chunks of a streamed completion (``stream=True``)."""
        payload = {"model": self.model, "messages": check_messages(messages), "stream": True, **options}
        try:
            r = urllib.request.urlopen(self._request(payload), timeout=self.timeout_s)
        except (urllib.error.URLError, OSError) as exc:
            raise AgentGuardError(f"LLM endpoint {self.base_url} unreachable: {exc}") from None
        with r:
            for raw in r:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                yield json.loads(data)
