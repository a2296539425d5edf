"""Fuzz every parser the command line exposes: no traceback, no exit status other than 0/1/2, no hang.

Each target mutates a valid seed (trace JSONL, abstraction spec YAML, PCTL property, PRISM model, STL
laws, agentguard.toml, a tool call's JSON, a policy file) with hypothesis: random byte splices, bytes
that are not UTF-8, numbers out of range (``1e-400``, ``1e400``, huge ranges), deep nesting, cut-off
text. The command runs in-process through :func:`agentguard.cli.main` (the entry point the
``agentguard`` script calls) under a per-example alarm, so a hang fails the test instead of stalling it.
Exit status 3 ("unexpected") is what this hunts: the README promises one line and exit 2 for bad input.

Bounded: ``MAX_EXAMPLES`` per target, no shrinking database, a few seconds per example; the whole file
runs in well under a minute on one core.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard import cli  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MAX_EXAMPLES = int(os.environ.get("AGENTGUARD_FUZZ_EXAMPLES", "25"))  # raise for a longer hunt
HANG_S = 20  # one example that runs longer than this is a hang (generous: CI shares its cores)

PRISM = """dtmc
const int N = 4;
module m
    s : [0..N] init 1;
    [] s=0 -> (s'=0);
    [] s=1 -> 1/2 : (s'=2) + 1/2 : (s'=3);
    [] s=2 -> 0.25 : (s'=0) + 0.75 : (s'=4);
    [] s=3 -> 1/3 : (s'=1) + 2/3 : (s'=3);
    [] s=4 -> (s'=4);
endmodule
label "unsafe" = s=0;
"""
PROPERTY = 'P=? [ !"unsafe" U<=5 (s=4 | (s=2 & !(s=3))) ]'
LAWS = """law38_sub1_1 = (trafficLightAhead.color == green) & (stoplineAhead(2) | junctionAhead(2)) & ~PriorityNPCAhead;
law38_sub1_2 = F[0,2](speed > 0.5);
law38_sub1 = G (law38_sub1_1 -> law38_sub1_2);
law44 = G ((speed > 20) -> F[0,3] (speed < 15.5));
"""
TOML = """[stack]
name = "fuzz"
on_error = "halt"

[[guards]]
type = "tool-rules"
name = "no-deletes"
deny = ["delete_*", "*__delete_*"]

[[guards]]
type = "tool-rules"
name = "internal-mail"
[[guards.arguments]]
tool = "send_email"
arg = "to"
match = '.+@example\\.com'
"""
CALL = '{"name": "send_email", "arguments": {"to": "a@example.com", "n": [1, 2.5e3, {"k": null}]}}'
POLICY = (REPO / "src/agentguard/policies/library/mind2web_sc.py").read_text(encoding="utf-8")
SPEC = (REPO / "examples/microwave_spec.yaml").read_text(encoding="utf-8")
TRACES = "".join((REPO / "examples/microwave_traces.jsonl").read_text(encoding="utf-8").splitlines(True)[:3])

#: Fragments that once broke a reader: non-UTF-8 bytes, out-of-range numbers, deep nesting, huge ranges.
NASTY = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x00", b"1e-400", b"1e400", b"-0", b"nan", b"inf",
         b"99999999999999999999999999999", b"[0..2000000000]", b"(" * 3000, b"[" * 3000, b"{" * 3000,
         b"!" * 3000, b"F " * 2000, b"- " * 2000, b'"\\u0000"', b"\r\n", b"\t", b"'", b'"', b"U<=", b"P>=1e-400",
         b"&", b"|", b"->", b"=", b";", b":", b"\xef\xbb\xbf", b"G(", b"~", b"0x", b"1/0", b"0/0"]


class Hang(BaseException):
    """Raised by the alarm; a BaseException so no ``except Exception`` in the code under test eats it."""


def _alarm(_sig, _frame):
    raise Hang(f"no answer within {HANG_S} s")


def mutated(seed: str) -> st.SearchStrategy[bytes]:
    """``seed`` as bytes with up to 4 splices (random bytes or a NASTY fragment replacing a random
    slice), or cut short, or a NASTY fragment repeated alone."""
    raw = seed.encode()
    n = len(raw)
    splice = st.tuples(st.integers(0, n), st.integers(0, 40),
                       st.one_of(st.binary(max_size=12), st.sampled_from(NASTY)))

    def apply(edits: list[tuple[int, int, bytes]]) -> bytes:
        out = raw
        for pos, cut, ins in edits:
            pos = min(pos, len(out))
            out = out[:pos] + ins + out[pos + cut:]
        return out

    return st.one_of(
        st.lists(splice, min_size=1, max_size=4).map(apply),
        st.integers(0, n).map(lambda k: raw[:k]),
        st.tuples(st.sampled_from(NASTY), st.integers(1, 50)).map(lambda t: t[0] * t[1]),
        st.binary(max_size=200),
    )


def run_cli(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main(argv)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Hang as exc:  # reported as a failed assertion with the input, not as a crash
                code, err = -1, io.StringIO(f"HANG: {exc}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, err.getvalue()


def assert_clean(code: int, err: str, data: bytes) -> None:
    assert "Traceback" not in err, (data[:300], err[-2000:])
    assert code in (0, 1, 2), (code, data[:300], err[-600:])
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) <= 1, err[-600:]


FUZZ = settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                derandomize=not os.environ.get("AGENTGUARD_FUZZ_EXAMPLES"),
                suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    (d / "ok.prism").write_text(PRISM)
    (d / "ok.yaml").write_text(SPEC)
    (d / "ok.jsonl").write_text(TRACES)
    (d / "ok.toml").write_text(TOML)
    return d


def test_seeds_are_valid(files):
    """Each seed parses (exit 0/1), so the mutations start from inputs the readers accept."""
    d = files
    for argv in (["check", str(d / "ok.prism"), "-p", PROPERTY, "--json"],
                 ["learn", str(d / "ok.jsonl"), "--spec", str(d / "ok.yaml"), "--out", str(d / "m.json"), "--json"],
                 ["check-config", str(d / "ok.toml")],
                 ["decide", str(d / "ok.toml"), CALL]):
        code, err = run_cli(argv)
        assert code in (0, 1) and "error" not in err, (argv, err)
    (d / "laws.txt").write_text(LAWS)
    code, err = run_cli(["laws", str(d / "laws.txt"), "--json"])
    assert code == 0, err


@FUZZ
@given(data=mutated(PROPERTY))
def test_fuzz_pctl_property(files, data):
    code, err = run_cli(["check", str(files / "ok.prism"), "-p", data.decode("utf-8", "replace"), "--json"])
    assert_clean(code, err, data)


@FUZZ
@given(data=mutated(PRISM))
def test_fuzz_prism_model(files, data):
    f = files / "fuzz.prism"
    f.write_bytes(data)
    code, err = run_cli(["check", str(f), "-p", 'P=? [F "unsafe"]', "--json"])
    assert_clean(code, err, data)


@FUZZ
@given(data=mutated(TRACES))
def test_fuzz_trace_jsonl(files, data):
    f = files / "fuzz.jsonl"
    f.write_bytes(data)
    code, err = run_cli(["learn", str(f), "--spec", str(files / "ok.yaml"), "--out", str(files / "t.json"), "--json"])
    assert_clean(code, err, data)


@FUZZ
@given(data=mutated(SPEC))
def test_fuzz_spec_yaml(files, data):
    f = files / "fuzz.yaml"
    f.write_bytes(data)
    code, err = run_cli(["learn", str(files / "ok.jsonl"), "--spec", str(f), "--out", str(files / "s.json"), "--json"])
    assert_clean(code, err, data)


@FUZZ
@given(data=mutated(LAWS))
def test_fuzz_stl_laws(files, data):
    f = files / "fuzz_laws.txt"
    f.write_bytes(data)
    code, err = run_cli(["laws", str(f), "--json"])
    assert_clean(code, err, data)


@FUZZ
@given(data=mutated(TOML))
def test_fuzz_agentguard_toml(files, data):
    f = files / "fuzz.toml"
    f.write_bytes(data)
    code, err = run_cli(["check-config", str(f)])
    assert_clean(code, err, data)


@FUZZ
@given(data=mutated(CALL))
def test_fuzz_tool_call_json(files, data):
    code, err = run_cli(["decide", str(files / "ok.toml"), data.decode("utf-8", "replace"),
                         "--metadata", '{"user_info": {"age": 1e400}}'])
    assert_clean(code, err, data)


@FUZZ
@given(data=mutated(POLICY))
def test_fuzz_policy_file(files, data, monkeypatch_module):
    f = files / "fuzz_policy.py"
    f.write_bytes(data)
    code, err = run_cli(["verify", "--no-tests", str(f)])
    assert_clean(code, err, data)


@pytest.fixture(scope="module")
def monkeypatch_module():
    """Nagini is not what is fuzzed here: a policy that loads is reported proved without running it."""
    from agentguard.cli import policies

    mp = pytest.MonkeyPatch()
    mp.setattr(policies, "_prove", lambda paths, as_json, out, specs=None: 0)
    yield mp
    mp.undo()


@pytest.mark.parametrize("argv_of, data", [
    (lambda d, f: ["learn", f, "--spec", str(d / "ok.yaml"), "--out", str(d / "x.json")], b'{"steps": [\xff]}\n'),
    (lambda d, f: ["learn", str(d / "ok.jsonl"), "--spec", f, "--out", str(d / "x.json")], b"name: \xff\xfe\n"),
    (lambda d, f: ["verify", "--no-tests", f], b"def f(x):\n    return '\xff'\n"),
    (lambda d, f: ["check-config", f], b"[stack]\nname = '\xff'\n"),
    (lambda d, f: ["learn", f, "--spec", str(d / "ok.yaml"), "--out", str(d / "x.json")], b"[" * 100_000 + b"\n"),
    (lambda d, f: ["learn", str(d / "ok.jsonl"), "--spec", f, "--out", str(d / "x.json")],
     b"predicates:\n  p: " + b"(" * 5000 + b"x" + b")" * 5000 + b"\nunsafe: p\n"),
])
def test_named_bad_inputs_are_one_line_exit_2(files, argv_of, data, monkeypatch_module):
    """The classes of failure the issue found (non-UTF-8 files, deep nesting) as fixed examples."""
    f = files / "named.bin"
    f.write_bytes(data)
    code, err = run_cli(argv_of(files, str(f)))
    assert code == 2 and "Traceback" not in err, err[-600:]
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1, err


def test_deep_property_and_tiny_probability_are_one_line_exit_2(files):
    for prop in ("P=? [ " + "!" * 5000 + '"unsafe" ]', "P=? [ " + "(" * 3000 + "s=1" + ")" * 3000 + " ]",
                 "P>=1e-400 [ F s=0 ]", "P<=1e400 [ F s=0 ]"):
        code, err = run_cli(["check", str(files / "ok.prism"), "-p", prop, "--json"])
        assert code in (0, 2) and "Traceback" not in err, (prop[:40], err[-600:])
        if code == 2:
            assert len(err.strip().splitlines()) == 1, err


def test_input_failure_maps_only_input_errors():
    assert cli.input_failure(RecursionError()) and cli.input_failure(OverflowError("x"))
    assert cli.input_failure(MemoryError())
    assert "0xff at position 0" in cli.input_failure(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"))
    assert cli.input_failure(KeyError("bug")) is None and cli.input_failure(TypeError("bug")) is None
    assert cli.one_line("a\nb\r\n  c") == "a b c"
