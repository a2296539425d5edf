"""Session-21 red team of the guard service: a hot reload in the middle of a decision (real HTTP, uvicorn).

Hole found (fixed): the audit record of a decision took the guard version from the guard source at the moment
it was written, not from the guards that decided it. A reload between the two (a slow store read, another
request's ``get()`` swapping the guards meanwhile) stored an ESCALATE of the old guards under the new
guards' version; the approval route compared that version with the one in force (equal), so an approver's
"yes" ran a call the guards in force refuse (``transfer_funds`` denied by the new file: 200 ALLOW). The approval
route also compared versions before it took the run's lock, so a reload between that check and the answer
had the same effect. Fix (the class: a version read apart from the guards it names):
:meth:`agentguard.server.guards.GuardSource.versioned` gives the guards and their version as one pair (swapped in
one assignment); the service's pipelines keep the pair (``Pipes.version``), every record stores the version of
the pipelines that decided it, and :meth:`agentguard.server.service.Service.approve` compares, under the run's
lock, the escalation's version with that of the pipelines that resolve it.

Second hole of the same class (fixed): ``GuardSource.maybe_reload`` hashed the files and took their stamps
after building the guards. A guard file rewritten while it was being built (a deploy writing two files, an
editor's truncate-then-write) left the guards built from the first content in force under the second content's
version, and, the stamps matching the second content, never reloaded. Now the files are hashed before and
after the build; a build during which they changed is not swapped in and is retried on the next tick.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svc_roles import AGENT, APPROVER, credentials_file  # noqa: E402

from agentguard.core.types import Context, ToolCall  # noqa: E402
from agentguard.server import guards as guards_mod  # noqa: E402
from agentguard.server.guards import GuardSource  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

ESCALATES = '[[guards]]\ntype = "tool-rules"\nallow = ["read_file", "transfer_*"]\nescalate = ["transfer_*"]\n'
DENIES = '[[guards]]\ntype = "tool-rules"\nallow = ["read_file"]\ndeny = ["transfer_*"]\n'
TRANSFER = {"name": "transfer_funds", "arguments": {"amount": 10**6}}


@pytest.fixture
def reloading(tmp_path, store_url):
    """A service on ``store_url`` whose tool guards reload every 50 ms; checks of run ``slow`` wait 0.6 s after the
    pipelines were taken (a slow store read), so a reload can come in between."""
    from agentguard.server.app import create_app
    from agentguard.server.testing import serve_in_thread

    (tmp_path / "tools.toml").write_text(ESCALATES)
    app = create_app(ServerSettings(state_dir=str(tmp_path), tool_guards=str(tmp_path / "tools.toml"), reload_s=0.05,
                                    db_url=store_url,
                                    credentials_file=str(credentials_file(tmp_path, (AGENT, APPROVER)))))
    svc = app.state.service
    orig = svc.astate

    async def slow(run_id, pipes, expire=True):
        if run_id.startswith("slow"):
            await asyncio.sleep(0.6)
        return await orig(run_id, pipes, expire)

    svc.astate = slow
    with serve_in_thread(app) as base:
        yield base, svc, tmp_path / "tools.toml"


def _reload_during(base: str, svc, path: Path, run: str) -> dict:
    """Check TRANSFER in ``run`` (slow) while the tool file is switched to DENIES and a reload happens."""
    out: dict = {}

    def first():
        out["r"] = httpx.post(f"{base}/v1/check", headers=AGENT.headers, json={"run_id": run, "tool_call": TRANSFER},
                              timeout=20)

    t = threading.Thread(target=first)
    t.start()
    time.sleep(0.2)
    before = svc.source.version
    path.write_text(DENIES)
    deadline = time.time() + 5
    while svc.source.version == before and time.time() < deadline:  # any request's get() may reload
        r = httpx.post(f"{base}/v1/check", headers=AGENT.headers,
                       json={"run_id": "other-" + run, "tool_call": TRANSFER})
        time.sleep(0.06)
    assert r.json()["decision"] == "REJECT", r.text  # the guards in force deny the call
    t.join()
    return out["r"].json()


def test_an_escalation_decided_before_a_reload_is_not_approved_under_the_new_guards(reloading):
    base, svc, path = reloading
    got = _reload_during(base, svc, path, "slow-1")
    assert got["decision"] == "ESCALATE"  # decided by the guards taken before the reload
    row = svc.store.decision(got["decision_id"])
    assert row["guard_version"] != svc.source.version  # recorded with the version of the guards that decided
    a = httpx.post(f"{base}/v1/approvals", headers=APPROVER.headers,
                   json={"decision_id": got["decision_id"], "run_id": "slow-1", "tool_call": TRANSFER, "approved": True})
    assert a.status_code == 409 and "guards changed" in a.json()["error"], a.text
    assert "ALLOW" not in {r["decision"] for r in svc.store.decisions(limit=100)}


def test_a_reload_between_the_routes_check_and_the_answer_is_seen_under_the_lock(reloading, monkeypatch):
    """The approval's version check is made on the pipelines that resolve it: a reload after the route read
    the escalation (a slow ``run_principals``) is caught."""
    base, svc, path = reloading
    r = httpx.post(f"{base}/v1/check", headers=AGENT.headers, json={"run_id": "quick", "tool_call": TRANSFER})
    assert r.json()["decision"] == "ESCALATE"
    orig = svc.store.run_principals

    def slow_principals(run_id):
        out = orig(run_id)
        path.write_text(DENIES)
        time.sleep(0.15)
        svc.source.maybe_reload()
        return out

    monkeypatch.setattr(svc.store, "run_principals", slow_principals)
    a = httpx.post(f"{base}/v1/approvals", headers=APPROVER.headers,
                   json={"decision_id": r.json()["decision_id"], "run_id": "quick", "tool_call": TRANSFER,
                         "approved": True})
    assert a.status_code == 409, a.text


def test_a_refusal_is_still_recorded_after_a_reload(reloading):
    base, svc, path = reloading
    got = _reload_during(base, svc, path, "slow-2")
    a = httpx.post(f"{base}/v1/approvals", headers=APPROVER.headers,
                   json={"decision_id": got["decision_id"], "run_id": "slow-2", "tool_call": TRANSFER,
                         "approved": False})
    assert a.status_code == 200 and a.json()["decision"] != "ALLOW", a.text


# -- the guard source: the version is that of the content the guards were built from -------------------------------

def _hash(files: list[str]) -> str:
    """The guard version of ``files`` as they are now (GuardSource's recipe: SHA-256 over each file's place, name
    and content; not its folder since session 22)."""
    import hashlib

    h = hashlib.sha256()
    for i, f in enumerate(files):
        h.update(f"{i}:{Path(f).name}".encode() + b"\0")
        h.update(Path(f).read_bytes() if Path(f).exists() else b"<missing>")
    return h.hexdigest()[:16]


def _source(tmp_path: Path, monkeypatch, writes_during_build: list[str | None]) -> tuple[GuardSource, Path]:
    """A GuardSource over one tool file whose builds are instrumented: each build stamps the guards with the
    version of the content it read, then (if the schedule says so) rewrites the file, as a deploy might."""
    path = tmp_path / "tools.toml"
    path.write_text(ESCALATES)
    orig = guards_mod.load_guards
    schedule = list(writes_during_build)

    def load(settings=None):
        files = guards_mod.guard_files(settings)
        seen = _hash(files)
        g = orig(settings)
        g.description = seen  # the content the guards were built from
        w = schedule.pop(0) if schedule else None
        if w is not None:
            path.write_text(w)
        return g

    monkeypatch.setattr(guards_mod, "load_guards", load)
    s = ServerSettings(state_dir=str(tmp_path), tool_guards=str(path), reload_s=0.0)
    src = GuardSource(s)
    return src, path


def _decides(src: GuardSource) -> str:
    return src.current.tool.check(Context(run_id="x"), ToolCall("transfer_funds", {"amount": 1})).decision.name


def test_a_file_rewritten_while_the_guards_are_built_is_reloaded(tmp_path, monkeypatch):
    src, path = _source(tmp_path, monkeypatch, [None, DENIES])  # init: nothing; first reload: DENIES lands mid-build
    assert _decides(src) == "ESCALATE"
    path.write_text(ESCALATES.replace("read_file", "read_files"))
    src.maybe_reload()  # built from the 2nd content while the 3rd (DENIES) was written: not swapped in
    assert src.version == src.current.description
    src.maybe_reload()  # the next tick builds DENIES
    assert src.version == src.current.description == _hash(src.files)
    assert _decides(src) == "REJECT"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from([None, ESCALATES, DENIES]), st.sampled_from([None, ESCALATES, DENIES])),
                      min_size=1, max_size=6))
def test_property_the_version_in_force_is_that_of_the_content_its_guards_were_built_from(tmp_path_factory, steps):
    """Any schedule of writes, before a reload tick and while its guards are built: after every tick the version
    in force is that of the content its guards were read from; once the writes stop, the last content is in force."""
    with pytest.MonkeyPatch.context() as mp:
        src, path = _source(tmp_path_factory.mktemp("gs"), mp, [w for _b, w in steps])
        for before, _during in steps:
            if before is not None:
                path.write_text(before + f"# {time.time_ns()}\n")  # a change of stamp even for the same rules
            src.maybe_reload()
            assert src.version == src.current.description
        for _ in range(3):
            src.maybe_reload()
        assert src.version == src.current.description == _hash(src.files)
        want = "REJECT" if "deny" in path.read_text() else "ESCALATE"
        assert _decides(src) == want
