"""Enforcement strategies (core.strategies)."""

import asyncio

from agentguard import Context, Decision, ToolCall, Verdict


def test_strategies():
    from agentguard.core.strategies import Block, Fallback, HaltTool, HumanInTheLoop, Reflect, Replan, Stop

    call = ToolCall("rm", {"path": "/"})
    rej = Verdict(Decision.REJECT, "no deleting", "pol", {"probability": 0.2, "threshold": 0.5},
                  details={"state_text": "stove on", "property": "G !fire"})
    ok = Verdict.allow("pol")
    ctx = Context()
    assert Stop().apply(rej, ctx, call).stop
    assert Stop().apply(ok, ctx, call).execute
    b = Block().apply(rej, ctx, call)
    assert not b.execute and not b.stop and "no deleting" in b.message
    h = HaltTool()
    assert not h.apply(rej, ctx, call).execute
    assert not h.apply(ok, ctx, call).execute  # halted for the rest of the run
    ctx2 = Context()
    r = Replan(max_rounds=2)
    assert not r.apply(rej, ctx2, call).stop and not r.apply(rej, ctx2, call).stop
    assert r.apply(rej, ctx2, call).stop
    msg = Reflect().apply(rej, ctx, call).message
    assert "stove on" in msg and "G !fire" in msg and "0.200" in msg and "0.500" in msg
    assert HumanInTheLoop(lambda v, p: True).apply(rej, ctx, call).execute
    assert not HumanInTheLoop(lambda v, p: False).apply(rej, ctx, call).execute
    assert HumanInTheLoop(lambda v, p: ToolCall("ls")).apply(rej, ctx, call).action == ToolCall("ls")
    boom = HumanInTheLoop(lambda v, p: 1 / 0).apply(rej, ctx, call)
    assert not boom.execute
    pend = HumanInTheLoop().apply(rej, ctx, call)
    p = pend.extra["pending"]

    async def approve_later():
        asyncio.get_running_loop().call_later(0.01, p.resolve, True)
        return await p.wait(1)

    assert asyncio.run(approve_later()) is True
    rec = Verdict(Decision.RECOVER, "unsafe", "filter", action="B")
    assert Fallback().apply(rec, ctx, "A").action == "B"
    assert Fallback().apply(Verdict(Decision.RECOVER, "x"), ctx, "A").stop
