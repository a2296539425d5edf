"""Session 22: a streamed model turn is judged as LangChain merges it and as the tool node runs it.

A provider streams a tool call as ``tool_call_chunks``: the name, the id and the JSON text of the arguments split
across chunks, several calls interleaved by ``index``. LangChain's own ``AIMessageChunk.__add__`` merges chunks of one
index while their ids agree (concatenating their strings: ``name`` ``"delete_"`` + ``"path"``; a chunk with another id
starts another call, whose text alone is no object: an invalid call, while the first reads ``{"path": `` as ``{}``), reads each merged
call's text with ``parse_partial_json`` (a text cut short is closed: ``{"path": "/etc/x`` reads as the object), puts a
text that is not an object among ``invalid_tool_calls`` (never run), and ``generate_from_stream`` turns the merged
chunk into the ``AIMessage`` whose ``tool_calls`` the tool node executes. The oracle is that merge, done by LangChain:
the calls the tools ran are exactly the merged message's calls the guard allowed, judged with the values the tool
received; no call a rule refuses runs, whatever the chunking. The model is a ``BaseChatModel`` whose ``_stream``
yields the scripted chunks (what a provider integration does), run by the real ``create_agent``."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

pytest.importorskip("langchain.agents.middleware")

from hypothesis import given, settings, strategies as st  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.chat_models import BaseChatModel, generate_from_stream  # noqa: E402
from langchain_core.messages import AIMessage, AIMessageChunk, message_chunk_to_message  # noqa: E402
from langchain_core.outputs import ChatGenerationChunk, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from agentguard.core.types import Verdict  # noqa: E402
from agentguard.integrations.langchain import AgentGuardMiddleware  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402


class StreamedModel(BaseChatModel):
    """A chat model that streams each turn's scripted chunks (the first turn's, then a plain answer)."""

    turns: list[list[AIMessageChunk]]
    i: int = 0

    @property
    def _llm_type(self) -> str:
        return "streamed-script"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "StreamedModel":
        return self

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
                ) -> Iterator[ChatGenerationChunk]:
        chunks = self.turns[self.i] if self.i < len(self.turns) else [AIMessageChunk(content="done")]
        self.i += 1
        for c in chunks:
            yield ChatGenerationChunk(message=c)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return generate_from_stream(self._stream(messages, stop, run_manager, **kwargs))  # as providers do


def make_tools(ran: list) -> list:
    @tool
    def delete_path(path: str, recursive: bool = False) -> str:
        """Delete a path."""
        ran.append(("delete_path", {"path": path, "recursive": recursive}))
        return "ok"

    @tool
    def read_path(path: str) -> str:
        """Read a path."""
        ran.append(("read_path", {"path": path}))
        return "ok"

    return [delete_path, read_path]


class Recording:
    """The rules' verdicts, with every call judged recorded."""

    name = "recording"

    def __init__(self, inner: Any) -> None:
        self.inner, self.judged = inner, []

    def check(self, ctx: Any, call: Any) -> Verdict:
        self.judged.append((call.name, dict(call.arguments)))
        return self.inner.check(ctx, call)

    async def acheck(self, ctx: Any, call: Any) -> Verdict:
        return self.check(ctx, call)


RULES = ToolRuleGuard(allow=["delete_path", "read_path"], arguments=[
    {"tool": "delete_path", "arg": "path", "forbid": r"^/etc"},
    {"tool": "delete_path", "arg": "recursive", "forbid": r"(?i)^true$"},
], name="rules")


def chunk(index: int, name: str | None = None, args: str | None = None, id: str | None = None) -> AIMessageChunk:
    return AIMessageChunk(content="", tool_call_chunks=[{"name": name, "args": args, "id": id, "index": index,
                                                         "type": "tool_call_chunk"}])


def merged(chunks: list[AIMessageChunk]) -> AIMessage:
    """LangChain's own reading of the stream: ``+`` over the chunks, then the message the model node returns."""
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    return message_chunk_to_message(total)


def run(chunks: list[AIMessageChunk], guard: Any = RULES, mode: str = "invoke") -> tuple[list, list]:
    """Run the agent on one streamed turn (``mode``: ``invoke``, or ``stream``/``astream`` with
    ``stream_mode="messages"``, where the model's ``_stream`` feeds the caller and the merge alike)."""
    import asyncio

    ran: list = []
    rec = Recording(guard)
    agent = create_agent(StreamedModel(turns=[chunks]), make_tools(ran), middleware=[AgentGuardMiddleware(rec)])
    given_input, config = {"messages": [{"role": "user", "content": "go"}]}, {"recursion_limit": 8}

    async def consume() -> None:
        async for _ in agent.astream(given_input, config, stream_mode="messages"):
            pass

    try:
        if mode == "invoke":
            agent.invoke(given_input, config)
        elif mode == "stream":
            list(agent.stream(given_input, config, stream_mode="messages"))
        else:
            asyncio.run(consume())
    except Exception:  # noqa: BLE001 - what ran is what the test reads
        pass
    return ran, rec.judged


