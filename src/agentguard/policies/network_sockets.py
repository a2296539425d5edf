"""Local sockets named as destinations, and curl's abbreviated long options (session 26).

``curl --unix-socket /var/run/docker.sock http://example.com/containers/create`` sends its request to whatever
listens on that socket (the Docker daemon: root on the host), whatever host the URL names; so do ``nc -U PATH``,
``socat - UNIX-CONNECT:PATH``, ``docker -H unix:///PATH``, ``DOCKER_HOST=unix://PATH``, ``redis-cli -s PATH``,
``mysql -S PATH``, ``psql -h /DIR``. A socket is a destination like a host: :func:`socket_destination` spells it
``unix:PATH`` (an abstract one ``unix:@NAME``, a Windows named pipe ``npipe:PATH``), which the guard refuses unless
its ``allow`` list names that very spelling (``allow = ["unix:/var/run/docker.sock"]``; ``unix:///PATH`` is the
same entry). Repeated slashes and ``/./`` are collapsed (the kernel reads them so); ``..`` is kept (a link below it
moves the file), so another spelling of an allowed socket is refused, never the reverse.

Read here (each program's own grammar, the values as written):

- **options** (:func:`program_sockets`): curl's ``--unix-socket``, ``--abstract-unix-socket`` (also abbreviated: curl
  7.88 takes ``--unix`` for ``--unix-socket``, :func:`curl_long`), xh's ``--unix-socket``, ``redis-cli -s/--socket``,
  the MySQL clients' ``-S/--socket``, the PostgreSQL clients' ``-h/--host`` holding a path (a socket directory),
  ``ctr``/``nerdctl`` ``-a/--address``, ``crictl`` ``-r/--runtime-endpoint`` and ``-i/--image-endpoint``; with
  ``nc``/``netcat``/``ncat`` ``-U`` (ncat ``--unixsock``) and ``grpcurl -unix`` every operand is a socket path;
  ``ssh -R``'s local socket (``-R /r.sock:/var/run/docker.sock``: the remote end drives it) and ``-R PORT`` (a
  SOCKS proxy into this machine's network), read by :func:`.network_remotes.remote_forwards`; socat's ``UNIX-CONNECT:``, ``UNIX-CLIENT:``, ``UNIX-SENDTO:``,
  ``UNIX:``, ``LOCAL:``, ``ABSTRACT-*:`` and
  ``GOPEN:`` addresses and a bare path address (socat opens it as GOPEN: a socket connects);
- **assignments**: ``MYSQL_UNIX_PORT=PATH``, ``PGHOST=/DIR``, ``CONTAINERD_ADDRESS=PATH`` and a name whose last part
  is ``socket`` or ``sock`` (``DOCKER_SOCK=/x``) with a path value;
- **URLs** in any text (:func:`socket_urls`): ``unix://PATH``, ``unix:/PATH`` (Docker, Podman, containerd, redis-py,
  supervisor), ``SCHEME+unix://%2FPATH/...`` (requests-unixsocket, httpie-unixsocket: the host is the encoded
  path) and ``npipe://PATH``.

Not read: a client's default socket when no option names one (``docker ps``, ``psql``, ``mysql``: the program's own
local server; the rules guard decides whether the program runs), and a socket a program's code opens (``python -c``).
"""

from __future__ import annotations

import re
from typing import Sequence
from urllib.parse import unquote

__all__ = ["SOCKET_PREFIXES", "curl_long", "is_socket", "program_sockets", "socket_assignment", "socket_destination",
           "socket_urls"]

#: how a socket destination is spelled (``unix:/var/run/docker.sock``, ``unix:@abstract``, ``npipe:////./pipe/x``)
SOCKET_PREFIXES = ("unix:", "npipe:")


def socket_destination(path: str, abstract: bool = False) -> str:
    """The destination a socket ``path`` is (see the module docstring): ``unix:PATH`` with repeated slashes and
    ``/./`` collapsed, ``unix:@NAME`` for an abstract socket."""
    if abstract:
        return "unix:@" + path
    while True:
        folded = re.sub(r"/\.(?=/|$)", "/", re.sub(r"//+", "/", path))
        if folded == path:
            break
        path = folded
    return "unix:" + (path.rstrip("/") if len(path) > 1 else path)


def is_socket(destination: str) -> bool:
    """Whether ``destination`` is a socket :func:`socket_destination` (or :func:`socket_urls`) spelled."""
    return destination.startswith(SOCKET_PREFIXES)


_SOCKET_URL = re.compile(r"(?:([a-z][a-z0-9.-]*)\+)?(unix|npipe):(//)?([^\s'\"<>|;&`()]*)", re.I)


