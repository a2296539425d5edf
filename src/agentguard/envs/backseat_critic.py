"""A learned critic over the advice text for the Backseat AI Driver (ReGuard paper, section 6.3).

The guard's action is a sentence; the scripted human proxy (:class:`~agentguard.envs.backseat.ScriptedHuman`)
reads it and steers. The critic is ``Q(z)`` with ``z = [x(s, a^H), E(advice)]``:

- ``x(s, a^H)`` (:func:`state_part`, 7 numbers) is the *privileged* driving state
  (:class:`~agentguard.envs.driving.encoders.StateEncoder`) and a one-hot of the human's intended action
  ``a^H`` (in Shielded Backseat Driving the monitor reads ``a^H``); the paper gives its guard privileged
  information too (the safe multiple-choice answer);
- ``E(advice)`` is a text embedding of the advice sentence alone: no parsed letter, direction or urgency
  flag is on the critic's input path (the parsing happens only inside the simulated human).

Silence is the sentence :data:`SILENCE`; the human then follows its own intention.

Ground truth (:func:`exact_advice_q`): with the exact value grid ``V`` of Eq. 3 and the human's response
``a = human(a^H, advice)``, ``Q*(s, a^H, advice) = min{ l(s+), V(s+) }`` with ``s+ = f(s, a)``. When the
candidate set lets the guard induce every action, ``max_advice Q*(s+, .)`` is ``V(s+)``, so this is the
fixed point of the Eq. 5 target the critic is trained on (:func:`build_advice_data`, :func:`train_advice_critic`).

Candidates (:data:`CANDIDATES`): for each action calm and urgent paraphrases with a choice letter and
direction-only ones, and vague sentences that name no action; the ``test`` paraphrases are held out of
training and are the only sentences the guard may say in evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..control.advice import AdviceCritic, AdviceTransitions, fit_advice_critic
from ..control.encoders import TextEncoder
from ..control.fqi import FQIConfig
from ..core.errors import InputError
from . import driving as D
from .backseat import ScriptedHuman, advice_text
from .driving.encoders import StateEncoder
from .driving.guard import TRAIN_BOX

__all__ = [
    "CANDIDATES",
    "Candidate",
    "SILENCE",
    "build_advice_data",
    "candidates",
    "exact_advice_q",
    "exact_guard",
    "learned_guard",
    "response_table",
    "run_episodes",
    "state_part",
    "train_advice_critic",
    "value_f1",
]

SILENCE = "(no advice)"
_DIR = {0: "steer right", 1: "steer straight", 2: "steer left"}


@dataclass(frozen=True)
class Candidate:
    """An advice sentence with what its author meant (``action`` None = names no action); the critic never
    reads ``action``/``style``: they label rows of the report and select the paper's privileged-answer set."""

    text: str
    action: int | None
    style: str  # calm | urgent | vague | silence
    split: str  # train | test | both


def _for_action(a: int) -> list[Candidate]:
    k, d = D.ACTIONS[a], _DIR[a]
    return [
        Candidate(advice_text(a, False), a, "calm", "train"),
        Candidate(f"Please {d}, option {k}.", a, "calm", "train"),
        Candidate(f"My advice: take {k} and {d}.", a, "calm", "train"),
        Candidate(f"Gently {d}.", a, "calm", "train"),
        Candidate(f"How about you {d}? That is {k}.", a, "calm", "train"),
        Candidate(f"{d.capitalize()} would be my pick ({k}).", a, "calm", "train"),
        Candidate(f"I recommend option {k}, {d}.", a, "calm", "train"),
        Candidate(f"Consider that you {d}.", a, "calm", "train"),
        Candidate(advice_text(a, True), a, "urgent", "train"),
        Candidate(f"Emergency! {d.capitalize()} immediately, choose {k}!", a, "urgent", "train"),
        Candidate(f"DANGER AHEAD, {d.upper()} NOW ({k})!", a, "urgent", "train"),
        Candidate(f"Quick, {d} immediately! ({k})", a, "urgent", "train"),
        Candidate(f"We are in danger: {d}, answer {k}, hurry!", a, "urgent", "train"),
        Candidate(f"{d.upper()} THIS INSTANT, {k}!!!", a, "urgent", "train"),
        Candidate(f"You could {d} here, answer {k}.", a, "calm", "test"),
        Candidate(f"Let's pick option {k}: {d}.", a, "calm", "test"),
        Candidate(f"Maybe {d} a little.", a, "calm", "test"),
        Candidate(f"Urgent: pick {k} and {d} at once or we will crash!", a, "urgent", "test"),
        Candidate(f"{d.upper()} IMMEDIATELY, IT IS AN EMERGENCY ({k})!", a, "urgent", "test"),
    ]


