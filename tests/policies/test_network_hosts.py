"""Session 20 red team of the network guard: destinations a URL's host does not show (policies.network_hosts).

Each attack was confirmed against the readers that act on it before the fix: the URL parsers (``urllib.parse``,
``urllib3.util.parse_url`` that requests uses, ``httpx.URL``, the WHATWG parser ``ada_url``), the published grammar
of the wildcard-DNS services (nip.io, sslip.io), and the shell (a command's words). Every attack tried stays here,
with the ones that were already refused (the regression list)."""

from __future__ import annotations

import base64
import ipaddress
import re
import socket
from urllib.parse import parse_qsl, quote, urlsplit

import ada_url
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentguard.core.types import Context, Decision, ToolCall
from agentguard.policies.network_hosts import carried_urls, command_hosts, spelled_address
from agentguard.policies.networks import NetworkGuard, destinations, internal

GUARD = NetworkGuard()


def decide(args: dict, name: str = "get_webpage", guard: NetworkGuard = GUARD) -> Decision:
    return guard.check(Context(run_id="r"), ToolCall(name, args)).decision


# --- 1. names that spell an internal address (wildcard DNS) and loopback-alias domains -----------------------------

SPELLED = ["http://127.0.0.1.nip.io/", "http://10-0-0-1.sslip.io/", "http://7f000001.nip.io/", "http://localtest.me/",
           "http://lvh.me/", "http://169.254.169.254.xip.io/latest/meta-data/", "http://0x7f.0.0.1.nip.io/",
           "http://magic-127-0-0-1.nip.io/", "http://--1.sslip.io/", "http://app.10.8.0.1.nip.io/",
           "http://customer1.app.10.0.0.1.nip.io/", "http://app-c0a801fc.nip.io/", "http://www.lvh.me:3000/",
           "http://a.b.localtest.me/", "http://vcap.me/", "http://127.0.0.1.sslip.io./", "http://0177.0.0.1.nip.io/",
           "http://10.0.0.1.attacker-wildcard.com/", "http://ip-10-0-0-1.attacker.com/",
           "http://fe80--1.sslip.io/", "http://169-254-169-254.nip.io/latest/"]
ALREADY = ["http://app.localhost/", "http://customer1.app.localhost/", "http://ⓛocalhost/", "http://localhost。/",
           "http://１２７.０.０.１/", "http://127.0.0.1./", "http://[fe80::1%25eth0]/", "gopher://127.0.0.1:6379/_INFO",
           "dict://localhost:11211/stat", "file://localhost/etc/passwd", "http://%31%32%37.0.0.1/",
           "http://loc%61lhost/", "http://127.0.0.1:80\\@example.com/", "http://example.com:80\\@127.0.0.1/",
           "http://a@b@10.0.0.1", " http://10.0.0.1", "http://4294967295/", "http://[::]/", "http://10.0.0.1?@example.com",
           "http:/\\127.0.0.1", "http://169.254.169\n.254", "http://1\t27.0.0.1", "http://127.0.0.1%2509/",
           "http://[fd00:ec2::254]/", "http://[::ffff:127.0.0.1]/"]


@pytest.mark.parametrize("url", SPELLED + ALREADY)
def test_a_name_spelling_an_internal_address_and_the_regression_list_are_refused(url: str) -> None:
    assert decide({"url": url}) is Decision.REJECT, url
    assert decide({"command": f"curl -s '{url}'"}, "run_command") is Decision.REJECT, url


def test_public_spellings_and_look_alikes_pass() -> None:
    for url in ["https://ec2-54-1-2-3.compute-1.amazonaws.com/", "http://93.184.216.34.nip.io/",
                "https://deadbeef.example.com/", "https://1.2.3.4.5.example.com/", "https://app-0a000001.vercel.app/",
                "https://v1-2-3-4.example.com/", "https://release-2024-01-02-03.example.com/"]:
        assert decide({"url": url}) is Decision.ALLOW, url
    assert spelled_address("example.com") == []


def test_the_deprecated_site_local_ipv6_block_is_internal() -> None:
    """``fec0::/10`` (RFC 3879, deprecated, never public): :mod:`ipaddress` counts it as global; refused now."""
    assert ipaddress.ip_address("fec0::1").is_global
    assert internal("[fec0::1]") is not None


