"""LLM clients: OpenAI-compatible HTTP, local GGUF model, scripted replay for tests."""

from .base import LLMClient, Message, ScriptedClient, check_messages
from .local import LocalGemmaClient, cache_dir, load_gemma, render_prompt
from .openai_compat import OpenAICompatClient

__all__ = [
    "LLMClient",
    "LocalGemmaClient",
    "Message",
    "OpenAICompatClient",
    "ScriptedClient",
    "cache_dir",
    "check_messages",
    "load_gemma",
    "render_prompt",
]
