"""LLM clients: OpenAI-compatible HTTP, local GGUF model, scripted replay for tests.

``check_messages`` (:mod:`.base`) and ``cache_dir`` (:mod:`.local`) stay public in their modules, not here.
"""

from .base import LLMClient, Message, ScriptedClient
from .local import LocalGemmaClient, load_gemma, render_prompt
from .openai_compat import OpenAICompatClient

__all__ = [
    "LLMClient",
    "LocalGemmaClient",
    "Message",
    "OpenAICompatClient",
    "ScriptedClient",
    "load_gemma",
    "render_prompt",
]