def _nip_io(name: str) -> str | None:
    """nip.io's published grammar (the oracle): the last dotted or dashed four-part decimal address before the
    domain, or an eight-hex-digit label (optionally after ``-``)."""
    m = re.search(r"(?:^|[.-])(\d{1,3})[.-](\d{1,3})[.-](\d{1,3})[.-](\d{1,3})\.nip\.io$", name)
    if m:
        return ".".join(m.groups()) if all(int(g) < 256 for g in m.groups()) else None
    h = re.search(r"(?:^|[.-])([0-9a-f]{8})\.nip\.io$", name)
    return str(ipaddress.IPv4Address(int(h.group(1), 16))) if h else None


ADDRESSES = st.sampled_from(["127.0.0.1", "10.0.0.7", "169.254.169.254", "192.168.1.1", "172.16.5.4", "100.64.0.1",
                             "0.0.0.0", "93.184.216.34", "8.8.8.8", "151.101.1.69"])
PREFIX = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), max_size=3)


@settings(max_examples=200, deadline=None)
@given(ip=ADDRESSES, prefix=PREFIX, form=st.sampled_from(["dotted", "dashed", "hex", "dashed-prefix"]))
def test_a_nip_io_name_is_refused_exactly_when_its_address_is_internal(ip: str, prefix: list, form: str) -> None:
    spelled = {"dotted": ip, "dashed": ip.replace(".", "-"), "hex": f"{int(ipaddress.IPv4Address(ip)):08x}",
               "dashed-prefix": "app-" + ip.replace(".", "-")}[form]
    name = ".".join([*prefix, spelled, "nip.io"])
    target = _nip_io(name)
    assert target is not None, name
    got = decide({"url": f"http://{name}/x"})
    assert got is (Decision.ALLOW if ipaddress.ip_address(target).is_global else Decision.REJECT), (name, target)


# --- 2. redirect targets carried in a URL --------------------------------------------------------------------------

CARRIED = ["https://example.com/redirect?url=http://169.254.169.254/",
           "https://example.com/redirect?url=http%3A%2F%2F169.254.169.254%2F",
           "https://example.com/redirect?url=http%253A%252F%252F169.254.169.254%252F",
           "https://example.com/r#next=http://10.0.0.1/", "https://example.com/r?next=//10.0.0.1/",
           "https://example.com/r?next=%2F%2F10.0.0.1%2F", "https://example.com/r?u=aHR0cDovLzE2OS4yNTQuMTY5LjI1NC8=",
           "https://example.com/go/http://10.0.0.1/", "https://example.com/r?next=http:%5C%5C10.0.0.1",
           "https://example.com/r/aHR0cDovLzE2OS4yNTQuMTY5LjI1NC8",
           "https://example.com/r?a=1&b=https%3A%2F%2Fexample.org%2F%3Fc%3Dhttp%253A%252F%252F127.0.0.1%252F",
           "https://accounts.example.com/auth?redirect_uri=http%3A%2F%2Flocalhost%3A8080%2Fcb"]


@pytest.mark.parametrize("url", CARRIED)
def test_a_redirect_target_carried_in_a_url_is_read_as_a_url(url: str) -> None:
    assert decide({"url": url}) is Decision.REJECT, url
    assert decide({"command": f"curl -L '{url}'"}, "run_command") is Decision.REJECT, url


def test_public_carried_urls_pass() -> None:
    for url in ["https://www.google.com/url?q=https://example.org/&sa=D", "https://example.com/?next=/home",
                "https://example.com/?token=aGVsbG8gd29ybGQgaGVsbG8=", "https://web.archive.org/web/2020/https://x.com/",
                "https://example.com/r?u=" + base64.b64encode(b"https://example.org/a").decode()]:
        assert decide({"url": url}) is Decision.ALLOW, url
    assert carried_urls("https://example.com") == []


def _oracle_target(url: str, rounds: int = 4) -> str | None:
    """What a redirect endpoint reading the ``to`` parameter sends the client to: the parameter as urllib decodes
    it, decoded again while it still holds escapes (a server decoding once per hop), then its host."""
    value = dict(parse_qsl(urlsplit(url).query)).get("to", "")
    for _ in range(rounds):
        if "%" not in value:
            break
        value = dict(parse_qsl("v=" + value)).get("v", "")
    if value.startswith("//"):
        value = "http:" + value
    return urlsplit(value).hostname


