"""Every endpoint that takes a body, fuzzed with JSON an attacker would send: any value in any field, fields
missing or extra, nested junk, odd run ids. The service must answer each with a one-line error or a
verdict, never a 500, and never ALLOW a call the rules refuse as the client would read it.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

TOKEN = "fuzz-token"
OK = {200, 400, 403, 404, 405, 409, 410, 413, 422}  # 403: the legacy token is no approver

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
                      st.text(max_size=20))
json_any = st.recursive(json_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
                        max_leaves=8)
names = st.one_of(st.sampled_from(["read_file", "delete_file", "Read_File", "read_file\u200b", " read_file",
                                   "read\u200b_file", "ｒｅａｄ_file", "delete-file", "DELETE_FILE", ""]),
                  st.text(max_size=12))
run_ids = st.one_of(st.sampled_from(["r1", "r:2", "a" * 128, "a" * 129, "../x", "r 1", "r%2f1", "", "é"]),
                    st.text(max_size=10))


def tool_call() -> Any:
    return st.fixed_dictionaries({"name": names}, optional={"arguments": json_any, "call_id": json_any,
                                                            "id": json_any, "extra": json_any})


bodies = {
    "/v1/check": st.fixed_dictionaries({}, optional={"run_id": st.one_of(run_ids, json_any), "tool_call":
                                                     st.one_of(tool_call(), json_any), "metadata": json_any,
                                                     "junk": json_any}),
    "/v1/runs/{run}/steps": st.fixed_dictionaries({}, optional={"state": json_any, "action": json_any,
                                                                "observation": json_any, "output": json_any,
                                                                "time": json_any, "signals": json_any}),
    "/v1/runs/{run}/signals": st.fixed_dictionaries({}, optional={"signals": st.one_of(
        st.dictionaries(st.text(max_size=5), json_leaf, max_size=3), json_any), "time": json_any}),
    "/v1/approvals": st.fixed_dictionaries({}, optional={"decision_id": json_any, "run_id": json_any,
                                                         "tool_call": st.one_of(tool_call(), json_any),
                                                         "approved": json_any, "approver": json_any}),
    "/v1/traces": st.fixed_dictionaries({}, optional={"traces": st.one_of(st.lists(json_any, max_size=2), json_any)}),
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: Any) -> Any:
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    tmp = tmp_path_factory.mktemp("fuzz")
    (tmp / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_*"]\ndeny = ["delete_*"]\n'
                                    'escalate = ["pay_*"]\n')
    app = create_app(ServerSettings(token=TOKEN, state_dir=str(tmp), tool_guards=str(tmp / "tools.toml")))
    with TestClient(app) as c:
        yield c


def _post(client: Any, path: str, body: Any) -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(path, content=raw, headers={"Authorization": f"Bearer {TOKEN}",
                                                   "Content-Type": "application/json"})


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(bodies)), st.data(), run_ids)
def test_property_every_body_gets_an_answer_never_a_500(client: Any, path: str, data: Any, run: str) -> None:
    body = data.draw(bodies[path])
    url = path.replace("{run}", quote(run, safe="") or "x")
    r = _post(client, url, body)
    assert r.status_code in OK, (url, body, r.status_code, r.text[:300])
    out = r.json()
    assert isinstance(out, dict)
    if r.status_code != 200:
        assert isinstance(out.get("error"), str) and "\n" not in out["error"] and "Traceback" not in out["error"]


def test_a_key_with_a_newline_is_named_on_one_line(client: Any) -> None:
    # found by the property above: an unknown key "\n" in a trace made the 422 summary two lines
    r = _post(client, "/v1/traces", {"traces": [{"\n": None}]})
    assert r.status_code == 422 and "\n" not in r.json()["error"] and "'\\n'" in r.json()["error"], r.text


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(tool_call(), json_any)
def test_property_an_allowed_call_is_one_the_rules_allow(client: Any, call: dict, metadata: Any) -> None:
    """ALLOW only for a body the client's own JSON reader sees as a call of an allowed tool: a name that
    reads as read_* once canonical (what the rules match), never delete_* or pay_*."""
    from agentguard.core.canonical import canonical_name

    r = _post(client, "/v1/check", {"run_id": "fz", "tool_call": call, "metadata": metadata})
    assert r.status_code in OK
    if r.status_code == 200 and r.json()["decision"] == "ALLOW":
        seen = json.loads(json.dumps(call))
        name = canonical_name(seen["name"])
        assert name.startswith("read_"), (call, r.json())
        assert isinstance(seen.get("arguments", {}), dict)


def test_bytes_that_are_not_one_json_object_are_refused(client: Any) -> None:
    for raw in [b"", b"{", b"[]", b"null", b'{"tool_call": {"name": "read_file"}} {}', b"\xff\xfe{}",
                b'{"tool_call": {"name": "read_file", "name": "delete_file"}}', b"{" * 5000 + b"}" * 5000]:
        r = _post(client, "/v1/check", raw)
        assert r.status_code in (400, 413, 422), (raw[:40], r.status_code)
