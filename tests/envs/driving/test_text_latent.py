"""The text-only ReGuard latent: no numeric side channel, disk cache, batched hidden states, Eq. 5 data."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agentguard.control.ddqn import DDQNConfig, train_ddqn
from agentguard.control.encoders import (
    CachedEncoder,
    ConcatEncoder,
    HiddenStateEncoder,
    ProjectedEncoder,
    StandardizedEncoder,
)
from agentguard.core.errors import InputError
from agentguard.core import Context, Decision
from agentguard.envs import driving as D
from agentguard.envs.driving import dynamics
from agentguard.envs.driving.encoders import DrivingNumbersEncoder, StateEncoder
from agentguard.envs.driving.guard import TextStateAdapter
from agentguard.envs.driving.text_latent import (
    _ridge_f1,
    text_only_filter,
    training_states,
    transitions_for,
)


def _encoders_on_path(enc):
    """Every encoder object reachable from a filter's encoder (wrappers and concatenations)."""
    out, todo = [], [enc]
    while todo:
        e = todo.pop()
        out.append(e)
        todo += [getattr(e, "encoder", None)] if getattr(e, "encoder", None) is not None else []
        todo += list(getattr(e, "encoders", []))
    return out


def _perturb_numbers(text: str) -> str:
    return re.sub(r"\d+\.\d+", lambda m: f"{float(m.group()) + 7.31:.2f}", text)


@pytest.mark.slow
@pytest.mark.parametrize("pool,learner", [("last", "ddqn"), ("w4", "fqi-pca"), ("w4", "kernel-pca"),
                                         ("w4", "kernel-slow")])
def test_reguard_input_path_has_no_numeric_side_channel(gemma, recording, tmp_path, monkeypatch, pool, learner):
    """The guard's input is the token ids of the text and nothing else: the parsers are disabled and the
    decision still works; the tokenizer saw exactly the observation; changing only the numbers in the text
    changes the latent; no numbers encoder or state parser sits on the path. Checked for the DDQN critic on
    the last-token state and for the fitted-Q and kernel critics on windowed states behind a PCA projection
    (and behind its slow features)."""
    from agentguard.control.fqi import FQIConfig, fitted_q_iteration
    from agentguard.envs.driving.text_latent import input_map_state, standardized

    model, tok = gemma
    rec = recording(tok)
    enc = CachedEncoder(HiddenStateEncoder(model, rec, layer=2, pool=pool, name=f"gemma-L2-{pool}"), tmp_path)
    states = training_states(10, seed=5)
    t = transitions_for(enc, states)
    if learner == "ddqn":
        data, std = _standardize(t, enc)
        m = train_ddqn(data, enc.dim, 3, DDQNConfig(hidden=(16,), iterations=20, batch_size=32, seed=0))
    elif learner.startswith("kernel"):  # the kernel critic, saved and reloaded (its input map is stored as
        from agentguard.control.kernel_fqi import KernelFQIConfig, KernelQ, kernel_fitted_q_iteration  # arrays)

        data, std = standardized(t, enc, pca=4, slow=2 if learner == "kernel-slow" else 0)
        m = kernel_fitted_q_iteration(data.z[:10], np.tile(np.arange(10), 3), data, 3, KernelFQIConfig(k=2))
        m.meta.update(input_map_state(std))
        m.save(str(tmp_path / "kq.npz"))
        m = KernelQ.load(str(tmp_path / "kq.npz"))
    else:
        data, std = standardized(t, enc, pca=4)
        m = fitted_q_iteration(data, 4, 3, FQIConfig(hidden=(16,), iterations=3, epochs=5))
    m.meta.update(input_map_state(std))
    filt = text_only_filter(m, enc, epsilon=0.1)
    assert filt.encoder.dim == {"ddqn": enc.dim, "kernel-slow": 2}.get(learner, 4)
    path = _encoders_on_path(filt.encoder)
    assert not any(isinstance(e, (DrivingNumbersEncoder, TextStateAdapter, StateEncoder, ConcatEncoder)) for e in path)

    def boom(*a, **k):
        raise AssertionError("a number parser was called on the ReGuard path")

    for name in ("parse_observation", "state_from_observation"):
        monkeypatch.setattr(dynamics, name, boom)
        monkeypatch.setattr(D, name, boom)
    obs = D.observation_text(np.array([1.0, 2.2, 0.3]))
    rec.seen.clear()
    v = filt.certify(Context(state=obs), "B")
    assert v.decision in (Decision.ALLOW, Decision.RECOVER)
    assert rec.seen == [[obs]]  # the language model saw the observation text, exactly, and only it
    z = enc.encode([obs, _perturb_numbers(obs)])
    assert _perturb_numbers(obs) != obs
    assert np.linalg.norm(z[0] - z[1]) > 1e-3 * np.linalg.norm(z[0])


