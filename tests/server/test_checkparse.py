"""server/checkparse.py: the fast reader of /v1/check bodies answers exactly as the full path (the strict JSON
reader, the value count and the pydantic CheckRequest) or not at all, over generated bodies (a differential
property), and it does answer the common bodies (so the property is not vacuous)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agentguard.server.checkparse import read_check
from agentguard.server.jsonutil import RequestJSONError, check_value_count, loads_request
from agentguard.server.models import CheckRequest

pytest.importorskip("orjson")

LIMIT = 200


def _full(raw: bytes, limit: int = LIMIT) -> Any:
    """What the full path reads (``Service.parse``), as the fast reader's tuple; None when it refuses."""
    try:
        check_value_count(raw, limit)
        data = loads_request(raw)
        req = CheckRequest.model_validate(data)
    except (RequestJSONError, ValueError):  # pydantic's ValidationError is a ValueError
        return None
    tc = req.tool_call
    return req.run_id, tc.name, tc.arguments, tc.call_id, req.metadata


def _typed(v: Any) -> Any:
    """``v`` with every type kept (1, 1.0 and True differ; -0.0 and 0.0 differ)."""
    if isinstance(v, dict):
        return ("dict", tuple((k, _typed(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_typed(x) for x in v))
    return (type(v).__name__, repr(v))


def _same(raw: bytes, limit: int = LIMIT) -> Any:
    fast = read_check(raw, limit)
    if fast is not None:
        full = _full(raw, limit)
        assert full is not None, raw
        assert _typed(fast) == _typed(full), raw
    return fast


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6),
                    st.sampled_from([2**63, -(2**63), 2**64, 2**63 - 1, 1e300, -0.0, 0.1]))
JSONV = st.recursive(SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                     max_leaves=12)
RUN_IDS = st.one_of(st.sampled_from(["default", "r-1", "a.b:c_d", "", "x" * 128, "x" * 129, "bad id", "r\n", "é"]),
                    st.text(max_size=8), st.integers())
NAMES = st.one_of(st.sampled_from(["read_file", "", "n" * 256, "n" * 257]), st.text(max_size=5), st.integers(),
                  st.none())
IDS = st.one_of(st.none(), st.sampled_from(["", "c1", "c2", "i" * 256, "i" * 257]), st.integers())


@st.composite
def bodies(draw: Any) -> bytes:
    call: dict[str, Any] = {}
    if draw(st.booleans()):
        call["name"] = draw(NAMES)
    for key, values in (("arguments", JSONV), ("call_id", IDS), ("id", IDS)):
        if draw(st.integers(0, 2)) == 0:
            v = draw(values)
            if v is not None or key == "id":
                call[key] = v
    if draw(st.integers(0, 9)) == 0:
        call[draw(st.sampled_from(["args", "ID", "callId"]))] = 1
    body: dict[str, Any] = {"tool_call": call if draw(st.integers(0, 9)) else draw(JSONV)}
    if draw(st.booleans()):
        body["run_id"] = draw(RUN_IDS)
    if draw(st.booleans()):
        body["metadata"] = draw(JSONV) if draw(st.integers(0, 3)) == 0 else {"user": draw(JSONV)}
    if draw(st.integers(0, 9)) == 0:
        body[draw(st.sampled_from(["extra", "runId", "tool_calls"]))] = draw(JSONV)
    if draw(st.integers(0, 9)) == 0:
        del body["tool_call"]
    text = json.dumps(body, ensure_ascii=draw(st.booleans()))
    edit = draw(st.integers(0, 7))
    if edit == 0 and text.startswith('{"'):  # a key repeated
        text = '{"tool_call": {"name": "x"}, ' + text[1:]
    elif edit == 1:  # nested deep
        depth = draw(st.integers(60, 68))
        text = text[:-1] + ', "metadata": ' + "[" * depth + "]" * depth + "}"
    elif edit == 2:
        text = text.replace("0", draw(st.sampled_from(["1e999", "NaN", "18446744073709551616", '"\\ud800"', "0"])), 1)
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=bodies())
def test_fast_reader_answers_as_the_full_path_or_not_at_all(raw: bytes) -> None:
    _same(raw)


@pytest.mark.parametrize("body", [
    {"tool_call": {"name": "read_file", "arguments": {"path": "a.txt"}}},
    {"run_id": "load-3", "tool_call": {"name": "rent_car", "arguments": {"item": 0}},
     "metadata": {"user_info": {"age": 34, "domestic": True}}},
    {"tool_call": {"name": "t", "id": "call_1"}},
    {"tool_call": {"name": "t", "call_id": "c", "id": "c"}, "metadata": {"x": [1.5, -0.0, None, "é"]}},
    {"tool_call": {"name": "t", "arguments": {"n": 2**63, "m": -(2**63)}}},
])
def test_common_bodies_are_read_fast_and_alike(body: dict[str, Any]) -> None:
    assert _same(json.dumps(body).encode()) is not None


