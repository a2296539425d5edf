"""Red team (session 20) of flow-rules recipients: an address in the granted domain that the granted domain's own mail
server routes on. Postfix rewrites ``user%domain@ours`` to ``user@domain`` by default (``allow_percent_hack = yes``)
and relays it (the agent's mail goes out through its own, authenticated, server); a UUCP bang path
``evil.com!bob@ours`` names the next host the same way. ``*@example.com`` granted both; now the routed address must
be granted too (:func:`agentguard.policies.flow._routed`). The other forms tried were already refused (kept below)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.types import Decision

from .test_flow_recipients import decide

ROUTED = ["example.com!bob%evil.com@example.com", "bob%evil.com@example.com", "bob!evil.com!a@example.com", "evil.com!bob@example.com",
          "a%b%evil.com@example.com", "Alice <bob%evil.com@example.com>", "a@example.com, bob%evil.com@example.com"]
ALREADY = ["@example.com:bob@evil.com", '"a@example.com"@evil.com', "a@exаmple.com", "a@example.com.",
           "bob@evil.com (a@example.com)", "a@example.com <bob@evil.com>", "a@[127.0.0.1]",
           "a@example.com\u2028bob@evil.com", "a@xn--exmple-cua.com", "a@example。com", "a@sub.example.com",
           "bob@evil.com\\@example.com", "a@example.com%0ABcc:eve@evil.com", "a@example.com, eve@evil.com",
           "bob@evil.com#@example.com", "a@example.com\x00eve@evil.com"]


def test_a_routed_address_in_the_granted_domain_is_outside_the_grant() -> None:
    for to in ROUTED + ALREADY:
        assert decide({"to": to}) is Decision.REJECT, to
    for to in ["a@example.com", "a+news@example.com", "A@EXAMPLE.com", "example.com!a@example.com"]:
        assert decide({"to": to}) is Decision.ALLOW, to


def _postfix(address: str) -> list[str]:
    """The oracle: every domain the percent hack and a bang path hand the mail to (rightmost %, first ! component)."""
    local, _, domain = address.rpartition("@")
    hops = [domain]
    while "%" in local or "!" in local:
        if "%" in local:
            local, _, domain = local.rpartition("%")
        else:
            domain, _, local = local.partition("!")
        hops.append(domain)
    return hops


@settings(max_examples=100, deadline=None)
@given(user=st.from_regex(r"[a-z]{1,6}", fullmatch=True),
       hops=st.lists(st.tuples(st.sampled_from(["%", "!"]), st.sampled_from(["evil.com", "example.com"])),
                     min_size=1, max_size=3))
def test_the_grant_holds_for_where_the_server_routes_the_mail(user: str, hops: list) -> None:
    local = user
    for sep, dom in hops:
        local = f"{local}%{dom}" if sep == "%" else f"{dom}!{local}"
    address = f"{local}@example.com"
    hops = _postfix(address)
    assert decide({"to": address}) is (Decision.REJECT if "evil.com" in hops else Decision.ALLOW), (address, hops)
