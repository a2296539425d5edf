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

__all__ = ["LLMDriver"]


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