def socket_urls(text: str) -> list[str]:
    """The sockets the URLs of a local-socket scheme in ``text`` name (see the module docstring), as destinations."""
    out: list[str] = []
    for m in _SOCKET_URL.finditer(text):
        helper, scheme, slashes, rest = m.groups()
        if scheme.lower() == "npipe":
            out += ["npipe:" + rest] if rest else []
            continue
        if helper and slashes:   # http+unix://%2Fvar%2Frun%2Fdocker.sock/path: the host is the encoded path
            out.append(socket_destination(unquote(rest.split("/", 1)[0])))
        elif slashes and rest or rest[:1] in ("/", "@"):   # unix:///p, unix://p (Docker: relative), unix:/p
            path = re.split(r"[?#]", rest, maxsplit=1)[0]
            out += [socket_destination(p[1:], True) if p.startswith("@") else socket_destination(p)
                    for p in dict.fromkeys((path, unquote(path))) if p]
    return list(dict.fromkeys(out))


#: curl 7.88's long options (``curl --help all``): those that take a value, then those that take none
_CURL_VALUES = frozenset("""abstract-unix-socket alt-svc aws-sigv4 cacert capath cert cert-type ciphers config
connect-timeout connect-to continue-at cookie cookie-jar create-file-mode crlfile curves data data-ascii data-binary
data-raw data-urlencode delegation dns-interface dns-ipv4-addr dns-ipv6-addr dns-servers doh-url dump-header egd-file
engine etag-compare etag-save expect100-timeout form form-string ftp-account ftp-alternative-to-user ftp-method
ftp-port ftp-ssl-ccc-mode happy-eyeballs-timeout-ms header help hostpubmd5 hostpubsha256 hsts interface json
keepalive-time key key-type krb libcurl limit-rate local-port login-options mail-auth mail-from mail-rcpt
max-filesize max-redirs max-time netrc-file noproxy oauth2-bearer output output-dir parallel-max pass pinnedpubkey
preproxy proto proto-default proto-redir proxy proxy-cacert proxy-capath proxy-cert proxy-cert-type proxy-ciphers
proxy-crlfile proxy-header proxy-key proxy-key-type proxy-pass proxy-pinnedpubkey proxy-service-name
proxy-tls13-ciphers proxy-tlsauthtype proxy-tlspassword proxy-tlsuser proxy-user proxy1.0 pubkey quote random-file
range rate referer request request-target resolve retry retry-delay retry-max-time sasl-authzid service-name socks4
socks4a socks5 socks5-gssapi-service socks5-hostname speed-limit speed-time stderr telnet-option tftp-blksize
time-cond tls-max tls13-ciphers tlsauthtype tlspassword tlsuser trace trace-ascii unix-socket upload-file url
url-query user user-agent write-out variable""".split())
_CURL_FLAGS = frozenset("""anyauth append basic cert-status compressed compressed-ssh create-dirs crlf digest disable
disable-eprt disable-epsv disallow-username-in-url doh-cert-status doh-insecure fail fail-early fail-with-body
false-start form-escape ftp-create-dirs ftp-pasv ftp-pret ftp-skip-pasv-ip ftp-ssl-ccc ftp-ssl-control get globoff
haproxy-protocol head http0.9 http1.0 http1.1 http2 http2-prior-knowledge http3 http3-only ignore-content-length
include insecure ipv4 ipv6 junk-session-cookies list-only location location-trusted mail-rcpt-allowfails manual
metalink negotiate netrc netrc-optional no-alpn no-buffer no-clobber no-keepalive no-npn no-progress-meter
no-sessionid ntlm ntlm-wb parallel parallel-immediate path-as-is post301 post302 post303 proxy-anyauth proxy-basic
proxy-digest proxy-insecure proxy-negotiate proxy-ntlm proxy-ssl-allow-beast proxy-ssl-auto-client-cert
proxy-tlsv1 proxytunnel raw remote-header-name remote-name remote-name-all remote-time remove-on-error
retry-all-errors retry-connrefused sasl-ir show-error silent socks5-basic socks5-gssapi socks5-gssapi-nec ssl
ssl-allow-beast ssl-auto-client-cert ssl-no-revoke ssl-reqd ssl-revoke-best-effort sslv2 sslv3 styled-output
suppress-connect-headers tcp-fastopen tcp-nodelay tftp-no-options tlsv1 tlsv1.0 tlsv1.1 tlsv1.2 tlsv1.3
tr-encoding trace-time use-ascii verbose version xattr""".split())
_CURL_NAMES = tuple(sorted(_CURL_VALUES | _CURL_FLAGS))


def curl_long(name: str) -> str:
    """The long option curl reads for ``--name`` (without dashes, folded): the name itself when curl has it, else the
    one option it is an unambiguous prefix of (curl 7.88: ``--unix`` is ``--unix-socket``, ``--resol`` is
    ``--resolve``); otherwise the name as written (curl refuses an ambiguous or unknown one)."""
    if name in _CURL_VALUES or name in _CURL_FLAGS or not name:
        return name
    found = [n for n in _CURL_NAMES if n.startswith(name)]
    return found[0] if len(found) == 1 else name


#: the PostgreSQL clients (``-h/--host`` holding a path names a socket directory)
_POSTGRES = frozenset({"psql", "pg-dump", "pg-dumpall", "pg-restore", "pg-isready", "createdb", "dropdb", "vacuumdb",
                       "pg-basebackup"})
