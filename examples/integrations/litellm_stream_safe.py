"""agentguard's LiteLLM guardrail for chat completions: a custom guardrail file for LiteLLM's proxy.

LiteLLM's built-in ``guardrail: generic_guardrail_api`` checks a streamed response's tool calls only at
the end of the stream, after it has already sent every tool-call delta (and ``finish_reason:
"tool_calls"``) to the client; the refusal arrives as a trailing error event, when an agent loop that
acts on ``finish_reason`` has run the call. Its configuration cannot ask LiteLLM to hold the stream
(LiteLLM 1.106 passes ``streaming_buffer_until_moderated`` to its Bedrock guardrail, not to the generic
one). This class is the same generic guardrail client with that one switch on: every chunk is withheld
until agentguard's end-of-stream verdict; a refused stream sends the client only the refusal. The streaming flags of
its ``litellm_params`` (``streaming_transform_mode``, ``streaming_end_of_stream_only``, ...) are ignored
(:data:`PINNED`): before session 25, ``streaming_transform_mode: incremental_diff`` made LiteLLM release a refused
stream's text and tool-call deltas before the refusal.

A rewritten text (``GUARDRAIL_INTERVENED``: agentguard's redaction of an answer that states a value only
third-party content supplied) reaches the client of a non-streamed completion, but LiteLLM 1.106 discards a
guardrail's text rewrite of a held stream and releases the original chunks. So for a streamed response whose texts
agentguard rewrote, this class raises LiteLLM's guardrail block instead, with the rewritten text as its message:
the held chunks are never released, the client reads the redaction in the block message.

Only the calls agentguard is sent can be judged: LiteLLM (1.106) sends the guardrail a response's ``tool_calls`` of
type ``function`` as its stream builder rebuilds them, nothing else. A response carrying a call the client can run
in another shape is refused before any of it is released (:func:`unguardable_message`, :func:`unguardable_stream`):

- a legacy ``function_call`` (the ``functions=`` API): never sent, so never judged, and the client ran it;
- a ``custom`` tool call (free-form tools): LiteLLM's extractor skips it;
- a streamed tool call whose fragments two readers assemble differently. LiteLLM's builder keeps the *last* name
  fragment of an index and drops an index without an ``id``; the OpenAI SDK's stream accumulator (what an agent
  loop uses) *concatenates* name fragments, needs no ``id``, and places a tool-call (or choice) index by list
  position (index 1 first, then index 0, merges the two), and keeps the first ``tool_calls`` list it sees as it is
  (two entries of index 0 there are two calls, and later fragments of index 1 join the second). ``name: "delete"``
  then ``name: "_file"`` was judged as ``_file`` and ran as ``delete_file``; an id-less ``delete_file`` was never
  judged; ``[{index 0, '{"cmd": "rm -rf /'}, {index 0, 'tmp/x'}]`` then ``'"}'`` was judged as ``rm -rf /tmp/x``
  and assembled by the SDK as ``rm -rf /``. A stream is forwarded only in the shape every reader agrees on: per
  call one name fragment and an id, indices (of choices and of calls) first seen in order 0, 1, 2, ..., and no
  index twice in one list (what providers stream). A stream holding tool calls must also finish (a ``finish_reason``):
  LiteLLM's streaming hook judges a stream's tool calls only once it has ended, and released an unfinished one's
  ``rm -rf /`` unjudged (session 25, its hook driven directly; the proxy itself adds the final chunk).

The Responses API route (``/v1/responses``) the same way: LiteLLM sends agentguard a response's ``function_call`` and
``custom_tool_call`` output items (name and arguments, a stream's taken from its final envelope), nothing else. A
response holding an item the client runs that is never sent (``shell_call``, ``local_shell_call``,
``apply_patch_call``, ``computer_call``, ``mcp_approval_request``, any unknown type), a ``function_call`` with a
``namespace`` (agentguard would judge ``name``, the client dispatches ``namespace.name``), or a stream whose item and
argument events say something other than its one final envelope (or that does not end with it) is refused
(:func:`unguardable_output`, :func:`unguardable_events`).

A response's calls are sent with the tools the request declared (LiteLLM sends ``tools`` only with a request): the
endpoint refuses a call whose arguments do not already have the declared parameter types (the client's validation
reads ``"off"`` as ``False``, ``"00"`` as ``0``) and judges the declared defaults of what it leaves out.

Put this file next to LiteLLM's ``config.yaml`` and name it instead of ``generic_guardrail_api``::

    guardrails:
      - guardrail_name: agentguard
        litellm_params:
          guardrail: litellm_stream_safe.AgentGuardGuardrail
          mode: post_call
          default_on: true
          api_base: http://127.0.0.1:8766
          api_key: os.environ/AGENTGUARD_TOKEN

It runs inside LiteLLM's own environment (it imports only LiteLLM); ``tests/integrations/test_litellm_proxy.py``
runs the real LiteLLM proxy with it. The class takes LiteLLM's native hooks (``use_native_lifecycle_hooks``) so
that it sees the whole response before LiteLLM's extraction, and hands each hook on to LiteLLM's own unified
guardrail hooks (the generic guardrail's behaviour) once the shape is one agentguard can judge. (LiteLLM's
``post_mcp_call`` translation runs only for unified-routed guardrails: this class does not gate MCP calls made
by LiteLLM's MCP gateway; put agentguard's MCP proxy in front of those.)
"""