def _standardize(t, enc):
    from agentguard.envs.driving.text_latent import standardized

    data, std = standardized(t, enc)
    from agentguard.control.ddqn import ReplayBuffer

    return ReplayBuffer(data), std


@pytest.mark.slow
def test_hidden_state_encoder_batches_truncates_and_pools(gemma):
    model, tok = gemma
    texts = [D.observation_text(s) for s in training_states(3, seed=1)] + ["short text"]
    for pool in ("last", "mean"):
        enc = HiddenStateEncoder(model, tok, layer=3, pool=pool, batch_size=4)
        one = np.concatenate([enc.encode([x]) for x in texts])
        np.testing.assert_allclose(enc.encode(texts), one, rtol=1e-3, atol=1e-3)  # padding never leaks
    # the truncated model's output is the full model's layer-3 state under the final norm
    ids = tok(texts[:1], return_tensors="pt")
    with torch.no_grad():
        h = model.model(**ids, output_hidden_states=True).hidden_states[3]
        ref = model.model.norm(h)[0, -1].float().numpy()
    got = HiddenStateEncoder(model, tok, layer=3, pool="last").encode(texts[:1])[0]
    np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-3)
    # windows: the means of 4 equal contiguous position windows of the same states, concatenated
    win = HiddenStateEncoder(model, tok, layer=3, pool="w4", batch_size=4)
    assert win.dim == 4 * 640
    with torch.no_grad():
        full = model.model.norm(h)[0].float().numpy()
    n = full.shape[0]
    edges = [round(i * n / 4) for i in range(5)]
    ref_w = np.concatenate([full[a:b].mean(0) for a, b in zip(edges, edges[1:])])
    np.testing.assert_allclose(win.encode(texts[:1])[0], ref_w, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(win.encode(texts), np.concatenate([win.encode([x]) for x in texts]),
                               rtol=1e-3, atol=1e-3)  # padding never leaks into a window
    with pytest.raises(InputError):
        HiddenStateEncoder(model, tok, layer=3, pool="w0")
    assert len(model.model.layers) == 18  # truncation never touches the shared model


class Counting:
    dim, name = 2, "counting"

    def __init__(self):
        self.calls = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return np.array([[len(t), t.count("a")] for t in texts], np.float32)


def test_cached_encoder_keys_by_text_and_persists(tmp_path):
    inner = Counting()
    c = CachedEncoder(inner, tmp_path)
    z = c.encode(["abc", "aa", "abc"])
    assert inner.calls == [["abc", "aa"]]
    np.testing.assert_array_equal(z, [[3, 1], [2, 2], [3, 1]])
    assert (c.hits, c.misses) == (1, 2)
    c2 = CachedEncoder(Counting(), tmp_path)  # a new process reads the file
    np.testing.assert_array_equal(c2.encode(["aa", "abc"]), [[2, 2], [3, 1]])
    assert c2.encoder.calls == []
    np.testing.assert_array_equal(c2.encode(["b"]), [[1, 0]])
    assert c2.encoder.calls == [["b"]]
    assert c2.encode([]).shape == (0, 2)


def test_standardized_encoder_and_transitions():
    s = training_states(50, seed=2)
    np.testing.assert_array_equal(training_states(20, seed=2), s[:20])  # prefix-stable
    assert np.all((s[:, 0] >= 0) & (s[:, 1] <= D.ROAD_WIDTH))
    t = transitions_for(StateEncoder(), s)
    assert len(t.a) == 150 and set(np.unique(t.a)) == {0, 1, 2}
    nxt = np.concatenate([D.step(s, a) for a in range(3)])
    np.testing.assert_allclose(t.l_next, D.margin(nxt), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(t.done, D.margin(nxt) < 0)
    assert t.done.any() and np.all(t.z_next[t.done] == 0)  # failed successors are never encoded
    std = StandardizedEncoder(Counting()).fit(np.array([[1.0, 0.0], [3.0, 0.0]]))
    np.testing.assert_allclose(std.transform(np.array([[2.0, 0.0], [3.0, 5.0]]))[:, 0], [0.0, 1.0])


def test_projected_encoder_whitens_principal_components():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(400, 2)) @ np.array([[3.0, 0.0], [0.0, 0.5]]) + np.array([10.0, -2.0])
    inner = Counting()
    p = ProjectedEncoder.fit(inner, z, 1)
    assert p.dim == 1 and p.encoder is inner
    x = p.transform(z)
    assert abs(x.mean()) < 1e-5 and abs(x.std(ddof=1) - 1) < 1e-3  # whitened
    # the first component of standardised data with independent features is one of the axes; rebuilt from
    # its stored state it gives the same map
    q = ProjectedEncoder(inner, **{k[len("proj_"):]: v for k, v in p.state().items()})
    np.testing.assert_allclose(q.transform(z[:5]), x[:5], rtol=1e-6)
    with pytest.raises(InputError):
        ProjectedEncoder.fit(inner, z, 3)


def test_ridge_probe_separates_a_linear_label():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(300, 5))
    y = z[:, 0] + 0.5 * z[:, 1] > 0
    assert _ridge_f1(z[:200], y[:200], z[200:], y[200:])["probe_f1"] > 0.9
    assert _ridge_f1(z[:200], rng.random(200) > 0.5, z[200:], y[200:])["probe_f1"] < 0.8


