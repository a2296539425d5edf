"""server/deciding.py ``in_request``: a decision that does not come back (cancelled during its audit write, or
raising) leaves nothing of itself in the run's memory: the next request of the run is decided on the run rebuilt
from the store (session 26 red team: a cancelled ``confirm`` let the next ``send`` through)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("fastapi")

from agentguard.core.guard import BaseGuard  # noqa: E402
from agentguard.core.types import Decision, ToolCall, Verdict  # noqa: E402
from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.deciding import CALL, Call, in_request  # noqa: E402
from agentguard.server.guards import ServiceGuards, default_guards  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402


class AfterConfirm(BaseGuard):
    """``send`` is allowed only once ``confirm`` was asked in the run (per-run memory, forgotten by end_run)."""

    name = "after-confirm"

    def __init__(self) -> None:
        self.seen: dict[str, bool] = {}

    def check(self, context, proposal):
        if proposal.name == "confirm":
            self.seen[context.run_id] = True
        ok = proposal.name != "send" or self.seen.get(context.run_id, False)
        return Verdict(Decision.ALLOW if ok else Decision.REJECT, proposal.name)

    def end_run(self, run_id) -> None:
        self.seen.pop(run_id, None)


def _service(tmp_path):
    s = ServerSettings(state_dir=str(tmp_path), db_url=f"sqlite:///{tmp_path / 'a.sqlite'}")
    d = default_guards(s)
    return create_app(s, ServiceGuards(tool=AfterConfirm(), step=d.step, signal=d.signal)).state.service


async def _ask(svc, name: str):
    call = ToolCall(name, {}, "")
    return await svc.decide("check", "r1", call, {"tool_call": call.to_dict(), "metadata": {}},
                            {"run_id": "r1", "tool_call": call.to_dict()}, claims={}, principal="")


def test_an_input_whose_write_was_cancelled_allows_nothing_later(tmp_path):
    svc = _service(tmp_path)

    async def run() -> bytes:
        assert b'"ALLOW"' in (await _ask(svc, "other")).body
        real = svc.store.arecord

        async def cut(*_a, **_k):
            raise asyncio.CancelledError()

        svc.store.arecord = cut
        with pytest.raises(asyncio.CancelledError):
            await _ask(svc, "confirm")  # never stored, never answered
        svc.store.arecord = real
        return (await _ask(svc, "send")).body

    body = asyncio.run(run())
    assert b'"REJECT"' in body, body  # before: ALLOW on the confirm the store never got
    names = [r["payload"]["input"]["tool_call"]["name"] for r in svc.store.run_inputs("r1")]
    assert names == ["other", "send"]


def test_in_request_sets_the_call_and_drops_the_run_only_when_it_raises():
    ended: list[str] = []

    class Runs:
        def end_run(self, run_id: str) -> None:
            ended.append(run_id)

    st = type("St", (), {"run_id": "r9"})()
    call = Call("check", st, {}, {})  # type: ignore[arg-type]
    with in_request(call, Runs()):
        assert CALL.get() is call
    assert CALL.get() is None and ended == []
    with pytest.raises(asyncio.CancelledError), in_request(call, Runs()):
        raise asyncio.CancelledError()
    assert CALL.get() is None and ended == ["r9"]