CANDIDATES: tuple[Candidate, ...] = tuple(
    [c for a in range(3) for c in _for_action(a)]
    + [Candidate("Be careful out there.", None, "vague", "train"),
       Candidate("Keep your eyes on the road.", None, "vague", "train"),
       Candidate("Watch out, there is danger ahead!", None, "vague", "train"),
       Candidate("Hmm, be mindful of the obstacles.", None, "vague", "train"),
       Candidate("Emergency, the road is dangerous!", None, "vague", "train"),
       Candidate("Drive safely, please.", None, "vague", "test"),
       Candidate("Stay alert, this could be an emergency!", None, "vague", "test"),
       Candidate(SILENCE, None, "silence", "both")])


def candidates(split: str) -> list[Candidate]:
    """The candidates of ``split`` ('train' or 'test'), silence included in both."""
    if split not in ("train", "test"):
        raise InputError("split must be train or test")
    return [c for c in CANDIDATES if c.split in (split, "both")]


def state_part(states: np.ndarray, own: np.ndarray) -> np.ndarray:
    """``x(s, a^H)``: the privileged state latent (4) and a one-hot of the human's intended action (3)."""
    s = np.atleast_2d(np.asarray(states, float))
    own = np.asarray(own, int).reshape(-1)
    if len(own) != len(s):
        raise InputError("one intended action per state")
    return np.concatenate([StateEncoder().encode(s), np.eye(3, dtype=np.float32)[own]], axis=1)


def response_table(persona: str, texts: Sequence[str]) -> np.ndarray:
    """``table[a^H, k]``: the scripted human's action for intention ``a^H`` after hearing ``texts[k]``."""
    human = ScriptedHuman(persona)
    rng = np.random.default_rng(0)  # unused: the scripted response to a given intention is deterministic
    return np.array([[human.act(None, None if t == SILENCE else t, rng, own=own) for t in texts]
                     for own in range(3)], dtype=int)


def exact_advice_q(grid, persona: str, states: np.ndarray, own: np.ndarray, texts: Sequence[str]) -> np.ndarray:
    """``Q*(s, a^H, advice) = min{ l(f(s, a)), V(f(s, a)) }`` with ``a`` the human's response: (n, K)."""
    q_actions = grid.q_values(np.atleast_2d(states))  # (n, 3): min{l, V} after each action
    table = response_table(persona, texts)
    return q_actions[np.arange(len(q_actions))[:, None], table[np.asarray(own, int)]]


def build_advice_data(persona: str, encoder: TextEncoder, n_states: int, seed: int = 0,
                      texts: Sequence[str] | None = None) -> tuple[AdviceTransitions, list[str]]:
    """Eq. 5 training transitions: ``n_states`` uniform road states, the human's intention drawn from its
    own (weak, noisy) driver, and every training candidate sentence: ``z = (x(s, a^H), E(advice))``,
    ``s+ = f(s, human(a^H, advice))``, ``x+ = x(s+, a^H+)`` with ``a^H+`` drawn at ``s+``."""
    texts = list(texts) if texts is not None else [c.text for c in candidates("train")]
    rng = np.random.default_rng(seed)
    s = np.column_stack([rng.uniform(*b, n_states) for b in TRAIN_BOX])
    own = D.weak_driver_policy(s, rng)
    resp = response_table(persona, texts)[own]  # (n, K): the human's action after each sentence
    nxt = np.stack([D.step(s, a) for a in range(3)], axis=1)  # (n, 3, 3): s+ after each action
    own_next = np.stack([D.weak_driver_policy(nxt[:, a], rng) for a in range(3)], axis=1)
    x_next = state_part(nxt.reshape(-1, 3), own_next.reshape(-1))  # row 3 i + a
    l_next3 = D.margin(nxt)  # (n, 3)
    rows = np.arange(n_states)[:, None]
    data = AdviceTransitions(x=state_part(s, own), bank=encoder.encode(texts), nxt=3 * rows + resp,
                             x_next=x_next, l_next=l_next3[rows, resp].astype(np.float32),
                             done=l_next3[rows, resp] < 0)
    return data, texts


def train_advice_critic(persona: str | Sequence[str], encoder: TextEncoder, n_states: int = 1500,
                        config: FQIConfig | None = None, seed: int = 0, architecture: str = "factored",
                        effects: int = 8, gate_hidden: tuple[int, ...] = (), temperature: float = 0.1) -> AdviceCritic:
    """One critic on the transitions of one persona, or of several pooled (the persona then unobserved).

    Defaults (factored network, linear gate, softmax temperature 0.1) were chosen on validation starts: at
    temperature 1 the gate blended 'straight' sentences from the 'right' and 'left' effects, so no
    'straight' sentence could ever be the argmax (docs/control.md, Backseat)."""
    personas = [persona] if isinstance(persona, str) else list(persona)
    parts = [build_advice_data(p, encoder, n_states, seed + i)[0] for i, p in enumerate(personas)]
    offsets = np.cumsum([0] + [len(d.x_next) for d in parts])
    data = AdviceTransitions(x=np.concatenate([d.x for d in parts]), bank=parts[0].bank,
                             nxt=np.concatenate([d.nxt + o for d, o in zip(parts, offsets)]),
                             x_next=np.concatenate([d.x_next for d in parts]),
                             l_next=np.concatenate([d.l_next for d in parts]),
                             done=np.concatenate([d.done for d in parts]))
    critic = fit_advice_critic(data, config, architecture=architecture, effects=effects, gate_hidden=gate_hidden,
                               temperature=temperature)
    critic.meta.update({"personas": personas, "n_states": n_states, "encoder": getattr(encoder, "name", "?"),
                        "pairs": int(data.l_next.size), "state_part": "privileged state + human's intended action"})
    return critic