@pytest.mark.parametrize("raw", [
    b'{"tool_call": {"name": "a", "name": "b"}}',  # a repeated key
    b'{"tool_call": {"name": "a", "arguments": {"n": 18446744073709551616}}}',  # an integer orjson widens
    b'{"tool_call": {"name": "a", "arguments": {"n": 1e999}}}',
    b'{"tool_call": {"name": "a", "arguments": {"s": "\\ud800"}}}',
    b'{"tool_call": {"name": "a"}, "run_id": "r\\n"}',
    b'{"tool_call": {"name": "a", "call_id": "x", "id": "y"}}',
    b'{"tool_call": {"name": "a"}, "metadata": []}',
    b'{"tool_call": {"name": "a"}, "extra": 1}',
    b'\xef\xbb\xbf{"tool_call": {"name": "a"}}',
    b'{"tool_call": {"name": "a"}, "metadata": ' + b"[" * 70 + b"]" * 70 + b"}",
])
def test_what_the_full_path_must_judge_is_left_to_it(raw: bytes) -> None:
    assert read_check(raw, LIMIT) is None


def test_over_the_value_limit_is_left_to_the_full_path() -> None:
    raw = json.dumps({"tool_call": {"name": "a", "arguments": {"v": list(range(50))}}}).encode()
    assert read_check(raw, 40) is None and _full(raw, 40) is not None or len(raw) > 40
    assert read_check(raw, 100) is not None


# red team s24: JSON text written with the obfuscations a reader pair may disagree on (keys and strings partly
# \u-escaped, so a key may repeat under another spelling; members repeated at any depth; whitespace, valid and not;
# numbers at the edges of both readers; a BOM, a NUL, lone surrogates), compared reader against reader
_WS = st.sampled_from(["", "", "", "", "", " ", "\t", "\n", "\r\n "] * 8 + ["\x0c", "\xa0"])
_NUMS = st.sampled_from(["-0", "-0.0", "0e0", "1e-400", "18446744073709551615", "18446744073709551616",
                         "-9223372036854775809", "9223372036854775807", "1.5e300", "4.9e-324", "2E+2"] * 3
                        + ["1E400", "-1e400", "01", "1."])
_TEXTS = st.sampled_from(["a", "name", "run_id", "call_id", "id", "tool_call", "arguments", "metadata", 'q\\"', "\\\\",
                          ",]}", "[{", "\\ud83d\\ude00", "é"] * 4 + ["\x00", "\\ud800", "\\udc00\\ud800", "r\n"]
                         ) | st.text(max_size=4)


def _quoted(draw: Any, text: str) -> str:
    if "\\" in text:  # already escaped: as it is
        return '"' + text + '"'
    out = []
    for ch in text:
        if ch in '"\\' or ch < " " or draw(st.integers(0, 5)) == 0:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else json.dumps(ch)[1:-1])
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _emit(draw: Any, v: Any) -> str:
    ws = draw(_WS)
    if isinstance(v, dict):
        members = [(k, x) for k, x in v.items()]
        if members and draw(st.integers(0, 9)) == 0:  # a member repeated (maybe spelled otherwise)
            members.insert(draw(st.integers(0, len(members))), draw(st.sampled_from(members)))
        inner = ",".join(f"{draw(_WS)}{_quoted(draw, k)}{draw(_WS)}:{_emit(draw, x)}" for k, x in members)
        return ws + "{" + inner + draw(_WS) + "}"
    if isinstance(v, list):
        return ws + "[" + ",".join(_emit(draw, x) for x in v) + draw(_WS) + "]"
    if isinstance(v, str):
        return ws + _quoted(draw, v)
    if isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool)) and draw(st.integers(0, 2)) == 0:
        return ws + draw(_NUMS)
    return ws + json.dumps(v)


@st.composite
def obfuscated(draw: Any) -> bytes:
    leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False),
                     _TEXTS)
    tree = st.recursive(leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(_TEXTS, c, max_size=3),
                        max_leaves=8)
    call: dict[str, Any] = {"name": draw(st.sampled_from(["t", "read_file", ""]) | _TEXTS)}
    for key in ("arguments", "call_id", "id"):
        if draw(st.booleans()):
            call[key] = draw(st.dictionaries(_TEXTS, tree, max_size=3) if key == "arguments" else _TEXTS)
    body: dict[str, Any] = {"tool_call": call}
    if draw(st.booleans()):
        body["run_id"] = draw(st.sampled_from(["r-1", "default"]) | _TEXTS)
    if draw(st.booleans()):
        body["metadata"] = draw(st.dictionaries(_TEXTS, tree, max_size=3) | tree)
    text = _emit(draw, body) + draw(_WS)
    prefix = draw(st.sampled_from([""] * 18 + ["\ufeff", "\x00"]))
    return (prefix + text).encode("utf-8", "surrogatepass")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=obfuscated())
def test_obfuscated_bodies_are_read_alike_or_left_to_the_full_path(raw: bytes) -> None:
    _same(raw)
