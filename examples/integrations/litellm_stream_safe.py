"""agentguard's LiteLLM guardrail for streamed completions: a custom guardrail file for LiteLLM's proxy.

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
runs the real LiteLLM proxy with it.
"""

from __future__ import annotations

import inspect
from typing import Any

from litellm.exceptions import GuardrailRaisedException
from litellm.proxy.guardrails.guardrail_hooks.generic_guardrail_api import GenericGuardrailAPI


class AgentGuardGuardrail(GenericGuardrailAPI):
    """LiteLLM's generic guardrail client (agentguard's endpoint) that withholds a stream until its verdict."""

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
