"""core.loading.load_callable (session 22 red team): every configuration slot that names code goes through one
resolver, which calls nothing and imports nothing of the standard library.

Holes fixed (confirmed on the code before this commit, /tmp probe with a marker file):

- a safety filter's ``q = "mod:touch"`` (any callable) was *called while the file loaded*: the marker file
  appeared; ``encoder`` was read the same way (``_factory(...)()``);
- ``scorer = "subprocess:run"`` (a threshold monitor) and ``[recording] state = "os:system"`` loaded (only
  ``callable`` was checked) and were then called with each step's ``(text, context)`` / ``(context, proposal)``;
  with those arities the probes raised (the step was refused), but nothing but the arity stood between a
  configuration file and a standard-library function called on every step;
- a path that reaches the standard library through another module (``agentguard.config:os.system``) was imported
  and resolved before the check refused it; a name whose import alone has effects (``antigravity:fly`` opens a
  browser, ``this:s`` prints) was imported before anything was checked.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agentguard.core.errors import DependencyError, InputError
from agentguard.core.loading import GUARD, SCORER, STATE, load_callable
from agentguard.core.types import Context, Decision, Step, Verdict
from agentguard.integrations.recording import load_recording
from agentguard.spec.history import state_function

MARK: list[Path] = []  # the marker file a callable below touches when it is called


def _touch(*args: Any, **kwargs: Any):  # unannotated: declares nothing
    Path(MARK[-1]).touch()
    return 0.0


def _touch_any(*args: Any, **kwargs: Any) -> Any:  # -> Any: declares nothing either
    Path(MARK[-1]).touch()
    return {}


class _TouchCall:
    def __call__(self, *args, **kwargs):
        Path(MARK[-1]).touch()
        return 0.0


touch_instance = _TouchCall()
touch_partial = functools.partial(_touch)  # functools.partial: a standard-library object
run_alias = subprocess.run  # the standard library under another name


class Q:  # a declared Q function (safety filter q)
    def q_values(self, z):
        z = np.atleast_2d(np.asarray(z, dtype=float))
        return np.column_stack([z[:, 0], -z[:, 0]])


class Enc:  # a declared encoder
    name, dim = "identity", 1

    def encode(self, xs):
        return np.asarray([[float(x)] for x in xs])


def declared_score(text: str, context: Any) -> float:
    return 0.1


def declared_state(context: Any, proposal: Any) -> dict[str, Any]:
    return {"n": 0}


class Guarded:
    name = "declared"

    def __init__(self, **params: Any) -> None:  # the attack file's keywords are its to ignore
        self.params = params

    def check(self, context, proposal):
        return Verdict(Decision.REJECT, "declared", self.name)

    async def acheck(self, context, proposal):
        return self.check(context, proposal)


HERE = __name__
STDLIB = ["subprocess:run", "subprocess:Popen", "os:system", "os:abort", "os:remove", "shutil:rmtree",
          "builtins:eval", "builtins:exec", "builtins:open", "pickle:loads", "importlib:import_module",
          "runpy:run_path", "pty:spawn", "ctypes:CDLL", "webbrowser:open", "tarfile:TarFile", "zipfile:ZipFile",
          "posix:system", "_posixsubprocess:fork_exec", "nt:system", "code:interact", "this:s", "antigravity:fly",
          "os.path:join", "functools:partial", "math:cos", "json:loads", "tomllib:loads"]
ALIASES = ["agentguard.config:os.system", "agentguard.core.loading:importlib.import_module",
           "agentguard.core.loading:pkgutil.resolve_name", f"{HERE}:run_alias", f"{HERE}:subprocess.run",
           f"{HERE}:touch_partial", f"{HERE}:functools.partial"]
UNDECLARED = [f"{HERE}:_touch", f"{HERE}:_touch_any", f"{HERE}:touch_instance", f"{HERE}:MARK",
              "agentguard.core.loading:load_attr", "numpy:load", "numpy:fromfile", "yaml:unsafe_load"]
MALFORMED = ["..os:system", ".os:system", "os..path:join", "/tmp/evil:x", "evil.py:x", "os :system", "os:system ",
             "\uff4fs:system", "__main__:x", "agentguard.config:__builtins__", f"{HERE}:_touch.__globals__",
             "agentguard.__init__:x", "os:system:x", "os/path:join", "a-b:c", "", ":", "x:", ":x", "1os:system"]
DANGEROUS = STDLIB + ALIASES + UNDECLARED + MALFORMED


def _file(d: Path, slot: str, path: str) -> Path:
    """A configuration naming ``path`` in ``slot``, with keywords that would make the named callable act."""
    q = f'"{path}"'
    tables = {
        "factory": f'type = "python"\nfactory = {q}\nargs = ["sh", "-c", "touch {MARK[-1]}"]\n',
        "extractor": f'type = "policy"\npolicy = "mind2web_sc"\nextractor = {q}\n',
        "scorer": f'type = "threshold-monitor"\nthreshold = 0.5\nscorer = {q}\n',
        "q": f'type = "safety-filter"\nq = {q}\nencoder = "{HERE}:Enc"\nactions = ["a", "b"]\n',
        "encoder": f'type = "safety-filter"\nq = "{HERE}:Q"\nencoder = {q}\nactions = ["a", "b"]\n',
        "state": 'type = "tool-rules"\ndeny = ["x"]\n',
    }
    head = f"[recording]\nstate = {q}\n\n" if slot == "state" else ""
    f = d / "agentguard.toml"
    f.write_text(f"{head}[[guards]]\n{tables[slot]}", encoding="utf-8")
    return f


SLOTS = ["factory", "extractor", "scorer", "q", "encoder", "state"]


def _refused(f: Path) -> str:
    with pytest.raises((InputError, DependencyError)) as info:  # DependencyError: no such module ('evil.py:x')
        load_recording(f)
    msg = str(info.value)
    assert "\n" not in msg, msg
    return msg


@pytest.mark.parametrize("slot", SLOTS)
@pytest.mark.parametrize("path", ["subprocess:run", "os:system", "builtins:eval", "shutil:rmtree",
                                  f"{HERE}:_touch", f"{HERE}:touch_instance", "agentguard.config:os.system"])
def test_attack_no_slot_calls_what_it_does_not_declare(tmp_path, slot, path):
    MARK.append(tmp_path / "pwned")
    _refused(_file(tmp_path, slot, path))
    assert not MARK[-1].exists()


def test_attack_scorer_and_state_were_called_per_step(tmp_path):
    # before: scorer = "subprocess:run" was kept and called with each step's text: a step "touch <marker>" ran
    marker = tmp_path / "pwned"
    from agentguard.calibration import ThresholdMonitor

    for bad in ("subprocess:run", "subprocess:check_call", f"{HERE}:_touch"):
        with pytest.raises(InputError, match="scorer"):
            ThresholdMonitor(0.5, scorer=bad)
    for bad in ("os:system", f"{HERE}:_touch_any", f"{HERE}:touch_instance"):
        with pytest.raises(InputError, match="state function"):
            state_function(bad)
    assert not marker.exists()


def test_importing_is_refused_before_it_runs_top_level_code(tmp_path, capsys):
    # `this` prints the Zen of Python when imported; `antigravity` opens a web browser
    import sys

    for path in ("this:s", "antigravity:fly"):
        was = path.split(":")[0] in sys.modules
        with pytest.raises(InputError, match="standard library"):
            load_callable(path, "factory", GUARD)
        assert was or path.split(":")[0] not in sys.modules
    assert "Zen of Python" not in capsys.readouterr().out


@settings(max_examples=120, deadline=None)
@given(slot=st.sampled_from(SLOTS), path=st.sampled_from(DANGEROUS))
def test_property_every_slot_refuses_every_dangerous_name(tmp_path_factory, slot, path):
    d = tmp_path_factory.mktemp("slot")
    MARK.append(d / "pwned")
    _refused(_file(d, slot, path.replace('"', "")))
    assert not MARK[-1].exists()


@settings(max_examples=60, deadline=None)
@given(module=st.sampled_from(["subprocess", "os", "builtins", "shutil", "sys", "ctypes", "pickle", "marshal",
                               "importlib", "runpy", "socket", "io", "_io", "posix", "signal"]),
       attr=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}(\.[a-z_]{1,8})?", fullmatch=True),
       builds=st.sampled_from([GUARD, SCORER, STATE]))
def test_property_no_standard_library_name_is_even_imported(module, attr, builds):
    with pytest.raises(InputError, match="standard library|dunder"):
        load_callable(f"{module}:{attr}", "slot", builds)


def test_declared_callables_still_load_in_every_slot(tmp_path):
    for slot, path in [("factory", f"{HERE}:Guarded"), ("scorer", f"{HERE}:declared_score"),
                       ("q", f"{HERE}:Q"), ("encoder", f"{HERE}:Enc"), ("state", f"{HERE}:declared_state"),
                       ("encoder", "agentguard.envs.driving.guard:make_text_encoder")]:
        MARK.append(tmp_path / "unused")
        if slot == "encoder" and "driving" in path:
            pytest.importorskip("agentguard.envs.driving.guard")
            assert load_callable(path, "encoder", GUARD.__class__("an encoder", methods=("encode",)))
            continue
        stack, _, state_fn = load_recording(_file(tmp_path, slot, path))
        if slot == "state":
            assert state_fn is declared_state
        elif slot == "factory":
            assert stack.check(Context(run_id="r"), Step(output="x")).decision is Decision.REJECT


# -- a shipped policy or extractor is named by its stem, never by a path ----------------------------------------------

@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(["../../../../../../tmp/x", "extractors/mind2web_sc", "specs/mind2web_sc", "./mind2web_sc",
                             "mind2web_sc/", "mind2web_sc\x00", "mind2web_sc.py", "..", "__init__", "_x", "",
                             "\uff4dind2web_sc", "mind2web_sc "]),
       slot=st.sampled_from(["extractor", "library_path"]))
def test_property_a_shipped_name_is_a_stem_not_a_path(name, slot):
    from agentguard.config import GuardSpec, build_guard
    from agentguard.policies import library_path

    with pytest.raises(InputError):
        if slot == "library_path":
            library_path(name)
        else:
            build_guard(GuardSpec("policy", {"policy": "mind2web_sc", "extractor": name}, "g.toml: guards[0]"))


@pytest.mark.parametrize("path, builds", [
    ("agentguard.server.testing:free_port", SCORER),            # -> int, no arguments: not a score
    ("agentguard.server.traces:write_parquet", SCORER),         # -> int, writes a file at its first argument
    ("agentguard.server.protocol:raise_nofile_limit", SCORER),  # -> int, changes a process limit
    ("agentguard.calibration.monitor:read_calibration", STATE),  # -> dict, one argument (a path)
    (f"{HERE}:one_arg_score", SCORER), (f"{HERE}:varargs_state", STATE), (f"{HERE}:int_score", SCORER)])
def test_attack_a_declared_return_with_the_wrong_call_shape_is_refused(path, builds):
    # session 22: the first cut of load_callable took any `-> numbers.Real` / `-> Mapping` function as a scorer/state
    with pytest.raises(InputError, match="positional arguments"):
        load_callable(path, "slot", builds)


def one_arg_score(text: str) -> float:
    return 0.0


def varargs_state(*args: Any) -> dict[str, Any]:
    return {}


def int_score(text: str, context: Any) -> int:
    return 0


# -- session 23: what a declared factory built is checked before the slot uses it (loading.built) ------------------
class _Declared:  # declares it builds an extractor ...
    def extract(self, call, context):  # noqa: ANN001
        return {}


def lying_extractor() -> _Declared:  # ... and builds something else
    return "not an extractor"  # type: ignore[return-value]


def honest_extractor() -> _Declared:
    return _Declared()


def test_attack_a_factory_that_declares_an_extractor_and_builds_something_else_is_refused():
    from agentguard.core.loading import EXTRACTOR, built
    from agentguard.policies.guard import ToolCallGuard

    table = {"policy": "mind2web_sc", "extractor": f"{__name__}:lying_extractor"}
    with pytest.raises(InputError, match="built str, not an extractor"):
        ToolCallGuard.from_config(table)
    assert isinstance(built(honest_extractor, "x", EXTRACTOR), _Declared)
    with pytest.raises(InputError, match=r"no extract"):
        built(lambda: object(), "x", EXTRACTOR)
