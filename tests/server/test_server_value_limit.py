"""A decision request holds at most ``max_json_values`` JSON values (session 19).

The hole (availability, any agent credential): a body well under ``max_body_bytes`` but made of many small
values (``{"n": [[[[1]]], [[[1]]], ...]}``, 480 KB, 240,000 values) was snapshotted value by value before
and after each guard on the event loop (:func:`agentguard.core.replacement._identity`), then digested and
stored: measured on the shared 2-core machine at load 11 (``benchmarks/server_wide_body.py``, results in
``benchmarks/results/server_wide_body.json``), one such request took 14.3-17.4 s with the limit lifted and
``GET /health`` waited 14.0-17.3 s behind it; with the limit, 0.4-1.8 s (a one-value check took 0.3-1.4 s
on that machine meanwhile). Now the body's values are counted on its
text before it is parsed (:func:`agentguard.server.jsonutil.count_values`) and a decision request over the
limit is 400; trace batches (not decided) are not limited.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from agentguard.server.jsonutil import count_values  # noqa: E402

TOKEN = "values-token-123456789"
H = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


@pytest.fixture()
def app(tmp_path):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    (tmp_path / "t.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_*"]\n')
    return create_app(ServerSettings(token=TOKEN, state_dir=str(tmp_path), tool_guards=str(tmp_path / "t.toml"),
                                     max_json_values=1000))


def wide(n: int) -> bytes:
    return json.dumps({"tool_call": {"name": "read_file", "arguments": {"n": [[[[1]]]] * n}}}).encode()


def test_a_body_of_too_many_values_is_refused_before_it_is_parsed(app, monkeypatch):
    import agentguard.server.service as service

    with TestClient(app) as c:
        ok = c.post("/v1/check", headers=H, content=wide(240))  # 4 + 4*240 = 964 values
        assert ok.status_code == 200 and ok.json()["decision"] == "ALLOW", ok.text
        parsed = []
        real = service.loads_request
        monkeypatch.setattr(service, "loads_request", lambda raw: parsed.append(1) or real(raw))
        for path, body in (("/v1/check", wide(260)),
                           ("/v1/runs/r/steps", json.dumps({"state": {"k": list(range(1200))}}).encode()),
                           ("/v1/runs/r/signals", json.dumps({"signals": {"s": 0.5}, "time": 1.0}).encode()[:-1]
                            + b", " + b", ".join(b'"x%d": 1' % i for i in range(1100)) + b"}")):
            r = c.post(path, headers=H, content=body)
            assert r.status_code == 400 and "max_json_values" in r.json()["error"], (path, r.text)
        from fastapi.exceptions import RequestValidationError

        from agentguard.server.models import ApprovalRequest

        with pytest.raises(RequestValidationError, match="max_json_values"):  # approvals parse the same way
            app.state.service.parse(ApprovalRequest, json.dumps({
                "decision_id": "x", "run_id": "r", "approved": True,
                "tool_call": {"name": "a", "arguments": {"v": [0] * 1200}}}).encode())
        assert parsed == []  # refused on the text: never parsed, never walked
        assert app.state.store.count() == 1


def test_trace_batches_are_not_limited(app):
    with TestClient(app) as c:
        traces = [{"run_id": f"t{i}", "steps": [{"state": "00", "signals": {"score": 0.5}}] * 50} for i in range(20)]
        r = c.post("/v1/traces", headers=H, content=json.dumps({"traces": traces}).encode())
        assert r.status_code == 200, r.text


def _n(v):
    if isinstance(v, list):
        return 1 + sum(_n(x) for x in v)
    if isinstance(v, dict):
        return 1 + sum(_n(x) for x in v.values())
    return 1


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                           | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(v=json_values, indent=st.sampled_from([None, 0, 2]), ascii_=st.booleans())
def test_property_the_count_is_exact_for_any_json(v, indent, ascii_):
    raw = json.dumps(v, indent=indent, ensure_ascii=ascii_).encode()
    assert count_values(raw) == _n(v), raw