ATTACKS = [
    # the name and the forbidden path split across chunks of one index
    [chunk(0, "delete_", '{"pa', "c1"), chunk(0, "path", 'th": "/e'), chunk(0, None, 'tc/passwd"}')],
    # two ids on one index: LangChain keeps them apart (the first reads as {}, the second is invalid)
    [chunk(0, "delete_path", '{"path": ', "a"), chunk(0, None, '"/etc/x"}', "b")],
    # a stream cut short: parse_partial_json closes the text, the call runs with what was sent
    [chunk(0, "delete_path", '{"path": "/etc/sha', "c1")],
    # interleaved indexes: the forbidden call's text arrives between the benign one's
    [chunk(1, "read_path", '{"path": ', "r"), chunk(0, "delete_path", '{"path": "/tmp/a", "recur', "d"),
     chunk(1, None, '"/tmp/b"}'), chunk(0, None, 'sive": true}')],
]


def test_the_oracle_langchain_merges_the_stream_into_the_calls_the_tool_node_runs():
    for chunks in ATTACKS:
        calls = merged(chunks).tool_calls
        ran, _ = run(chunks, guard=ToolRuleGuard(allow=["delete_path", "read_path"], name="open"))
        assert sorted((c["name"], {"recursive": False, **c["args"]} if c["name"] == "delete_path" else c["args"])
                      for c in calls if "path" in c["args"]) == sorted(ran)  # without a path the tool refuses
    assert [c["name"] for c in merged(ATTACKS[0]).tool_calls] == ["delete_path"]
    assert [(c["id"], c["args"]) for c in merged(ATTACKS[1]).tool_calls] == [("a", {})]
    assert [c["id"] for c in merged(ATTACKS[1]).invalid_tool_calls] == ["b"]


@pytest.mark.parametrize("mode", ["invoke", "stream", "astream"])
@pytest.mark.parametrize("chunks", ATTACKS)
def test_a_refused_streamed_call_never_runs(chunks, mode):
    ran, judged = run(chunks, mode=mode)
    assert not any(name == "delete_path" for name, _ in ran)
    assert ("delete_path" in [n for n, _ in judged])


def test_an_invalid_tool_call_is_neither_judged_nor_run():
    chunks = [chunk(0, "delete_path", '["/etc/x"]', "c1"), chunk(1, "read_path", '{"path": "/tmp/r"}', "c2")]
    assert [c["name"] for c in merged(chunks).invalid_tool_calls] == ["delete_path"]
    ran, judged = run(chunks)
    assert ran == [("read_path", {"path": "/tmp/r"})] and [n for n, _ in judged] == ["read_path"]


CALL = st.tuples(st.sampled_from(["delete_path", "read_path"]),
                 st.sampled_from(["/tmp/a", "/etc/passwd", "/etc", "/tmp/etc"]), st.booleans())


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(max(c, 0), len(text)) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)]) if text[a:b]] or [text]


@settings(max_examples=25, deadline=None)
@given(st.lists(CALL, min_size=1, max_size=2), st.data())
def test_property_over_chunkings_what_runs_is_the_merged_call_the_guard_allowed(calls, data):
    """Any split of names and argument texts, ids repeated or not, indexes interleaved: every call a tool ran is a
    call of LangChain's merged message, judged with exactly the values the tool received and allowed by the rules."""
    streams = []
    for index, (name, path, recursive) in enumerate(calls):
        args = {"path": path, **({"recursive": recursive} if name == "delete_path" else {})}
        text = json.dumps(args)
        parts = _split(text, data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
        names = _split(name, data.draw(st.lists(st.integers(1, len(name) - 1), max_size=1)))
        repeat_id = data.draw(st.booleans())
        pieces = [chunk(index, names[i] if i < len(names) else None, p, f"id{index}" if i == 0 or repeat_id else None)
                  for i, p in enumerate(parts)]
        pieces += [chunk(index, n, None, None) for n in names[len(parts):]]
        streams.append(pieces)
    chunks: list = []
    while any(streams):  # interleave the calls' chunks in a drawn order, each call's own order kept
        live = [s for s in streams if s]
        chunks.append(data.draw(st.sampled_from(live)).pop(0))
    oracle = [(c["name"], c["args"]) for c in merged(chunks).tool_calls]
    ran, judged = run(chunks)
    for name, received in ran:
        assert (name, received) in judged  # judged with the values the tool received
        assert not (name == "delete_path" and (received["path"].startswith("/etc") or received["recursive"]))
        assert any(n == name and {k: v for k, v in received.items() if k in a} == a for n, a in oracle)
    allowed = [(n, a) for n, a in oracle if "path" in a and (
        n == "read_path" or not (a["path"].startswith("/etc") or a.get("recursive")))]
    assert len(ran) == len(allowed)
