"""Red team of the guard-stack configuration (session 21): an attacker writes ``agentguard.toml``/``.yaml`` (a
config copied from the internet, a file an agent could write), or a user mistypes a value.

Holes found and fixed here, each with its attack and a hypothesis property:

- a time limit of ``nan`` (``timeout_s = nan`` is valid TOML, ``.nan`` valid YAML) passed ``timeout <= 0``: no
  verdict was ever late (``elapsed > nan`` is False), so a guard's late ALLOW stood; ``inf``/``1e300`` were no
  limit at all (:mod:`agentguard.core.limits`);
- YAML duplicate keys: PyYAML keeps the last, so ``deny: []`` written after ``deny: ["delete_*"]`` (or a second
  ``guards:``) silently allowed what the first refused; aliases expanded without bound. The configuration now reads
  YAML through the spec files' strict reader (:mod:`agentguard.core.strict_yaml`).

The regression list at the end holds the attacks that were already refused.
"""

from __future__ import annotations

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


# -- YAML: duplicate keys and aliases refused, as TOML refuses a duplicate key -------------------------------------

DUPLICATED_GUARD = "guards:\n  - type: tool-rules\n    name: no-deletes\n    deny: ['delete_*']\n    deny: []\n"
DUPLICATED_TOP = "guards:\n  - type: tool-rules\n    deny: ['delete_*']\nguards:\n  - type: tool-rules\n    deny: []\n"


@pytest.mark.parametrize("text", [DUPLICATED_GUARD, DUPLICATED_TOP], ids=["guard-key", "top-level"])
def test_attack_yaml_duplicate_key_replaced_the_deny_list(tmp_path, text):
    # before: yaml.safe_load kept the last `deny: []` / `guards:` and delete_file was ALLOWED
    f = tmp_path / "agentguard.yaml"
    f.write_text(text)
    one_line_refusal(f, "duplicate key")
    f.write_text(text.split("    deny: []\n")[0] if text is DUPLICATED_GUARD else text.split("guards:\n")[1].join(
        ["guards:\n", ""]))
    assert load_stack(f).check(CTX, DELETE).decision is not Decision.ALLOW  # the file without its duplicate


KEYS = ["type", "name", "deny", "allow", "mode", "decision"]


@settings(max_examples=40, deadline=None)
@given(key=st.sampled_from(KEYS), first=st.sampled_from(["'x'", "[]", "enforce", "1"]),
       second=st.sampled_from(["'y'", "[]", "shadow", "2"]), indent=st.sampled_from(["", "    "]))
def test_any_duplicate_yaml_key_is_refused_wherever_it_stands(tmp_path_factory, key, first, second, indent):
    if indent:
        text = f"guards:\n  - type: tool-rules\n{indent}{key}: {first}\n{indent}{key}: {second}\n"
    else:
        text = f"{key}: {first}\n{key}: {second}\nguards:\n  - type: tool-rules\n"
    f = tmp_path_factory.mktemp("y") / "agentguard.yml"
    f.write_text(text)
    one_line_refusal(f, "duplicate key")


def test_yaml_aliases_are_refused(tmp_path):
    f = tmp_path / "agentguard.yaml"
    f.write_text("stack: &s {name: a}\nguards:\n  - type: tool-rules\n    deny: *s\n")
    one_line_refusal(f, "aliases")
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    f.write_text(laughs + "guards: *i\n")
    one_line_refusal(f, "aliases")


def test_yaml_tags_that_build_objects_are_refused(tmp_path):
    f = tmp_path / "agentguard.yaml"
    f.write_text("guards:\n  - !!python/object/apply:os.system ['echo pwned > /dev/null']\n")
    one_line_refusal(f, "not valid YAML")


# -- regression list: attacks and typos that were already refused (one line, naming the key) -----------------------

ALREADY_REFUSED_TOML = {
    "duplicate key": ('[[guards]]\ntype = "tool-rules"\ndeny = ["delete_*"]\ndeny = []\n', "not valid TOML"),
    "duplicate table": ('[stack]\nname = "a"\n[stack]\nname = "b"\n' + DENY_DELETES, "not valid TOML"),
    "misspelt type": ('[[guards]]\ntype = "tool-rule"\n', "unknown guard type"),
    "missing type": ('[[guards]]\nname = "x"\n', "missing 'type'"),
    "empty type": ('[[guards]]\ntype = ""\n', "missing 'type'"),
    "no guards": ('[stack]\nname = "x"\n', "no guards"),
    "empty guards": ("guards = []\n", "non-empty array"),
    "guards not a list": ('guards = "tool-rules"\n', "non-empty array"),
    "unknown top-level": ("[stak]\n" + DENY_DELETES, "unknown top-level"),
    "unknown stack key": ("[stack]\ntimeout = 1\n" + DENY_DELETES, "unknown key"),
    "on_error allow": ('[stack]\non_error = "allow"\n' + DENY_DELETES, "on_error"),
    "on_error typo": ('[stack]\non_error = "rejct"\n' + DENY_DELETES, "on_error"),
    "mode typo": ('[stack]\nmode = "shadw"\n' + DENY_DELETES, "mode"),
    "guard mode typo": (DENY_DELETES + 'mode = "off"\n', "mode"),
    "short_circuit text": ('[stack]\nshort_circuit = "false"\n' + DENY_DELETES, "short_circuit"),
    "empty name": ('[stack]\nname = ""\n' + DENY_DELETES, "stack.name"),
    "guard name not text": ('[[guards]]\ntype = "tool-rules"\nname = 3\n', "name"),
    "misspelt guard key": ('[[guards]]\ntype = "tool-rules"\ndney = ["delete_*"]\n', "dney"),
    "python without factory": ('[[guards]]\ntype = "python"\n', "factory"),
    "python factory no colon": ('[[guards]]\ntype = "python"\nfactory = "os.system"\n', "factory"),
    "telemetry text": ('[telemetry]\nenabled = "yes"\n' + DENY_DELETES, "telemetry.enabled"),
    "recording unknown": ('[recording]\npth = "x"\n' + DENY_DELETES, "recording"),
    "policy timeout nan": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                           "timeout_s = nan\n", "timeout_s"),
    "policy timeout text": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                            'timeout_s = "0.05"\n', "timeout_s"),
    "policy short digest": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                            'verified_digest = "abc"\n', "prefix"),
    "policy wrong digest": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                            f'verified_digest = "{"0" * 64}"\n', "refusing to run unverified code"),
    "policy unknown key": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                           'verified = true\n', "unknown key"),
    "policy on_error allow": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                              'on_error = "allow"\n', "blocking"),
    "duplicate guard names": (DENY_DELETES + DENY_DELETES, "unique"),
}


