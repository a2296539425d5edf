"""core.limits (session 21 red team): a configuration's time limits, thresholds and refusing decisions.

Holes fixed: a time limit of ``nan`` (valid TOML and YAML) passed ``timeout <= 0`` and no verdict was ever late
(``elapsed > nan`` is False), so a guard's late ALLOW stood; ``inf``/``1e300`` were no limit; an argument rule or a
proactive guard with ``decision = "allow"`` (or ``false``, read as ALLOW) let the call through when the rule fired;
``threshold = false`` was 0.0 (never alarms) and ``"0.5"`` was read as a number.
"""


import asyncio
import math
import time

import pytest
from hypothesis import given, settings, strategies as st

from agentguard import Context, ToolCall
from agentguard.config import load_config, load_stack, parse_config
from agentguard.core.errors import InputError
from agentguard.core.guard import GuardStack
from agentguard.core.limits import MAX_TIME_LIMIT_S, probability, time_limit
from agentguard.core.shadow import Shadowed
from agentguard.core.types import Decision, Verdict

DENY_DELETES = '[[guards]]\ntype = "tool-rules"\nname = "no-deletes"\ndeny = ["delete_*"]\n'
CTX = Context(run_id="r")
DELETE = ToolCall("delete_file", {"path": "/tmp/x"})


def one_line_refusal(path, *needles: str) -> str:
    with pytest.raises(InputError) as info:
        load_config(path)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg, msg
    for n in needles:
        assert n in msg, msg
    return msg


def one_line_refusal_stack(path, *needles: str) -> str:
    with pytest.raises(InputError) as info:
        load_stack(path)
    msg = str(info.value)
    assert "\n" not in msg, msg
    for n in needles:
        assert n in msg, msg
    return msg


# -- time limits: finite, positive, at most a minute --------------------------------------------------------------

BAD_TOML_TIMEOUTS = ["nan", "+nan", "-nan", "inf", "+inf", "-inf", "-1", "0", "0.0", "61", "1e300", "true", "false",
                     '"0.5"', "[]", "{}"]
BAD_YAML_TIMEOUTS = [".nan", ".NaN", ".inf", "-.inf", "-1", "0", "61", "1e300", "true", "'0.5'", "[]", "{}", "~x"]


@settings(max_examples=40, deadline=None)
@given(value=st.sampled_from(BAD_TOML_TIMEOUTS))
def test_a_stack_time_limit_that_is_no_limit_is_refused_in_toml(tmp_path_factory, value):
    f = tmp_path_factory.mktemp("c") / "agentguard.toml"
    f.write_text(f"[stack]\ntimeout_s = {value}\n" + DENY_DELETES)
    one_line_refusal(f, "stack.timeout_s")


@settings(max_examples=40, deadline=None)
@given(value=st.sampled_from(BAD_YAML_TIMEOUTS))
def test_a_stack_time_limit_that_is_no_limit_is_refused_in_yaml(tmp_path_factory, value):
    f = tmp_path_factory.mktemp("c") / "agentguard.yaml"
    f.write_text(f"stack:\n  timeout_s: {value}\nguards:\n  - type: tool-rules\n    deny: ['delete_*']\n")
    one_line_refusal(f, "stack.timeout_s")


@settings(max_examples=100, deadline=None)
@given(value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**30, 10**30), st.booleans(),
                       st.text(max_size=5), st.none()))
def test_time_limit_accepts_exactly_the_finite_positive_numbers_up_to_the_ceiling(value):
    ok = (type(value) in (int, float) and math.isfinite(value) and 0 < value <= MAX_TIME_LIMIT_S)
    if ok:
        assert time_limit(value, "x") == float(value)
    else:
        with pytest.raises(InputError):
            time_limit(value, "x")


@settings(max_examples=100, deadline=None)
@given(value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.booleans(),
                       st.sampled_from(["0.5", "1", ""])))
def test_probability_accepts_exactly_the_finite_numbers_in_the_unit_interval(value):
    ok = type(value) in (int, float) and math.isfinite(value) and 0 <= value <= 1
    if ok:
        assert probability(value, "x") == float(value)
    else:
        with pytest.raises(InputError):
            probability(value, "x")


class _Late:
    """A guard whose ALLOW comes after any sensible deadline."""

    name = "late"

    def check(self, context, proposal):
        time.sleep(0.2)
        return Verdict.allow(self.name, "late")

    async def acheck(self, context, proposal):
        return self.check(context, proposal)