@settings(max_examples=200, deadline=None)
@given(ip=ADDRESSES, encodings=st.integers(0, 2), scheme=st.sampled_from(["http://", "https://", "//"]),
       path=st.sampled_from(["", "/latest/meta-data/", "/a?b=c"]), where=st.sampled_from(["?", "?x=1&", "#"]))
def test_a_carried_target_is_refused_exactly_when_it_is_internal(ip: str, encodings: int, scheme: str, path: str,
                                                                  where: str) -> None:
    inner = scheme + ip + path
    for _ in range(encodings + (1 if where != "#" else 0)):
        inner = quote(inner, safe="")
    url = f"https://example.com/redirect{where}to={inner}"
    got = decide({"url": url})
    if where != "#":
        assert _oracle_target(url) == ip, url
    assert got is (Decision.ALLOW if ipaddress.ip_address(ip).is_global else Decision.REJECT), url


# --- 3. tabs and newlines inside one URL (WHATWG and urllib remove them) -------------------------------------------

def test_a_tab_inside_a_url_is_removed_before_reading() -> None:
    url = "http://example.com\t@169.254.169.254"
    assert urlsplit(url).hostname == "169.254.169.254" and ada_url.URL(url).hostname == "169.254.169.254"
    assert decide({"url": url}) is Decision.REJECT
    assert decide({"host": "10.0.0\n.1"}, "connect") is Decision.REJECT
    assert decide({"urls": "https://a.com/x\nhttps://b.com/y"}) is Decision.ALLOW   # two URLs, not one


@settings(max_examples=200, deadline=None)
@given(ip=ADDRESSES, at=st.integers(0, 40), ctl=st.sampled_from(["\t", "\n", "\r", "\t\n"]))
def test_a_control_anywhere_in_a_url_does_not_hide_its_host(ip: str, at: int, ctl: str) -> None:
    clean = f"http://trusted.example.com@{ip}/p"
    url = clean[:at] + ctl + clean[at:]
    assert urlsplit(url).hostname == ip
    got = decide({"url": url})
    if not ipaddress.ip_address(ip).is_global:
        assert got is Decision.REJECT, repr(url)


# --- 4. a shell command's bare hosts -------------------------------------------------------------------------------

COMMANDS = ["curl 169.254.169.254/latest/meta-data/", "curl localhost/admin", "wget 10.0.0.1",
            "curl -s http://example.com -x 10.0.0.1", "redis-cli -h 10.0.0.1 KEYS '*'", "nc 10.0.0.1 6379",
            "ssh root@10.0.0.1", "curl --resolve example.com:80:127.0.0.1 http://example.com/",
            "curl --connect-to ::127.0.0.1: http://example.com",
            "python -c \"import urllib.request as u;u.urlopen('http://'+'10.0.0.1')\"",
            "curl metadata.google.internal/computeMetadata/v1/", "curl --proxy=10.0.0.1 https://example.com",
            "curl 0x7f.0.0.1/x", "ping -c1 printer.local", "curl [::1]/x", "mysql -h 172.16.0.5 -u root"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bare_host_in_a_command_is_a_destination(command: str) -> None:
    assert decide({"command": command}, "run_command") is Decision.REJECT, command
    assert decide({"cmd": command}, "tool") is Decision.REJECT, command


def test_benign_commands_with_numbers_pass() -> None:
    for command in ["ping 8.8.8.8", "echo version 1.2.3", "pip install requests==2.31.0", "git tag v10.0.0.1",
                    "python3.11 -m pytest", "npm install react@18.2.0", "cat a.b.c.d",
                    "iptables -A INPUT -s 192.168.0.0/16 -j DROP", "dig example.com @1.1.1.1"]:
        assert decide({"command": command}, "run_command") is Decision.ALLOW, command
    assert decide({"query": "what is 10.0.0.1"}, "search") is Decision.ALLOW   # prose: not a command
    assert command_hosts("ls /var/log") == []


@settings(max_examples=200, deadline=None)
@given(ip=ADDRESSES, template=st.sampled_from(["curl {}/x", "wget {}", "nc {} 80", "ssh u@{}", "curl -x {} a.com",
                                               "redis-cli -h {}", "curl --resolve a.com:443:{} https://a.com",
                                               "python -c \"open_url('{}')\""]))
def test_a_command_naming_an_address_is_refused_exactly_when_it_is_internal(ip: str, template: str) -> None:
    got = decide({"command": template.format(ip)}, "bash")
    assert got is (Decision.ALLOW if ipaddress.ip_address(ip).is_global else Decision.REJECT), template.format(ip)


def test_destinations_take_the_tool_name() -> None:
    assert destinations({"x": "wget 10.0.0.1"}, "bash") == ["10.0.0.1"]
    assert destinations({"x": "wget 10.0.0.1"}, "notes") == []


# --- 5. resolve = true: getaddrinfo, all addresses, fail closed ----------------------------------------------------

def _fake_dns(table: dict[str, list[str]], delay: float = 0.0):  # type: ignore[no-untyped-def]
    import time

    def getaddrinfo(host: str, *a: object, **k: object) -> list:
        if delay:
            time.sleep(delay)
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, 0)) for ip in
                table[host]]
    return getaddrinfo