@pytest.mark.parametrize("name", sorted(ALREADY_REFUSED_TOML))
def test_regression_already_refused(tmp_path, name):
    text, needle = ALREADY_REFUSED_TOML[name]
    f = tmp_path / "agentguard.toml"
    f.write_text(text)
    with pytest.raises(InputError) as info:
        load_stack(f)
    msg = str(info.value)
    assert "\n" not in msg and needle in msg, msg


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


def one_line_refusal_stack(path, *needles: str) -> str:
    with pytest.raises(InputError) as info:
        load_stack(path)
    msg = str(info.value)
    assert "\n" not in msg, msg
    for n in needles:
        assert n in msg, msg
    return msg


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


# -- a factory named in configuration is called only when it declares that it builds a guard/extractor --------------

DANGEROUS_CALLABLES = ["subprocess:run", "subprocess:Popen", "subprocess:check_output", "os:system", "os:remove",
                       "os:abort", "os:getpid", "shutil:rmtree", "builtins:open", "builtins:exec", "builtins:eval",
                       "builtins:input", "builtins:breakpoint", "pathlib:Path.write_text", "pathlib:Path.touch",
                       "pickle:loads", "importlib:import_module", "functools:partial", "webbrowser:open",
                       "agentguard.core.loading:load_attr"]  # (load_stack is declared: -> GuardStack)


@settings(max_examples=60, deadline=None)
@given(path=st.sampled_from(DANGEROUS_CALLABLES), where=st.sampled_from(["python", "extractor"]))
def test_property_a_callable_not_declared_as_a_factory_is_never_called(tmp_path_factory, path, where):
    d = tmp_path_factory.mktemp("f")
    marker = d / "pwned"
    if where == "python":
        text = (f'[[guards]]\ntype = "python"\nfactory = "{path}"\nargs = ["sh", "-c", "touch {marker}"]\n')
    else:
        text = f'[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "{path}"\n'
    f = d / "agentguard.toml"
    f.write_text(text)
    one_line_refusal_stack(f, "not declared to build")
    assert not marker.exists()


def test_attack_loading_a_toml_ran_a_shell_command(tmp_path):
    # before: subprocess.run(args=[...]) ran while the file loaded; "factory returned CompletedProcess" came after
    marker = tmp_path / "pwned"
    for factory, kwargs in [("subprocess:run", f'args = ["sh", "-c", "touch {marker}"]'),
                            ("os:system", f'command = "touch {marker}"'),
                            ("pathlib:Path.touch", f'self = "{marker}"')]:
        f = tmp_path / "agentguard.toml"
        f.write_text(f'[[guards]]\ntype = "python"\nfactory = "{factory}"\n{kwargs}\n')
        one_line_refusal_stack(f, "not declared to build")
        assert not marker.exists(), factory


class _Shaped:
    name = "shaped"

    def __init__(self, name: str = "shaped") -> None:
        self.name = name

    def check(self, context, proposal):
        return Verdict(Decision.REJECT, "shaped", self.name)

    async def acheck(self, context, proposal):
        return self.check(context, proposal)


def make_shaped(name: str = "made") -> _Shaped:
    return _Shaped(name)


def make_either(name: str = "either") -> _Shaped | GuardStack:
    return _Shaped(name)


def make_unannotated(name: str = "bare"):
    return _Shaped(name)


def make_maybe(name: str = "maybe") -> _Shaped | None:
    return _Shaped(name)


@pytest.mark.parametrize("factory, loads", [("_Shaped", True), ("make_shaped", True), ("make_either", True),
                                            ("make_unannotated", False), ("make_maybe", False)])
def test_declared_factories_still_load(tmp_path, factory, loads):
    f = tmp_path / "agentguard.toml"
    f.write_text(f'[[guards]]\ntype = "python"\nfactory = "{__name__}:{factory}"\n')
    if loads:
        assert load_stack(f).check(CTX, DELETE).decision is Decision.REJECT
    else:
        one_line_refusal_stack(f, "not declared to build")


@pytest.mark.parametrize("name, text", [
    ("deep.toml", "x = " + "[" * 100000 + "]" * 100000 + "\n"),        # RecursionError escaped tomllib before
    ("inline.toml", "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n"),
    ("deep.yaml", "x: " + "[" * 100000 + "]" * 100000 + "\n"),
])
def test_attack_a_deeply_nested_file_is_a_one_line_error(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    one_line_refusal(f, "not valid")
