"""NetworkGuard: no tool call reaches a host off the public internet (session 19 red team: SSRF).

The shipped rules example allowed ``get_webpage {"url": "http://169.254.169.254/latest/meta-data/iam/..."}`` (the
cloud metadata service hands out the machine's credentials) and ``http://localhost:2375/`` (the Docker daemon).
Oracles: the clients' own readings of each URL (``urllib.parse.urlsplit``, what requests/urllib3 split, and the
WHATWG parser ``ada_url``, what browsers and Node.js use) followed by the C library's ``getaddrinfo`` (numeric hosts:
``inet_aton``'s spellings; ``localhost`` from /etc/hosts), and :mod:`ipaddress`'s ``is_global``."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import ada_url
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.config import load_stack
from agentguard.core.errors import InputError
from agentguard.core.types import Context, Decision, ToolCall
from agentguard.policies.network_remotes import git_remote_host
from agentguard.policies.networks import NetworkGuard, destinations, internal

EXAMPLE = "src/agentguard/server/examples/rules.toml"
GUARD = NetworkGuard()


def decide(args: dict, name: str = "get_webpage", guard: NetworkGuard = GUARD) -> Decision:
    return guard.check(Context(run_id="r"), ToolCall(name, args)).decision


def _resolve(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """What a client connects to for ``host``: numeric hosts as getaddrinfo reads them, localhost from /etc/hosts;
    [] for other names (not resolved here: no network)."""
    h = host.strip("[]")
    flags = 0 if h == "localhost" or h.endswith(".localhost") else socket.AI_NUMERICHOST
    try:
        infos = socket.getaddrinfo(h, 80, proto=socket.IPPROTO_TCP, flags=flags)
    except (socket.gaierror, UnicodeError, ValueError):
        return []
    return [ipaddress.ip_address(i[4][0].split("%")[0]) for i in infos]


def oracle_hosts(url: str) -> list[str]:
    out = []
    try:
        out.append(urlsplit(url).hostname or "")
    except ValueError:
        pass
    try:
        out.append(str(ada_url.URL(url).hostname))
    except ValueError:
        pass
    return [h for h in out if h]


def reaches_internal(url: str) -> bool:
    return any(not ip.is_global or (isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None
                                    and not ip.ipv4_mapped.is_global)
               for h in oracle_hosts(url) for ip in _resolve(h))


ATTACKS = ["http://169.254.169.254/latest/meta-data/iam/security-credentials/", "http://2852039166/",
           "http://0251.0376.0251.0376/", "http://0xa9.0xfe.0xa9.0xfe/", "http://0xA9FEA9FE/", "http://169.254.43518/",
           "http://[::ffff:169.254.169.254]/", "http://[::ffff:a9fe:a9fe]/", "https://trusted.com@169.254.169.254/",
           "http:\\\\169.254.169.254\\latest", "HTTP://127.0.0.1:2375/containers/json", "http://127.1/", "http://0/",
           "http://0.0.0.0:8080/", "http://localhost:6379/", "http://LOCALHOST./", "http://[::1]/", "http://[0:0::1]/",
           "http://10.0.0.7:8500/v1/kv/", "http://192.168.1.1/admin", "http://100.64.0.1/", "http://[fe80::1%25eth0]/",
           "http://①②⑦.0.0.1/", "ws://127.0.0.1:9222/devtools/browser",
           "http://metadata.google.internal/computeMetadata/v1/", "http://app.localhost/", "http://intranet/",
           "http://[64:ff9b::a9fe:a9fe]/", "http://[2002:a9fe:a9fe::]/", "ftp://10.1.1.1/pub"]


@pytest.mark.parametrize("url", ATTACKS)
def test_an_internal_destination_in_any_spelling_is_refused(url: str) -> None:
    assert decide({"url": url}) is Decision.REJECT, url
    assert decide({"command": f"git fetch {url}"}, "run_command") is Decision.REJECT, url
    assert decide({"spec": {"steps": [{"fetch": url}]}}, "workflow") is Decision.REJECT, url


def test_a_url_whose_decoded_text_names_an_internal_host_is_refused_too() -> None:
    """Conservative: clients send ``http://127.0.0.1%2f@example.com/`` to example.com (the rest is userinfo), but the
    decoded text reads 127.0.0.1 (a tool that decodes first goes there): refused, a stated cost."""
    assert not reaches_internal("http://127.0.0.1%2f@example.com/")
    assert decide({"url": "http://127.0.0.1%2f@example.com/"}) is Decision.REJECT


def test_the_oracle_agrees_that_the_numeric_attacks_reach_internal_addresses() -> None:
    numeric = [u for u in ATTACKS if "internal" not in u and "intranet" not in u and "localhost" not in u.lower()
               and "fe80" not in u and "64:ff9b" not in u and "2002:" not in u]
    assert all(reaches_internal(u) for u in numeric), [u for u in numeric if not reaches_internal(u)]


def test_hosts_in_host_arguments_and_host_port_text_are_read() -> None:
    for args in [{"host": "10.0.0.7", "port": 8500}, {"server": "db.internal:5432"}, {"cfg": {"proxy": "127.1"}},
                 {"q": "use the redis at localhost:6379"}, {"endpoint": "[::1]:22"}, {"base_url": "0x7f000001"},
                 {"hosts": ["example.com", "169.254.169.254"]}, {"command": "git fetch git@10.0.0.7:team/repo.git"},
                 {"command": "git pull root@localhost:/srv/repo"}, {"command": "git fetch me@[::1]:r"}]:
        assert decide(args, "connect") is Decision.REJECT, args


def test_public_destinations_and_prose_pass() -> None:
    for args in [{"url": "https://example.com/a?b=1"}, {"url": "http://93.184.216.34/"}, {"host": "api.github.com"},
                 {"query": "what is 10.0.0.1"}, {"t": "meet at 12:30"}, {"q": "error code:404, ratio 16:9"},
                 {"address": "1 Main St, Springfield"}, {"to": "alice@example.com"}, {"v": "version 1.2.3.4"},
                 {"url": "http://[2606:4700:4700::1111]/"}, {"command": "pip download requests"},
                 {"command": "git fetch git@github.com:org/repo.git"}, {"body": "write to alice@example.com: thanks"}]:
        assert decide(args, "x") is Decision.ALLOW, args


def test_allow_names_exceptions_and_bad_config_is_one_line() -> None:
    g = NetworkGuard(allow=["10.0.0.0/8", "registry.corp"])
    assert decide({"url": "http://10.1.2.3/"}, guard=g) is Decision.ALLOW
    assert decide({"url": "http://registry.corp/v2/"}, guard=g) is Decision.ALLOW
    assert decide({"url": "http://169.254.169.254/"}, guard=g) is Decision.REJECT
    with pytest.raises(InputError, match="decision must block"):
        NetworkGuard(decision="ALLOW")
    with pytest.raises(InputError, match="unknown key"):
        NetworkGuard.from_config({"deny": ["x"]})


def test_the_shipped_example_stack_refuses_the_metadata_service() -> None:
    stack = load_stack(EXAMPLE)
    call = ToolCall("get_webpage", {"url": "http://169.254.169.254/latest/meta-data/iam/security-credentials/"})
    assert stack.check(Context(run_id="r"), call).decision.refuses
    assert not stack.check(Context(run_id="r"), ToolCall("get_webpage", {"url": "https://example.com"})).decision.refuses


def test_unreadable_arguments_are_refused() -> None:
    deep: object = "x"
    for _ in range(20):
        deep = [deep]
    assert destinations({"a": deep}) is None
    assert decide({"a": deep}, "x") is Decision.REJECT
    assert internal("") is not None


INTERNAL_V4 = ["127.0.0.1", "127.3.2.1", "10.0.0.7", "169.254.169.254", "192.168.1.1", "172.16.5.4", "0.0.0.0",
               "100.64.0.1"]
PUBLIC_V4 = ["93.184.216.34", "8.8.8.8", "1.1.1.1", "151.101.1.69"]


def _spell(ip: str, parts: int, radix: list[int]) -> str:
    """An IPv4 address as inet_aton reads it: ``parts`` parts (the last one holding the remaining bytes), each in
    decimal, octal or hex."""
    b = ipaddress.IPv4Address(ip).packed
    nums = list(b[:parts - 1]) + [int.from_bytes(b[parts - 1:], "big")]
    out = []
    for n, r in zip(nums, radix):
        out.append(str(n) if r == 0 else ("0" + oct(n)[2:]) if r == 1 else hex(n) if r == 2 else hex(n).upper().replace("X", "x"))
    return ".".join(out)


def _url(host: str, scheme: str, userinfo: bool, slash: str, port: bool) -> str:
    return f"{scheme}:{slash * 2}{'trusted.example.com@' if userinfo else ''}{host}{':8080' if port else ''}/p"


spellings = st.tuples(st.integers(1, 4), st.lists(st.integers(0, 3), min_size=4, max_size=4),
                      st.sampled_from(["http", "HTTP", "https", "ws"]), st.booleans(), st.sampled_from(["/", "\\"]),
                      st.booleans())


@settings(max_examples=300, deadline=None)
@given(ip=st.sampled_from(INTERNAL_V4 + PUBLIC_V4), how=spellings, wrap=st.integers(0, 2))
def test_the_guard_refuses_exactly_what_reaches_an_internal_address(ip: str, how: tuple, wrap: int) -> None:
    """Differential property: over generated spellings (part counts, radixes, userinfo, backslashes, ports), a URL
    the clients' parsers plus getaddrinfo send to a non-global address is refused, and one they send to a global
    address is not (no over-refusal of a public address in an unusual spelling)."""
    parts, radix, scheme, userinfo, slash, port = how
    url = _url(_spell(ip, parts, radix), scheme, userinfo, slash, port)
    args = [{"url": url}, {"command": f"git fetch {url}"}, {"x": {"y": [url]}}][wrap]
    got = decide(args, "tool")
    hosts = [h for h in oracle_hosts(url)]
    resolved = [a for h in hosts for a in _resolve(h)]
    if any(not a.is_global for a in resolved):
        assert got is Decision.REJECT, (url, hosts, resolved)
    elif resolved and all(a.is_global for a in resolved) and len(set(resolved)) == 1 and not (
            wrap == 1 and git_remote_host(url) is not None):
        # (git reads "http:\\host/p" as the ssh remote "http" + path: a single-label host, refused since session 22;
        # checked against git in test_network_remotes.py)
        assert got is Decision.ALLOW, (url, hosts, resolved)