def test_resolve_refuses_a_name_with_any_internal_address_and_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentguard.policies.networks import ResolvingNetworkGuard

    monkeypatch.setattr(socket, "getaddrinfo", _fake_dns({"example.com": ["93.184.216.34"],
                                                          "evil.com": ["93.184.216.34", "10.0.0.7"],
                                                          "v6.com": ["::ffff:169.254.169.254"], "none.com": []}))
    g = NetworkGuard.from_config({"resolve": True, "timeout": 0.5})
    assert isinstance(g, ResolvingNetworkGuard) and not type(g).__dict__["inline_safe"]
    assert decide({"url": "https://example.com/"}, guard=g) is Decision.ALLOW
    assert decide({"url": "http://93.184.216.34/"}, guard=g) is Decision.ALLOW   # an address: nothing to resolve
    for url in ["https://evil.com/", "https://v6.com/", "https://none.com/", "https://unknown.com/"]:
        assert decide({"url": url}, guard=g) is Decision.REJECT, url
    assert decide({"url": "https://evil.com/"}, guard=NetworkGuard.from_config({"resolve": True, "allow": ["evil.com"]})) \
        is Decision.ALLOW


def test_resolve_times_out_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", _fake_dns({"slow.com": ["93.184.216.34"]}, delay=0.5))
    g = NetworkGuard.from_config({"resolve": True, "timeout": 0.05})
    v = g.check(Context(run_id="r"), ToolCall("get_webpage", {"url": "https://slow.com/"}))
    assert v.decision is Decision.REJECT and "did not resolve" in v.reason


@settings(max_examples=100, deadline=None)
@given(addrs=st.lists(ADDRESSES, min_size=0, max_size=3))
def test_resolve_allows_exactly_names_whose_every_address_is_public(addrs: list) -> None:
    table = {"name.com": addrs}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket, "getaddrinfo", _fake_dns(table))
        got = decide({"url": "https://name.com/"}, guard=NetworkGuard.from_config({"resolve": True}))
    ok = bool(addrs) and all(ipaddress.ip_address(a).is_global for a in addrs)
    assert got is (Decision.ALLOW if ok else Decision.REJECT), addrs


def test_resolve_config_is_checked() -> None:
    from agentguard.core.errors import InputError

    for bad in [{"resolve": "yes"}, {"timeout": 1}, {"resolve": True, "timeout": 0}, {"resolve": True, "timeout": 99}]:
        with pytest.raises(InputError):
            NetworkGuard.from_config(bad)


# --- 6. compound host-named arguments; hosts no resolver reads -----------------------------------------------------

def test_compound_host_named_arguments_are_read_as_hosts() -> None:
    from agentguard.policies.networks import host_named

    for args in [{"db_host": "10.0.0.1"}, {"proxy-url": "10.0.0.1"}, {"dns_server": "10.0.0.1"}, {"dbHost": "10.0.0.1"},
                 {"config": {"redis_url": "127.1"}}, {"upstream": "169.254.169.254"}, {"webhookUrl": "localhost"}]:
        assert decide(args, "connect") is Decision.REJECT, args
    for args in [{"observer": "bob"}, {"ghost": "x"}, {"image_url": "https://example.com/a.png"},
                 {"api_host": "api.github.com"}]:
        assert decide(args, "connect") is Decision.ALLOW, args
    assert not host_named("target") and not host_named("email_address")   # too often no host: left to the text scan


