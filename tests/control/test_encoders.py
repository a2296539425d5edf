"""Text encoders (control.encoders)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agentguard.control.encoders import ConcatEncoder
from agentguard.envs.driving.encoders import DrivingNumbersEncoder, StateEncoder
from agentguard.core import ParseError
from agentguard.envs import driving as D



def test_encoders():
    texts = [D.observation_text(s) for s in D.sample_initial_states(3, seed=0)]
    z = DrivingNumbersEncoder().encode(texts)
    assert z.shape == (3, 11) and np.all(np.abs(z) < 3)
    with pytest.raises(ParseError):
        DrivingNumbersEncoder().encode(["no numbers here"])
    assert StateEncoder().encode(np.zeros((2, 3))).shape == (2, 4)
    pytest.importorskip("wordllama")
    from agentguard.control.encoders import WordLlamaEncoder

    wl = WordLlamaEncoder(32)
    c = ConcatEncoder([wl, DrivingNumbersEncoder()])
    zc = c.encode(texts)
    assert zc.shape == (3, 43)
    np.testing.assert_array_equal(zc, c.encode(texts))  # deterministic
    assert not np.allclose(zc[0, :32], zc[1, :32])  # different texts, different embeddings
