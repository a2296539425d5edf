"""Saved model files (``agentguard-dtmc/1`` JSON) a user edited or a tool wrote wrong (session 21).

Holes found and fixed: ``"n": 10**12`` with two transitions allocated label vectors until MemoryError;
a Boolean mask as a label (``[false, false, true]``) was read as the indices 0, 0, 1, so the unsafe
state 2 lost its label and state 0 got it; text was read as numbers (``"1"``); a variable value 1.7
was truncated to 1 (``s=1`` then held in the wrong state); text variables or rewards, an ``exact``
list or a ``meta`` list crashed with ValueError/AttributeError/TypeError; a probability of -5e-10
stayed in the matrix (within the row-sum tolerance). Each is now a one-line ModelError."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.errors import InputError, ModelError
from agentguard.predictive.checker import check
from agentguard.predictive.dtmc import DTMC

BASE: dict[str, Any] = {"format": "agentguard-dtmc/1", "n": 3, "initial": 0,
                        "transitions": [[0, 1, 0.5], [0, 2, 0.5], [1, 1, 1.0], [2, 2, 1.0]], "labels": {"u": [2]}}


def _load(**kw: Any) -> DTMC:
    return DTMC.from_json_dict(json.loads(json.dumps({**BASE, **kw})))


@pytest.mark.parametrize("kw", [
    {"n": 10**12}, {"n": 10**8},
    {"labels": {"u": [False, False, True]}}, {"labels": {"u": ["2"]}}, {"labels": {"u": {"a": 1}}},
    {"variables": {"s": [0, 1.7, 2]}}, {"variables": {"s": ["a", "b", "c"]}}, {"variables": {"s": [0, 1, 2**70]}},
    {"rewards": {"": ["x", 0, 0]}}, {"exact": [1, 2]}, {"meta": [1]},
    {"transitions": [["0", "1", "0.5"], [0, 2, 0.5], [1, 1, 1.0], [2, 2, 1.0]]},
    {"transitions": [[0, 1, 0.5 + 5e-10], [0, 0, -5e-10], [0, 2, 0.5], [1, 1, 1.0], [2, 2, 1.0]]},
    {"transitions": [[0, 1, True], [0, 2, 0.5], [1, 1, 1.0], [2, 2, 1.0]]},
    {"counts": [[0, 1, "3"]]},
])
def test_malformed_model_files_are_one_line_model_errors(kw: dict) -> None:
    with pytest.raises((ModelError, InputError)) as exc:
        _load(**kw)
    assert "\n" not in str(exc.value)


def test_the_base_file_reads_and_checks() -> None:
    m = _load(variables={"s": [0, 1, 2]})
    assert check(m, 'P=? [F "u"]').initial == pytest.approx(0.5)
    assert m.labels["u"].tolist() == [False, False, True]


@settings(max_examples=60, deadline=None)
@given(mask=st.lists(st.booleans(), min_size=3, max_size=3))
def test_a_boolean_mask_is_never_read_as_indices(mask: list[bool]) -> None:
    """Property: whatever the mask, the file is refused (never labels other states than it says)."""
    with pytest.raises(ModelError):
        _load(labels={"u": mask})


@settings(max_examples=60, deadline=None)
@given(idx=st.lists(st.integers(0, 2), max_size=5))
def test_integer_indices_label_exactly_those_states(idx: list[int]) -> None:
    m = _load(labels={"u": idx})
    assert np.flatnonzero(m.labels["u"]).tolist() == sorted(set(idx))
