"""agentguard.control: control-theoretic safety filters (the ReGuard paper).

The public face (``from agentguard.control import SafetyFilter, train_ddqn, ...``):

- :class:`SafetyFilter` -- ``certify(context, action) -> Verdict`` (a Guard), with the
  :class:`QFunction` protocol it reads (module :mod:`.filter`);
- :func:`safety_backup`, :func:`discounted_safety_target` -- the safety Bellman backups of Eq. 3 and
  the discounted DDQN target of Eq. 5 (module :mod:`.bellman`);
- the learner: :func:`train_ddqn`, :class:`DDQNConfig`, :class:`QModel`, :class:`Transitions`,
  :class:`TransitionSampler` (module :mod:`.ddqn`);
- fitted Q-iteration on the Eq. 5 target over a fixed transition set: :func:`fitted_q_iteration`,
  :class:`FQIConfig` (module :mod:`.fqi`); the same Eq. 5 iteration on a k-NN averager over the
  encoded states (a contraction): :func:`kernel_fitted_q_iteration`, :class:`KernelFQIConfig`,
  :class:`KernelQ` (module :mod:`.kernel_fqi`);
- a critic over open-vocabulary text actions (the backseat advice), ``Q(x, E(advice))`` by fitted
  Q-iteration with the next max over a candidate sentence set: :class:`AdviceCritic`,
  :class:`AdviceTransitions`, :func:`fit_advice_critic` (module :mod:`.advice`);
- text encoders ``E(o) -> z``: :class:`TextEncoder`, :class:`WordLlamaEncoder`,
  :class:`MiniLMEncoder`, :class:`HiddenStateEncoder` (module :mod:`.encoders`);
- token-level Q-values and Eq. 4 blending: :class:`TokenQ`, :func:`blend_distribution`
  (module :mod:`.token_level`).

The building blocks stay public in their modules, not here: ``observation_of`` (:mod:`.filter`),
``ReplayBuffer``, ``f1_score`` (:mod:`.ddqn`), ``fqi_targets`` (:mod:`.fqi`), ``nearest_anchors``
(:mod:`.kernel_fqi`), the composite encoders ``ConcatEncoder``, ``StandardizedEncoder``,
``ProjectedEncoder``, ``CachedEncoder`` and ``check_texts`` (:mod:`.encoders`), the one-step
classifier baseline (:mod:`.baselines`) and the token-level helpers ``sample_blended``,
``token_target``, ``top_p_indices`` (:mod:`.token_level`).

Names that may need torch or an embedding model are loaded on first use (module ``__getattr__``), so
``import agentguard.control`` imports neither. Environments (driving, commerce) and their guards live
in :mod:`agentguard.envs`; the paper's evaluations in :mod:`agentguard.bench`.
"""

from __future__ import annotations

from typing import Any

from ..core.lazy import LazyExports

from .bellman import discounted_safety_target, safety_backup
from .filter import QFunction, SafetyFilter

__all__ = [
    "AdviceCritic",
    "AdviceTransitions",
    "DDQNConfig",
    "FQIConfig",
    "HiddenStateEncoder",
    "KernelFQIConfig",
    "KernelQ",
    "MiniLMEncoder",
    "QFunction",
    "QModel",
    "SafetyFilter",
    "TextEncoder",
    "TokenQ",
    "TransitionSampler",
    "Transitions",
    "WordLlamaEncoder",
    "blend_distribution",
    "discounted_safety_target",
    "fit_advice_critic",
    "fitted_q_iteration",
    "kernel_fitted_q_iteration",
    "safety_backup",
    "train_ddqn",
]

#: names served on first use: name -> submodule (keeps torch and embedding models out of the import)
_LAZY = {
    "AdviceCritic": ".advice",
    "AdviceTransitions": ".advice",
    "DDQNConfig": ".ddqn",
    "FQIConfig": ".fqi",
    "HiddenStateEncoder": ".encoders",
    "KernelFQIConfig": ".kernel_fqi",
    "KernelQ": ".kernel_fqi",
    "MiniLMEncoder": ".encoders",
    "QModel": ".ddqn",
    "TextEncoder": ".encoders",
    "TokenQ": ".token_level",
    "TransitionSampler": ".ddqn",
    "Transitions": ".ddqn",
    "WordLlamaEncoder": ".encoders",
    "blend_distribution": ".token_level",
    "fit_advice_critic": ".advice",
    "fitted_q_iteration": ".fqi",
    "kernel_fitted_q_iteration": ".kernel_fqi",
    "train_ddqn": ".ddqn",
}


_exports = LazyExports(__name__, _LAZY, globals())


def __getattr__(name: str) -> Any:
    return _exports.attr(name)


def __dir__() -> list[str]:
    return _exports.dir()
