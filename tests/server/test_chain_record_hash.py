"""The record hash (:func:`agentguard.server.chain.record_hash`) written by orjson where that gives the same bytes
(issue 32: the writer hashes every record) must hash every content exactly as before, or every stored chain stops
verifying: a differential against the encoder alone (the function as it was), on generated contents, the float and
integer forms where orjson's own output differs, every code point, and a chain whose hashes the old function wrote,
checked by :func:`~agentguard.server.chain.verify`."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.server import chain, jsonutil
from agentguard.server.chain import CONTENT, GENESIS, chain_hash, record_hash, run_hash
from agentguard.server.jsonutil import canonical

orjson = pytest.importorskip("orjson")


def old_record_hash(row: Mapping[str, Any]) -> str:
    """record_hash as it was before orjson (commit 251ce2c): the reference."""
    content = {k: row.get(k) for k in CONTENT}
    try:
        data = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                allow_nan=False).encode(content).encode("utf-8")
    except (TypeError, ValueError):
        data = canonical(content)
    return hashlib.sha256(data).hexdigest()


def outcome(fn: Any, row: Mapping[str, Any]) -> tuple[str, str]:
    try:
        return "ok", fn(row)
    except Exception as exc:  # noqa: BLE001 - the differential compares failures too
        return "raises", type(exc).__name__


class Str(str):
    pass


class Int(int):
    pass


class Flt(float):
    pass


def row_of(**over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"decision_id": "0123456789abcdef0000000000000001", "ts": 1795839427.5398946,
                           "run_id": "run-1", "kind": "check", "guard": "rules", "input_digest": "a" * 64,
                           "decision": "allow", "reason": "ok", "numbers": '{"a":1.5}', "guard_version": None,
                           "principal": None, "seq": 1}
    row.update(over)
    return row


def test_orjson_escapes_every_code_point_as_the_encoder_does() -> None:
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    assert orjson.dumps(chars) == json.dumps(chars, ensure_ascii=False, separators=(",", ":")).encode()


EDGES = [0.0, -0.0, 1e16, 1e-7, 1e-5, 1e15, 123456789012345678.0, 1.5, -2.5e-300, 5e-324, 1.7976931348623157e308,
         0.1, 1 / 3, 1795839427.5398946, 2**53 + 1.0, math.inf, -math.inf, math.nan,
         0, -1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**40, True, False, None,
         "", "\x00\x1f\x7f\"\\/", "\u2028\u2029", "é😀", "\ud800", "a\udfffb", Str("x"), Int(3), Flt(2.5),
         [1, 2.0], {"b": 1, "a": [None]}, (1,), b"bytes"]


@pytest.mark.parametrize("value", EDGES, ids=repr)
@pytest.mark.parametrize("field", ["ts", "seq", "reason"])
def test_edge_values_hash_as_before(field: str, value: Any) -> None:
    row = row_of(**{field: value})
    assert outcome(record_hash, row) == outcome(old_record_hash, row)


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats() | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(alphabet=st.characters(exclude_categories=())) | st.text(max_size=5).map(Str)
    | st.integers().map(Int) | st.floats(allow_nan=False).map(Flt),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({}, optional={k: values for k in CONTENT}),
       st.dictionaries(st.text(max_size=4), values, max_size=2))
def test_generated_contents_hash_as_before(content: dict[str, Any], other: dict[str, Any]) -> None:
    row = {**other, **content}  # columns outside CONTENT are not hashed
    assert outcome(record_hash, row) == outcome(old_record_hash, row)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=())), st.floats(), st.integers(min_value=-(2**66),
                                                                                         max_value=2**66))
def test_flat_rows_hash_as_before(text: str, ts: float, seq: int) -> None:
    row = row_of(reason=text, numbers=text[::-1], ts=ts, seq=seq)
    assert outcome(record_hash, row) == outcome(old_record_hash, row)


def test_without_orjson_fragment_the_encoder_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonutil, "_Fragment", None)
    for value in (1e16, "é", 2**64, None):
        row = row_of(ts=value)
        assert record_hash(row) == old_record_hash(row)


def test_a_chain_hashed_by_the_old_function_verifies(tmp_path: Any) -> None:
    """Rows whose hashes the old function wrote (unicode, awkward floats) pass verify, which hashes anew."""
    import sqlalchemy as sa

    from agentguard.server import schema
    from agentguard.server.audit import migrate

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'old.sqlite'}")
    migrate(engine)
    prev, heads, rows = GENESIS, {}, []
    for seq, (ts, reason) in enumerate([(1e16, "é😀"), (1e-07, "\x00\u2028"), (5e-324, 'q"\\'), (1795839427.25, "")],
                                       start=1):
        row = row_of(decision_id=f"{seq:032x}", ts=ts, reason=reason, run_id=f"run-{seq % 2}", seq=seq, shadow=None)
        rec = old_record_hash(row)
        prev = chain_hash(seq, prev, rec)
        heads[row["run_id"]] = run_hash(heads.get(row["run_id"], GENESIS), rec)
        rows.append({**row, "chain_hash": prev, "run_hash": heads[row["run_id"]]})
    with engine.begin() as c:
        c.execute(schema.decisions.insert(), rows)
    report = chain.verify(engine)
    engine.dispose()
    assert report.ok, report.problems
    assert report.chained == 4
