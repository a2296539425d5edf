"""Session-22 red team: an identity's trace uploads are bounded (``trace_quota_bytes``), through the ASGI app.

Hole (known since session 21, fixed): ``POST /v1/traces`` kept every batch any agent credential sent, so one agent
(or a leaked token) could fill the state folder's disk; the service then failed closed for every decision of every
identity. Fix: :class:`agentguard.server.traces.TraceStore` charges each kept batch (its Parquet file plus 4096 bytes
per run id) to the uploading identity's ledger under an exclusive lock and keeps it only within the quota: over it the
answer is 429 (413 for a batch larger than the whole quota), one line, and nothing of the batch is kept (no file, no
claimed run id).
"""

from __future__ import annotations

import itertools
import threading

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from svc_roles import AGENT, Cred, credentials_file  # noqa: E402

from agentguard.server.traces import MARKER_BYTES  # noqa: E402

MALLORY = Cred("mallory", "agent", "mallory-agent-token-0123")
QUOTA = 64 * 1024
_n = itertools.count()


def _app(tmp, quota=QUOTA):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    creds = credentials_file(tmp, (AGENT, MALLORY))
    return create_app(ServerSettings(state_dir=str(tmp), credentials_file=str(creds), trace_quota_bytes=quota))


@pytest.fixture()
def client(tmp_path):
    app = _app(tmp_path)
    with TestClient(app) as c:
        yield c, app.state.service.traces


def _batch(runs=1, steps=1, width=8):
    return {"traces": [{"run_id": f"q{next(_n)}", "steps": [{"state": "x" * width, "observation": f"{i}-{k}"}
                                                            for k in range(steps)]} for i in range(runs)]}


def _kept(store):
    return sorted(store.directory.glob("*.parquet"))


def test_one_identity_cannot_fill_the_disk(client):
    c, store = client
    codes = []
    for _ in range(40):  # ~40 x 5 KB of marker alone: far over 64 KiB
        r = c.post("/v1/traces", headers=AGENT.headers, json=_batch(runs=1, steps=3))
        codes.append(r.status_code)
        if r.status_code != 200:
            assert r.status_code == 429 and "trace quota" in r.json()["error"] and "\n" not in r.json()["error"], r.text
    assert 200 in codes and codes[-1] == 429, codes
    assert sum(f.stat().st_size for f in _kept(store)) + MARKER_BYTES * codes.count(200) <= QUOTA
    assert store.used(AGENT.identity) <= QUOTA
    assert len(_kept(store)) == codes.count(200)  # a refused batch left no file
    r = c.post("/v1/traces", headers=MALLORY.headers, json=_batch())
    assert r.status_code == 200, r.text  # the quota is per identity


def test_a_batch_larger_than_the_quota_is_413_and_keeps_nothing(client):
    c, store = client
    big = _batch(runs=20, steps=2)  # 20 run ids: 80 KiB of markers alone
    r = c.post("/v1/traces", headers=AGENT.headers, json=big)
    assert r.status_code == 413 and "smaller batches" in r.json()["error"], r.text
    assert _kept(store) == [] and store.used(AGENT.identity) == 0
    assert not list((store.directory / ".pending").glob("*"))
    one = {"traces": big["traces"][:1]}
    assert c.post("/v1/traces", headers=AGENT.headers, json=one).status_code == 200  # its run id was not claimed


def test_a_damaged_ledger_counts_as_full(client, tmp_path):
    import sqlalchemy as sa

    from agentguard.server import schema
    from agentguard.server.trace_ledger import FULL, FileLedger

    c, store = client
    assert c.post("/v1/traces", headers=AGENT.headers, json=_batch()).status_code == 200
    with store.ledger.engine.begin() as conn:  # the service's ledger is the audit database's (session 23)
        conn.execute(sa.update(schema.trace_quota).values(used=-1))
    assert c.post("/v1/traces", headers=AGENT.headers, json=_batch()).status_code == 429
    files = FileLedger(tmp_path / "files")  # a store without a database keeps it in files
    (tmp_path / "files").mkdir()
    files._path(AGENT.identity).write_text("not a number")
    assert files.used(AGENT.identity) == FULL


def test_concurrent_uploads_of_one_identity_stay_within_the_quota(tmp_path):
    app = _app(tmp_path)
    with TestClient(app) as c:
        store = app.state.service.traces
        codes: list[int] = []

        def go():
            for _ in range(8):
                codes.append(c.post("/v1/traces", headers=AGENT.headers, json=_batch(runs=2, steps=2)).status_code)

        ts = [threading.Thread(target=go) for _ in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        kept = _kept(store)
        assert set(codes) <= {200, 429} and 429 in codes, codes
        assert len(kept) == codes.count(200)
        assert sum(f.stat().st_size for f in kept) + 2 * MARKER_BYTES * len(kept) == store.used(AGENT.identity) <= QUOTA


def test_a_batch_left_pending_by_a_killed_process_is_swept_later(tmp_path):
    import os
    import time as _t

    from agentguard.server.traces import TraceStore

    pending = tmp_path / "tr" / ".pending"
    pending.mkdir(parents=True)
    old, new = pending / "old.parquet", pending / "new.parquet"
    old.write_bytes(b"x" * 1000)
    new.write_bytes(b"y")
    os.utime(old, (_t.time() - 7200, _t.time() - 7200))
    TraceStore(tmp_path / "tr", quota_bytes=QUOTA)
    assert not old.exists() and new.exists()  # a batch another process is writing now is left alone


def test_the_setting_is_checked():
    from agentguard.core.errors import InputError
    from agentguard.server.settings import ServerSettings

    assert ServerSettings().trace_quota_bytes == 256 * 1024 * 1024
    for bad in (0, -1, 100, 1.5, "1000000", True):
        with pytest.raises(InputError, match="trace_quota_bytes"):
            ServerSettings(trace_quota_bytes=bad)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("s22quota")
    app = _app(tmp, quota=48 * 1024)
    with TestClient(app) as c:
        yield c, app.state.service.traces


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.tuples(st.sampled_from(["agent", "mallory"]), st.integers(1, 6), st.integers(0, 5),
                                  st.integers(0, 3000)), min_size=1, max_size=6))
def test_property_kept_bytes_never_exceed_the_quota_and_refusals_keep_nothing(shared, batches):
    c, store = shared
    who = {"agent": AGENT, "mallory": MALLORY}
    for name, runs, steps, width in batches:
        before = (len(_kept(store)), store.used(who[name].identity))
        r = c.post("/v1/traces", headers=who[name].headers, json=_batch(runs, steps, width))
        assert r.status_code in (200, 413, 429), r.text
        after = (len(_kept(store)), store.used(who[name].identity))
        if r.status_code == 200:
            assert after[0] == before[0] + 1 and after[1] > before[1]
        else:
            assert after == before and "\n" not in r.json()["error"]
        for w in who.values():
            assert store.used(w.identity) <= 48 * 1024
    assert sum(f.stat().st_size for f in _kept(store)) <= sum(store.used(w.identity) for w in who.values())