def value_f1(critic: AdviceCritic, grid, persona: str, states: np.ndarray, own: np.ndarray,
             texts: Sequence[str], bank: np.ndarray) -> dict:
    """F1 of ``Q(z) > 0`` against the exact ``Q* > tol`` over every (state, advice) pair (positive = safe)."""
    from ..control.ddqn import f1_score

    truth = exact_advice_q(grid, persona, states, own, texts) > grid.tol
    pred = critic.q_all(state_part(states, own), bank) > 0.0
    return {"value_f1": f1_score(pred, truth), "value_f1_unsafe": f1_score(~pred, ~truth),
            "value_accuracy": float(np.mean(pred == truth)), "pairs": int(truth.size)}


Guard = Callable[[np.ndarray, int], "str | None"]


def learned_guard(critic: AdviceCritic, encoder: TextEncoder, texts: Sequence[str], epsilon: float | None,
                  allowed: Callable[[np.ndarray], Sequence[int]] | None = None) -> Guard:
    """Shielded (``epsilon`` a number): speak when ``Q(x(s, a^H), E(SILENCE)) <= epsilon``; full
    (``epsilon`` None): speak every step. It says the candidate of highest Q (among ``allowed(s)`` indices
    if given, e.g. those naming the privileged safe action, as the paper appends that answer)."""
    texts = list(texts)
    bank = encoder.encode(texts)
    silence = encoder.encode([SILENCE])
    speak_idx = np.array([i for i, t in enumerate(texts) if t != SILENCE])

    def guard(s: np.ndarray, own: int) -> str | None:
        x = state_part(s[None], [own])
        if epsilon is not None and critic.q(x, silence)[0] > epsilon:
            return None
        idx = speak_idx if allowed is None else np.intersect1d(speak_idx, np.asarray(allowed(s), int))
        q = critic.q_all(x, bank[idx])[0]
        return texts[int(idx[int(np.argmax(q))])]

    return guard


def exact_guard(grid, persona: str, texts: Sequence[str], shielded: bool) -> Guard:
    """The same protocol with the exact ``Q*`` (an oracle over the same candidate sentences)."""
    texts = list(texts)
    speak_idx = np.array([i for i, t in enumerate(texts) if t != SILENCE])

    def guard(s: np.ndarray, own: int) -> str | None:
        q = exact_advice_q(grid, persona, s[None], [own], texts + [SILENCE])[0]
        if shielded and q[-1] > grid.tol:
            return None
        return texts[int(speak_idx[int(np.argmax(q[speak_idx]))])]

    return guard


def run_episodes(persona: str, guard: Guard | None, starts: np.ndarray, seed: int = 0,
                 horizon: int = D.HORIZON) -> dict:
    """Closed loop with the scripted human; ``guard(s, a^H) -> advice or None`` (None = silent).
    Returns the rates, how often each style of sentence was said (by :data:`CANDIDATES` label, else
    ``other``) and one record per episode ``[outcome, steps, interventions]`` in the order of ``starts``."""
    human = ScriptedHuman(persona)
    rng = np.random.default_rng(seed)
    styles = {c.text: c.style for c in CANDIDATES}
    said: dict[str, int] = {}
    episodes, steps_all, spoken_all = [], 0, 0
    for s0 in np.atleast_2d(starts):
        s = np.asarray(s0, float)
        outcome, spoken, t = "timeout", 0, 0
        for t in range(1, horizon + 1):
            own = int(human.intention(s[None], rng)[0])
            advice = guard(s, own) if guard is not None else None
            spoken += advice is not None
            if advice is not None:
                said[styles.get(advice, "other")] = said.get(styles.get(advice, "other"), 0) + 1
            a = human.act(s, None if advice in (None, SILENCE) else advice, rng, own=own)
            s = D.step(s[None], a)[0]
            if D.margin(s) < 0:
                outcome = "failure"
                break
            if D.goal_reached(s):
                outcome = "success"
                break
        episodes.append([outcome, t, spoken])
        steps_all += t
        spoken_all += spoken
    n = len(episodes)
    return {"success_rate": sum(e[0] == "success" for e in episodes) / n,
            "failure_rate": sum(e[0] == "failure" for e in episodes) / n,
            "intervention_rate": spoken_all / max(1, steps_all), "said": dict(sorted(said.items())),
            "episodes": episodes}
