"""Native engine vs Storm (the independent oracle): random chains and all 200 Pro2Guard DTMCs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from agentguard.predictive.checker import check
from agentguard.predictive.dtmc import DTMC

stormpy = pytest.importorskip("stormpy")

from agentguard.predictive.storm_engine import check_storm, prism_values


def random_dtmc(n: int, seed: int) -> DTMC:
    rng = np.random.default_rng(seed)
    k = 3
    cols = rng.integers(0, n, size=(n, k))
    w = rng.integers(1, 9, size=(n, k)).astype(float)
    w /= w.sum(1, keepdims=True)
    P = sp.csr_matrix((w.ravel(), (np.repeat(np.arange(n), k), cols.ravel())), shape=(n, n)).tolil()
    for i in rng.choice(n, size=max(2, n // 10), replace=False):  # absorbing states
        P[i] = 0
        P[i, i] = 1
    labels = {"bad": rng.random(n) < 0.1, "ok": rng.random(n) < 0.8}
    return DTMC(P.tocsr(), 0, labels, {"s": np.arange(n)})


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("prop", ['P=? [F "bad"]', 'P=? [G !"bad"]', 'P=? ["ok" U "bad"]',
                                  'P=? [F<=7 "bad"]', 'P=? ["ok" U<=5 "bad"]', 'P=? [X "bad"]'])
def test_random_chains_agree_with_storm(seed, prop):
    m = random_dtmc(60, seed)
    ours = check(m, prop).values
    theirs = check_storm(m, prop).values  # explicit route, Storm's default solver
    assert np.max(np.abs(ours - theirs)) < 1e-6
    sound = check_storm(m, prop, mode="sound").values
    assert np.max(np.abs(ours - sound)) < 1e-5


@pytest.mark.data
def test_all_200_release_dtmcs_agree_with_storm(data_dir):
    """P=? [F unsafe] from every state of every model: native vs Storm's own PRISM parser, default
    solver (to 1e-6) and exact rational mode (to 1e-9). Unsafe sets: see read_pro2guard."""
    from agentguard.predictive.prism import read_pro2guard

    dirs = sorted(p.parent for p in (data_dir / "pro2guard").glob("*_dtmcs/**/dtmc.prism"))
    assert len(dirs) == 200
    assert sum("av_dtmcs" in str(d) for d in dirs) == 7
    worst_default = worst_exact = 0.0
    nonempty = 0
    for d in dirs:
        m = read_pro2guard(d)
        idx = np.flatnonzero(m.labels["unsafe"])
        nonempty += idx.size > 0
        target = " | ".join(f"s={i}" for i in idx) or "false"
        ours = check(m, 'P=? [F "unsafe"]').values
        default, exact = (prism_values(d / "dtmc.prism", [f"P=? [F {target}]"], mode)[0]
                          for mode in ("default", "exact"))
        worst_default = max(worst_default, float(np.max(np.abs(ours - default))))
        worst_exact = max(worst_exact, float(np.max(np.abs(ours - exact))))
    assert worst_default < 1e-6, worst_default
    assert worst_exact < 1e-9, worst_exact
    assert nonempty >= 199  # the comparison is not trivially 0 = 0


@pytest.mark.data
def test_read_pro2guard_labels(data_dir):
    from agentguard.predictive.prism import read_pro2guard

    av = read_pro2guard(data_dir / "pro2guard/av_dtmcs/s1")
    assert av.state_names[66] == "100000000" and av.labels["collision"].tolist().count(True) == 1
    assert av.labels["unsafe"][66] and av.labels["unsafe"][64] and not av.labels["unsafe"][65]
    assert av.meta["deadlocks_fixed"] == [65, 66]  # reach and collision have no commands: self-loops, as in Storm
    hh = read_pro2guard(data_dir / "pro2guard/embodied_dtmcs/log_raw_t103")
    # spec "Spoon in Microwave and Microwave on": only 01101001 (index 3)
    assert np.flatnonzero(hh.labels["unsafe"]).tolist() == [3]
    assert hh.state_names[0] == "01001000" and hh.labels["finish"][4]
    r = check(hh, 'P=? [F "unsafe"]')
    assert r.initial == pytest.approx(check(hh, "P=? [F s=3]").initial)


def test_prism_route_with_lower_bound_and_extra_labels():
    """Variable range [1..4]: Storm's valuations are mapped to index = value - 1; labels computed
    outside the file reach Storm as appended PRISM labels."""
    from agentguard.predictive.prism import read_prism

    text = """dtmc
const double p = 1/4;
module walk
    x : [1..4] init 3;
    [] x=1 | x=4 -> true;
    [] x>1 & x<4 -> p : (x'=x-1) + 1-p : (x'=x+1);
endmodule
"""
    m = read_prism(text)
    m.labels["top"] = m.variables["x"] == 4
    for prop in ("P=? [F x=4]", 'P=? [F "top"]', "P=? [F<=3 x=1]"):
        ours = check(m, prop).values
        for mode in ("default", "exact"):
            theirs = check_storm(m, prop, mode=mode, prism=text).values
            assert np.max(np.abs(ours - theirs)) < 1e-9, (prop, mode)
    np.testing.assert_allclose(check(m, "P=? [F x=4]").values, [0, 9 / 13, 12 / 13, 1], atol=1e-14)
