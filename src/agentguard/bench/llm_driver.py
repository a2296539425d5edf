"""An LLM client as the base driving policy (the paper's task policy pi^AI_task).

Each step sends the Appendix C chat for the state and parses the reply's letter. A reply that names
no valid action (an unknown action string) becomes ``unknown_action`` (index -1 is not used:
the default is a random valid action, counted in ``unknown``), so the shield still sees a proposal;
the safety filter's own handling of unknown strings is exercised through ``SafetyFilter.certify``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..envs import driving as D

__all__ = ["COMPLETION_CUE", "GemmaChoiceDriver", "GemmaScoredDriver", "LLMDriver", "NEAREST_CUE", "RULES", "nearest_text",
           "render_prompt_prefix"]


def render_prompt_prefix() -> str:
    """The part every rendered driving prompt starts with: the system message and ``"User:"``."""
    from ..llm.local import render_prompt

    full = render_prompt(D.prompt_messages(np.array([1.0, 2.2, 0.3])))
    return full[: full.index("\nUser:") + len("\nUser:")]


@dataclass
class LLMDriver:
    client: Any = None
    unknown: int = 0
    calls: int = 0
    replies: list = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.client is None:
            from ..llm import OpenAICompatClient

            self.client = OpenAICompatClient()

    def __call__(self, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = []
        for s in np.atleast_2d(states):
            reply = self.client.complete(D.prompt_messages(s), temperature=0.0, max_tokens=4)
            self.calls += 1
            self.replies.append(reply)
            try:
                out.append(D.parse_action(reply))
            except InputError:
                self.unknown += 1
                out.append(int(rng.integers(0, 3)))
        return np.asarray(out, dtype=int)


@dataclass
class GemmaChoiceDriver:
    """gemma-3-270m as the base driving policy: it reads the Appendix C chat (rendered for a base model by
    :func:`agentguard.llm.local.render_prompt`) and picks the answer letter of highest log-likelihood as
    the next token (``" A"``, ``" B"``, ``" C"``: single tokens, so this is the full-option likelihood).

    Deterministic (argmax); the letter log-probabilities of every observation are cached by its text, so
    unguarded and shielded runs that meet the same observation pay one forward pass. ``blend(q, beta)``
    gives the Eq. 4 choice ``argmax_a log pi_LM(a) + beta Q(z, a)`` (temperature 1, top-p over the letters)
    with an action-level safety critic's Q-values.
    """

    model: Any = None
    tokenizer: Any = None
    threads: int = 1
    calls: int = 0
    cache: dict = field(default_factory=dict)
    reuse_prefix: bool = False
    prefix_hits: int = 0
    _prefix: Any = None

    def __post_init__(self) -> None:
        if self.model is None:
            from ..llm.local import load_gemma

            self.model, self.tokenizer = load_gemma()
        ids = [self.tokenizer.encode(f" {a}", add_special_tokens=False) for a in D.ACTIONS]
        if any(len(i) != 1 for i in ids):
            raise InputError("the answer letters must be single tokens for a one-pass likelihood")
        self.letter_ids = [i[0] for i in ids]

    def letter_logprobs(self, state: Any) -> np.ndarray:
        """log pi_LM(letter | prompt) for A, B, C (normalised over the whole vocabulary)."""
        from ..core.errors import require
        from ..llm.local import render_prompt

        prompt = render_prompt(D.prompt_messages(state))
        if prompt in self.cache:
            return self.cache[prompt]
        torch = require("torch", "llm")
        torch.set_num_threads(self.threads)
        enc = self.tokenizer(prompt, return_tensors="pt")
        with torch.no_grad():
            logits = self._last_logits(torch, enc["input_ids"])
        lp = torch.log_softmax(logits, -1)[self.letter_ids].numpy().astype(float)
        self.calls += 1
        self.cache[prompt] = lp
        return lp

    def _last_logits(self, torch: Any, ids: Any) -> Any:
        """Next-token logits after ``ids``. With ``reuse_prefix`` the key/value cache of the prompt's fixed
        system part (the tokens every driving prompt shares) is computed once and copied for each prompt,
        so only the observation's tokens are run; used only when the prompt's tokens start with exactly
        those tokens (else the full forward)."""
        import copy

        if self.reuse_prefix and self._prefix is None:
            sys_text = render_prompt_prefix()
            pid = self.tokenizer(sys_text, return_tensors="pt")["input_ids"]
            self._prefix = (pid, self.model(input_ids=pid, use_cache=True, logits_to_keep=1).past_key_values)
        if self.reuse_prefix and self._prefix is not None:
            pid, cache = self._prefix
            n = pid.shape[1]
            if ids.shape[1] > n and torch.equal(ids[:, :n], pid):
                out = self.model(input_ids=ids[:, n:], past_key_values=copy.deepcopy(cache), use_cache=True,
                                 logits_to_keep=1)
                self.prefix_hits += 1
                return out.logits[0, -1].float()
        return self.model(input_ids=ids, logits_to_keep=1).logits[0, -1].float()

    def __call__(self, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.asarray([int(np.argmax(self.letter_logprobs(s))) for s in np.atleast_2d(states)], dtype=int)

    def blend(self, states: np.ndarray, q: np.ndarray, beta: float) -> np.ndarray:
        """Eq. 4 at temperature 1 over the answer letters, greedy: argmax_a log pi_LM(a) + beta Q(z, a)."""
        lp = np.asarray([self.letter_logprobs(s) for s in np.atleast_2d(states)])
        return np.argmax(lp + beta * np.atleast_2d(q), axis=1).astype(int)


#: the continuation prompt of the ``completion`` rules: the observation, then the words the option names
#: continue (" right", " straight", " left": actions A, B, C)
COMPLETION_CUE = " To stay on the track and avoid the obstacles, the car should steer"
COMPLETION_WORDS = (" right", " straight", " left")
NEAREST_CUE = " To avoid the obstacle and stay on the track, the driver steers"
RULES = ("letters", "letters_calibrated", "completion", "completion_calibrated", "nearest", "nearest_calibrated")


def nearest_text(state: Any) -> str:
    """A short observation: the nearest obstacle (distance, bearing side) and the edges, as the Appendix C
    sentences word them (the same numbers, fewer of them)."""
    import math

    x, y, th = (float(v) for v in np.asarray(state)[:3])
    d = D.obstacle_distances(np.array([x, y, th]))
    i = int(np.argmin(d))
    c = D.OBSTACLES[i]
    b = math.degrees(float(D.wrap_angle(math.atan2(c[1] - y, c[0] - x) - th)))
    m = D.METERS_PER_UNIT
    return (f"The nearest obstacle is {d[i] * m:.2f} m away from the car at {abs(b):.1f} degrees to the "
            f"{'left' if b >= 0 else 'right'}. The car is {(D.ROAD_WIDTH - y) * m:.2f} m away from the left edge "
            f"of the track and {y * m:.2f} m away from the right edge of the track.")


@dataclass
class GemmaScoredDriver:
    """gemma-3-270m as the base driver under a scoring rule over its next-token log-likelihoods (issue 31).

    - ``letters``: the Appendix C chat, the answer letter of highest log-likelihood (as GemmaChoiceDriver);
    - ``completion``: the observation text followed by :data:`COMPLETION_CUE`, scored on the three words
      of :data:`COMPLETION_WORDS` (each one token);
    - ``nearest``: :func:`nearest_text` (the nearest obstacle and the edges) followed by
      :data:`NEAREST_CUE`, scored on the same three words;
    - ``*_calibrated``: contextual calibration (Zhao et al. 2021, "Calibrate Before Use", Eq. 1 with a
      diagonal W): the log-likelihoods minus those of the same prompt with the observation replaced by the
      content-free ``"N/A"``, i.e. ``argmax_a log p(a | o) - log p(a | N/A)``.

    :meth:`scores` returns the rule's scores normalised over the three options (a log-softmax), the
    ``log pi_LM`` of the Eq. 4 blend :meth:`blend`. Prompts are run in right-padded batches (causal
    attention: real tokens never see the pads) and cached by text.
    """

    rule: str = "completion_calibrated"
    model: Any = None
    tokenizer: Any = None
    threads: int | None = 1
    batch_size: int = 16
    calls: int = 0
    cache: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise InputError(f"unknown scoring rule {self.rule!r}; use {', '.join(RULES)}")
        if self.model is None:
            from ..llm.local import load_gemma

            self.model, self.tokenizer = load_gemma()
        words = D.ACTIONS if self.rule.startswith("letters") else COMPLETION_WORDS
        self.center: np.ndarray | None = None
        ids = [self.tokenizer.encode(f" {w}" if self.rule.startswith("letters") else w, add_special_tokens=False)
               for w in words]
        if any(len(i) != 1 for i in ids):
            raise InputError("the scored option words must be single tokens for a one-pass likelihood")
        self.option_ids = [i[0] for i in ids]
        self._cf = self._raw([self._prompt(None)])[0] if self.rule.endswith("calibrated") else np.zeros(3)

    def _prompt(self, state: Any) -> str:
        from ..llm.local import render_prompt

        if self.rule.startswith("letters"):
            msgs = D.prompt_messages(np.array([1.0, 1.5, 0.0]) if state is None else state)
            if state is None:  # the content-free prompt: the observation replaced by "N/A"
                msgs[1]["content"] = "N/A\n\n" + D.question_text()
            return render_prompt(msgs)
        if self.rule.startswith("nearest"):
            return ("N/A" if state is None else nearest_text(state)) + NEAREST_CUE
        return ("N/A" if state is None else D.observation_text(state)) + COMPLETION_CUE

    def _raw(self, prompts: list[str]) -> np.ndarray:
        """log p(option token | prompt) over the whole vocabulary, one row per prompt."""
        from ..core.errors import require

        torch = require("torch", "llm")
        if self.threads:
            torch.set_num_threads(self.threads)
        out = []
        for i in range(0, len(prompts), self.batch_size):
            enc = self.tokenizer(prompts[i:i + self.batch_size], return_tensors="pt", padding=True)
            mask = enc["attention_mask"]
            with torch.no_grad():
                h = self.model.model(input_ids=enc["input_ids"], attention_mask=mask).last_hidden_state
                last = h[torch.arange(h.shape[0]), mask.sum(1) - 1]
                logits = self.model.lm_head(last).float()
                soft = getattr(self.model.config, "final_logit_softcapping", None)
                if soft:
                    logits = torch.tanh(logits / soft) * soft
                lp = torch.log_softmax(logits, -1)[:, self.option_ids]
            out.append(lp.numpy().astype(float))
            self.calls += len(prompts[i:i + self.batch_size])
        return np.concatenate(out) if out else np.zeros((0, 3))

    def scores(self, states: np.ndarray) -> np.ndarray:
        """The rule's log pi_LM(a | o) over the three actions (log-softmax of the calibrated scores)."""
        prompts = [self._prompt(s) for s in np.atleast_2d(states)]
        todo = sorted({p for p in prompts if p not in self.cache})
        for p, r in zip(todo, self._raw(todo)):
            self.cache[p] = r  # raw: drivers of different rules may share one cache
        s = np.asarray([self.cache[p] for p in prompts]) - (self._cf if self.center is None else self.center)
        return s - np.logaddexp.reduce(s, axis=1, keepdims=True)

    def fit_center(self, states: np.ndarray) -> np.ndarray:
        """Mean-centred scoring: subtract the mean log-likelihoods over ``states`` (calibration states
        disjoint from the scored ones) instead of the content-free prompt's; returns the centre."""
        prompts = [self._prompt(s) for s in np.atleast_2d(states)]
        todo = sorted({p for p in prompts if p not in self.cache})
        for p, r in zip(todo, self._raw(todo)):
            self.cache[p] = r
        self.center = np.mean([self.cache[p] for p in prompts], axis=0)
        return self.center

    def __call__(self, states: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        return self.scores(states).argmax(axis=1).astype(int)

    def blend(self, states: np.ndarray, q: np.ndarray, beta: float) -> np.ndarray:
        """Eq. 4 at temperature 1, greedy: argmax_a log pi_LM(a | o) + beta Q(z, a)."""
        return np.argmax(self.scores(states) + beta * np.atleast_2d(q), axis=1).astype(int)
