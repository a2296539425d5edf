"""Argument values the guards cannot read as text are refused, and those with a fixed text are read as it (session 19).

An in-process caller (a LangChain tool with an ``Any`` argument, a decorated function) can hand a tool any Python
object. The readers used to skip what was not text, a number, a list or a mapping: ``{"path":
memoryview(b"/etc/shadow")}`` and an object whose ``__str__`` names a secret were allowed. Now a ``memoryview`` is
its bytes, an ``Enum`` member its value, a date/IP/UUID its fixed text, and any other object is refused unread."""

from __future__ import annotations

import enum
import ipaddress
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.config import load_stack
from agentguard.core.types import Context, Decision, ToolCall
from agentguard.policies.arguments import as_text, leaves, strings

STACK = load_stack("src/agentguard/server/examples/rules.toml")


def decide(name: str, args: dict[str, Any]) -> Decision:
    return STACK.check(Context(run_id="r"), ToolCall(name, args)).decision


class Texty:
    """An object whose text only its class knows (a tool may ``open(str(x))``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


class Pathy(os.PathLike):
    def __init__(self, text: str) -> None:
        self.text = text

    def __fspath__(self) -> str:
        return self.text


class Where(enum.Enum):
    SECRET = "/etc/shadow"
    HOME = "src/app.py"


WRAPPERS = {
    "memoryview": lambda p: memoryview(p.encode()),
    "bytearray": lambda p: bytearray(p.encode()),
    "pathlike": Pathy,
    "object": Texty,
    "set": lambda p: {p},
    "frozenset": lambda p: frozenset([p]),
    "tuple": lambda p: (p,),
    "nested": lambda p: {"spec": [Texty(p)]},
}


@pytest.mark.parametrize("how", sorted(WRAPPERS))
def test_a_denied_path_in_any_python_value_is_refused(how: str) -> None:
    assert decide("read_file", {"path": WRAPPERS[how]("/etc/shadow")}).refuses, how


def test_values_with_a_fixed_text_are_read_as_it() -> None:
    assert decide("read_file", {"path": Where.SECRET}).refuses
    assert decide("read_file", {"path": Where.HOME}) is Decision.ALLOW
    assert decide("get_webpage", {"host": ipaddress.ip_address("169.254.169.254")}).refuses
    assert decide("get_webpage", {"host": ipaddress.ip_address("93.184.216.34")}) is Decision.ALLOW
    assert as_text(memoryview(b"ab")) == "ab" and as_text(Where.HOME) == "src/app.py"
    assert leaves({"a": None, "b": [1, None]}) == ["a", "b", "1"]
    assert leaves({"a": Texty("x")}) is None
    assert [type(s).__name__ for s in strings(Texty("x"))] == ["TooDeep"]


@settings(max_examples=120, deadline=None)
@given(how=st.sampled_from(sorted(WRAPPERS)), path=st.sampled_from(["/etc/shadow", "~/.ssh/id_rsa", "/root/.aws/credentials",
                                                                     "~/.aws/credentials"]),
       key=st.sampled_from(["path", "file", "target", "x"]))
def test_wrapping_a_denied_path_never_allows(how: str, path: str, key: str) -> None:
    """Property: whatever Python value carries a denied path, and under whichever argument, the call is not allowed
    when the plain string would be refused."""
    if decide("read_file", {key: path}).refuses:
        assert decide("read_file", {key: WRAPPERS[how](path)}).refuses, (how, path, key)
