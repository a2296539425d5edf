"""Session-23 red team of the trace store across replicas (:mod:`agentguard.server.trace_ledger`), SQLite and
PostgreSQL.

Holes found (fixed):

1. The trace quota (``trace_quota_bytes``) and the run-id slots lived in each replica's state folder
   (``traces/.quota``, ``traces/.runs``): two replicas on one database each allowed an identity the whole quota,
   and each stored the same run id once. Now both are rows of the audit database (``trace_claims``,
   ``trace_quota``), which every replica shares.
2. A slot was anyone's: any agent could upload first under a guessable run id that the audit store did not know
   yet, and the owner's true trace of that run was refused (409). Under ``run_binding = "identity"`` a slot is the
   identity's own; two identities' traces of one run id are stored as two runs (never grafted into one).
"""

from __future__ import annotations

import contextlib
import itertools
import threading

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("pyarrow")
from fastapi.testclient import TestClient  # noqa: E402

from svc_roles import AGENT, Cred, credentials_file  # noqa: E402

MALLORY = Cred("mallory", "agent", "mallory-agent-token-0123")
QUOTA = 64 * 1024
_n = itertools.count()


@contextlib.contextmanager
def two_replicas(tmp_path, store_url, **kw):
    """Two services on one audit database, each with its own state folder (as on two hosts)."""
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    creds = credentials_file(tmp_path, (AGENT, MALLORY))
    apps = [create_app(ServerSettings(db_url=store_url, state_dir=str(tmp_path / f"replica{i}"),
                                      credentials_file=str(creds), trace_quota_bytes=QUOTA, **kw)) for i in (0, 1)]
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(TestClient(a)) for a in apps], [a.state.service.traces for a in apps]


def _batch(*run_ids, unsafe=False):
    return {"traces": [{"run_id": r, "labels": {"unsafe": unsafe},
                        "steps": [{"state": "s0", "observation": f"{r}-{next(_n)}"}, {"state": "s1"}]}
                       for r in run_ids]}


def _kept_bytes(stores, who):
    from agentguard.server.traces import MARKER_BYTES, upload_identity

    files = [f for s in stores for f in s.directory.glob("*.parquet") if upload_identity(f) == who]
    return sum(f.stat().st_size for f in files), files


def test_the_quota_is_the_deployments_not_a_replicas(tmp_path, store_url):
    from agentguard.server.traces import MARKER_BYTES

    with two_replicas(tmp_path, store_url) as (clients, stores):
        codes = []
        for i in range(30):  # alternately through each replica: ~5 KB a batch, a 64 KiB quota
            r = clients[i % 2].post("/v1/traces", headers=AGENT.headers, json=_batch(f"q{next(_n)}"))
            codes.append(r.status_code)
            assert r.status_code in (200, 429), r.text
        size, files = _kept_bytes(stores, AGENT.identity)
        assert len(files) == codes.count(200) and codes[-1] == 429, codes
        assert size + MARKER_BYTES * len(files) == stores[0].used(AGENT.identity) == stores[1].used(AGENT.identity)
        assert stores[0].used(AGENT.identity) <= QUOTA  # was about 2 x QUOTA: each replica counted its own


def test_a_run_id_is_stored_once_across_replicas(tmp_path, store_url):
    with two_replicas(tmp_path, store_url) as (clients, stores):
        assert clients[0].post("/v1/traces", headers=AGENT.headers, json=_batch("r-1")).status_code == 200
        r = clients[1].post("/v1/traces", headers=AGENT.headers, json=_batch("r-1"))
        assert r.status_code == 409, r.text  # was 200: the other replica's folder had no marker


