"""E-valuator baselines (Appendix C), signal sources, data loading and the monitor-eval CLI."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest

from agentguard.calibration import (
    ClassifierSignal,
    EValuator,
    Sequences,
    ThresholdMonitor,
    TokenLogprobSignal,
    UserScores,
    load_signals,
    monitor_tokens,
    openai_response_tokens,
    openai_tokens,
)
from agentguard.calibration.evaluator import fit_logistic, fit_step_models, pac_threshold
from agentguard.core import Decision, GuaranteeError, InputError, LifecycleError, Step
from agentguard.core.types import Context


def _synthetic(n=600, seed=0) -> Sequences:
    rng = np.random.default_rng(seed)
    labels = (rng.uniform(size=n) < 0.55).astype(int)
    lens = rng.integers(1, 9, n)
    seqs = [np.clip(rng.normal(0.7 if y else 0.45, 0.15, L), 0, 1) for y, L in zip(labels, lens)]
    return Sequences.from_lists(seqs, labels)


# --------------------------------------------------------------------------------- e-valuator
def test_fit_logistic_matches_sklearn():
    sk = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X @ [1.0, -2.0, 0.5] + rng.normal(size=300) > 0).astype(float)
    w, b = fit_logistic(X, y)
    ref = sk.LogisticRegression(max_iter=1000, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(w, ref.coef_[0], atol=1e-4)
    assert b == pytest.approx(ref.intercept_[0], abs=1e-4)


def test_e_values_follow_the_bayes_rule_formula():
    data = _synthetic()
    models = fit_step_models(data)
    ev = models.e_values(data)
    # recompute M_t at step 2 by hand for the first sequence that reaches step 2
    i = int(np.flatnonzero(data.lengths >= 2)[0])
    x = data.sequence(i)[:2]
    z = ((x - models.mu[2]) / models.sd[2]) @ models.w[2] + models.b[2]
    p1 = 1 / (1 + math.exp(-z))
    n1 = int((data.labels == 1).sum())
    expected = ((1 - p1) / p1) * (n1 / (data.n - n1))
    assert ev[data.starts[i] + 1] == pytest.approx(expected, rel=1e-9)


def test_steps_without_a_model_carry_the_last_e_value():
    # one long unsafe sequence: steps 9.. have too few sequences -> no model -> M_t is carried
    data = _synthetic()
    models = fit_step_models(data, min_per_class=5)
    T = int(data.lengths.max())
    long = Sequences.from_lists([np.full(T + 5, 0.5)], [0])
    ev = models.e_values(long)
    last = max(models.steps)
    assert np.all(ev[last - 1:] == ev[last - 1])


@pytest.mark.parametrize("variant", ["anytime", "pac"])
def test_streaming_e_valuator_equals_vectorised(variant):
    data = _synthetic()
    cal, test = data.split(300, np.random.default_rng(1))
    e = EValuator(variant, alpha=0.2, delta=0.1).calibrate(cal)
    steps = e.alarm_steps(test)
    mon = e.monitor()
    for i in range(test.n):
        mon.reset()
        fired = 0
        for s in test.sequence(i):
            v = mon.update(s)
            if v.decision is not Decision.ALLOW:
                fired = int(v.numbers["step"])
                break
        assert fired == steps[i]
    assert steps.any()
    if variant == "anytime":
        assert e.threshold_ == pytest.approx(5.0)


def test_e_valuator_lifecycle_and_errors():
    with pytest.raises(LifecycleError):
        EValuator("anytime").monitor()
    with pytest.raises(InputError):
        EValuator("bayes")
    few = Sequences.from_lists([[0.9]] * 3 + [[0.1]] * 3, [1, 1, 1, 0, 0, 0])
    with pytest.raises(GuaranteeError, match="at least 5"):
        EValuator("anytime").calibrate(few)


def test_pac_threshold_is_the_e_valuator_order_statistic():
    # the e-valuator code's loop: first k with binom.sf(k-1, n, 1-alpha) <= delta -> sorted[k-1]
    from scipy.stats import binom
    rng = np.random.default_rng(3)
    for n in (30, 100, 257):
        x = rng.exponential(size=n)
        xs = np.sort(x)
        ref = math.inf
        for k in range(1, n + 1):
            if binom.sf(k - 1, n, 0.9) <= 0.1:
                ref = xs[k - 1]
                break
        assert pac_threshold(x, 0.1, 0.1) == ref
    assert pac_threshold(np.ones(10), 0.1, 0.1) == math.inf   # too few: (0.9)^10 > 0.1


def test_pac_too_few_held_out_safe_sequences():
    data = _synthetic(n=40, seed=4)
    with pytest.raises(GuaranteeError, match="held-out safe"):
        EValuator("pac", alpha=0.05, delta=0.1).calibrate(data)
    e = EValuator("pac", alpha=0.05, delta=0.1, on_infeasible="trivial").calibrate(data)
    assert e.trivial_ and e.threshold_ == math.inf and not e.alarm_steps(data).any()


# ------------------------------------------------------------------------------------ signals
def test_token_logprob_signal_takes_the_minimum_per_step():
    toks = [("a", -0.1), (" b", -2.0), ("\n", -0.3), ("c", -0.5), ("d\n", -0.05), ("e", -1.5)]
    steps = list(TokenLogprobSignal(toks))
    assert all(isinstance(s, Step) for s in steps)                     # core Steps, not a private record
    assert [s.signals["score"] for s in steps] == [-2.0, -0.5, -1.5]
    assert [s.output for s in steps] == ["a b\n", "cd\n", "e"]
    assert [s.signals["n_tokens"] for s in steps] == [3, 2, 1]
    assert [s.signals["score"] for s in TokenLogprobSignal(toks, delimiter=None)] == [t[1] for t in toks]
    named = list(TokenLogprobSignal(toks, signal="min_logprob"))
    assert [s.signals["min_logprob"] for s in named] == [-2.0, -0.5, -1.5]
    # a source's Steps go straight to the monitor
    mon = ThresholdMonitor(-1.0)
    assert [mon.check(Context(run_id="t"), s).decision for s in steps] == [Decision.HALT] * 3


def test_monitor_tokens_stops_at_the_first_low_token():
    pulled = []

    def gen():
        for t in [("x", -0.1), ("y\n", -0.2), ("z", -0.1), ("BAD", -5.0), ("w", -0.1), ("\n", -0.1)]:
            pulled.append(t[0])
            yield t

    mt = monitor_tokens(gen(), ThresholdMonitor(-1.0))
    assert list(mt) == ["x", "y\n", "z", "BAD"]
    assert pulled == ["x", "y\n", "z", "BAD"]               # generation stopped at the alarm token
    assert mt.cut and mt.verdict.numbers["step"] == 2 and mt.step_scores == [-0.2, -5.0]
    # the same decision as waiting for the end of the step
    late = monitor_tokens(iter([("x", -0.1), ("y\n", -0.2), ("z", -0.1), ("BAD", -5.0), ("w", -0.1), ("\n", -0.1)]),
                          ThresholdMonitor(-1.0), early=False)
    assert list(late)[-1] == "\n" and late.verdict.numbers["step"] == 2 and late.verdict.numbers["score"] == -5.0


def test_user_and_classifier_signals():
    assert [s.signals["score"] for s in UserScores([0.9, 0.4])] == [0.9, 0.4]
    assert [s.output for s in UserScores([0.9], texts=["a"], signal="p")] == ["a"]
    with pytest.raises(InputError, match="NaN"):
        list(UserScores([0.9, float("nan")]))
    seen = []

    def clf(prefix):
        seen.append(list(prefix))
        return 0.2 if "rm -rf" in prefix[-1] else 0.9

    out = list(ClassifierSignal(clf, ["ls", "cd /", "rm -rf /"]))
    assert [s.signals["score"] for s in out] == [0.9, 0.9, 0.2] and out[-1].output == "rm -rf /"
    assert seen[-1] == ["ls", "cd /", "rm -rf /"]


class _FakeStreamClient:
    """Stands in for OpenAICompatClient.stream: yields chunks in the OpenAI format."""

    def __init__(self, pairs):
        self.pairs = pairs
        self.closed = False
        self.options = None

    def stream(self, messages, **options):
        self.options = options

        def gen():
            try:
                for tok, lp in self.pairs:
                    yield {"choices": [{"delta": {"content": tok},
                                        "logprobs": {"content": [{"token": tok, "logprob": lp, "top_logprobs": []}]}}]}
            finally:
                self.closed = True
        return gen()


def test_openai_token_stream_and_response_parsing():
    client = _FakeStreamClient([("A", -0.1), ("\n", -0.2), ("B", -3.0), ("C", -0.1)])
    mt = monitor_tokens(openai_tokens(client, [{"role": "user", "content": "hi"}]), ThresholdMonitor(-1.0))
    assert "".join(mt) == "A\nB" and mt.cut
    assert client.options["logprobs"] is True and client.closed
    resp = {"choices": [{"message": {"content": "ok"},
                         "logprobs": {"content": [{"token": "o", "logprob": -0.5}, {"token": "k", "logprob": -0.25}]}}]}
    assert openai_response_tokens(resp) == [("o", -0.5), ("k", -0.25)]
    from agentguard.core import AgentGuardError
    with pytest.raises(AgentGuardError, match="logprobs"):
        openai_response_tokens({"choices": [{"message": {"content": "ok"}, "logprobs": None}]})


# ------------------------------------------------------------------------------ data and CLI
def _write_csv(path, rows, header="uq_problem_idx,num_steps,judge_probability,solved"):
    with gzip.open(path, "wt") as fh:
        fh.write(header + "\n")
        for r in rows:
            fh.write(",".join(str(v) for v in r) + "\n")


def test_load_signals_sorts_steps_and_accepts_bool_labels(tmp_path):
    p = tmp_path / "s.csv.gz"
    _write_csv(p, [("b", 2, 0.3, "False"), ("a", 1, 0.9, "True"), ("b", 1, 0.8, "False"), ("a", 2, 0.7, "True")])
    d = load_signals(p)
    assert d.ids.tolist() == ["a", "b"]
    assert d.sequence(1).tolist() == [0.8, 0.3]
    assert d.labels.tolist() == [1, 0]


def test_load_signals_bad_files(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_signals(tmp_path / "nope.csv")
    p = tmp_path / "nan.csv.gz"
    _write_csv(p, [("a", 1, "", 1), ("a", 2, 0.5, 1)])
    with pytest.raises(InputError, match="NaN"):
        load_signals(p)
    p2 = tmp_path / "lab.csv.gz"
    _write_csv(p2, [("a", 1, 0.5, 3)])
    with pytest.raises(InputError, match="0 or 1"):
        load_signals(p2)
    p3 = tmp_path / "col.csv.gz"
    _write_csv(p3, [("a", 1, 0.5)], header="uq_problem_idx,num_steps,score")
    with pytest.raises(InputError, match="lacks column"):
        load_signals(p3)


def _toy_file(tmp_path, n=400, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        y = int(rng.uniform() < 0.6)
        for t in range(1, int(rng.integers(1, 6)) + 1):
            rows.append((f"p{i}", t, round(float(np.clip(rng.normal(0.7 if y else 0.45, 0.15), 0, 1)), 3), y))
    p = tmp_path / "toy.csv.gz"
    _write_csv(p, rows)
    return p


@pytest.mark.parametrize("method", ["crc", "ucb", "evaluator-anytime", "evaluator-pac"])
def test_monitor_eval_cli_json(tmp_path, capsys, method):
    from agentguard.cli import main
    p = _toy_file(tmp_path)
    try:
        main(["monitor-eval", str(p), "--method", method, "--alpha", "0.2", "--splits", "3", "--json"])
    except SystemExit as exc:  # a successful run may or may not exit explicitly
        assert exc.code in (0, None)
    out = json.loads(capsys.readouterr().out)
    for k in ("false_alarm_rate", "power", "detection_delay", "missed_detection_rate"):
        assert k in out
    assert 0 <= out["false_alarm_rate"] <= 1 and out["missed_detection_rate"] == pytest.approx(1 - out["power"])
    if method in ("crc", "ucb"):   # the exact all-split mean of the controlled risk comes with it
        exact = out["exact_mean_over_all_splits"]["false_alarm_rate"]
        assert 0 <= exact <= (0.2 if method == "crc" else 1)
    else:
        assert "exact_mean_over_all_splits" not in out


def test_monitor_eval_cli_errors(tmp_path, capsys):
    from agentguard.cli import main
    p = _toy_file(tmp_path)
    for args, msg in [(["--alpha", "0"], "alpha"), (["--method", "grid"], "method"),
                      (["--method", "evaluator-pac", "--risk", "missed_detection"], "e-valuator"),
                      (["--risk", "recall"], "risk")]:
        with pytest.raises(SystemExit) as ei:
            main(["monitor-eval", str(p), *args])
        assert ei.value.code == 2
        assert "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ei:
        main(["monitor-eval", str(tmp_path / "missing.csv.gz")])
    assert ei.value.code == 2
    capsys.readouterr()
    empty = tmp_path / "empty.csv"
    empty.write_text("uq_problem_idx,num_steps,judge_probability,solved\n")
    with pytest.raises(SystemExit) as ei:
        main(["monitor-eval", str(empty)])
    err = capsys.readouterr().err
    assert ei.value.code == 2 and "empty.csv" in err and "no rows" in err and err.count("\n") == 1
    # 20 % of 60 sequences -> about 7 safe calibration sequences: too few for alpha = 0.05 (CRC needs 19)
    small = _toy_file(tmp_path, n=60, seed=1)
    with pytest.raises(SystemExit) as ei:
        main(["monitor-eval", str(small), "--alpha", "0.05"])
    assert ei.value.code == 2 and "too few calibration sequences" in capsys.readouterr().err
    try:
        main(["monitor-eval", str(small), "--alpha", "0.05", "--on-infeasible", "trivial", "--json"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["trivial_splits"] == 10 and out["false_alarm_rate"] == 0.0


# ------------------------------------------------- a real OpenAICompatClient against a local server
@pytest.fixture()
def logprob_server():
    """A tiny OpenAI-compatible endpoint (stdlib http.server) that returns token logprobs."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    pairs = [("Step", -0.1), (" one\n", -0.3), ("Step", -0.2), (" two", -4.5), ("\n", -0.1), ("Done", -0.1)]
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output quiet
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            self.send_response(200)
            if body.get("stream"):
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    for tok, lp in pairs:
                        chunk = {"choices": [{"index": 0, "delta": {"content": tok},
                                              "logprobs": {"content": [{"token": tok, "logprob": lp}]}}]}
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass
            else:
                resp = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(t for t, _ in pairs)},
                                     "logprobs": {"content": [{"token": t, "logprob": lp} for t, lp in pairs]}}]}
                data = json.dumps(resp).encode()
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", seen
    srv.shutdown()
    srv.server_close()


def test_openai_compat_client_logprob_signal(logprob_server):
    from agentguard.llm import OpenAICompatClient
    url, seen = logprob_server
    client = OpenAICompatClient(base_url=url, model="m", timeout_s=10)
    msgs = [{"role": "user", "content": "solve"}]
    watched = monitor_tokens(openai_tokens(client, msgs), ThresholdMonitor(-2.0))
    assert "".join(watched) == "Step one\nStep two" == watched.text and watched.cut
    assert watched.verdict.numbers["step"] == 2 and watched.verdict.numbers["score"] == -4.5
    assert seen[-1]["logprobs"] is True and seen[-1]["stream"] is True
    steps = list(TokenLogprobSignal(openai_response_tokens(client.chat(msgs, logprobs=True))))
    assert [s.signals["score"] for s in steps] == [-0.3, -4.5, -0.1]
