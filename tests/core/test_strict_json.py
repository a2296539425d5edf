"""The one strict JSON reader (issue 13): duplicate keys, NaN/Infinity, non-UTF-8 and deep nesting are
refused with one-line InputErrors; everything else reads as json.loads does."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core import InputError
from agentguard.core.strict_json import StrictJSONError, loads_strict


@pytest.mark.parametrize("text, why", [
    ('{"command": "rm -rf /", "command": "ls"}', "duplicate key 'command'"),
    ('[{"a": {"b": 1, "b": 2}}]', "duplicate key 'b'"),
    ('{"x": NaN}', "NaN is not JSON"),
    ('{"x": -Infinity}', "-Infinity is not JSON"),
    ("[" * 65 + "]" * 65, "nested deeper than 64"),
    ('{"a": 1', "Expecting"),
])
def test_refusals_are_one_line_input_errors(text, why):
    with pytest.raises(StrictJSONError, match=why) as err:
        loads_strict(text)
    assert isinstance(err.value, InputError) and "\n" not in str(err.value)


def test_bytes_must_be_utf8_and_brackets_inside_strings_do_not_count():
    with pytest.raises(StrictJSONError, match="not UTF-8"):
        loads_strict(b'{"a": "\xff"}')
    assert loads_strict('{"s": "' + "[" * 500 + '"}') == {"s": "[" * 500}
    assert loads_strict("[" * 64 + "]" * 64) is not None


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                           | st.text(max_size=8), lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_agrees_with_json_loads_on_valid_json(value):
    text = json.dumps(value)
    assert loads_strict(text) == json.loads(text)


@pytest.mark.parametrize("text", ["1e999", '{"amount": -1e999}', "[1E400]", '{"a": [0.5, 2e308]}'])
def test_numbers_that_overflow_are_refused(text: str) -> None:
    """``1e999`` is inf to Python's json, null to orjson's writer, an error elsewhere: refused, one line."""
    with pytest.raises(StrictJSONError, match="out of range"):
        loads_strict(text)


def test_large_finite_numbers_are_kept() -> None:
    assert loads_strict('{"a": 1.7976931348623157e308, "b": 1e-400}') == {"a": 1.7976931348623157e308, "b": 0.0}
