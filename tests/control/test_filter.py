"""The public face of agentguard.control: every name in ``__all__`` resolves, torch stays out of the
import, and SafetyFilter keeps its per-run memory in a RunMemory with ``end_run``."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

import agentguard.control as control
from agentguard.core import Context, Decision


def test_import_control_loads_no_torch_and_no_environment():
    code = "import sys, json, agentguard.control; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    assert not [m for m in loaded if m.split(".")[0] in ("torch", "wordllama", "sentence_transformers")]
    assert not [m for m in loaded if m.startswith(("agentguard.envs", "agentguard.bench", "agentguard.demo"))]


def test_every_public_name_resolves():
    for name in control.__all__:
        assert getattr(control, name) is not None, name
    assert set(control.__all__) <= set(dir(control))


class _Q:
    def q_values(self, z):
        z = np.atleast_2d(np.asarray(z, dtype=float))
        return np.column_stack([z[:, 0], -z[:, 0]])


class _Enc:
    name = "identity"
    dim = 1

    def encode(self, xs):
        return np.asarray([[float(x)] for x in xs])


def test_safety_filter_remembers_per_run_and_forgets_on_end_run():
    f = control.SafetyFilter(_Q(), _Enc(), ["a", "b"], epsilon=0.0)
    v = f.certify(Context(run_id="r1", state=-1.0), "a")  # Q(a) = -1 <= 0: fallback b
    assert v.decision is Decision.RECOVER and v.action == "b"
    # an unreadable observation falls back to this run's last fallback action
    bad = f.certify(Context(run_id="r1", state="not a number"), "a")
    assert bad.decision is Decision.RECOVER and bad.action == "b"
    f.end_run("r1")
    gone = f.certify(Context(run_id="r1", state="not a number"), "a")
    assert gone.decision is Decision.HALT  # no fallback known any more, no default_action


def test_safety_filter_from_config(tmp_path):
    import pytest

    from agentguard.core import InputError

    f = control.SafetyFilter.from_config({"q": f"{__name__}:_Q", "encoder": f"{__name__}:_Enc",
                                          "actions": ["a", "b"], "epsilon": 0.0, "name": "cfg"})
    assert f.name == "cfg" and f.certify(Context(state=1.0), "a").allowed
    assert f.certify(Context(state=-1.0), "a").action == "b"
    with pytest.raises(InputError):
        control.SafetyFilter.from_config({"q": f"{__name__}:_Q", "encoder": "x:y", "actions": ["a"],
                                          "bogus": 1})
    with pytest.raises(InputError):
        control.SafetyFilter.from_config({"encoder": "wordllama", "actions": ["a"]})
