"""core.loading.read_json_file (session 22 red team): a JSON file a configuration names is read as strictly as
the TOML/YAML file naming it.

Hole fixed: a calibration file ``{"threshold": 0.1, "threshold": 0.9}`` loaded a monitor at 0.9 (``json.loads``
keeps the last key) while a reviewer of the file reads 0.1; TOML refuses a duplicate key, YAML too
(core.strict_yaml) and the service's JSON too (core.strict_json), the files they name did not. The same for a
provenance guard's tool set (``tools =``) and MCP tool list (``schemas =``), a grant lexicon and an inference
lexicon. ``NaN``/``Infinity`` (not JSON) are refused with them.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.core.errors import InputError
from agentguard.core.loading import read_json_file
from agentguard.policies import library_path

LIB = library_path("mind2web_sc").parent


def _readers():
    from agentguard.calibration.monitor import read_calibration
    from agentguard.policies.capabilities import GrantLexicon
    from agentguard.policies.provenance_guard import _tool_list
    from agentguard.policies.toolinfer import InferenceLexicon
    from agentguard.policies.toolset import ToolSet

    return {"calibration": read_calibration, "tool set": ToolSet.load, "grant lexicon": GrantLexicon.load,
            "inference lexicon": InferenceLexicon.load, "tool list": _tool_list}



@pytest.mark.parametrize("reader", ["calibration", "tool set", "grant lexicon", "inference lexicon", "tool list"])
def test_attack_a_duplicate_key_in_a_named_json_file_is_refused(tmp_path, reader):
    f = tmp_path / "f.json"
    f.write_text('{"threshold": 0.1, "threshold": 0.9, "tools": [], "toolset": "x"}', encoding="utf-8")
    with pytest.raises(InputError, match="duplicate") as info:
        _readers()[reader](f)
    assert "\n" not in str(info.value)


def test_attack_the_calibration_threshold_was_the_last_one():
    from agentguard.calibration import ThresholdMonitor

    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "cal.json"
        f.write_text('{"threshold": 0.1, "threshold": 0.9}', encoding="utf-8")
        with pytest.raises(InputError, match="duplicate"):
            ThresholdMonitor.from_config({"calibration": str(f)})
        for bad in ('{"threshold": NaN}', '{"threshold": Infinity}', '{"threshold": -Infinity}'):
            f.write_text(bad, encoding="utf-8")
            with pytest.raises(InputError, match="not JSON"):
                ThresholdMonitor.from_config({"calibration": str(f)})
        f.write_text('{"threshold": "-inf"}', encoding="utf-8")  # the documented spelling still loads
        assert ThresholdMonitor.from_config({"calibration": str(f)}).threshold == float("-inf")


def test_the_shipped_json_files_still_read():
    for name in ("agentdojo_tools.json", "asb_tools.json", "grants_en.json", "tool_inference_en.json"):
        assert read_json_file(LIB / name, name)


@settings(max_examples=50, deadline=None)
@given(reader=st.sampled_from(["calibration", "tool set", "grant lexicon", "inference lexicon", "tool list"]),
       keys=st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6),
                     min_size=1, max_size=4),
       at=st.integers(0, 3), value=st.sampled_from(["1", '"x"', "[]", "{}", "null", "0.9"]))
def test_property_any_repeated_key_at_any_depth_is_refused(tmp_path_factory, reader, keys, at, value):
    inner = ", ".join(f"{json.dumps(k)}: {value}" for k in keys) + f", {json.dumps(keys[at % len(keys)])}: 2"
    text = '{"threshold": 0.5, "tools": [], "nested": {' + inner + "}}"
    f = tmp_path_factory.mktemp("j") / "f.json"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(InputError):
        _readers()[reader](f)
