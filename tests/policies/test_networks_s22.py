"""Session 22: a destination in an argument not named as a host.

Hole: ``{"target": "10.0.0.1"}``, ``{"dest": "169.254.169.254/latest/meta-data"}``, ``{"page": "localhost/admin"}``,
``{"to": "metadata.google.internal"}``, ``{"target": "[::1]"}`` were allowed: a value without a scheme or a port was
read as a host only under a host-named argument (``host``, ``url``, ``*_host``...). A tool that takes a destination
under another name (``target``, ``site``, ``location``) connects to it all the same (urllib3 and curl read a
scheme-less ``host/path`` as ``http://host/path``).

Decision (:func:`agentguard.policies.network_hosts.whole_host`): a value that is, as a whole, a scheme-less
destination (``[user@]host[:port][/path]``) whose host is one a command's bare-host reading takes (a four-part
``inet_aton`` address in any radix, a bracketed IPv6, ``localhost``, an internal-only suffix) is a destination in an
argument of any name. Not read (stated, with its reason): prose that mentions an address (``{"q": "fetch
10.0.0.1"}``, an email saying "the printer is at 192.168.1.20"), and a value of one to three parts (``127.1``,
``2130706433``: a number, a version, a float in any argument) outside a host-named argument. Cost on the benign
corpora: 0 of 875 calls refused (``benchmarks/results/network_benign.json``); reading every prose mention too (a
command's reading of every value) also refused 0 of the 875 calls and 0 of the 297 benign prompts and page texts,
but those corpora hold almost no prose about networks, so that figure says nothing of a mail to IT support.
"""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.types import Context, ToolCall
from agentguard.policies.network_hosts import whole_host
from agentguard.policies.networks import NetworkGuard

GUARD = NetworkGuard()


def refuses(args: dict) -> bool:
    return GUARD.check(Context(run_id="s22"), ToolCall("fetch", args)).decision.refuses


ATTACKS = [{"target": "10.0.0.1"}, {"dest": "169.254.169.254/latest/meta-data"}, {"page": "localhost/admin"},
           {"to": "metadata.google.internal"}, {"target": "[::1]"}, {"site": "169.254.169.254"},
           {"location": "0251.0376.0251.0376/latest"}, {"target": " localhost "}, {"x": ["u@10.0.0.7:22"]},
           {"a": {"b": "printer.local?x=1"}}, {"target": "[::ffff:a9fe:a9fe]/x"}, {"t": "0x7f.0.0.1#x"},
           {"target": "localhost."}, {"target": "db.internal/x"}, {"target": "LOCALHOST\\admin"}]


@pytest.mark.parametrize("args", ATTACKS)
def test_a_value_that_is_only_an_internal_destination_is_refused_whatever_its_name(args: dict) -> None:
    assert refuses(args), args


STILL_OPEN = [{"q": "fetch 10.0.0.1"}, {"q": "curl 169.254.169.254"}, {"target": "127.1"},
              {"target": "2130706433"}, {"body": "the printer is at 192.168.1.20"}]


@pytest.mark.parametrize("args", STILL_OPEN)
def test_prose_and_short_numbers_outside_a_host_named_argument_are_not_read(args: dict) -> None:
    """The stated limit (the module docstring): these pass; a host-named argument or a command reads them."""
    assert not refuses(args), args


BENIGN = [{"version": "1.2.3"}, {"ratio": "0.5"}, {"path": "docs/index.md"}, {"q": "localhost is down"},
          {"target": "example.com/x"}, {"target": "8.8.8.8"}, {"email": "a@example.com"}, {"n": "12:30"},
          {"target": "1.2.3.4.5"}, {"file": "a.local.txt/x"}]


@pytest.mark.parametrize("args", BENIGN)
def test_other_values_pass(args: dict) -> None:
    assert not refuses(args), args


INTERNAL = ["127.0.0.1", "10.1.2.3", "169.254.169.254", "192.168.0.10", "172.16.5.4", "100.64.1.1", "0.0.0.0"]


@st.composite
def whole_values(draw) -> str:
    ip = ipaddress.IPv4Address(draw(st.sampled_from(INTERNAL)))
    fmt = [draw(st.sampled_from(["{:d}", "0{:o}", "0x{:x}", "0X{:X}"])) for _ in range(4)]
    host = draw(st.one_of(
        st.just(".".join(f.format(b) if b else "0" for f, b in zip(fmt, ip.packed))),
        st.sampled_from([f"[::ffff:{ip}]", "[::1]", "localhost", "LocalHost", "metadata.google.internal",
                         "svc.home.arpa", "nas.lan", "x.localhost"])))
    user = draw(st.sampled_from(["", "u@", "a:b@"]))
    port = draw(st.sampled_from(["", ":80", ":"]))
    rest = draw(st.sampled_from(["", "/", "/latest/meta-data", "?a=1", "#f", "\\x"]))
    pad = draw(st.sampled_from(["", " ", "\n"]))
    return f"{pad}{user}{host}{port}{rest}{pad}"


@settings(max_examples=80, deadline=None)
@given(whole_values(), st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True))
def test_every_whole_internal_destination_is_refused_under_any_name(value: str, key: str) -> None:
    assert whole_host(value) is not None, value
    assert refuses({key: value}), (key, value)
