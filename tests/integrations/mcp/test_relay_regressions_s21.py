"""Session 21 red team of the stdio relay: protocol corners tried as an attacker who controls the client's messages,
each already refused (kept as a regression list). The upstream's reading is the real ``mcp`` package's JSON-RPC
message adapter, so "never runs" means no message the upstream would take for a ``tools/call`` is forwarded."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from mcp_types import jsonrpc_message_adapter  # noqa: E402

from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from test_relay_redteam import Wire, call, run  # noqa: E402


def _upstream_runs(w: Wire) -> list:
    """The forwarded messages the real SDK parses as a ``tools/call`` request."""
    runs = []
    for m in w.upstream:
        try:
            parsed = jsonrpc_message_adapter.validate_python(m)
        except Exception:  # noqa: BLE001 - the upstream refuses it: nothing runs
            continue
        if getattr(parsed, "method", None) == "tools/call" and getattr(parsed, "id", None) is not None:
            runs.append(m)
    return runs


DENY = ToolRuleGuard(allow=["*"], deny=["delete_paths"])

#: (message, what the relay did with it); every one reached no upstream tools/call of delete_paths
CORNERS = {
    "a tools/call without an id (a notification)": {"jsonrpc": "2.0", "method": "tools/call",
                                                     "params": {"name": "delete_paths", "arguments": {"paths": ["/"]}}},
    "method spelled in upper case": {**call(1, "delete_paths", {"paths": ["/"]}), "method": "Tools/Call"},
    "method with a trailing space": {**call(2, "delete_paths", {"paths": ["/"]}), "method": "tools/call "},
    "method null (read as a response)": {**call(3, "delete_paths", {"paths": ["/"]}), "method": None},
    "id null": call(None, "delete_paths", {"paths": ["/"]}),
    "id 1.5": call(1.5, "delete_paths", {"paths": ["/"]}),
    "id true": call(True, "delete_paths", {"paths": ["/"]}),
    "id an object": call({"a": 1}, "delete_paths", {"paths": ["/"]}),
    "a reserved id": call("agentguard-list-0", "delete_paths", {"paths": ["/"]}),
    "a response carrying the call as its result": {"jsonrpc": "2.0", "id": 9, "result": {
        "method": "tools/call", "params": {"name": "delete_paths", "arguments": {"paths": ["/"]}}}},
}


@pytest.mark.parametrize("key", sorted(CORNERS))
def test_protocol_corners_never_run_a_refused_call(key):
    w = Wire(DENY)

    async def go():
        w.send(CORNERS[key])
        await w.settle()

    run(go())
    assert _upstream_runs(w) == [], w.upstream


def test_ids_1_and_string_1_are_two_requests_each_decided():
    w = Wire(DENY)

    async def go():
        w.send(call(1, "read_file", {"path": "a"}))
        w.send(call("1", "delete_paths", {"paths": ["/"]}))
        await w.settle()

    run(go())
    assert [(m["id"], m["params"]["name"]) for m in _upstream_runs(w)] == [(1, "read_file")]


def test_a_cancellation_the_sdk_cannot_read_is_no_cancellation_to_either():
    """``requestId: 1.0`` for request 1: the relay does not read it as 1, and neither does the SDK (``RequestId`` is
    a strict int or a string), so the relay and the upstream agree that request 1 was not cancelled."""
    from mcp_types import CancelledNotification

    with pytest.raises(Exception):  # noqa: B017 - pydantic's ValidationError
        CancelledNotification.model_validate({"method": "notifications/cancelled", "params": {"requestId": 1.0}})
