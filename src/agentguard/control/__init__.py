"""agentguard.control: control-theoretic safety filters (the ReGuard paper).

The public face (``from agentguard.control import SafetyFilter, train_ddqn, ...``):

- :class:`SafetyFilter` -- ``certify(context, action) -> Verdict`` (a Guard), with the
  :class:`QFunction` protocol it reads and :func:`observation_of` (module :mod:`.filter`);
- :func:`safety_backup`, :func:`discounted_safety_target` -- the safety Bellman backups of Eq. 3 and
  the discounted DDQN target of Eq. 5 (module :mod:`.bellman`);
- the learner: :func:`train_ddqn`, :class:`DDQNConfig`, :class:`QModel`, :class:`ReplayBuffer`,
  :class:`Transitions`, :class:`TransitionSampler`, :func:`f1_score` (module :mod:`.ddqn`);
- fitted Q-iteration on the Eq. 5 target over a fixed transition set: :func:`fitted_q_iteration`,
  :class:`FQIConfig`, :func:`fqi_targets` (module :mod:`.fqi`); the same Eq. 5 iteration on a k-NN
  averager over the encoded states (a contraction): :func:`kernel_fitted_q_iteration`,
  :class:`KernelFQIConfig`, :class:`KernelQ`, :func:`nearest_anchors` (module :mod:`.kernel_fqi`);
- a critic over open-vocabulary text actions (the backseat advice), ``Q(x, E(advice))`` by fitted
  Q-iteration with the next max over a candidate sentence set: :class:`AdviceCritic`,
  :class:`AdviceTransitions`, :func:`fit_advice_critic` (module :mod:`.advice`);
- text encoders ``E(o) -> z``: :class:`TextEncoder`, :class:`WordLlamaEncoder`,
  :class:`MiniLMEncoder`, :class:`HiddenStateEncoder`, :class:`ConcatEncoder`, :class:`StandardizedEncoder`,
  :class:`ProjectedEncoder`, :class:`CachedEncoder` and :func:`check_texts`
  (the input check every encoder shares) (module :mod:`.encoders`);
- the one-step classifier baseline: :class:`OneStepClassifier`, :func:`train_one_step_classifier`
  (module :mod:`.baselines`);
- token-level Q-values and Eq. 4 blending: :class:`TokenQ`, :func:`blend_distribution`,
  :func:`sample_blended`, :func:`token_target`, :func:`top_p_indices` (module :mod:`.token_level`).

Names that may need torch or an embedding model are loaded on first use (module ``__getattr__``), so
``import agentguard.control`` imports neither. Environments (driving, commerce) and their guards live
in :mod:`agentguard.envs`; the paper's evaluations in :mod:`agentguard.bench`.
"""

from __future__ import annotations

from typing import Any

from ..core.lazy import LazyExports

from .bellman import discounted_safety_target, safety_backup
from .filter import QFunction, SafetyFilter, observation_of

__all__ = [
    "AdviceCritic",
    "AdviceTransitions",
    "CachedEncoder",
    "ConcatEncoder",
    "DDQNConfig",
    "FQIConfig",
    "HiddenStateEncoder",
    "KernelFQIConfig",
    "KernelQ",
    "MiniLMEncoder",
    "OneStepClassifier",
    "ProjectedEncoder",
    "QFunction",
    "QModel",
    "ReplayBuffer",
    "SafetyFilter",
    "StandardizedEncoder",
    "TextEncoder",
    "TokenQ",
    "TransitionSampler",
    "Transitions",
    "WordLlamaEncoder",
    "blend_distribution",
    "check_texts",
    "discounted_safety_target",
    "f1_score",
    "fit_advice_critic",
    "fitted_q_iteration",
    "fqi_targets",
    "kernel_fitted_q_iteration",
    "nearest_anchors",
    "observation_of",
    "safety_backup",
    "sample_blended",
    "token_target",
    "top_p_indices",
    "train_ddqn",
    "train_one_step_classifier",
]

#: names served on first use: name -> submodule (keeps torch and embedding models out of the import)
_LAZY = {
    "AdviceCritic": ".advice",
    "AdviceTransitions": ".advice",
    "CachedEncoder": ".encoders",
    "ConcatEncoder": ".encoders",
    "DDQNConfig": ".ddqn",
    "FQIConfig": ".fqi",
    "HiddenStateEncoder": ".encoders",
    "KernelFQIConfig": ".kernel_fqi",
    "KernelQ": ".kernel_fqi",
    "MiniLMEncoder": ".encoders",
    "OneStepClassifier": ".baselines",
    "ProjectedEncoder": ".encoders",
    "QModel": ".ddqn",
    "ReplayBuffer": ".ddqn",
    "StandardizedEncoder": ".encoders",
    "TextEncoder": ".encoders",
    "TokenQ": ".token_level",
    "TransitionSampler": ".ddqn",
    "Transitions": ".ddqn",
    "WordLlamaEncoder": ".encoders",
    "blend_distribution": ".token_level",
    "check_texts": ".encoders",
    "f1_score": ".ddqn",
    "fit_advice_critic": ".advice",
    "fitted_q_iteration": ".fqi",
    "fqi_targets": ".fqi",
    "kernel_fitted_q_iteration": ".kernel_fqi",
    "nearest_anchors": ".kernel_fqi",
    "sample_blended": ".token_level",
    "token_target": ".token_level",
    "top_p_indices": ".token_level",
    "train_ddqn": ".ddqn",
    "train_one_step_classifier": ".baselines",
}


_exports = LazyExports(__name__, _LAZY, globals())


def __getattr__(name: str) -> Any:
    return _exports.attr(name)


def __dir__() -> list[str]:
    return _exports.dir()