def test_attack_nan_stack_timeout_let_a_late_allow_stand():
    # before: parse_config took nan (nan <= 0 is False), GuardStack(timeout_s=nan) accepted the late ALLOW
    with pytest.raises(InputError, match="timeout_s"):
        parse_config({"stack": {"timeout_s": float("nan")}, "guards": [{"type": "tool-rules"}]})
    for bad in (float("nan"), float("inf"), -1.0, 0, True, "0.1"):
        with pytest.raises(InputError, match="timeout_s"):
            GuardStack([_Late()], timeout_s=bad)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="timeout_s"):
            Shadowed(None, [_Late()], timeout_s=bad)  # type: ignore[arg-type]
    # a finite limit keeps its guarantee: the late ALLOW fails closed, sync and async
    stack = GuardStack([_Late()], timeout_s=0.05)
    assert stack.check(CTX, DELETE).decision is not Decision.ALLOW
    assert asyncio.run(stack.acheck(CTX, DELETE)).decision is not Decision.ALLOW


# -- the decision a rule refuses with must refuse; a threshold is a number in [0, 1] -------------------------------

def _argument_rule(decision: str) -> str:
    return ('[[guards]]\ntype = "tool-rules"\n[[guards.arguments]]\ntool = "send_email"\narg = "to"\n'
            f"match = '[^@]+@example\\.com'\ndecision = {decision}\n")


EVIL_MAIL = ToolCall("send_email", {"to": "a@evil.com"})


@pytest.mark.parametrize("decision", ['"allow"', '"ALLOW "', "false", "0", "true", "1", '"modify"', '"recover"'])
def test_attack_an_argument_rule_whose_decision_lets_the_call_through(tmp_path, decision):
    # before: the rule fired and its verdict was ALLOW (or MODIFY): a@evil.com went through
    f = tmp_path / "agentguard.toml"
    f.write_text(_argument_rule(decision))
    one_line_refusal_stack(f, "decision")


DECISION_SPELLINGS = st.one_of(
    st.sampled_from([d.name for d in Decision]).flatmap(
        lambda n: st.sampled_from([n, n.lower(), f" {n.title()} "]).map(lambda s: f'"{s}"')),
    st.integers(-1, 7).map(str), st.sampled_from(["true", "false"]))


@settings(max_examples=60, deadline=None)
@given(decision=DECISION_SPELLINGS)
def test_property_an_argument_rule_loads_only_with_a_refusing_decision_and_then_refuses(tmp_path_factory, decision):
    f = tmp_path_factory.mktemp("d") / "agentguard.toml"
    f.write_text(_argument_rule(decision))
    raw = decision.strip('"').strip()
    expected = None
    if decision not in ("true", "false"):
        try:
            expected = Decision.parse(int(raw) if raw.lstrip("-").isdigit() else raw)
        except InputError:
            expected = None
    if expected is None or not expected.refuses:
        one_line_refusal_stack(f, "decision")
        return
    assert load_stack(f).check(CTX, EVIL_MAIL).decision is expected


def test_a_bool_is_never_a_decision():
    for b in (True, False):
        with pytest.raises(InputError):
            Decision.parse(b)
    assert Decision.parse(0) is Decision.ALLOW and Decision.parse("reject") is Decision.REJECT  # unchanged


@pytest.fixture()
def dtmc_file(tmp_path):
    import numpy as np

    from agentguard.predictive.dtmc import DTMC

    # state b: P_safe 0.3 < 0.5, so a proactive guard at 0.5 refuses
    P = np.array([[0.5, 0.0, 0.5, 0.0], [0.0, 0.0, 0.3, 0.7], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    DTMC(P, 0, labels={"unsafe": [0, 0, 0, 1]}, state_names=["a", "b", "done", "bad"]).validate().save(
        tmp_path / "m.json")
    return tmp_path / "m.json"


@pytest.mark.parametrize("key, value, needle", [
    ("decision", '"allow"', "decision"), ("decision", "false", "decision"), ("decision", "0", "decision"),
    ("threshold", "false", "threshold"), ("threshold", "true", "threshold"), ("threshold", '"0.5"', "threshold"),
    ("threshold", "nan", "threshold"), ("threshold", "inf", "threshold"), ("threshold", "-1", "threshold"),
    ("threshold", "2", "threshold"), ("threshold", '"nan"', "threshold"),
])
def test_attack_a_proactive_guard_that_never_alarms(tmp_path, dtmc_file, key, value, needle):
    # before: decision = "allow"/false made the alarm an ALLOW; threshold = false was 0.0 (never alarms) and
    # "0.5" was read as a number
    f = tmp_path / "agentguard.toml"
    f.write_text(f'[[guards]]\ntype = "proactive"\nmodel = "{dtmc_file}"\n{key} = {value}\n')
    one_line_refusal_stack(f, needle)
    f.write_text(f'[[guards]]\ntype = "proactive"\nmodel = "{dtmc_file}"\nthreshold = 0.5\n')
    assert load_stack(f).check(Context(run_id="r", state="b"), DELETE).decision.refuses
