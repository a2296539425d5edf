"""Eq. 1 of Pro2Guard (valid-transition-aware Laplace smoothing), checked against the paper's data."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from agentguard import InputError
from agentguard.core.types import Step, Trace
from agentguard.predictive.learn import DTMCLearner, count_transitions, smoothed_matrix
from agentguard.spec.predicates import Abstraction, Predicate

# The t103 encoding: per object (Microwave, Spoon): [is Spoon, is Microwave, isToggled, in Microwave]
T103_PREDICATES = {
    f"o{k}_{what}": expr.format(k=k)
    for k in (0, 1)
    for what, expr in (
        ("spoon", 'objects[{k}].objectType == "Spoon"'),
        ("microwave", 'objects[{k}].objectType == "Microwave"'),
        ("toggled", "objects[{k}].isToggled"),
        ("in_microwave", '"Microwave" in objects[{k}].parentReceptacles'),
    )
}


def t103_abstraction() -> Abstraction:
    return Abstraction.from_dict(
        {
            "predicates": T103_PREDICATES,
            "valid_transition": "hamming1",
            "terminal": "finish",
            "unsafe": "o0_toggled and o1_in_microwave",
        }
    )


def _traces_for_t103(interp: dict) -> list[Trace]:
    """30 traces: 01001000 x6 (5 self-loops) -> 01101000 -> finish: counts 150, 30, 0, 0 and 30."""
    s0 = {"objects": interp["01001000"]}
    s2 = {"objects": interp["01101000"]}
    return [Trace([Step(state=s0) for _ in range(6)] + [Step(state=s2)]) for _ in range(30)]


@pytest.mark.data
def test_t103_row_is_the_papers_31_over_184(data_dir):
    folder = data_dir / "pro2guard" / "embodied_dtmcs" / "log_raw_t103"
    model_json = json.loads((folder / "model.json").read_text())
    interp = model_json["state_interpret"]
    ab = t103_abstraction()
    # the abstraction reproduces the data's bit strings from the concrete object lists
    for bits, objs in interp.items():
        if bits != "finish":
            assert ab.abstract({"objects": objs}) == bits
    learner = DTMCLearner(ab, alpha=1, states=[s for s in model_json["states"]])
    learner.add(_traces_for_t103(interp))
    m = learner.model(exact=True)
    i = m.index_of("01001000")
    counts = {m.state_names[j]: int(m.counts[i, j]) for j in range(m.n)}
    assert counts == {"01001000": 150, "01001001": 0, "01101000": 30, "01101001": 0, "finish": 0}
    row = {m.state_names[j]: Fraction(v) for j, v in m.exact[i].items()}
    assert row == {
        "01001000": Fraction(151, 184), "01101000": Fraction(31, 184),
        "01001001": Fraction(1, 184), "finish": Fraction(1, 184),
    }
    # every row of the published model, exactly
    for a, prow in model_json["transition_probs"].items():
        got = {m.state_names[j]: Fraction(v) for j, v in m.exact[m.index_of(a)].items()}
        assert got == {b: Fraction(v) for b, v in prow.items()}, a
    assert np.allclose(m.matrix[i].toarray().ravel()[[m.index_of(s) for s in ("01001000", "01101000")]],
                       [151 / 184, 31 / 184])


def _reconstruct_counts(row: dict[str, str]) -> dict[str, int]:
    """Counts behind an alpha=1 row: n_ij = p_ij * D - 1 with D the least common denominator."""
    fr = {b: Fraction(v) for b, v in row.items()}
    D = math.lcm(*(f.denominator for f in fr.values()))
    return {b: int(f * D - 1) for b, f in fr.items()}


@pytest.mark.data
def test_every_published_embodied_row_from_reconstructed_counts(data_dir):
    """All rows of all embodied DTMCs: Eq. 1 on the reconstructed counts gives the published rationals.

    The valid successors are the published supports (alpha = 1 > 0 gives every valid successor mass).
    """
    folders = sorted((data_dir / "pro2guard" / "embodied_dtmcs").iterdir())
    assert len(folders) > 100
    checked = 0
    for folder in folders:
        mj = json.loads((folder / "model.json").read_text())
        states = mj["states"]
        idx = {s: i for i, s in enumerate(states)}
        n = len(states)
        valid = np.zeros((n, n), bool)
        pairs: list[list[str]] = []
        for a, row in mj["transition_probs"].items():
            for b in row:
                valid[idx[a], idx[b]] = True
            for b, c in _reconstruct_counts(row).items():
                pairs.extend([[a, b]] * c)
        learner = DTMCLearner(alpha=1, valid=valid, states=states)
        learner.add_paths(pairs)
        m = learner.model(exact=True)
        for a, row in mj["transition_probs"].items():
            got = {states[j]: Fraction(v) for j, v in m.exact[idx[a]].items()}
            assert got == {b: Fraction(v) for b, v in row.items()}, (folder.name, a)
            checked += 1
    assert checked > 500


@pytest.mark.data
def test_candle_cabinet_counts(data_dir):
    mj = json.loads((data_dir / "pro2guard" / "examples" / "candle_cabinet" / "model.json").read_text())
    # counts {1: {0: 4, 1: 10}}; state 0 = finish (absorbing)
    learner = DTMCLearner(alpha=1, states=mj["states"], terminal="finish")
    learner.add_paths([["1111110"] * 11] + [["1111110"]] * 3)  # 10 self-loops, 4 ends
    m = learner.model(exact=True)
    i = m.index_of("1111110")
    assert int(m.counts[i].sum()) == 14
    got = {m.state_names[j]: Fraction(v) for j, v in m.exact[i].items()}
    assert got == {"finish": Fraction(5, 16), "1111110": Fraction(11, 16)}


def test_alpha_zero_is_plain_frequency_and_empty_rows_are_defined():
    learner = DTMCLearner(alpha=0, valid="any")
    learner.add_paths([["a", "b", "a", "c"], ["a", "b"]])
    m = learner.model(exact=True)
    a, b, c = (m.index_of(x) for x in "abc")
    assert Fraction(m.exact[a][b]) == Fraction(2, 3) and Fraction(m.exact[a][c]) == Fraction(1, 3)
    assert m.exact[b] == {a: "1"}
    # c is never left and alpha = 0: the alpha -> 0+ limit of Eq. 1, uniform over valid successors
    assert {j: Fraction(v) for j, v in m.exact[c].items()} == {a: Fraction(1, 3), b: Fraction(1, 3), c: Fraction(1, 3)}
    m2 = DTMCLearner(alpha=0, valid="any", empty_row="absorbing").add_paths([["a", "b", "a", "c"]]).model()
    assert m2.matrix[m2.index_of("c"), m2.index_of("c")] == 1.0
    np.testing.assert_allclose(np.asarray(m.matrix.sum(axis=1)).ravel(), 1.0)


def test_eq1_by_hand_with_fractional_alpha():
    # counts a->a 3, a->b 1, valid successors of a: {a, b, c}; alpha = 1/2:
    # (3 + 1/2) / (4 + 3/2) = 7/11, (1 + 1/2)/(11/2) = 3/11, (0 + 1/2)/(11/2) = 1/11
    learner = DTMCLearner(alpha=Fraction(1, 2), valid="any", states=["a", "b", "c"])
    learner.add_paths([["a", "a", "a", "a", "b"]])
    m = learner.model(exact=True)
    assert {j: Fraction(v) for j, v in m.exact[0].items()} == {0: Fraction(7, 11), 1: Fraction(3, 11), 2: Fraction(1, 11)}
    assert m.matrix[0, 0] == pytest.approx(7 / 11, abs=1e-15)


def test_invalid_observed_transition_is_an_error_or_dropped():
    valid = lambda a, b: not (a == "a" and b == "c")
    learner = DTMCLearner(alpha=1, valid=valid)
    learner.add_paths([["a", "c"], ["a", "b"]])
    with pytest.raises(InputError, match="a -> c"):
        learner.model()
    m = DTMCLearner(alpha=1, valid=valid, on_invalid="drop").add_paths([["a", "c"], ["a", "b"]]).model()
    assert m.matrix[m.index_of("a"), m.index_of("c")] == 0
    np.testing.assert_allclose(np.asarray(m.matrix.sum(axis=1)).ravel(), 1.0)


def test_counting_is_exact_against_a_loop():
    rng = np.random.default_rng(0)
    n = 7
    lengths = rng.integers(1, 20, size=300)
    flat = rng.integers(0, n, size=int(lengths.sum()))
    C = count_transitions(flat, lengths, n).toarray()
    ref = np.zeros((n, n))
    pos = 0
    for L in lengths:
        for t in range(L - 1):
            ref[flat[pos + t], flat[pos + t + 1]] += 1
        pos += L
    np.testing.assert_array_equal(C, ref)
    # the large-n path (np.unique) agrees too
    big = count_transitions(flat + 3000, lengths, 3000 + n).toarray()[3000:, 3000:]
    np.testing.assert_array_equal(big, ref)


def test_incremental_equals_batch():
    rng = np.random.default_rng(1)
    paths = [[str(x) for x in rng.integers(0, 4, size=rng.integers(1, 9))] for _ in range(50)]
    a = DTMCLearner(alpha=1).add_paths(paths).model()
    b = DTMCLearner(alpha=1)
    for p in paths:
        b.add_paths([p])
    b = b.model()
    assert a.state_names == b.state_names
    np.testing.assert_allclose(a.matrix.toarray(), b.matrix.toarray())
    np.testing.assert_array_equal(a.counts.toarray(), b.counts.toarray())


def test_smoothed_matrix_rejects_bad_alpha():
    import scipy.sparse as sp

    with pytest.raises(InputError):
        smoothed_matrix(sp.csr_matrix((2, 2)), np.ones((2, 2), bool), alpha=-1)


def test_saved_model_keeps_counts_and_labels(tmp_path):
    ab = Abstraction([Predicate.of("hot", "temp > 50"), Predicate.of("open", "door")],
                     unsafe="hot and open", terminal="finish")
    tr = [Trace([Step(state={"temp": t, "door": d}) for t, d in run])
          for run in ([(20, False), (60, False), (60, True)], [(20, False), (20, True)])]
    m = DTMCLearner(ab, alpha=1).add(tr).model()
    p = tmp_path / "m.json"
    m.save(p)
    from agentguard.predictive.dtmc import DTMC

    back = DTMC.load(p)
    np.testing.assert_array_equal(back.counts.toarray(), m.counts.toarray())
    assert back.state_names == ["00", "10", "11", "finish", "01"] or set(back.state_names) == set(m.state_names)
    assert back.labels["unsafe"][back.index_of("11")] and not back.labels["unsafe"][back.index_of("10")]
    assert back.labels["hot"][back.index_of("10")] and back.labels["finish"][back.index_of("finish")]
    assert back.meta["pac"]["states"]
