"""Driving latents: the numbers of a driving observation text and the privileged true-state latent.

Both implement :class:`agentguard.control.encoders.TextEncoder` (``name``, ``dim``, ``encode``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...control.encoders import check_texts
from ...core.errors import InputError
from .dynamics import parse_observation

__all__ = ["DrivingNumbersEncoder", "StateEncoder"]


class DrivingNumbersEncoder:
    """The numbers of a driving observation text, scaled to about unit size (11 features).

    goal distance, distances to both edges, heading (cos, sin), and per obstacle the distance and the
    bearing (cos, sin). Raises ParseError on text that is not a driving observation.
    """

    dim = 11
    name = "driving-numbers"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for t in check_texts(texts):
            n = parse_observation(t)
            h = -math.radians(n["heading"])
            row = [n["goal"] / 90.0 - 0.5, n["left"] / 30.0 - 1.0, n["right"] / 30.0 - 1.0, math.cos(h), math.sin(h)]
            for i in range(2):
                b = math.radians(n[f"obs{i}_bearing"])
                row += [n[f"obs{i}_dist"] / 40.0 - 1.0, math.cos(b), math.sin(b)]
            rows.append(row)
        return np.asarray(rows, dtype=np.float32).reshape(-1, self.dim)



class StateEncoder:
    """The *Privileged* latent: the true driving state [p_x, p_y, theta] -> (x, y, cos, sin) scaled."""

    dim = 4
    name = "privileged-state"

    def encode(self, states: Any) -> np.ndarray:
        s = np.atleast_2d(np.asarray(states, dtype=float))
        if s.shape[1] != 3:
            raise InputError("a privileged driving latent needs states [p_x, p_y, theta]")
        return np.column_stack([s[:, 0] / 2.25 - 1.0, s[:, 1] / 1.5 - 1.0, np.cos(s[:, 2]),
                                np.sin(s[:, 2])]).astype(np.float32)