@settings(max_examples=100, deadline=None)
@given(stem=st.from_regex(r"[a-z]{1,8}", fullmatch=True), word=st.sampled_from(sorted(
    ["host", "hostname", "server", "endpoint", "proxy", "url", "uri", "ip", "domain", "upstream"])),
    sep=st.sampled_from(["_", "-", " ", "."]), ip=ADDRESSES)
def test_a_host_word_ends_a_host_named_argument(stem: str, word: str, sep: str, ip: str) -> None:
    got = decide({f"{stem}{sep}{word}": ip}, "connect")
    assert got is (Decision.ALLOW if ipaddress.ip_address(ip).is_global else Decision.REJECT), (stem, word, ip)


def test_a_host_no_resolver_reads_is_refused() -> None:
    """``169.254.169.254%00.example.com``: the WHATWG parser and urllib3 reject it; urllib and httpx keep the
    host ``...%00...``; a client decoding it hands a C resolver a name that ends at the NUL (the metadata address)."""
    url = "http://169.254.169.254%00.example.com/"
    assert urlsplit(url).hostname == "169.254.169.254%00.example.com"
    with pytest.raises(ValueError):
        ada_url.URL(url)
    assert decide({"url": url}) is Decision.REJECT
    for host in ["a\x00.example.com", "a b.example.com", "a%2f.example.com", "a/b.example.com"]:
        assert internal(host) is not None, host


# --- 7. differential fuzz: what any real parser reads as an internal host is refused ----------------------------

def _parser_hosts(url: str) -> list[str]:
    """The host each real client parser reads: urllib (``urlsplit().hostname``), WHATWG (``ada_url``), httpx and
    urllib3 (requests), as available."""
    import importlib

    readers = [lambda: urlsplit(url).hostname, lambda: ada_url.URL(url).hostname]
    for mod, read in (("httpx", lambda m: m.URL(url).host), ("urllib3.util", lambda m: m.parse_url(url).host)):
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        readers.append(lambda m=m, read=read: read(m))
    out = []
    for r in readers:
        try:
            h = r()
        except Exception:  # noqa: BLE001 - a parser that rejects the URL connects nowhere
            continue
        if h:
            out.append(str(h))
    return out


def _numeric_internal(host: str) -> bool:
    h = host.strip("[]").rstrip(".").lower()
    if h == "localhost" or h.endswith(".localhost"):
        return True
    try:
        infos = socket.getaddrinfo(h, 80, proto=socket.IPPROTO_TCP, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError, ValueError):
        return False
    return any(not ipaddress.ip_address(i[4][0].split("%")[0]).is_global for i in infos)


_PIECES = ["\\", "/", "//", "\\\\", "@", ":", "%40", "%2f", "%5c", "\t", "\n", "#", "?", ";", " ", ".", "。", "%00",
           "%09", ":80", "&", "=", "[", "]", "%25", "x", "127.0.0.1", "169.254.169.254", "10.0.0.1", "[::1]",
           "localhost", "0x7f.1", "2130706433", "[::ffff:127.0.0.1]", "127.1", "example.com", "93.184.216.34"]


@settings(max_examples=400, deadline=None)
@example(scheme="http:", parts=["//", "x", "[::1]"])
@example(scheme="gopher:", parts=["//", "localhost", "[::1]"])
@example(scheme="", parts=["169.254.169.254", "?", " ", "#"])
@example(scheme="", parts=["//", ":", "[::ffff:127.0.0.1]"])
@example(scheme="http:", parts=[" ", "&", "@", "0x7f.1"])
@example(scheme="", parts=[":", "//", "[::ffff:127.0.0.1]"])
@given(scheme=st.sampled_from(["http:", "https:", "HTTP:", "ws:", "gopher:", "ftp:", "file:", ""]),
       parts=st.lists(st.sampled_from(_PIECES), min_size=2, max_size=6))
