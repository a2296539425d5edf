"""Session-21 red team of the guard service: claiming another identity's run in the trace store (real HTTP).

Hole found (fixed): a run id is stored once in the trace store (the first upload claims it, so no later batch can
graft steps onto it). Any agent credential could upload a made-up trace under another identity's live run id
(``run_binding = "identity"``: a run it may not feed), claiming it; the true trace of that run, uploaded later by
its owner (an unsafe run the proactive model should learn from), was refused with 409 and never learned. Now a
batch naming a run that another identity started is refused whole with the run binding's 403 (nothing stored); a
run id the audit store does not know (an offline trace) is anyone's to claim, as a new run is.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("pyarrow")
pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svc_roles import AGENT, Cred, credentials_file  # noqa: E402

MALLORY = Cred("mallory", "agent", "mallory-agent-token-0123")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    tmp = tmp_path_factory.mktemp("tr21")
    (tmp / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_*"]\n')
    app = create_app(ServerSettings(state_dir=str(tmp), tool_guards=str(tmp / "tools.toml"),
                                    credentials_file=str(credentials_file(tmp, (AGENT, MALLORY)))))
    with serve_in_thread(app) as b:
        yield b


def _trace(run_id: str, unsafe: bool) -> dict:
    return {"run_id": run_id, "labels": {"unsafe": unsafe}, "steps": [{"state": "a"}, {"state": "bad" if unsafe else "b"}]}


def _live(base, run):
    r = httpx.post(f"{base}/v1/check", headers=AGENT.headers, json={"run_id": run, "tool_call": {"name": "read_x"}})
    assert r.status_code == 200


def test_another_identitys_live_run_cannot_be_claimed_in_the_trace_store(base):
    _live(base, "victim-run")
    r = httpx.post(f"{base}/v1/traces", headers=MALLORY.headers, json={"traces": [_trace("victim-run", False)]})
    assert r.status_code == 403, r.text
    mine = httpx.post(f"{base}/v1/traces", headers=AGENT.headers, json={"traces": [_trace("victim-run", True)]})
    assert mine.status_code == 200, mine.text  # the owner's true (unsafe) trace is stored


def test_a_batch_naming_one_foreign_run_stores_nothing(base):
    _live(base, "victim-2")
    r = httpx.post(f"{base}/v1/traces", headers=MALLORY.headers,
                   json={"traces": [_trace("mallory-own", False), _trace("victim-2", False)]})
    assert r.status_code == 403
    assert httpx.post(f"{base}/v1/traces", headers=MALLORY.headers,
                      json={"traces": [_trace("mallory-own", False)]}).status_code == 200  # not claimed by the refusal


def test_regression_an_offline_run_id_is_each_identitys_once(base):
    """Session 23: it was anyone's once (the first identity to upload it took it and the owner got 409); now the slot
    is the identity's own: both are stored, as two runs (``run_ids``), and each identity's second upload is 409."""
    from agentguard.server.trace_ledger import identity_key

    first = httpx.post(f"{base}/v1/traces", headers=MALLORY.headers, json={"traces": [_trace("offline-1", False)]})
    assert first.status_code == 200 and first.json()["run_ids"] == ["offline-1"], first.text
    mine = httpx.post(f"{base}/v1/traces", headers=AGENT.headers, json={"traces": [_trace("offline-1", True)]})
    assert mine.status_code == 200, mine.text
    assert mine.json()["run_ids"] == [f"offline-1@{identity_key(AGENT.identity)[:16]}"]
    for who in (MALLORY, AGENT):
        assert httpx.post(f"{base}/v1/traces", headers=who.headers,
                          json={"traces": [_trace("offline-1", False)]}).status_code == 409


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 3), at=st.integers(0, 3), unsafe=st.booleans())
def test_property_no_batch_holding_a_foreign_live_run_is_stored(base, n, at, unsafe):
    import uuid

    victim = f"v-{uuid.uuid4().hex[:12]}"
    _live(base, victim)
    own = [_trace(f"m-{uuid.uuid4().hex[:12]}", unsafe) for _ in range(n)]
    batch = own[:at] + [_trace(victim, unsafe)] + own[at:]
    assert httpx.post(f"{base}/v1/traces", headers=MALLORY.headers, json={"traces": batch}).status_code == 403
    assert httpx.post(f"{base}/v1/traces", headers=AGENT.headers,
                      json={"traces": [_trace(victim, True)]}).status_code == 200


def test_a_trace_batch_is_parsed_off_the_event_loop(tmp_path, monkeypatch):
    """Resource exhaustion per request (found, fixed): a 1 MB batch (330,000 steps) takes seconds of CPU to
    validate and convert; on the event loop it stalled every decision of the process (a check waited 3.7-4.5 s;
    ``benchmarks/server_s21_trace_stall.py``: 0.5 s after). The batch is now parsed in a worker thread."""
    import asyncio

    from agentguard.server.app import create_app
    from agentguard.server.models import IngestRequest
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    app = create_app(ServerSettings(state_dir=str(tmp_path), credentials_file=str(credentials_file(tmp_path, (AGENT,)))))
    svc = app.state.service
    seen: list[bool] = []  # for each batch parsed: was it on a thread running an event loop?
    orig = svc.parse

    def parse(model, raw):
        if model is IngestRequest:
            try:
                asyncio.get_running_loop()
                seen.append(True)
            except RuntimeError:
                seen.append(False)
        return orig(model, raw)

    monkeypatch.setattr(svc, "parse", parse)
    with serve_in_thread(app) as b:
        r = httpx.post(f"{b}/v1/traces", headers=AGENT.headers, json={"traces": [_trace("off-loop", False)]})
        assert r.status_code == 200, r.text
        bad = httpx.post(f"{b}/v1/traces", headers=AGENT.headers, json={"traces": []})
        assert bad.status_code == 422  # a refusal raised in the worker is still the one error shape
    assert seen == [False, False], seen