from __future__ import annotations

import inspect
from typing import Any, AsyncIterator, Mapping

from litellm.exceptions import GuardrailRaisedException
from litellm.proxy.guardrails.guardrail_hooks.generic_guardrail_api import GenericGuardrailAPI


def _plain(obj: Any) -> Any:
    """A LiteLLM response or chunk (a pydantic model) as plain data."""
    dump = getattr(obj, "model_dump", None)
    return dump() if callable(dump) else obj


def unguardable_message(message: Any) -> str | None:
    """Why a (non-streamed) response message holds a call the guardrail is not sent (None when every call it
    holds is a ``function`` tool call LiteLLM forwards)."""
    if not isinstance(message, Mapping):
        return None
    if message.get("function_call"):
        return "a legacy function_call (only tool_calls are sent to agentguard)"
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        return "tool_calls that are not a list"
    for tc in calls or []:
        fn = tc.get("function") if isinstance(tc, Mapping) else None
        if (not isinstance(fn, Mapping) or tc.get("type") not in (None, "function") or tc.get("custom") is not None
                or not isinstance(fn.get("name"), str) or not fn.get("name")):
            kind = tc.get("type") if isinstance(tc, Mapping) else type(tc).__name__
            return f"a tool call of type {str(kind)[:40]!r} (only function tool calls are sent to agentguard)"
    return None


