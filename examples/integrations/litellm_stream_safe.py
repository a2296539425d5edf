"""agentguard's LiteLLM guardrail for chat completions: a custom guardrail file for LiteLLM's proxy.

LiteLLM's built-in ``guardrail: generic_guardrail_api`` checks a streamed response's tool calls only at
the end of the stream, after it has already sent every tool-call delta (and ``finish_reason:
"tool_calls"``) to the client; the refusal arrives as a trailing error event, when an agent loop that
acts on ``finish_reason`` has run the call. Its configuration cannot ask LiteLLM to hold the stream
(LiteLLM 1.106 passes ``streaming_buffer_until_moderated`` to its Bedrock guardrail, not to the generic
one). This class is the same generic guardrail client with that one switch on: every chunk is withheld
until agentguard's end-of-stream verdict; a refused stream sends the client only the refusal.

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
  position (index 1 first, then index 0, merges the two). ``name: "delete"`` then ``name: "_file"`` was judged
  as ``_file`` and ran as ``delete_file``; an id-less ``delete_file`` was never judged. A stream is forwarded
  only in the shape every reader agrees on: per call one name fragment and an id, indices (of choices and of
  calls) first seen in order 0, 1, 2, ... (what providers stream).

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


def unguardable_response(response: Any) -> str | None:
    """:func:`unguardable_message` over every choice of a completion."""
    data = _plain(response)
    choices = data.get("choices") if isinstance(data, Mapping) else None
    for choice in choices or []:
        why = unguardable_message(choice.get("message") if isinstance(choice, Mapping) else None)
        if why is not None:
            return why
    return None


def unguardable_stream(chunks: list[Any]) -> str | None:
    """Why the tool-call deltas of a held stream could be assembled into other calls than the ones LiteLLM's
    builder sends agentguard (None when every reader assembles the same calls): see the module doc."""
    choices: list[Any] = []  # choice indices in the order first seen
    calls: dict[Any, list[Any]] = {}  # choice index -> its tool-call indices in the order first seen
    named: set[tuple[Any, Any]] = set()
    with_id: set[tuple[Any, Any]] = set()
    for chunk in chunks:
        data = _plain(chunk)
        for choice in (data.get("choices") if isinstance(data, Mapping) else None) or []:
            ci = choice.get("index", 0) if isinstance(choice, Mapping) else None
            if not isinstance(ci, int) or isinstance(ci, bool):
                return "a streamed choice without an integer index"
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
            for tc in deltas:
                if not isinstance(tc, Mapping):
                    return "a streamed tool call that is not an object"
                idx = tc.get("index")
                if not isinstance(idx, int) or isinstance(idx, bool):
                    return "a streamed tool call without an integer index"
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
    for ci, seen in calls.items():
        for idx in seen:
            if (ci, idx) not in named or (ci, idx) not in with_id:
                return f"streamed tool call {idx} has no {'name' if (ci, idx) not in named else 'id'} (never sent to agentguard)"
    return None


def _refuse(name: str | None, why: str) -> GuardrailRaisedException:
    return GuardrailRaisedException(guardrail_name=name or "agentguard", blocked_content=True,
                                    should_wrap_with_default_message=False,
                                    message=f"agentguard refused the response: {why}")


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
        super().__init__(**{k: v for k, v in params.items() if k in own})
        self.streaming_buffer_until_moderated = True  # hold every chunk until the end-of-stream verdict

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

        held = [chunk async for chunk in response]  # nothing is released before the shape check and the verdict
        why = unguardable_stream(held)
        if why is not None:
            raise _refuse(self.guardrail_name, why)
        async for chunk in unified_guardrail.async_post_call_streaming_iterator_hook(
                user_api_key_dict=user_api_key_dict, response=_replay(held), request_data=request_data,
                guardrail_to_apply=self, buffer_until_moderated_default=True):
            yield chunk