@pytest.mark.slow
def test_gemma_choice_driver_and_eq4_blend(gemma):
    from agentguard.bench.llm_driver import GemmaChoiceDriver

    model, tok = gemma
    drv = GemmaChoiceDriver(model, tok)
    s = np.array([[1.0, 2.2, 0.3]])
    lp = drv.letter_logprobs(s[0])
    assert lp.shape == (3,) and np.all(lp < 0) and np.exp(lp).sum() <= 1.0 + 1e-6
    a = drv(s, None)
    assert a.tolist() == [int(np.argmax(lp))] and drv.calls == 1
    drv(s, None)
    assert drv.calls == 1  # cached by the prompt text
    q = np.zeros((1, 3))
    assert drv.blend(s, q, 0.0).tolist() == a.tolist()  # beta = 0: the LM's own choice
    other = (int(a[0]) + 1) % 3
    q[0, other] = 1.0
    assert drv.blend(s, q, 1e3).tolist() == [other]  # a large beta follows the safety critic
    fast = GemmaChoiceDriver(model, tok, reuse_prefix=True)  # the system prompt's key/values computed once
    for st in (s[0], np.array([30.0, 40.0, -1.0])):
        np.testing.assert_allclose(fast.letter_logprobs(st), GemmaChoiceDriver(model, tok).letter_logprobs(st),
                                   atol=1e-4)
    assert fast.prefix_hits == 2


