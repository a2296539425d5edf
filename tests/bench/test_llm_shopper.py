"""gemma-3-270m as the commerce base policy: the cached option scores equal the full pass."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agentguard.bench.llm_shopper import GemmaCartChooser
from agentguard.envs import commerce as C


@pytest.mark.slow
def test_option_scores_equal_the_full_pass_and_cover_every_clickable_id(gemma):
    from agentguard.llm.local import render_prompt

    model, tok = gemma
    # 6 rows: the prompt (~900 tokens) is longer than gemma's 512-token sliding window
    cart = C.Cart([(0, 12.5), (3, 44.0), (5, 7.25), (8, 19.99), (11, 30.0), (14, 5.5)], 2)
    chooser = GemmaCartChooser(model, tok)
    lp = chooser.option_logprobs(cart)
    assert lp.shape == (7,) and np.all(lp < 0)  # checkout and the six rows' "Remove item"
    prompt = tok(render_prompt(C.prompt_messages(cart)), return_tensors="pt")["input_ids"]
    assert prompt.shape[1] > 512
    for i in (0, 6):  # independent oracle: one pass over prompt + answer, sum of the answer tokens' log-probs
        opt = tok(f" {i}\n", add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            logits = model(input_ids=torch.cat([prompt, opt], 1)).logits[0].float()
        full = torch.log_softmax(logits[prompt.shape[1] - 1:-1], -1).gather(1, opt[0][:, None]).sum()
        assert lp[i] == pytest.approx(float(full), abs=2e-3)
    assert chooser(cart, None) == int(np.argmax(lp))
    calls = chooser.calls
    chooser(cart, None)  # the same page is scored once
    assert chooser.calls == calls
    # Eq. 4 blend: beta = 0 is the model's choice; a large beta follows the critic among the page's ids only
    q = np.full(C.N_ACTIONS, -1.0)
    q[3], q[10] = 2.0, 50.0  # id 10 is not on this page (6 rows)
    assert chooser.blend(cart, q, 0.0) == int(np.argmax(lp))
    assert chooser.blend(cart, q, 1e3) == 3
    assert chooser.calls == calls
    with pytest.raises(Exception, match="clickable ids"):
        chooser.blend(cart, q[:3], 1.0)
