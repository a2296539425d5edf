"""Safety Bellman backups (numpy; torch tensors work too since only min/where/arithmetic are used).

- :func:`safety_backup`: the undiscounted fixed point of Eq. 3 of the ReGuard paper,
  ``Q(z, a) = min{ l(s+), V(z+) }`` with ``V(z) = max_a Q(z, a)``.
- :func:`discounted_safety_target`: the discounted target of Eq. 5 (Appendix A), as used by DDQN::

      y = (1 - gamma) l(s+) + gamma min{ l(s+), Q_target(z+, argmax_a Q(z+, a)) }
      y = l(s+)                                   when s+ is a failure (terminal)

  The double-DQN form evaluates the online network's argmax with the target network.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.errors import InputError

__all__ = ["discounted_safety_target", "safety_backup"]


def safety_backup(l_next: Any, v_next: Any) -> Any:
    """Undiscounted safety Bellman backup: min{ l(s+), V(s+) } (Eq. 3)."""
    return np.minimum(l_next, v_next) if isinstance(l_next, np.ndarray) or np.isscalar(l_next) else \
        l_next.minimum(v_next)


def discounted_safety_target(l_next: Any, q_next: Any, done: Any, gamma: float) -> Any:
    """The DDQN target of Eq. 5: ``(1-gamma) l+ + gamma min(l+, q_next)``, or ``l+`` where ``done``.

    ``q_next`` is ``Q_target(z+, argmax_a Q_online(z+, a))``. Works on numpy arrays and torch tensors.
    """
    if not 0.0 <= gamma <= 1.0:  # NaN included
        raise InputError(f"gamma must be in [0, 1], got {gamma}")
    if isinstance(l_next, np.ndarray) or np.isscalar(l_next):
        y = (1 - gamma) * l_next + gamma * np.minimum(l_next, q_next)
        return np.where(done, l_next, y)
    import torch

    y = (1 - gamma) * l_next + gamma * torch.minimum(l_next, q_next)
    return torch.where(done, l_next, y)