def test_concurrent_uploads_through_both_replicas_stay_within_the_quota(tmp_path, store_url):
    from agentguard.server.traces import MARKER_BYTES

    with two_replicas(tmp_path, store_url) as (clients, stores):
        codes: list[int] = []

        def go(c):
            for _ in range(10):
                codes.append(c.post("/v1/traces", headers=AGENT.headers, json=_batch(f"c{next(_n)}")).status_code)

        ts = [threading.Thread(target=go, args=(clients[k % 2],)) for k in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        size, files = _kept_bytes(stores, AGENT.identity)
        assert set(codes) <= {200, 429} and 429 in codes, codes
        assert len(files) == codes.count(200)
        assert size + MARKER_BYTES * len(files) == stores[0].used(AGENT.identity) <= QUOTA


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.lists(st.tuples(st.sampled_from([0, 1]), st.sampled_from([0, 1])), min_size=1, max_size=5))
def test_property_no_identity_takes_a_run_id_ahead_of_another(tmp_path_factory, order):
    """Two identities upload a trace of one guessable run id, through either replica, in any order: each one's first
    upload is stored (200), each later one is 409; the two are stored under distinct ids, and reading every replica's
    traces back never joins rows of two identities into one run."""
    from agentguard.server.traces import load_traces, upload_identity

    tmp = tmp_path_factory.mktemp("slots")
    url = f"sqlite:///{tmp / 'audit.sqlite'}"
    who = (AGENT, MALLORY)
    with two_replicas(tmp, url) as (clients, stores):
        seen: set[int] = set()
        stored: dict[int, str] = {}
        for ident, replica in order:
            r = clients[replica].post("/v1/traces", headers=who[ident].headers, json=_batch("order-42"))
            assert r.status_code == (409 if ident in seen else 200), (ident, r.text)
            if ident not in seen:
                stored[ident] = r.json()["run_ids"][0]
            seen.add(ident)
        assert len(set(stored.values())) == len(stored)
        assert stored[next(i for i, _ in order)] == "order-42"  # the first keeps the plain id
        for s in stores:
            for f in s.directory.glob("*.parquet"):
                ids = {t.run_id for t in load_traces(s.directory, identities=[upload_identity(f)])}
                assert ids <= {stored[i] for i in stored if who[i].identity == upload_identity(f)}
        runs = [t for s in stores for t in load_traces(s.directory)]
        assert sorted(t.run_id for t in runs) == sorted(stored.values())
        assert all(len(t.steps) == 2 for t in runs)  # no run grafted onto another


def test_under_shared_binding_a_run_id_is_anyones_once(tmp_path, store_url):
    with two_replicas(tmp_path, store_url, run_binding="shared") as (clients, stores):
        assert clients[0].post("/v1/traces", headers=MALLORY.headers, json=_batch("s-1")).status_code == 200
        assert clients[1].post("/v1/traces", headers=AGENT.headers, json=_batch("s-1")).status_code == 409


def test_a_refused_batch_releases_its_slots(tmp_path, store_url):
    with two_replicas(tmp_path, store_url) as (clients, stores):
        big = _batch(*[f"b{i}" for i in range(20)])  # 20 x 4 KiB of markers: over the whole quota, 413
        assert clients[0].post("/v1/traces", headers=AGENT.headers, json=big).status_code == 413
        r = clients[1].post("/v1/traces", headers=AGENT.headers, json=_batch("b0"))
        assert r.status_code == 200 and r.json()["run_ids"] == ["b0"], r.text


def test_markers_written_before_the_database_ledger_still_hold(tmp_path, store_url):
    """An upgraded replica: a run id its folder's ``.runs`` marker holds is not stored again as the same run."""
    import hashlib

    runs = tmp_path / "replica0" / "traces" / ".runs"
    runs.mkdir(parents=True)
    (runs / hashlib.sha256(b"old-1").hexdigest()).touch()
    with two_replicas(tmp_path, store_url) as (clients, stores):
        r = clients[0].post("/v1/traces", headers=AGENT.headers, json=_batch("old-1"))
        assert r.status_code == 200 and r.json()["run_ids"][0] != "old-1", r.text
    with two_replicas(tmp_path, store_url, run_binding="shared") as (clients, stores):
        assert clients[0].post("/v1/traces", headers=AGENT.headers, json=_batch("old-1")).status_code == 409


def test_the_file_ledger_gives_the_same_answers(tmp_path):
    """The library's store (no database): one key once, optional keys got while free, charges within the quota."""
    from agentguard.server.trace_ledger import FileLedger

    led = FileLedger(tmp_path)
    assert led.claim(["a", "b"], ["p"], "x") == [True]
    assert led.claim(["c", "a"], ["q"], "x") == 1 and not (tmp_path / ".runs" / "c").exists()
    assert led.claim(["c"], ["p"], "y") == [False]
    kept = []
    assert led.charge("x", 60, 100, lambda: kept.append(1)) and not led.charge("x", 50, 100, lambda: kept.append(2))
    assert kept == [1] and led.used("x") == 60 and led.used("y") == 0
