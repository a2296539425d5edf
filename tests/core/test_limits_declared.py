"""Configuration values read as the program reads them (session 22 red team of agentguard.config and core.limits.declared_scalars).

Holes fixed (confirmed on the code before this commit):

- a guard parameter annotated ``bool``/``int``/``float`` took whatever the file held and the guard coerced it:
  ``max_runs = 1.9`` and ``max_runs = true`` (run-budget: ``int()``) became 1, ``threshold = "0.5"``
  (threshold-monitor) was read from text; ``decode = 0`` / ``learn = []`` (secret-leak) read as false by
  truthiness. Now ``core.limits.declared_scalars`` refuses, with one line naming the key, any value whose type is
  not the declared one (``nan`` is never a number; ``inf`` stays one, a monitor's ``-inf`` is documented).
- a malformed value that made the factory raise something else than TypeError (``max_runs = "0.5"``: ValueError;
  ``max_runs = inf``: OverflowError; ``extra_patterns = 1``: AttributeError) escaped ``load_stack`` as that raw
  exception with a traceback: now a one-line InputError naming the guard (still refused, as before).
- a policy guard's ``strategy = nan`` (or ``true``, a table) was stored as the strategy object itself, and the
  guard's ``enforce`` then raised AttributeError on every call; now refused at load.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.config import GuardSpec, build_guard, load_config, load_stack
from agentguard.core.errors import AgentGuardError, InputError

BASE = {
    "run-budget": {"budgets": [{"tools": ["pay"], "max_calls": 3}]},
    "secret-leak": {},
    "threshold-monitor": {"threshold": 0.5},
    "tool-rules": {"deny": ["x"]},
    "policy": {"policy": "mind2web_sc", "extractor": "mind2web_sc"},
}
#: (type, key, the kind of value it declares)
SCALARS = [("run-budget", "max_runs", int), ("secret-leak", "decode", bool), ("secret-leak", "learn", bool),
           ("secret-leak", "max_runs", int), ("secret-leak", "window", int), ("secret-leak", "across_calls", int),
           ("threshold-monitor", "threshold", float), ("threshold-monitor", "max_runs", int),
           ("tool-rules", "resolve_links", bool)]
WRONG = {bool: [0, 1, "false", "no", "true", [], {}, 0.0, math.nan],
         int: [1.9, 1.0, True, False, "3", "0.5", math.nan, math.inf, [], {}],
         float: ["0.5", "nan", "-inf", True, False, math.nan, [], {}]}


def _build(t: str, **extra):
    return build_guard(GuardSpec(t, {**BASE[t], **extra}, f"agentguard.toml: guards[0] ({t})"))


@pytest.mark.parametrize("t, key, kind", SCALARS)
def test_attack_a_value_of_another_type_is_refused_naming_the_key(t, key, kind):
    for bad in WRONG[kind]:
        with pytest.raises(InputError) as info:
            _build(t, **{key: bad})
        msg = str(info.value)
        assert "\n" not in msg and key in msg, (bad, msg)


@settings(max_examples=120, deadline=None)
@given(case=st.sampled_from(SCALARS), value=st.one_of(
    st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6), st.lists(st.integers(), max_size=2), st.none()))
def test_property_a_scalar_loads_only_as_its_declared_type(case, value):
    t, key, kind = case
    declared = (isinstance(value, bool) if kind is bool else
                isinstance(value, int) and not isinstance(value, bool) if kind is int else
                isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value))
    try:
        _build(t, **{key: value})
    except AgentGuardError as exc:  # a declared value may still be out of the guard's own range (max_runs = 0)
        assert "\n" not in str(exc)
        return
    assert declared, (t, key, value)


@pytest.mark.parametrize("value", ['"0.5"', "nan", "inf", "-1", '"many"', "{ a = 1 }"])
def test_attack_raw_exceptions_become_one_line_refusals(tmp_path, value):
    f = tmp_path / "agentguard.toml"
    for table in (f'type = "run-budget"\nmax_runs = {value}\n[[guards.budgets]]\ntools = ["pay"]\nmax_calls = 3\n',
                  f'type = "secret-leak"\nextra_patterns = {value}\n'):
        f.write_text(f"[[guards]]\n{table}", encoding="utf-8")
        with pytest.raises(InputError) as info:
            load_stack(f)
        assert "\n" not in str(info.value) and str(f) in str(info.value)


@pytest.mark.parametrize("value", [math.nan, True, 1.5, [], {"x": 1}])
def test_attack_a_policy_strategy_that_is_no_name_is_refused(value):
    with pytest.raises(InputError, match="strategy"):
        _build("policy", strategy=value)


def test_declared_values_still_load():
    assert _build("run-budget", max_runs=5).max_runs == 5
    assert _build("threshold-monitor", threshold=-math.inf).threshold == -math.inf  # the flag-nothing monitor
    assert _build("threshold-monitor", threshold=1).threshold == 1.0
    assert _build("secret-leak", decode=False, learn=True) is not None
    assert _build("policy", strategy="TT") is not None


# -- relative paths: the configuration's folder, never the working directory ------------------------------------------

def _policy_source() -> str:
    from agentguard.policies import library_path

    return library_path("mind2web_sc").read_text(encoding="utf-8")


def test_attack_a_relative_policy_missing_next_to_the_file_was_read_from_the_working_directory(tmp_path,
                                                                                                  monkeypatch):
    # before: conf/g.toml naming policy = "pol.py" loaded ./pol.py of whatever directory the process ran in
    (tmp_path / "cwd").mkdir()
    (tmp_path / "conf").mkdir()
    (tmp_path / "cwd" / "pol.py").write_text(_policy_source(), encoding="utf-8")
    f = tmp_path / "conf" / "g.toml"
    f.write_text('[[guards]]\ntype = "policy"\npolicy = "pol.py"\nextractor = "mind2web_sc"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path / "cwd")
    with pytest.raises(InputError, match="not in .*working directory is not used") as info:
        load_stack(f)
    assert "\n" not in str(info.value)
    (tmp_path / "conf" / "pol.py").write_text(_policy_source(), encoding="utf-8")  # next to the file: loads
    assert load_stack(f) is not None


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(["p.py", "m.json", "sub/p.py", "a/b/c.toml", "x.txt", "d.npz"]),
       key=st.sampled_from(["policy", "model", "calibration", "tools", "schemas", "anything"]))
def test_property_a_working_directory_file_is_never_read_for_a_relative_name(tmp_path_factory, name, key):
    import os

    root = tmp_path_factory.mktemp("rel")
    (root / "cwd" / name).parent.mkdir(parents=True)
    (root / "cwd" / name).write_text("{}", encoding="utf-8")
    (root / "conf").mkdir()
    f = root / "conf" / "g.toml"
    f.write_text(f'[[guards]]\ntype = "tool-rules"\ndeny = ["x"]\n{key} = "{name}"\n', encoding="utf-8")
    here = os.getcwd()
    os.chdir(root / "cwd")
    try:
        with pytest.raises(InputError, match="working directory is not used"):
            load_config(f)
    finally:
        os.chdir(here)


# -- regression list: tried in session 22 and already refused before it (kept so they stay refused) ------------------

_FIELDS = {"category": {"from": "tool", "default": 0, "map": {"rent_car": 1}},
           **{k: {"from": "metadata", "key": f"user_info.{k}"}
              for k in ("age", "domestic", "dr_license", "vaccine", "membership")}}
ALREADY_REFUSED = [
    ("policy", {"policy": "mind2web_sc", "fields": {**_FIELDS, "age": {"from": "metadata", "kee": "user_info.age"}}}),
    ("policy", {"policy": "mind2web_sc", "fields": {**_FIELDS, "age": {"from": "metdata", "key": "user_info.age"}}}),
    ("policy", {"policy": "mind2web_sc", "extractor": "mind2web_sc", "timeout_s": math.nan}),
    ("policy", {"policy": "mind2web_sc", "extractor": "mind2web_sc", "verified_digest": "8fc4810df995"}),
    ("policy", {"policy": "/etc/passwd", "extractor": "mind2web_sc"}),
    ("policy", {"policy": "mind2web_sc", "extractor": "mind2web_sc", "tools": ["transfer_*"]}),
    ("tool-rules", {"deny": [False]}),
    ("tool-rules", {"deny": ["x"], "arguments": [{"tool": "x", "bogus": 1}]}),
    ("flow-rules", {"rules": [{"after": "a", "then": "b", "withn": 3}]}),
    ("flow-rules", {"rules": [{"after": "a", "then": "b", "within": 0}]}),
    ("network-rules", {"alow": []}),
    ("secret-leak", {"plugns": []}),
    ("run-budget", {"budgets": [{"tools": ["pay"], "max_calls": -1}]}),
    ("run-budget", {"budgets": [{"tools": ["pay"], "max_total": math.nan, "argument": "amount"}]}),
    ("threshold-monitor", {"threshold": math.nan}),
    ("threshold-monitor", {"threshold": 0.5, "decision": "allow"}),
    ("threshold-monitor", {"threshold": 0.5, "treshold": 1}),
]


@pytest.mark.parametrize("t, params", ALREADY_REFUSED)
def test_regression_list_of_values_already_refused(t, params):
    with pytest.raises(InputError) as info:
        build_guard(GuardSpec(t, params, f"g.toml: guards[0] ({t})"))
    assert "\n" not in str(info.value)
