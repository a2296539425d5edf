"""networks.destinations (session 24): the host-named and the command arguments are found in one walk of the
arguments where both fit; the same values, in the same order, as walking for each (:func:`keyed_values`)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.policies.arguments import MAX_ENTRIES, MAX_NESTING, keyed_values
from agentguard.policies.networks import COMMAND_ARGS, _named, _socket_named, host_named

KEYS = st.sampled_from(["url", "host", "command", "cmd", "db_host", "item", "args", "proxy", "x", "socket_path"])
VALUES = st.recursive(st.one_of(st.text(max_size=8), st.integers(), st.sampled_from(['{"url": "0"}', '["ls"]'])),
                      lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
                      max_leaves=30)


def separately(arguments, shell):
    sockets = keyed_values(arguments, _socket_named)   # (session 26: the socket-named arguments too)
    return keyed_values(arguments, host_named) if sockets is not None else None, [arguments] if shell else \
        keyed_values(arguments, lambda k: k in COMMAND_ARGS), sockets or []


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=5), st.booleans())
def test_one_walk_finds_what_two_find(arguments, shell):
    assert _named(arguments, shell) == separately(arguments, shell)


def test_limits_are_each_walks_own():
    many = {"items": [{"url": str(i)} for i in range(MAX_ENTRIES)] + [{"cmd": str(i)} for i in range(MAX_ENTRIES)]}
    assert _named(many, False) == separately(many, False) and separately(many, False)[0] is not None
    deep: dict = {"url": "x"}
    for _ in range(MAX_NESTING + 2):
        deep = {"inner": deep}
    for shell in (False, True):
        assert _named(deep, shell) == separately(deep, shell) and _named(deep, shell)[0] is None
