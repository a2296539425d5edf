"""LiteLLM generic guardrail endpoint, queried the way LiteLLM's proxy queries it.

    python examples/integrations/litellm_guardrail.py

In production run ``python -m agentguard litellm-guardrail --config agentguard.toml --port 8766`` and
add to LiteLLM's config.yaml (with ``litellm_stream_safe.py`` of this directory next to it: the generic
guardrail client holding a streamed answer until the verdict; see docs/integrations.md)::

    guardrails:
      - guardrail_name: agentguard
        litellm_params:
          guardrail: litellm_stream_safe.AgentGuardGuardrail
          mode: post_call
          default_on: true
          api_base: http://127.0.0.1:8766
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from agentguard.config import load_stack
from agentguard.integrations.litellm import GUARDRAIL_PATH, GuardrailEndpoint, serve_in_thread

HERE = Path(__file__).resolve().parent


def ask(url: str, tool: str, args: dict) -> dict:
    body = {
        "input_type": "response",
        "litellm_call_id": "c1",
        "litellm_trace_id": "conversation-1",
        "texts": [],
        "request_data": {},
        "additional_provider_specific_params": {},
        "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}
        ],
    }
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def main() -> dict:
    server = serve_in_thread(GuardrailEndpoint(load_stack(HERE / "agentguard.toml")))
    url = f"http://127.0.0.1:{server.server_address[1]}{GUARDRAIL_PATH}"
    try:
        answers = {
            "delete": ask(url, "delete_file", {"path": "/"}),
            "mail": ask(url, "send_email", {"to": "ann@example.com", "body": "hi"}),
        }
    finally:
        server.shutdown()
        server.server_close()
    for k, v in answers.items():
        print(k, v)
    return answers


if __name__ == "__main__":
    main()
