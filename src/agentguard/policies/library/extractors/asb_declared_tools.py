"""Argument extractor of ``library/asb_declared_tools.py``: an agent may call only the tools it declares.

Tools are identified by their index in a tool ``registry`` (name -> int, given when the extractor is
built): ``tool`` is the called tool's index (-1 for a name the registry does not hold, which no declared
list contains, so it is refused); ``declared`` is ``context.metadata["declared_ids"]`` (indices) or, when
absent, the indices of ``context.metadata["declared_tools"]`` (names; unknown names are dropped). A
context with neither raises KeyError, which the guard turns into a refusal (fail closed).
"""

from __future__ import annotations

from typing import Mapping

from ....core.types import Context, ToolCall
from ...extract import MappingExtractor

__all__ = ["extractor"]

#: the context facts read as grants (what the user trusts, what the agent may call): a service takes them from its
#: own records, never from the request (agentguard.server.facts)
GRANT_FACTS = ("declared_ids", "declared_tools")


def extractor(registry: Mapping[str, int]) -> MappingExtractor:
    """Deterministic extractor over ``registry`` (tool name -> index)."""
    reg = dict(registry)

    def declared(call: ToolCall, ctx: Context) -> list[int]:
        if "declared_ids" in ctx.metadata:
            return ctx.metadata["declared_ids"]
        return [reg[t] for t in ctx.metadata["declared_tools"] if t in reg]

    return MappingExtractor({"tool": lambda call, ctx: reg.get(call.name, -1), "declared": declared})
