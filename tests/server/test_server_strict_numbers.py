"""Strict numbers and a digest that cannot collide (issue 28), tried as an attacker against the real
service (uvicorn on loopback) with each audit store.

The attack: ``{"amount": 1e999}`` parsed to ``inf`` and orjson wrote ``inf`` as ``null``, so ``1e999``,
``-1e999`` and ``null`` shared one input digest: an escalation approved for ``amount: null`` let
``amount: 1e999`` through. Now such numbers (and lone surrogates) are refused with a 400 before anything
is decided, and the digest is over :func:`agentguard.server.jsonutil.canonical`, checked injective with
hypothesis over arbitrary JSON.
"""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard.server.audit import input_digest  # noqa: E402
from agentguard.server.jsonutil import RequestJSONError, canonical, loads_request  # noqa: E402

from svc_roles import AGENT, APPROVER, credentials_file  # noqa: E402

AUTH = {**AGENT.headers, "Content-Type": "application/json"}

# Arbitrary JSON as the parser produces it: finite doubles, ints of any size, Unicode text, nesting.
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25)


def same(a, b) -> bool:
    """Equal as JSON values *and* types (1 is not 1.0 is not True; -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_canonical_encoding_round_trips_exactly(v):
    """Injectivity: the standard parser reads the encoding back as the same value, types included."""
    enc = canonical(v)
    assert same(json.loads(enc), v)
    assert same(loads_request(enc), v)  # and the service's own strict reader accepts it


@settings(max_examples=400, deadline=None)
@given(JSON, JSON)
def test_distinct_json_values_have_distinct_digests(a, b):
    assert (input_digest(a) == input_digest(b)) == same(a, b)


@pytest.mark.parametrize("v", [[1, 1.0], [0.0, -0.0], [True, 1], [2**53, 2**53 + 1], [None, "null"],
                               [{"a": 1}, {"a": "1"}], [[1, 2], [[1], 2]], ["é", "e\u0301"]])
def test_near_misses_have_distinct_digests(v):
    a, b = v
    assert input_digest(a) != input_digest(b)


@pytest.mark.parametrize("raw", [b'{"a": 1e999}', b'{"a": -1e999}', b'{"a": [1' + b"0" * 400 + b'.0]}',
                                 b'{"a": "\\ud800"}', b'{"\\udfff": 1}', b'{"a": NaN}', b'{"a": -Infinity}'])
def test_the_reader_refuses_overflow_and_surrogates(raw):
    with pytest.raises(RequestJSONError):
        loads_request(raw)


@pytest.fixture()
def service(tmp_path, store_url):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    (tmp_path / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["*"]\nescalate = ["transfer_*"]\n')
    app = create_app(ServerSettings(db_url=store_url, state_dir=str(tmp_path), tool_guards=str(tmp_path / "tools.toml"),
                                    credentials_file=str(credentials_file(tmp_path))))
    with serve_in_thread(app) as base, httpx.Client(base_url=base, headers=AUTH, timeout=30) as c:
        yield c, app.state.store


BAD = [("1e999", "out of range"), ("-1e999", "out of range"), ("1" + "0" * 400 + ".5", "out of range"),
       ('"\\ud800"', "lone UTF-16 surrogate"), ("NaN", "NaN"), ("Infinity", "Infinity")]


def test_overflowing_numbers_and_surrogates_are_refused_on_every_endpoint(service):
    c, store = service
    for lit, why in BAD:
        bodies = [("/v1/check", '{"run_id": "n", "tool_call": {"name": "transfer_funds", "arguments": {"amount": %s}}}'),
                  ("/v1/check", '{"run_id": "n", "tool_call": {"name": "read"}, "metadata": {"x": %s}}'),
                  ("/v1/runs/n/steps", '{"state": {"x": %s}}'),
                  ("/v1/runs/n/signals", '{"signals": {"score": %s}}'),
                  ("/v1/traces", '{"traces": [{"steps": [{"state": %s}]}]}'),
                  ("/v1/approvals", '{"decision_id": "x", "run_id": "n", "approved": true, "approver": "a", '
                                    '"tool_call": {"name": "transfer_funds", "arguments": {"amount": %s}}}')]
        for path, tmpl in bodies:
            r = c.post(path, content=(tmpl % lit).encode(), headers=APPROVER.headers if "approv" in path else {})
            assert r.status_code == 400, (path, lit, r.text)
            assert why in r.json()["error"] and "\n" not in r.json()["error"], r.text
    # pydantic's lax float parsing would read the string "inf" as a float: refused too
    assert c.post("/v1/runs/n/steps", json={"state": 1, "time": "inf"}).status_code == 422
    assert c.post("/v1/runs/n/signals", json={"signals": {"s": "-inf"}}).status_code == 422
    assert store.count() == 0  # nothing was decided


def test_an_approval_for_null_does_not_pass_another_amount(service):
    c, store = service
    digests = set()
    ids = {}
    for amount in (None, 1e308, -1e308, 0, 0.0, -0.0, 2**64, 2**64 + 1, "1e999"):
        r = c.post("/v1/check", json={"run_id": "d", "tool_call": {"name": "transfer_funds",
                                                                    "arguments": {"amount": amount}}})
        assert r.status_code == 200 and r.json()["decision"] == "ESCALATE", r.text
        ids[json.dumps(amount)] = r.json()["decision_id"]
        digests.add(store.decision(r.json()["decision_id"])["input_digest"])
    assert len(digests) == 9  # every amount its own digest (0, 0.0 and -0.0 included)
    # the escalation of amount: null cannot be used to approve any other amount
    did = ids["null"]
    for other in (1e308, 0, 2**64, "1e999"):
        r = c.post("/v1/approvals", headers=APPROVER.headers, json={
            "decision_id": did, "run_id": "d", "approved": True,
            "tool_call": {"name": "transfer_funds", "arguments": {"amount": other}}})
        assert r.status_code == 409 and "another tool call" in r.json()["error"], r.text
    assert store.count_decisions("d", kind="approval") == 0
    r = c.post("/v1/approvals", headers=APPROVER.headers, json={
        "decision_id": did, "run_id": "d", "approved": True,
        "tool_call": {"name": "transfer_funds", "arguments": {"amount": None}}})
    assert r.status_code == 200 and r.json()["decision"] == "ALLOW", r.text  # the call it escalated: yes


# Bodies that may hold what the value walk refuses: lone surrogates (as \u escapes), overflowing numbers
# (an exponent, or hundreds of digits), next to ordinary values.
_HOSTILE = st.recursive(
    st.none() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
    | st.sampled_from(["\ud800", "a\udfffb", "\udbff", "ok\U0001f600"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(max_size=4) | st.sampled_from(["\ud83d", "k\udc00"]), inner, max_size=4),
    max_leaves=20)
_NUMBER_TEXT = st.sampled_from(["1e999", "-1e999", "1E400", "2e308", "1e308", "1.5e-400", "9" * 400 + ".0",
                                "-" + "9" * 320 + ".5", "9" * 400, "1e2", "0.1"])


@settings(max_examples=300, deadline=None)
@given(_HOSTILE, _NUMBER_TEXT, st.booleans())
def test_the_walk_is_skipped_only_where_it_cannot_refuse(value, number, ascii_only):
    """loads_request walks the parsed value only when the text could hold what the walk refuses: every body
    gets exactly the answer of the full walk (refused or the same value)."""
    from agentguard.core.strict_json import loads_strict
    from agentguard.server.jsonutil import check_values

    text = json.dumps({"v": value, "n": "@"}, ensure_ascii=ascii_only, allow_nan=False).replace('"@"', number)
    raw = text.encode("utf-8", "surrogatepass")
    try:
        full = loads_strict(raw)
        check_values(full)
        want: object = full
    except Exception as exc:  # noqa: BLE001 - compared below
        want = type(exc)
    try:
        got: object = loads_request(raw)
    except RequestJSONError:
        got = RequestJSONError if want is not type(None) else None
    except Exception as exc:  # noqa: BLE001
        got = type(exc)
    if isinstance(want, type):
        assert isinstance(got, type) and issubclass(want, ValueError) and issubclass(got, ValueError), (text, got)
    else:
        assert not isinstance(got, type) and same(got, want), text
