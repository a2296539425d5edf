"""JSON Lines traces with keys given twice (session 21 red team).

Before: ``{"steps": [unsafe...], "steps": [safe...]}`` learned from the last list only (orjson keeps the
last key), so the unsafe run vanished without a word; the same for a step's ``"state"`` twice and a
key spelt with an escape (``"st\\u0065ps"``). Now the line is refused, naming the key. Keys inside a
state keep the parser's rule (the last one wins, as every engine reads them); a ``run_id`` given twice
literally only renames the run and is not looked for (a third scan of every line, measured at about an
eighth of orjson's time), but it is refused on a line that goes to the check anyway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.errors import InputError
from agentguard.predictive.trace_stream import iter_jsonl_runs

S1, S2 = '{"temp": 500}', '{"temp": 5}'


def _runs(tmp_path: Path, line: str) -> list:
    p = tmp_path / "t.jsonl"
    p.write_text(line + "\n")
    return list(iter_jsonl_runs(p))


@pytest.mark.parametrize("line,key", [
    (f'{{"run_id": "a", "steps": [{{"state": {S1}}}], "steps": [{{"state": {S2}}}]}}', "steps"),
    (f'{{"run_id": "a", "steps": [{{"state": {S1}}}], "st\\u0065ps": [{{"state": {S2}}}]}}', "steps"),
    (f'{{"run_id": "a", "steps": [{{"state": {S1}}}], "run\\u005fid": "b"}}', "run_id"),
    (f'{{"run_id": "a", "steps": [{{"state": {S1}, "state": {S2}}}]}}', "state"),
    (f'{{"run_id": "a", "steps": [{{"state": {S1}}}, {{"st\\u0061te": {S1}, "state": {S2}}}]}}', "state"),
])
def test_a_key_given_twice_is_refused(tmp_path: Path, line: str, key: str) -> None:
    with pytest.raises(InputError, match=f"key '{key}' of .* given twice"):
        _runs(tmp_path, line)


def test_keys_twice_inside_a_state_keep_the_last_one(tmp_path: Path) -> None:
    line = '{"run_id": "a", "steps": [{"state": {"temp": 500, "temp": 5, "state": 1, "state": 2}}]}'
    assert _runs(tmp_path, line) == [("a", [{"temp": 5, "state": 2}])]


KEY = st.sampled_from(["steps", "st\\u0065ps", "run\\u005fid"])


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 4), dup=st.one_of(st.none(), KEY), at=st.integers(0, 3), state_dup=st.booleans())
def test_generated_lines_are_read_or_refused_never_half_read(tmp_path_factory, n, dup, at, state_dup) -> None:
    """Property: a line with a trace key or a step's state given twice is refused; any other line gives
    exactly its steps' states."""
    states = [{"temp": i} for i in range(n)]
    steps = [json.dumps({"state": s}) for s in states]
    if state_dup:
        steps[at % n] = steps[at % n][:-1] + ', "state": {"temp": -1}}'
    parts = ['"run_id": "a"', f'"steps": [{", ".join(steps)}]']
    if dup is not None:
        parts.insert(at % 3, f'"{dup}": ' + ('[]' if "steps" in dup or "0065" in dup else '"b"'))
    line = "{" + ", ".join(parts) + "}"
    tmp = tmp_path_factory.mktemp("t")
    if dup is not None or state_dup:
        with pytest.raises(InputError, match="given twice"):
            _runs(tmp, line)
    else:
        assert _runs(tmp, line) == [("a", states)]
