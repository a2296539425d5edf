"""The Python client and RemoteGuard: the service as a Guard, failing closed."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from agentguard.core import Context, Decision, GuardStack, Step, ToolCall, Trace  # noqa: E402
from agentguard.server.client import GuardServiceClient, GuardServiceError, RemoteGuard  # noqa: E402

TOKEN = "client-token-12345"
USER = {"age": 30, "domestic": True, "dr_license": False, "vaccine": True, "membership": True}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    app = create_app(ServerSettings(token=TOKEN, state_dir=str(tmp_path_factory.mktemp("svc"))))
    with serve_in_thread(app) as base:
        yield base, app


def test_client_calls_every_endpoint(service):
    base, app = service
    c = GuardServiceClient(base, TOKEN)
    v = c.check(ToolCall("rent_car", {}), "c1", {"user_info": USER})
    assert v.decision is Decision.REJECT and "driver's license" in v.reason
    assert v.details["decision_id"] in app.state.store.decision_ids()
    assert c.step("c1", Step(state="s0", action=ToolCall("book_flight", {}))).decision is Decision.REJECT
    assert c.signals("c1", {"score": 0.9}).decision is Decision.ALLOW
    assert c.signals("c1", {"score": 0.1}).decision is Decision.HALT
    assert c.ingest([Trace([Step(state="a")], {"unsafe": False}, run_id="c1")])["stored_runs"] == 1
    assert asyncio.run(c.acheck(ToolCall("rent_car", {}), "c2", {"user_info": {**USER, "dr_license": True}})
                       ).decision is Decision.ALLOW
    c.close()


def test_remote_guard_in_a_stack(service):
    base, _ = service
    g = GuardStack([RemoteGuard(GuardServiceClient(base, TOKEN))])
    ctx = Context(run_id="c3", metadata={"user_info": USER})
    assert g.check(ctx, ToolCall("book_hotel", {})).decision is Decision.ALLOW
    assert g.check(ctx, ToolCall("rent_car", {})).decision is Decision.REJECT
    assert asyncio.run(g.acheck(ctx, ToolCall("rent_car", {}))).decision is Decision.REJECT


def test_remote_guard_fails_closed(service):
    base, _ = service
    from agentguard.server.testing import free_port

    ctx = Context(run_id="c4", metadata={"user_info": USER})
    wrong = RemoteGuard(GuardServiceClient(base, "wrong-token-000"))
    v = wrong.check(ctx, ToolCall("book_hotel", {}))
    assert v.decision is Decision.HALT and "401" in v.reason
    down = RemoteGuard(GuardServiceClient(f"http://127.0.0.1:{free_port()}", TOKEN, timeout=1))
    v = down.check(ctx, ToolCall("book_hotel", {}))
    assert v.decision is Decision.HALT and "cannot reach" in v.reason
    assert asyncio.run(down.acheck(ctx, ToolCall("book_hotel", {}))).decision is Decision.HALT
    assert RemoteGuard(GuardServiceClient(base, TOKEN)).check(ctx, object()).decision is Decision.HALT
    with pytest.raises(GuardServiceError, match="422"):
        GuardServiceClient(base, TOKEN).check({"name": ""})
