"""Commerce critics' inputs: FQI transitions (gamma = 1 convention), and no numeric side channel on the
text-only ReGuard path."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("torch")

from agentguard.bench import commerce_latent as T
from agentguard.control.encoders import CachedEncoder, ConcatEncoder, HiddenStateEncoder
from agentguard.core import Context, Decision
from agentguard.core.errors import InputError
from agentguard.envs import commerce as C


def test_training_states_are_chains_with_three_actions_and_prefix_stable():
    carts, acts = T.training_states(40, seed=2, bundles=True)
    c2, a2 = T.training_states(25, seed=2, bundles=True)
    assert [C.render_tree(c) for c in carts[:25]] == [C.render_tree(c) for c in c2] and (acts[:25] == a2).all()
    assert (acts[:, 0] == 0).all() and (acts[:, 1] != acts[:, 2]).all() and ((acts[:, 1:3] >= 1).all())
    for c, row in zip(carts, acts):  # at the last click every action is free (terminal): all are taken
        taken = sorted(row[row >= 0])
        assert taken == (list(range(C.N_ACTIONS)) if c.actions_left == 1 else sorted(row[:3]))
    _, with_noop = T.training_states(40, seed=2, bundles=True, noop=True)
    for c, row in zip(carts, with_noop):
        assert set(range(len(c.items) + 1, C.N_ACTIONS)) <= set(row)
    for i in range(len(carts) - 1):  # the chain's click leads to the next state unless the order was placed
        nxt, done = C.step(carts[i], int(acts[i, 1]))
        if not done:
            assert C.render_tree(nxt) == C.render_tree(carts[i + 1])
    assert any(c.bundles for c in carts)


def test_transitions_follow_the_commerce_eq5_convention():
    """Checkout: terminal with l+ = margin / budget; other clicks: l+ = NON_TERMINAL_L unless the last click
    places the order; terminal successors are never encoded (their z+ stays 0)."""
    carts, acts = T.training_states(30, seed=1)
    seen = []

    def enc(cs):
        seen.extend(cs)
        return T.CommerceStateEncoder().encode(cs)

    t = T.transitions(enc, carts, acts)
    n = len(carts)
    assert t.z.shape == (int((acts >= 0).sum()), 22) and np.allclose(t.z[:n], T.CommerceStateEncoder().encode(carts))
    assert t.done[:n].all() and np.allclose(t.l_next[:n], [c.margin / C.BUDGET for c in carts])
    r = n
    for j in range(1, acts.shape[1]):
        for i, c in enumerate(carts):
            if acts[i, j] < 0:
                continue
            nxt, done = C.step(c, int(acts[i, j]))
            assert t.a[r] == acts[i, j] and np.allclose(t.z[r], t.z[i])
            assert t.done[r] == done == (c.actions_left == 1)
            assert t.l_next[r] == pytest.approx(nxt.margin / C.BUDGET if done else T.NON_TERMINAL_L)
            assert done == (not t.z_next[r].any())
            r += 1
    assert r == len(t.a) and len(seen) == n + int((~t.done).sum())


def test_fqi_privileged_critic_learns_the_exact_value_sign():
    """The gamma = 1 FQI of the commerce critic on 300 states recovers the exact safe set far above the
    constant answer (an independent oracle: backward induction)."""
    from agentguard.control.fqi import FQIConfig

    carts, acts = T.training_states(300, seed=0)
    m = T.train_critic("privileged", carts, acts, config=FQIConfig(gamma_start=1.0, gamma_end=1.0, iterations=8,
                                                                    epochs=60, hidden=(64, 64), seed=0))
    f = T.text_filter(m, T.CommerceNumbersEncoder(), "p")
    ev = T.eval_states(300, seed=0)
    s = T.value_scores(f.q_batch([C.render_tree(c) for c in ev]).max(1), ev)
    assert 0.2 < s["safe_fraction"] < 0.8 and s["balanced_accuracy"] > 0.8
    with pytest.raises(InputError):
        T.cart_encoder("numbers-please")


def test_value_scores_against_hand_counts():
    carts = [C.Cart([(0, 60.0)], 1), C.Cart([(0, 10.0)], 1), C.Cart([(0, 30.0), (1, 30.0)], 1)]
    # exact: 60 -> remove it (safe); 10 safe; 30+30 with one click -> 30 (safe): all safe
    s = T.value_scores(np.array([1.0, -1.0, 2.0]), carts)
    assert s["safe_fraction"] == 1.0 and s["value_f1"] == pytest.approx(0.8)  # precision 1, recall 2/3


@pytest.mark.slow
def test_commerce_reguard_path_has_no_numeric_side_channel(gemma, recording, tmp_path, monkeypatch):
    """The text-only commerce critic reads the page's token ids and nothing else: the page parsers are
    disabled and the decision still works; the tokenizer saw exactly the page; changing one price in the
    text changes the latent; no numbers encoder sits on the path."""
    from agentguard.control.fqi import FQIConfig

    model, tok = gemma
    rec = recording(tok)
    enc = CachedEncoder(HiddenStateEncoder(model, rec, layer=1, pool="w4", name="gemma-L1-w4"), tmp_path)
    carts, acts = T.training_states(4, seed=3, bundles=True)
    m = T.train_critic("text", carts, acts, pca=3, bundles=True, text=enc,
                       config=FQIConfig(gamma_start=1.0, gamma_end=1.0, hidden=(8,), iterations=2, epochs=3))
    filt = T.text_filter(m, T.cart_encoder("text", True, enc)[1], "reguard")
    path, todo = [], [filt.encoder]
    while todo:
        e = todo.pop()
        path.append(e)
        todo += [e.encoder] if getattr(e, "encoder", None) is not None else []
        todo += list(getattr(e, "encoders", []))
    assert not any(isinstance(e, (T.CommerceNumbersEncoder, T.CommerceStateEncoder, ConcatEncoder)) for e in path)

    def boom(*a, **k):
        raise AssertionError("a page parser was called on the ReGuard path")

    for name in ("parse_cart_text", "parse_bundle_rows"):
        monkeypatch.setattr(C, name, boom)
    page = C.render_tree(C.random_cart(np.random.default_rng(9), 2, 3, bundles=True))
    rec.seen.clear()
    v = filt.certify(Context(state=page), "0")
    assert v.decision in (Decision.ALLOW, Decision.RECOVER)
    assert rec.seen == [[page]]
    price = re.search(r"\$(\d+\.\d\d)", page).group(1)
    other = page.replace(price, f"{float(price) + 7.31:.2f}")
    assert other != page
    z = enc.encode([page, other])
    assert np.linalg.norm(z[0] - z[1]) > 1e-4 * np.linalg.norm(z[0])


def test_text_plus_numbers_projects_only_the_text_part():
    """The "text + parsed numbers" critic: PCA on the text encoder's part, the 22 parsed numbers appended
    unchanged; the deployed filter rebuilds the same map (its input equals the training input)."""
    pytest.importorskip("wordllama")
    from agentguard.control.encoders import WordLlamaEncoder
    from agentguard.control.fqi import FQIConfig

    wl = WordLlamaEncoder(64)
    carts, acts = T.training_states(30, seed=4)
    m = T.train_critic("text+numbers", carts, acts, pca=5, text=wl,
                       config=FQIConfig(gamma_start=1.0, gamma_end=1.0, hidden=(8,), iterations=2, epochs=2))
    f = T.text_filter(m, T.cart_encoder("text+numbers", False, wl)[1], "tn")
    assert f.encoder.dim == 5 + 22 == m.in_dim
    pages = [C.render_tree(c) for c in carts[:3]]
    z = f.encoder.encode(pages)
    assert np.allclose(z[:, 5:], T.CommerceNumbersEncoder().encode(pages))
    mm = m.meta
    want = ((wl.encode(pages) - np.asarray(mm["proj_mean"])) / np.asarray(mm["proj_std"])) @ np.asarray(
        mm["proj_components"]).T / np.asarray(mm["proj_scale"])
    assert np.allclose(z[:, :5], want, atol=1e-4)
    assert f.q_batch(pages).shape == (3, C.N_ACTIONS)
