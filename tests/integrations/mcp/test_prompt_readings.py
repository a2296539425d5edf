"""Red team (session 23): ``prompts/get`` arguments are strings (the MCP spec; the listing gives no types), and the
MCP SDK's ``MCPServer`` hands a prompt function each one through pydantic's ``validate_call`` (lax mode): an ``int``
parameter receives ``-9`` for ``"0-9"``, ``1000`` for ``"1_000"`` or ``" 1000 "``, a ``float`` one ``7.0`` for
``"+_7"``, a ``bool`` one ``True`` for ``"yes"``. A rule forbidding a negative amount read the text ``"0-9"`` and no
number in it (Python's ``int``/``float`` refuse it), and the prompt ran with ``-9``. The guard's reader of a string
(:func:`agentguard.policies.arguments.readings`) now includes pydantic's own lax ``int``/``float`` readings; a JSON
text stays a string to a prompt (lax ``validate_call`` parses no list or dict from a string), which is what the guard
reads. Checked against the real ``MCPServer`` (the oracle) behind the real SDK proxy (:class:`GuardProxy`)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from mcp import Client  # noqa: E402

from agentguard.core.types import Context, Decision, ToolCall  # noqa: E402
from agentguard.integrations.mcp.proxy import GuardProxy, Upstream  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

#: the operator's rules: no negative amount, no amount of 1000, never force
GUARD = ToolRuleGuard(allow=["*"], arguments=[
    {"tool": "prompts/get", "arg": "amount", "forbid": "^-"},
    {"tool": "prompts/get", "arg": "ratio", "forbid": "^(-|1000$)"},
    {"tool": "prompts/get", "arg": "force", "forbid": "^true$"},
])


def _server(got: list):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("t")

    @server.prompt()
    def refund(amount: int = 0, ratio: float = 0.0, force: bool = False) -> str:
        """Draft a refund."""
        got.append({"amount": amount, "ratio": ratio, "force": force})
        return f"refund {amount} {ratio} {force}"

    return server


def _server_reads(args: dict) -> dict | None:
    """What the real MCPServer hands the prompt function for ``args`` (None: it refuses them)."""
    got: list = []

    async def main():
        try:
            await _server(got).get_prompt("refund", args)
        except Exception:  # noqa: BLE001 - its validation refused the strings
            return None
        return got[-1]

    return asyncio.run(main())


def _refused(args: dict) -> bool:
    v = GUARD.check(Context(), ToolCall("prompts/get", {"name": "refund", "arguments": args}))
    return v.decision != Decision.ALLOW


def _forbidden(read: dict) -> bool:
    return read["amount"] < 0 or read["ratio"] < 0 or read["ratio"] == 1000 or read["force"] is True


#: each ran a forbidden value past the rules before this session
ATTACKS = [{"amount": "0-9"}, {"amount": "00-5"}, {"ratio": "1_.E3"}, {"ratio": "0.1e4"}, {"force": "YES"},
           {"force": "on"}, {"amount": " -3 "}, {"ratio": "1_000"}]


@pytest.mark.parametrize("args", ATTACKS)
def test_the_server_reads_a_forbidden_value_and_the_guard_refuses_it(args):
    read = _server_reads(args)
    assert read is not None and _forbidden(read)  # the oracle: the prompt function receives the forbidden value
    assert _refused(args)


def test_through_the_sdk_proxy_the_prompt_never_runs_and_a_benign_one_does():
    got: list = []

    async def main():
        async with GuardProxy(GUARD, [Upstream("t", server=_server(got))]) as proxy, Client(proxy.server) as c:
            for args in ATTACKS[:3]:
                with pytest.raises(Exception, match="agentguard refused"):
                    await c.get_prompt("refund", args)
            return await c.get_prompt("refund", {"amount": "12", "ratio": "0.5", "force": "no"})

    ok = asyncio.run(main())
    assert got == [{"amount": 12, "ratio": 0.5, "force": False}]
    assert "refund 12 0.5 False" in ok.messages[0].content.text


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(["amount", "ratio", "force"]),
       text=st.text(alphabet=st.sampled_from(list("0123456789_.eE+- \tnoyesftruNO")), max_size=7))
def test_property_what_the_server_reads_as_forbidden_the_guard_refuses(key, text):
    read = _server_reads({key: text})
    if read is not None and _forbidden(read):
        assert _refused({key: text}), (key, text, read)


@pytest.mark.parametrize("value", [-9, ["-9"], {"a": "-9"}, None, True])
def test_the_stdio_relay_refuses_a_prompt_argument_that_is_not_a_string(value):
    """The spec's prompt arguments are strings (the SDK proxy validates so); the relay forwarded any JSON value."""
    from test_relay_redteam import Wire, run

    w = Wire(ToolRuleGuard(allow=["*"]))

    async def go():
        w.send({"jsonrpc": "2.0", "id": 1, "method": "prompts/get",
                "params": {"name": "refund", "arguments": {"amount": value}}})
        await w.settle()

    run(go())
    assert w.upstream == [] and w.client[-1]["error"]["code"] == -32602
    assert "not a string" in w.client[-1]["error"]["message"]