#: Responses API output items agentguard is sent (LiteLLM's extractor: ``function_call`` and ``custom_tool_call``) or
#: that the client does not run (text, reasoning, and tools OpenAI ran itself); any other item is refused
_SENT_ITEMS = frozenset({"function_call", "custom_tool_call"})
_INERT_ITEMS = frozenset({"message", "reasoning", "web_search_call", "file_search_call", "code_interpreter_call",
                          "image_generation_call", "mcp_call", "mcp_list_tools"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
_CALL_FIELDS = ("type", "name", "namespace", "call_id", "arguments", "input")


def unguardable_output(items: Any) -> str | None:
    """Why a Responses API ``output`` holds a call agentguard is not sent as the client reads it (None when every item
    is a call LiteLLM forwards by its own name, or inert): a ``shell_call``, ``local_shell_call``, ``apply_patch_call``,
    ``computer_call``, ``mcp_approval_request`` or an unknown item (never sent: the client runs it), a
    ``function_call`` with a ``namespace`` (LiteLLM sends ``name`` only; the client dispatches ``namespace.name``)."""
    if not isinstance(items, list):
        return "a response output that is not a list"
    for item in items:
        data = _plain(item)
        kind = _kind(data)
        if kind in _INERT_ITEMS:
            continue
        if kind not in _SENT_ITEMS:
            return f"an output item of type {str(kind)[:40]!r} (not sent to agentguard; the client may run it)"
        if data.get("namespace"):
            return "a function_call with a namespace (agentguard is sent its name only)"
        if not isinstance(data.get("name"), str) or not data.get("name"):
            return "a tool call without a name"
    return None


def _kind(event: Any) -> Any:
    """An event's ``type`` as text (LiteLLM's events carry an enum of the same value)."""
    kind = event.get("type") if isinstance(event, Mapping) else None
    return getattr(kind, "value", kind)


def _item_view(item: Any) -> tuple[Any, ...]:
    data = _plain(item)
    return tuple(data.get(k) for k in _CALL_FIELDS) if isinstance(data, Mapping) else (type(item).__name__,)


def unguardable_events(chunks: list[Any]) -> str | None:
    """Why a held Responses API event stream could run other calls than the ones LiteLLM sends agentguard. LiteLLM
    judges the calls of the final envelope (``response.completed``/``incomplete``/``failed``) when the stream ends
    with one, else only the last ``output_item.done``; a client acts on the streamed items (``output_item.added``/
    ``done``, the argument deltas and their ``done``) or on that envelope. A stream is forwarded only when it ends with
    exactly one envelope whose output passes :func:`unguardable_output` and every streamed item, argument text and
    event agrees with the envelope's item at its ``output_index``."""
    events = [_plain(c) for c in chunks]
    if not events or not all(isinstance(e, Mapping) for e in events):
        return "a stream event that is not an object"
    kinds = [_kind(e) for e in events]
    if kinds[-1] not in _TERMINAL or sum(k in _TERMINAL for k in kinds) != 1:
        return "a response stream that does not end with its one final response (LiteLLM judges only the last event)"
    envelope = _plain(events[-1].get("response"))
    output = envelope.get("output") if isinstance(envelope, Mapping) else None
    why = unguardable_output(output)
    if why is not None:
        return why
    final = [_item_view(i) for i in output]
    args: dict[Any, str] = {}
    for e, kind in zip(events[:-1], kinds):
        idx = e.get("output_index")
        if not isinstance(kind, str):
            return "a stream event without a type"
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = _plain(e.get("item"))
            view = _item_view(item)
            if not isinstance(idx, int) or isinstance(idx, bool) or not 0 <= idx < len(final):
                return f"a streamed item at output index {str(idx)[:20]} the final response does not hold"
            if unguardable_output([item]) is not None:
                return unguardable_output([item])
            want = final[idx]
            same = view[:4] == want[:4] if kind.endswith("added") else view == want
            if isinstance(item, Mapping) and item.get("type") in _SENT_ITEMS and not same:
                return f"streamed item {idx} differs from the final response's (readers differ)"
        elif kind.endswith(("_arguments.delta", "_input.delta")):
            if not isinstance(e.get("delta"), str) or not isinstance(idx, int):
                return "a streamed argument fragment that is not text at an integer index"
            args[idx] = args.get(idx, "") + e["delta"]
        elif kind.endswith(("_arguments.done", "_input.done")):
            text = e.get("arguments", e.get("input"))
            if not isinstance(idx, int) or not 0 <= idx < len(final) or text not in (final[idx][4], final[idx][5]):
                return f"streamed arguments of item {str(idx)[:20]} differ from the final response's (readers differ)"
            if e.get("name") not in (None, final[idx][1]):
                return f"streamed name of item {idx} differs from the final response's (readers differ)"
    for idx, text in args.items():
        if not 0 <= idx < len(final) or text not in (final[idx][4], final[idx][5]):
            return f"the streamed argument fragments of item {idx} differ from the final response's (readers differ)"
    return None


def unguardable_response(response: Any) -> str | None:
    """:func:`unguardable_message` over every choice of a completion; :func:`unguardable_output` for a Responses API
    response."""
    data = _plain(response)
    if isinstance(data, Mapping) and "output" in data and "choices" not in data:
        return unguardable_output(data.get("output"))
    choices = data.get("choices") if isinstance(data, Mapping) else None
    for choice in choices or []:
        why = unguardable_message(choice.get("message") if isinstance(choice, Mapping) else None)
        if why is not None:
            return why
    return None


def unguardable_stream(chunks: list[Any]) -> str | None:
    """Why the tool-call deltas of a held stream could be assembled into other calls than the ones LiteLLM's
    builder sends agentguard (None when every reader assembles the same calls): see the module doc. A Responses API
    event stream is read by :func:`unguardable_events`."""
    if any(str(_kind(_plain(c)) or "").startswith("response.") for c in chunks):
        return unguardable_events(chunks)
    choices: list[Any] = []  # choice indices in the order first seen
    calls: dict[Any, list[Any]] = {}  # choice index -> its tool-call indices in the order first seen
    named: set[tuple[Any, Any]] = set()
    with_id: set[tuple[Any, Any]] = set()
    finished = False  # a choice ended (finish_reason): LiteLLM judges a stream's tool calls only then
    for chunk in chunks:
        data = _plain(chunk)
        in_chunk: set[int] = set()
        for choice in (data.get("choices") if isinstance(data, Mapping) else None) or []:
            ci = choice.get("index", 0) if isinstance(choice, Mapping) else None
            if not isinstance(ci, int) or isinstance(ci, bool):
                return "a streamed choice without an integer index"
            if ci in in_chunk:
                return f"streamed choice {ci} twice in one chunk (readers merge or separate them)"
            in_chunk.add(ci)
            finished = finished or bool(choice.get("finish_reason"))
            if ci not in choices:
                if ci != len(choices):
                    return f"streamed choice {ci} arrived before choice {len(choices)}"
                choices.append(ci)
            delta = choice.get("delta") or {}
            if not isinstance(delta, Mapping):
                return "a streamed delta that is not an object"
            if delta.get("function_call"):
                return "a streamed legacy function_call (only tool_calls are sent to agentguard)"
            deltas = delta.get("tool_calls") or []
            if not isinstance(deltas, list):
                return "streamed tool_calls that are not a list"
            seen = calls.setdefault(ci, [])
            in_delta: set[int] = set()
            for tc in deltas:
                if not isinstance(tc, Mapping):
                    return "a streamed tool call that is not an object"
                idx = tc.get("index")
                if not isinstance(idx, int) or isinstance(idx, bool):
                    return "a streamed tool call without an integer index"
                if idx in in_delta:  # the SDK keeps a first list as it is: the second entry is another call to it
                    return f"streamed tool call {idx} twice in one delta (readers merge or separate them)"
                in_delta.add(idx)
                if idx not in seen:
                    if idx != len(seen):
                        return f"streamed tool call {idx} arrived before tool call {len(seen)} (readers differ)"
                    seen.append(idx)
                fn = tc.get("function")
                if tc.get("type") not in (None, "function") or tc.get("custom") is not None or \
                        not isinstance(fn, (Mapping, type(None))):
                    return f"a streamed tool call of type {str(tc.get('type'))[:40]!r} (only function tool calls are sent)"
                fn = fn or {}
                args = fn.get("arguments")
                if args is not None and not isinstance(args, str):
                    return "streamed tool-call arguments that are not text"
                name = fn.get("name")
                if name is not None and not isinstance(name, str):
                    return "a streamed tool-call name that is not text"
                if name:
                    if (ci, idx) in named:
                        return f"tool call {idx} names its tool in two fragments (readers join or replace them)"
                    named.add((ci, idx))
                if tc.get("id"):
                    with_id.add((ci, idx))
    if any(calls.values()) and not finished:
        return "streamed tool calls in a stream that never finished (LiteLLM judges them only once a choice ended)"
    for ci, seen in calls.items():
        for idx in seen:
            if (ci, idx) not in named or (ci, idx) not in with_id:
                return f"streamed tool call {idx} has no {'name' if (ci, idx) not in named else 'id'} (never sent to agentguard)"
    return None


def declared_tools(tools: Any) -> list[dict]:
    """The request's function tools in a shape LiteLLM forwards to the guardrail (each needs a ``type``): OpenAI
    function tools as they are (chat completions' nested, the Responses API's flat), an Anthropic-format tool
    (``name``, ``input_schema``: the ``/v1/messages`` route) as a function tool; other tools left out."""
    out = []
    for t in tools if isinstance(tools, list) else ():
        if isinstance(t, Mapping) and t.get("type") == "function":
            out.append(dict(t))
        elif isinstance(t, Mapping) and isinstance(t.get("name"), str) and isinstance(t.get("input_schema"), Mapping):
            out.append({"type": "function", "function": {"name": t["name"], "parameters": dict(t["input_schema"])}})
    return out


def _refuse(name: str | None, why: str) -> GuardrailRaisedException:
    return GuardrailRaisedException(guardrail_name=name or "agentguard", blocked_content=True,
                                    should_wrap_with_default_message=False,
                                    message=f"agentguard refused the response: {why}")


#: LiteLLM's streaming flags of a guardrail (read by its unified streaming hook: the guardrail's attribute, else
#: its ``guardrail_config``), pinned to "hold every chunk until the end-of-stream verdict": with
#: ``streaming_transform_mode: incremental_diff`` in the guardrail's litellm_params, LiteLLM released every text and
#: tool-call delta of a refused stream (``rm -rf /`` whole) before the refusal, a trailing error event (session 25,
#: the real proxy); ``mask_response_content`` turns the buffering off, ``streaming_buffer_release_on_scan``
#: releases chunks at each scan
PINNED: Mapping[str, Any] = {"streaming_buffer_until_moderated": True, "streaming_buffer_release_on_scan": False,
                             "streaming_end_of_stream_only": True, "streaming_transform_mode": "block_only",
                             "mask_response_content": False}


def _pin_streaming(guardrail: Any) -> None:
    """Set :data:`PINNED` on ``guardrail`` and drop those keys from its ``guardrail_config`` (which would win)."""
    for name, value in PINNED.items():
        setattr(guardrail, name, value)
    config = getattr(guardrail, "guardrail_config", None)
    if isinstance(config, dict):
        for name in PINNED:
            config.pop(name, None)


async def _replay(chunks: list[Any]) -> AsyncIterator[Any]:
    for c in chunks:
        yield c


class AgentGuardGuardrail(GenericGuardrailAPI):
    """LiteLLM's generic guardrail client (agentguard's endpoint) that withholds a stream until its verdict and
    refuses a response holding a call agentguard would not be sent (see the module doc)."""

    #: LiteLLM calls this class's own hooks (below), which see the whole response before LiteLLM's extraction and
    #: then run LiteLLM's unified guardrail hooks with this guardrail, as the built-in routing would
    use_native_lifecycle_hooks = True

    # LiteLLM routes a guardrail through its unified (apply_guardrail) hooks only when the class itself
    # defines apply_guardrail (it looks in type(guardrail).__dict__), so it is defined here
    async def apply_guardrail(self, inputs: Any, request_data: dict, input_type: Any,
                              logging_obj: Any = None) -> Any:
        tools = declared_tools(request_data.get("tools") if isinstance(request_data, dict) else None)
        if input_type == "response" and tools and isinstance(inputs, dict) and not inputs.get("tools"):
            # LiteLLM sends a response's calls without the request's tools: agentguard checks each call against the
            # tool the client declared (the types its own validation reads, the defaults it fills in)
            inputs = {**inputs, "tools": tools}
        out = await GenericGuardrailAPI.apply_guardrail(self, inputs, request_data, input_type, logging_obj)
        texts = list(out.get("texts") or []) if isinstance(out, dict) else []
        streamed = isinstance(request_data, dict) and bool(request_data.get("stream"))
        if input_type == "response" and streamed and texts != list(inputs.get("texts") or []):
            # LiteLLM would release the held original chunks: refuse the stream, the redaction as the message
            raise GuardrailRaisedException(guardrail_name=self.guardrail_name, message="\n".join(texts),
                                           should_wrap_with_default_message=False, blocked_content=True)
        return out

    def __init__(self, **params: Any) -> None:
        # LiteLLM hands a custom guardrail every field of its litellm_params (most of them other guardrails'
        # defaults); the generic guardrail gets what the built-in initializer would give it
        own = set(inspect.signature(GenericGuardrailAPI.__init__).parameters) | {
            "guardrail_name", "event_hook", "default_on", "timeout"}
        super().__init__(**{k: v for k, v in params.items() if k in own and k not in PINNED})
        _pin_streaming(self)  # hold every chunk until the end-of-stream verdict, whatever the config says

    # -- LiteLLM's hooks: the shape check, then LiteLLM's unified guardrail hooks with this guardrail ----------
    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict, call_type: Any) -> Any:
        from litellm.proxy.utils import unified_guardrail

        data["guardrail_to_apply"] = self
        return await unified_guardrail.async_pre_call_hook(user_api_key_dict=user_api_key_dict, cache=cache,
                                                           data=data, call_type=call_type)

    async def async_moderation_hook(self, data: dict, user_api_key_dict: Any, call_type: Any) -> Any:
        from litellm.proxy.utils import unified_guardrail

        data["guardrail_to_apply"] = self
        return await unified_guardrail.async_moderation_hook(data=data, user_api_key_dict=user_api_key_dict,
                                                             call_type=call_type)

    async def async_post_call_success_hook(self, data: dict, user_api_key_dict: Any, response: Any) -> Any:
        from litellm.proxy.utils import unified_guardrail

        why = unguardable_response(response)
        if why is not None:
            raise _refuse(self.guardrail_name, why)
        data["guardrail_to_apply"] = self
        return await unified_guardrail.async_post_call_success_hook(data=data, user_api_key_dict=user_api_key_dict,
                                                                    response=response)

    async def async_post_call_streaming_iterator_hook(self, user_api_key_dict: Any, response: Any,
                                                      request_data: dict) -> AsyncIterator[Any]:
        from litellm.proxy.utils import unified_guardrail

        _pin_streaming(self)
        held = [chunk async for chunk in response]  # nothing is released before the shape check and the verdict
        why = unguardable_stream(held)
        if why is not None:
            raise _refuse(self.guardrail_name, why)
        async for chunk in unified_guardrail.async_post_call_streaming_iterator_hook(
                user_api_key_dict=user_api_key_dict, response=_replay(held), request_data=request_data,
                guardrail_to_apply=self, buffer_until_moderated_default=True):
            yield chunk
