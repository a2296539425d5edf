"""Session-21 red team of the guard service: a grant smuggled in through the replay of a run (real HTTP, uvicorn).

Hole found (fixed): a check's ``metadata`` is stored as the agent sent it. A key that no guard in force read as a
grant was accepted (``{"grant": "wire_money"}``); after a hot reload to guards that do read it
(``grant_facts``: a live request sending it is 422), the run was rebuilt for its next check by replaying its
stored inputs into the new guards, the stored claim included: the guard remembered the agent's own grant and
the next check of that run, ``wire_money`` without any metadata, was ALLOWed (a fresh run: REJECT).
Fix (:func:`agentguard.server.deciding.replay`): a replayed check's facts lose the keys the replayed guards read as
grants, the same rule a live request meets (:mod:`agentguard.server.facts`).

The guard is ``svc_counting.GrantMemo``: per-run memory of the first grant it sees, ``grant_facts = {"grant"}``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svc_roles import AGENT, credentials_file  # noqa: E402

V1 = '[[guards]]\ntype = "tool-rules"\nallow = ["read_*"]\n'
V2 = '[[guards]]\ntype = "python"\nfactory = "svc_counting:grant_memo"\n'


@pytest.fixture
def served(tmp_path, store_url):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    (tmp_path / "tools.toml").write_text(V1)
    app = create_app(ServerSettings(state_dir=str(tmp_path), db_url=store_url, tool_guards=str(tmp_path / "tools.toml"),
                                    reload_s=0.05, credentials_file=str(credentials_file(tmp_path, (AGENT,)))))
    with serve_in_thread(app) as base:
        yield base, app.state.guard_source, tmp_path / "tools.toml"


def _check(base, run, name, md=None):
    r = httpx.post(f"{base}/v1/check", headers=AGENT.headers,
                   json={"run_id": run, "tool_call": {"name": name}, "metadata": md or {}})
    return r.status_code, r.json().get("decision")


def _reload(source, path, text):
    before = source.version
    path.write_text(text)
    t0 = time.time()
    while source.version == before and time.time() - t0 < 5:
        source.get()
        time.sleep(0.06)
    assert source.version != before


def test_a_claim_stored_before_a_reload_is_no_grant_after_it(served):
    base, source, path = served
    assert _check(base, "R", "read_notes", {"grant": "wire_money"}) == (200, "ALLOW")  # no guard reads it yet
    _reload(source, path, V2)
    assert _check(base, "F", "wire_money", {"grant": "wire_money"})[0] == 422  # a live request may not send it
    assert _check(base, "G", "wire_money") == (200, "REJECT")
    assert _check(base, "R", "wire_money") == (200, "REJECT")  # the rebuilt run: the stored claim is not a grant


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.integers(1, 3), other=st.dictionaries(st.sampled_from(["task", "user", "note"]), st.text(max_size=5),
                                                        max_size=2), tool=st.sampled_from(["wire_money", "read_x"]))
def test_property_no_stored_claim_decides_as_a_grant_after_a_reload(served, before, other, tool):
    import uuid

    base, source, path = served
    path.write_text(V1)
    t0 = time.time()
    while "tool-rules" not in repr(source.current.tool):
        assert time.time() - t0 < 5, "the guard files were not reloaded"
        source.maybe_reload()
        time.sleep(0.06)
    run = f"p-{uuid.uuid4().hex[:10]}"
    for i in range(before):
        assert _check(base, run, "read_a", {**other, "grant": tool} if i == 0 else other)[0] == 200
    _reload(source, path, V2)
    assert _check(base, run, tool) == (200, "REJECT")
