"""gemma-3-270m as the Agentic Commerce base policy (the shape of Figure 4 of the ReGuard paper, in commerce).

:class:`GemmaCartChooser` renders the Appendix C commerce chat (:func:`agentguard.envs.commerce.prompt_messages`,
:func:`agentguard.llm.local.render_prompt`) and picks the clickable element id ``i`` (0 = checkout, 1..n =
"Remove item" of row i) whose answer ``" i\\n"`` has the highest log-likelihood under the model: a complete
answer, so "1" and "10" are compared fairly. The prompt runs once; each option's few tokens run on a copy
of its key/value cache (tested equal to the full pass). Deterministic.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..core.errors import InputError, require
from ..envs import commerce as C

__all__ = ["GemmaCartChooser"]


class GemmaCartChooser:
    """``policy(cart, rng) -> element id``; ``option_logprobs(cart)`` gives the scores it maximises."""

    def __init__(self, model: Any = None, tokenizer: Any = None, threads: int = 1):
        if model is None or tokenizer is None:
            from ..llm.local import load_gemma

            model, tokenizer = load_gemma()
        self.model, self.tokenizer, self.threads = model, tokenizer, threads
        self.cache: dict[str, np.ndarray] = {}
        self.calls = 0

    def _option_ids(self, i: int) -> Any:
        return self.tokenizer(f" {i}\n", add_special_tokens=False, return_tensors="pt")["input_ids"]

    def option_logprobs(self, cart: C.Cart) -> np.ndarray:
        """``log P(" i\\n" | prompt)`` for every clickable id ``i = 0..len(cart.items)``."""
        torch = require("torch", "control")
        from ..llm.local import render_prompt

        prompt = render_prompt(C.prompt_messages(cart))
        if prompt in self.cache:
            return self.cache[prompt]
        torch.set_num_threads(self.threads)
        ids = self.tokenizer(prompt, return_tensors="pt")["input_ids"]
        scores = []
        with torch.no_grad():
            out = self.model(input_ids=ids, use_cache=True)
            self.calls += 1
            last = out.logits[0, -1]
            for i in range(len(cart.items) + 1):
                opt = self._option_ids(i)
                nxt = self.model(input_ids=opt, past_key_values=copy.deepcopy(out.past_key_values), use_cache=True)
                logits = torch.cat([last[None], nxt.logits[0, :-1]]).float()
                scores.append(float(torch.log_softmax(logits, -1).gather(1, opt[0][:, None]).sum()))
        self.cache[prompt] = np.asarray(scores)
        return self.cache[prompt]

    def __call__(self, cart: C.Cart, rng: np.random.Generator | None = None) -> int:
        return int(np.argmax(self.option_logprobs(cart)))

    def blend(self, cart: C.Cart, q: np.ndarray, beta: float) -> int:
        """Eq. 4 at temperature 1, greedy, over the clickable ids: ``argmax_i log pi_LM(i) + beta Q(z, i)``
        (``q`` holds the critic's values of every element id; ids past the cart's rows are never chosen)."""
        lp = self.option_logprobs(cart)
        q = np.asarray(q, float).reshape(-1)
        if len(q) < len(lp):
            raise InputError(f"the critic gives {len(q)} values, the page has {len(lp)} clickable ids")
        return int(np.argmax(lp + beta * q[: len(lp)]))