def test_a_url_any_client_parser_sends_to_an_internal_host_is_refused(scheme: str, parts: list) -> None:
    """Found by this property: ``http://x[::1]/`` (urllib's ``hostname`` reads the bracketed part of any
    authority: ``::1``; the guard dropped the unbracketed IPv6 it got back) and ``{"url": "169.254.169.254? x"}``
    (urllib3 reads a scheme-less host before the ``?``; the guard skipped a host-named value holding a blank) and
    ``{"url": "//:[::ffff:127.0.0.1]"}`` (a scheme-relative value, read as ``http:////...``), ``http: &@0x7f.1``
    (WHATWG reads a URL with a blank in its userinfo whole: 127.0.0.1) and ``://10.0.0.1`` (httpx's host)."""
    url = scheme + "".join(parts)
    if any(_numeric_internal(h) for h in _parser_hosts(url)):
        assert decide({"url": url}, "fetch") is Decision.REJECT, repr(url)


# --- 8. a command's words as bash expands them ---------------------------------------------------------------------

EXPANDED = ['curl "169.254"".169.254/latest"', "curl 169.254.169.{254,1}", "curl $'\\x31\\x36\\x39'.254.169.254",
            "curl 169\\.254.169.254", 'curl "http://169.254"".169.254/"', 'curl "loc"alhost/x',
            "wget 'http://10.0.0.1'''/x", 'curl http://"127.0.0.1"/']


@pytest.mark.parametrize("command", EXPANDED)
def test_a_host_spelled_through_shell_quoting_is_read_as_bash_expands_it(command: str) -> None:
    from agentguard.policies.shell.analysis import analyse

    words = [w for c in analyse(command).commands for w in c.argv]   # the oracle: the shell reader's words
    assert any(_numeric_internal(w.split("/")[0]) or _numeric_internal(urlsplit(w).hostname or "")
               for w in words), words
    assert decide({"command": command}, "bash") is Decision.REJECT, command


@settings(max_examples=100, deadline=None)
@given(ip=ADDRESSES, cuts=st.lists(st.integers(1, 14), max_size=3), quote=st.sampled_from(["'", '"']))
def test_a_quoted_and_cut_address_is_read_whole(ip: str, cuts: list, quote: str) -> None:
    """Generated: the address cut at any points into adjacent quoted strings (``"169.2""54.1"...``): bash joins them."""
    pieces, last = [], 0
    for c in sorted({min(c, len(ip)) for c in cuts}):
        pieces.append(ip[last:c])
        last = c
    pieces.append(ip[last:])
    word = "".join(f"{quote}{p}{quote}" for p in pieces if p)
    got = decide({"command": f"curl {word}/x"}, "bash")
    assert got is (Decision.ALLOW if ipaddress.ip_address(ip).is_global else Decision.REJECT), word


def test_special_use_and_metadata_names_with_a_public_suffix_are_internal() -> None:
    """``arpa`` is in the public suffix list, so ``router.home.arpa`` (RFC 8375: answered by the home router only)
    and ``ipv4only.arpa`` (RFC 7050: 192.0.0.170) had a public site and passed."""
    for host in ["router.home.arpa", "ipv4only.arpa", "1.0.0.127.in-addr.arpa", "metadata.tencentyun.com"]:
        assert internal(host) is not None, host
        assert decide({"url": f"http://{host}/"}) is Decision.REJECT, host
    assert internal("arpanet-history.com") is None


CODE = ["requests.get('http://' + '10.0.' + '0.1')", 'fetch("http://169." + "254.169.254/latest")',
        "$u = 'http://127.' . '0.0.1';", "local u = 'http://10.0.' .. '0.1'"]


@pytest.mark.parametrize("code", CODE)
def test_a_host_joined_from_string_literals_in_code_is_read_joined(code: str) -> None:
    assert decide({"code": code}, "run_python") is Decision.REJECT, code
    assert decide({"code": "print('a' + 'b'); x = 'example.' + 'com'"}, "run_python") is Decision.ALLOW


REBINDING = ["http://make-1.2.3.4-rebind-169.254.169.254-rr.1u.ms/", "http://7f000001.c0a80001.rbndr.us/",
             "http://make-127.0.0.1-rr.1u.ms/", "http://a-10.0-0.1.example.com/"]


@pytest.mark.parametrize("url", REBINDING)
def test_a_rebinding_service_name_spelling_an_internal_address_is_refused(url: str) -> None:
    """DNS-rebinding services answer with the public address first and the internal one next (1u.ms, rbndr.us):
    any internal address the name spells is refused, dots and dashes mixed across labels."""
    assert decide({"url": url}) is Decision.REJECT, url


