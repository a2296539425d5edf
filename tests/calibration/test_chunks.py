"""OpenAI chunk parsing (calibration.chunks): token streams and whole responses."""

from __future__ import annotations

import pytest

from agentguard.calibration import ThresholdMonitor, monitor_tokens, openai_response_tokens, openai_tokens


class _FakeStreamClient:
    """Stands in for OpenAICompatClient.stream: yields chunks in the OpenAI format."""

    def __init__(self, pairs):
        self.pairs = pairs
        self.closed = False
        self.options = None

    def stream(self, messages, **options):
        self.options = options

        def gen():
            try:
                for tok, lp in self.pairs:
                    yield {"choices": [{"delta": {"content": tok},
                                        "logprobs": {"content": [{"token": tok, "logprob": lp, "top_logprobs": []}]}}]}
            finally:
                self.closed = True
        return gen()


def test_openai_token_stream_and_response_parsing():
    client = _FakeStreamClient([("A", -0.1), ("\n", -0.2), ("B", -3.0), ("C", -0.1)])
    mt = monitor_tokens(openai_tokens(client, [{"role": "user", "content": "hi"}]), ThresholdMonitor(-1.0))
    assert "".join(mt) == "A\nB" and mt.cut
    assert client.options["logprobs"] is True and client.closed
    resp = {"choices": [{"message": {"content": "ok"},
                         "logprobs": {"content": [{"token": "o", "logprob": -0.5}, {"token": "k", "logprob": -0.25}]}}]}
    assert openai_response_tokens(resp) == [("o", -0.5), ("k", -0.25)]
    from agentguard.core import AgentGuardError
    with pytest.raises(AgentGuardError, match="logprobs"):
        openai_response_tokens({"choices": [{"message": {"content": "ok"}, "logprobs": None}]})