#: per program: {long option: "" for a socket path, "@" for an abstract name}, short letters naming a socket, short
#: letters that take a value (a cluster is read up to the first of them)
_OPTIONS: dict[str, tuple[dict[str, str], str, str]] = {
    "curl": ({"unix-socket": "", "abstract-unix-socket": "@"}, "", "AbcCdDeEFHKmoPQrTuUwxXyYz"),
    "xh": ({"unix-socket": ""}, "", "abfvhs"), "redis-cli": ({"socket": ""}, "s", "hpsanriuxd"),
    "ctr": ({"address": ""}, "a", "an"), "nerdctl": ({"address": "", "host": ""}, "aH", "aHn"),
    "crictl": ({"runtime-endpoint": "", "image-endpoint": ""}, "ri", "ric"),
    **{p: ({"socket": ""}, "S", "uphPDeSAhO") for p in ("mysql", "mysqldump", "mysqladmin", "mariadb",
                                                         "mariadb-dump", "mysqlimport", "mysqlshow", "mysqlcheck")},
    **{p: ({}, "", "hpUdfoclLvPTECjnNtxZ") for p in _POSTGRES}}
#: programs whose every operand is a socket path after a flag (``nc -U``, ``ncat --unixsock``, ``grpcurl -unix``)
_UNIX_FLAG = {"nc": "IiMmOPpqsTVWwXx", "netcat": "IiMmOPpqsTVWwXx", "ncat": "cedgGimopsw"}
_SOCAT = re.compile(r"(unix-connect|unix-client|unix-sendto|unix|local|abstract-connect|abstract-client|"
                    r"abstract-sendto|abstract|gopen):([^,]*)", re.I)
_SOCKET_ENV = frozenset({"mysql_unix_port", "containerd_address"})


def socket_assignment(word: str) -> list[str]:
    """The socket a word ``NAME=VALUE`` names (see the module docstring), as a destination, else []."""
    name, eq, value = word.partition("=")
    name = name.lstrip("-").lower()
    if not eq or not value or not re.fullmatch(r"[a-z_][\w.-]*", name):
        return []
    last = re.split(r"[\W_]+", name)[-1]
    path = value.startswith("/")
    if (name in _SOCKET_ENV or last in ("socket", "sock")) and (path or value.startswith("@")):
        return [socket_destination(value[1:], True) if value.startswith("@") else socket_destination(value)]
    return [socket_destination(value)] if name == "pghost" and path else []


def _socat(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    for w in argv[1:]:
        for address in w.split("!!") if not w.startswith("-") else []:
            m = _SOCAT.match(address)
            if m:
                kind, path = m.group(1).lower(), m.group(2)
                out.append(socket_destination(path, kind.startswith("abstract")))
            elif address.startswith(("/", "./", "../", "~")):   # a bare path: GOPEN
                out.append(socket_destination(address.split(",", 1)[0]))
    return out


def program_sockets(argv: Sequence[str]) -> list[str]:
    """The sockets the command ``argv`` (program first, as bash expanded it; the shell reader's name) connects to by
    its options and operands (see the module docstring), as destinations."""
    if not argv:
        return []
    prog = argv[0].rsplit("/", 1)[-1].lower().replace("_", "-")
    out = [d for w in argv[1:] for d in socket_assignment(w)]
    if prog == "socat":
        return out + _socat(argv)
    longs, shorts, values = _OPTIONS.get(prog, ({}, "", ""))
    unix_values = _UNIX_FLAG.get(prog)
    unix = False
    operands: list[str] = []
    k = 1
    while k < len(argv):
        w = argv[k]
        k += 1
        if w == "--":
            operands += argv[k:]
            break
        if prog == "grpcurl" and re.fullmatch(r"--?unix(?:=(?:true|1|t))?", w, re.I):
            unix = True
        elif w.startswith("--") and len(w) > 2:
            name, eq, value = w[2:].partition("=")
            name = curl_long(name.lower()) if prog == "curl" else name.lower()
            if name == "unixsock" and prog == "ncat":
                unix = True
            elif name in longs or (name == "host" and prog in _POSTGRES):
                if not eq and k < len(argv):
                    value, k = argv[k], k + 1
                if name == "host" and prog in _POSTGRES:
                    out += [socket_destination(value)] if value.startswith("/") else []
                else:
                    out.append(socket_destination(value, longs[name] == "@"))
        elif w.startswith("-") and len(w) > 1 and prog != "grpcurl":
            for j, letter in enumerate(w[1:], start=1):
                if unix_values is not None and letter == "U":
                    unix = True
                taking = letter in values or (unix_values is not None and letter in unix_values)
                if not taking:
                    continue
                value = w[j + 1:]
                if not value and k < len(argv):
                    value, k = argv[k], k + 1
                if letter in shorts or (letter == "h" and prog in _POSTGRES and value.startswith("/")):
                    out.append(socket_destination(value))
                break
        else:
            operands.append(w)
    if unix:
        out += [socket_destination(w) for w in operands if w and not w.startswith("-")]
    return out