def test_train_on_states_callback_sees_the_input_scaling():
    """Value F1 measured during training must go through the same standardisation as the final filter."""
    from agentguard.envs.driving.text_latent import train_on_states

    seen = []

    def cb(it, m):
        seen.append("input_mean" in m.meta)
        q_filter = text_only_filter(m, Counting()).q_batch([D.observation_text(np.array([1.0, 1.5, 0.0]))])
        return {"q": float(q_filter.max())}

    m, enc = train_on_states(Counting(), training_states(20, seed=4), 4, batch_size=8, hidden=(4,), callback=cb,
                             log_every=2)
    assert seen == [True, True] and isinstance(enc, StandardizedEncoder)
    assert np.allclose(m.meta["input_mean"], enc.mean) and m.meta["kind"] == "text-only"


def test_slow_features_recover_the_slowly_changing_variable():
    """Slow-feature analysis on transition pairs: a latent that mixes a slow random walk with a larger,
    independent noise is projected onto the walk, where PCA keeps the noise."""
    rng = np.random.default_rng(0)
    n = 3000
    slow = np.cumsum(rng.normal(scale=0.05, size=n + 1))
    fast = rng.normal(scale=3.0, size=(n + 1, 2))
    mix = np.array([[1.0, 0.3, -0.2], [0.2, 1.0, 0.5], [-0.4, 0.1, 1.0]])
    lat = np.column_stack([slow, fast]) @ mix
    z, zn = lat[:-1], lat[1:]
    inner = Counting()
    inner.dim = 3
    p = ProjectedEncoder.fit_slow(inner, z, (z, zn), pca=3, k=1)
    y = p.transform(z)[:, 0]
    assert abs(np.corrcoef(y, slow[:-1])[0, 1]) > 0.99
    assert abs(np.corrcoef(ProjectedEncoder.fit(inner, z, 1).transform(z)[:, 0], slow[:-1])[0, 1]) < 0.5
    assert abs(y.std() - 1) < 1e-2  # unit variance over the fitting states
    # one fixed linear map, rebuilt from its stored state
    q = ProjectedEncoder(inner, **{k[len("proj_"):]: v for k, v in p.state().items()})
    np.testing.assert_allclose(q.transform(z[:5]), p.transform(z[:5]), rtol=1e-5)
    with pytest.raises(InputError):
        ProjectedEncoder.fit_slow(inner, z, (z, zn), pca=2, k=3)
    with pytest.raises(InputError):
        ProjectedEncoder.fit_slow(inner, z, (z, zn[:-1]), pca=2, k=1)


@pytest.mark.slow
def test_gemma_scored_driver_rules_against_the_one_prompt_driver(gemma):
    """The batched, padded scorer gives GemmaChoiceDriver's letter log-likelihoods (normalised over the three
    letters); calibration subtracts the content-free prompt's scores; centring subtracts a mean; the blend
    follows a large-beta critic."""
    from agentguard.bench.llm_driver import GemmaChoiceDriver, GemmaScoredDriver
    from agentguard.core.errors import InputError

    model, tok = gemma
    states = np.array([[1.0, 2.2, 0.3], [3.0, 0.4, -1.0], [0.2, 1.5, 2.0]])
    ref = np.array([GemmaChoiceDriver(model, tok).letter_logprobs(s) for s in states])
    letters = GemmaScoredDriver("letters", model, tok, batch_size=2)  # a padded batch and a batch of one
    want = ref - np.logaddexp.reduce(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(letters.scores(states), want, atol=1e-4)
    cal = GemmaScoredDriver("completion_calibrated", model, tok)
    raw = GemmaScoredDriver("completion", model, tok, cache=cal.cache)
    d = raw.scores(states) - cal.scores(states)  # equal up to the per-row normalisation
    np.testing.assert_allclose(d - d.mean(1, keepdims=True), np.tile(cal._cf - cal._cf.mean(), (3, 1)), atol=1e-4)
    centre = raw.fit_center(states)
    assert np.allclose(centre, np.mean([raw.cache[raw._prompt(s)] for s in states], axis=0))
    q = np.zeros((3, 3))
    q[:, 1] = 1.0
    assert raw.blend(states, q, 1e3).tolist() == [1, 1, 1]
    with pytest.raises(InputError, match="unknown scoring rule"):
        GemmaScoredDriver("nope", model, tok)
