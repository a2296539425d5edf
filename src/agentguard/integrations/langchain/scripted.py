"""A scripted chat model (langchain_core's own fake) for tests and examples."""

from __future__ import annotations

from typing import Any

__all__ = ["scripted_chat_model"]


def scripted_chat_model(messages: list[Any]) -> Any:
    """A scripted chat model for tests and examples: langchain_core's own ``GenericFakeChatModel``
    replaying ``messages`` (AIMessages, possibly with ``tool_calls``), with ``bind_tools`` accepted
    (the fake model ignores the tool schemas, as a scripted model should)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class ScriptedChatModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # noqa: D401 - framework hook
            return self

    return ScriptedChatModel(messages=iter(messages))
