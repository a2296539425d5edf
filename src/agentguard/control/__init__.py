"""agentguard.control: control-theoretic safety filters (the ReGuard paper).

Modules (heavy dependencies such as torch are imported lazily inside them):

- :mod:`.filter` -- :class:`SafetyFilter`, ``certify(context, action) -> Verdict`` (a Guard)
- :mod:`.bellman` -- the safety Bellman backups (Eq. 3) and the discounted DDQN target (Eq. 5)
- :mod:`.value_iteration` -- exact grid value iteration for Agentic Driving, with validation
- :mod:`.ddqn` -- double DQN on the safety target; :mod:`.encoders` -- text encoders
- :mod:`.driving_guard`, :mod:`.commerce_bench`, :mod:`.driving_bench` -- guards and benchmarks
- :mod:`.baselines` -- myopic and LlamaGuard-style one-step classifier (+ stop)
- :mod:`.token_level` -- token-level Q-values, top-p vocabulary and Eq. 4 blending
"""

from .filter import QFunction, SafetyFilter

__all__ = ["QFunction", "SafetyFilter"]
