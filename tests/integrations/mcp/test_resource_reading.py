"""Red team (session 22): a ``resources/read`` is judged as the server reads the URI, its escapes decoded.

The MCP SDK's ``MCPServer`` hands a resource template's function the URI's values percent-decoded once:
``db://query/{sql}`` read with ``db://query/DROP%20TABLE%20users`` ran ``sql="DROP TABLE users"``, ``%27%3B`` is
``';``, ``%252e`` arrives as ``%2e``, ``%C3%A9`` as ``é``. The relay and the proxy judged the canonical URI, whose
escapes stay escaped (``%20``, upper case), so a rule forbidding ``DROP TABLE`` read the escapes and the server ran
the statement. The guard now judges the URI as the server reads it (:func:`~agentguard.integrations.mcp.wire.
uri_reading`: canonical, then decoded once; text that decodes to no UTF-8 is refused); the canonical spelling is
forwarded. Oracles: the real ``MCPServer`` (what its template functions receive), behind the real ``GuardProxy`` and
``mcp.Client``, and behind the stdio relay's forwarded messages."""

from __future__ import annotations

import asyncio
import re

import pytest

pytest.importorskip("mcp")

from hypothesis import given, settings, strategies as st  # noqa: E402
from mcp import Client  # noqa: E402

from agentguard.integrations.mcp.proxy import GuardProxy, Upstream  # noqa: E402
from agentguard.integrations.mcp.wire import canonical_uri  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from test_relay_redteam import Wire  # noqa: E402


def real_server(got: list):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("db")

    @server.resource("db://query/{sql}")
    def query(sql: str) -> str:
        got.append(("query", sql))
        return "rows"

    @server.resource("file:///{+path}")
    def read(path: str) -> str:
        got.append(("file", path))
        return "text"

    return server


def served(uri: str) -> list:
    """What the real server's functions receive for a read of ``uri`` (no guard)."""
    got: list = []

    async def go():
        try:
            await real_server(got).read_resource(uri)
        except Exception:  # noqa: BLE001 - the server refused: nothing received
            pass

    asyncio.run(go())
    return got


RULES = ToolRuleGuard(allow=["*"], arguments=[
    {"tool": "resources/read", "arg": "uri", "forbid": r"(?i)drop\s+table|';"},
    {"tool": "resources/read", "arg": "uri", "forbid": r"^file:///(etc|root)\b"},
    {"tool": "resources/read", "arg": "uri", "forbid": r"secret plans"},
])

ATTACKS = [
    "db://query/DROP%20TABLE%20users",            # an escaped space
    "db://query/x%27%3B%20drop%09table%20t",      # an escaped quote, semicolon and tab... (tab: refused unread)
    "db://query/%44ROP%20TABLE%20x",              # an escaped unreserved letter and a space
    "file:///secret%20plans.txt",                 # a rule naming words the escape split
    "file:///%C0%AE%C0%AE/etc",                   # overlong UTF-8: the server reads replacement characters
]


def test_the_oracle_the_server_decodes_the_escapes_it_was_sent():
    assert served("db://query/DROP%20TABLE%20users") == [("query", "DROP TABLE users")]
    assert served("db://query/x%27%3B%20DROP") == [("query", "x'; DROP")]
    assert served("file:///secret%20plans.txt") == [("file", "secret plans.txt")]
    assert served("file:///tmp/%252e") == [("file", "tmp/%2e")]  # decoded once


def proxy_reads(uris: list[str], guard=RULES) -> tuple[list, list]:
    """Each URI read through the real GuardProxy in front of the real server: what its functions received, and
    the reads the client got an answer for."""
    got: list = []
    answered: list = []

    async def go():
        async with GuardProxy(guard, [Upstream("db", server=real_server(got))]) as proxy, Client(proxy.server) as c:
            for uri in uris:
                try:
                    await c.read_resource(uri)
                    answered.append(uri)
                except Exception:  # noqa: BLE001 - refused (or unknown to the server)
                    pass

    asyncio.run(go())
    return got, answered


def test_proxy_a_read_is_judged_as_the_server_reads_it():
    got, answered = proxy_reads(ATTACKS)
    assert got == [] and answered == []


def test_proxy_regression_an_escaped_benign_read_still_runs_with_what_was_judged():
    got, answered = proxy_reads(["file:///tmp/b%20c.txt", "db://query/select%201"])
    assert got == [("file", "tmp/b c.txt"), ("query", "select 1")] and len(answered) == 2


@pytest.mark.parametrize("uri", ATTACKS)
def test_relay_a_read_is_judged_as_the_server_reads_it(uri):
    w = Wire(RULES)
    w.send({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}})
    assert not any(m.get("method") == "resources/read" for m in w.upstream)
    assert w.client[-1]["error"]["code"] in (-32602, -32003)


_piece = st.sampled_from(["tmp", "etc", "secret", "%20", " plans", "%20plans", "%2e", "%2e%2e", "..", "%252e",
                          "%27", "%3B", "%C3%A9", "%C0", "%41", "/", "a", "DROP", "%44ROP", "%20TABLE", "%3F", "%23"])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["file:///", "db://query/"]), st.lists(_piece, max_size=6))
def test_property_what_the_relay_forwards_reaches_the_server_as_judged(prefix, pieces):
    """Any spelling: a read the relay forwards carries the canonical URI, the guard judged its server reading, and
    what the real server's function receives is exactly that reading (past the template's fixed prefix); a read
    whose reading a rule forbids is never forwarded."""
    uri = prefix + "".join(pieces)
    w = Wire(RULES)
    w.send({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}})
    sent = [m["params"]["uri"] for m in w.upstream if m.get("method") == "resources/read"]
    if not sent:
        return
    [forwarded] = sent
    judged = w.audit.records[-1].call["arguments"]["uri"]
    from agentguard.integrations.mcp.wire import uri_reading

    assert forwarded == canonical_uri(uri) and judged == uri_reading(uri)
    assert not re.search(r"(?i)drop\s+table|';|^file:///(etc|root)\b|secret plans", judged)  # no rule refuses it
    for kind, value in served(forwarded):
        assert judged == ("file:///" if kind == "file" else "db://query/") + value