@settings(max_examples=100, deadline=None)
@given(ip=ADDRESSES, seps=st.lists(st.sampled_from([".", "-"]), min_size=3, max_size=3), prefix=PREFIX,
       domain=st.sampled_from(["nip.io", "1u.ms", "example-wildcard.com"]))
def test_four_decimal_parts_joined_by_dots_or_dashes_are_an_address(ip: str, seps: list, prefix: list,
                                                                      domain: str) -> None:
    parts = ip.split(".")
    spelled = parts[0] + "".join(s + p for s, p in zip(seps, parts[1:]))
    name = "-".join([*prefix, spelled]) + "." + domain
    got = decide({"url": f"http://{name}/"})
    assert got is (Decision.ALLOW if ipaddress.ip_address(ip).is_global else Decision.REJECT), name


# --- 9. IPv6 spellings of an IPv4 address, and IPv6 blocks ipaddress counts as global -------------------------------

def test_ipv6_blocks_that_are_no_public_destination() -> None:
    """``ipaddress`` calls these global; each reaches an internal address through a translator or an old stack,
    or is no unicast destination: IPv4-translated ``::ffff:0:a9fe:a9fe``, local-use NAT64 ``64:ff9b:1::/48``,
    IPv4-compatible ``::a9fe:a9fe``, SRv6 ``5f00::/16``, documentation ``3fff::/20``, multicast ``ff02::1``."""
    for host in ["[::ffff:0:a9fe:a9fe]", "[64:ff9b:1::a9fe:a9fe]", "[::a9fe:a9fe]", "[5f00::1]", "[3fff::1]",
                 "[ff02::1]"]:
        assert ipaddress.ip_address(host.strip("[]")).is_global, host   # what the library alone says
        assert decide({"url": f"http://{host}/"}) is Decision.REJECT, host
    for host in ["[2606:4700:4700::1111]", "[::ffff:0:808:808]", "[64:ff9b::808:808]", "[::808:808]"]:
        assert decide({"url": f"http://{host}/"}) is Decision.ALLOW, host


@settings(max_examples=100, deadline=None)
@given(ip=ADDRESSES, prefix=st.sampled_from(["::ffff:", "::ffff:0:", "64:ff9b::", "64:ff9b:1::", "::", "2002:"]))
def test_an_ipv6_carrying_an_ipv4_address_is_judged_by_it(ip: str, prefix: str) -> None:
    v4 = ipaddress.IPv4Address(ip)
    if prefix == "2002:":   # 6to4: the IPv4 address in bits 16-48
        v6 = ipaddress.IPv6Address((0x2002 << 112) | (int(v4) << 80))
    else:
        v6 = ipaddress.IPv6Address(int(ipaddress.IPv6Address(prefix + "0:0")) | int(v4))
    if v6 == ipaddress.IPv6Address("::"):
        return
    got = decide({"url": f"http://[{v6}]/"})
    assert got is (Decision.ALLOW if v4.is_global else Decision.REJECT), (str(v6), ip)


def test_a_host_named_value_holding_blanks_is_read_for_its_addresses() -> None:
    for args in [{"hosts": "example.com 10.0.0.1"}, {"servers": "a.com\tlocalhost"}, {"proxy": "use [::1] please"},
                 {"url": "169.254.169.254? #;#"}]:
        assert decide(args, "connect") is Decision.REJECT, args
    for args in [{"address": "1 Main St, Springfield"}, {"hosts": "example.com api.github.com"},
                 {"domain": "the example.com site"}]:
        assert decide(args, "connect") is Decision.ALLOW, args


def test_every_carried_value_is_read_however_many_there_are() -> None:
    """The first reading followed an inner URL to the end of the outer one and so read three values deep only: a
    fourth ``&d=http://10.0.0.1/`` passed. Each value is read on its own now (and the work is linear)."""
    many = "https://a.com/?" + "".join(f"&u{i}=http://b{i}.com/" for i in range(20)) + "&z=http://10.0.0.1/"
    assert decide({"url": many}) is Decision.REJECT
    assert "evil.xyz" in [lk.host for lk in __import__("agentguard.policies.links", fromlist=["links"]).links(
        "https://a.com/?a=http://x.com/&b=http://y.com/&c=http://z.com/&d=https://evil.xyz/")]
    assert set(spelled_address("a0.93.184.216.34.nip.io")) == {ipaddress.IPv4Address("93.184.216.34")}   # not 0.93...
