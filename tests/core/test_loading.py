"""``module:attr`` paths (core.loading.load_attr), and the four places that read them through it: guard
factories (config), SafetyFilter factories, ThresholdMonitor scorers and policy-guard extractors."""

from __future__ import annotations

import math

import pytest

from agentguard.core.errors import DependencyError, InputError
from agentguard.core.loading import load_attr

PI = math.pi


def cos_score(text: str, context: object) -> float:
    return math.cos(len(text))


def test_load_attr_resolves_dotted_attributes():
    assert load_attr("math:cos") is math.cos
    assert load_attr("agentguard.core.types:Decision.ALLOW").name == "ALLOW"


@pytest.mark.parametrize("path, message", [
    ("math", "must be 'package.module:attribute'"),
    ("math:", "must be 'package.module:attribute'"),
    (":cos", "must be 'package.module:attribute'"),
    ("a:b:c", "must be 'package.module:attribute'"),
    (3, "must be 'package.module:attribute'"),
    ("agentguard_nowhere.mod:X", "cannot import 'agentguard_nowhere'"),
    ("math:no_such_name", "no such attribute"),
])
def test_load_attr_one_line_errors_name_what(path, message):
    with pytest.raises(InputError) as ei:
        load_attr(path, "the thing")
    assert message in str(ei.value) and str(ei.value).startswith("the thing") and "\n" not in str(ei.value)


def test_every_reader_goes_through_load_attr_with_its_own_name():
    from agentguard.calibration import ThresholdMonitor
    from agentguard.config import GuardSpec, build_guard
    from agentguard.control.filter import _factory

    # session 22: a scorer a configuration names declares -> float, outside the standard library (math:cos was taken)
    assert ThresholdMonitor(0.5, scorer=f"{__name__}:cos_score").scorer is cos_score
    with pytest.raises(InputError, match="threshold-monitor: scorer 'math:cos': 'math' is part of the Python"):
        ThresholdMonitor(0.5, scorer="math:cos")
    with pytest.raises(InputError, match=f"threshold-monitor: scorer '{__name__}:nope': no such attribute"):
        ThresholdMonitor(0.5, scorer=f"{__name__}:nope")
    with pytest.raises(InputError, match="safety filter encoder 'nomod_x:f': cannot import"):
        _factory("nomod_x:f", "encoder")
    with pytest.raises(InputError, match=f"safety filter q '{__name__}:PI' is not declared to build a Q function"):
        _factory(f"{__name__}:PI", "q")
    # a guard factory this installation lacks is a DependencyError; a malformed one an InputError
    with pytest.raises(DependencyError, match="g.toml: guards\\[0\\]: cannot import nomod_x"):
        build_guard(GuardSpec("python", {"factory": "nomod_x.m:G"}, "g.toml: guards[0]"))
    with pytest.raises(DependencyError, match="not available in this installation"):
        build_guard(GuardSpec("python", {"factory": "agentguard.core.types:G"}, "g.toml: guards[0]"))
    with pytest.raises(InputError, match="must be 'package.module:attribute'"):
        build_guard(GuardSpec("python", {"factory": "mathG"}, "g.toml: guards[0]"))
    with pytest.raises(InputError, match="policy guard: extractor 'nomod_x:e': cannot import"):
        build_guard(GuardSpec("policy", {"policy": "mind2web_sc", "extractor": "nomod_x:e"}, "g.toml: guards[0]"))
