"""The destinations a network client's words name, read with the program's own option grammar (session 22).

``curl 2130706433``, ``curl 0:8080``, ``wget 0x7f.1``, ``nc 0 80``, ``redis-cli -h 0``, ``psql -h 2130706433``, ``curl
-x 0:8080 URL``, ``curl --resolve x.com:80:0 URL`` reach the local host or the metadata service (curl's URL parser and
``getaddrinfo`` read ``0``, ``127.1`` and ``2130706433`` as IPv4 addresses), but a text reading of a command can only
take a four-part address as a host (``nc -w 5 host 80``, ``-o out.txt``, ``12:30`` hold words of the same shapes). Here
each program's grammar says which word is a destination; :func:`program_destinations` returns those words as written
(a URL, or a scheme-less ``[user@]host[:port][/path]``), and :func:`bare_host` takes the host out of a scheme-less one,
for the one host reader (``networks.internal``: ``getaddrinfo``'s numeric reading).

- **operands**: every operand of ``curl``, ``wget``, ``http``/``https``/``xh`` (HTTPie; ``:8080`` is the local host),
  ``nc``/``ncat``/``netcat``, ``telnet``, ``ping``, ``ping6``, ``traceroute``, ``tracepath``, ``mtr``, ``nmap``,
  ``fping``, ``hping3``, ``cqlsh``, libwww-perl's ``lwp-request`` (also run as ``GET``, ``HEAD``, ``POST``, ``PUT``:
  :data:`CASED_CLIENTS`) (a port after the host is no destination: a pure number after the first operand
  is skipped);
- **options**: ``-h`` of database clients (``redis-cli``, ``psql``, ``pg_dump``..., ``mysql``...,
  ``clickhouse-client``),
  ``-H`` of ``docker``/``podman``, ``-x`` of curl and nc, ``-s`` of kubectl, and for every program a long option named
  for a host (``--host``, ``--hostname``, ``--server``, ``--proxy``, ``--preproxy``, ``--socks5...``, ``--url``,
  ``--endpoint(s)``, ``--connect``), separate or ``=``-joined; curl's ``--resolve HOST:PORT:ADDR`` (the addresses) and
  ``--connect-to H1:P1:H2:P2`` (H2); OpenSSL's ``-connect`` and ``-proxy``; socat's ``TCP:``/``TCP4:``/``TCP6:``/
  ``UDP:``/``OPENSSL:``/``SSL:``/``PROXY:`` addresses;
- **assignments**: a word ``NAME=VALUE`` whose name's last part names a host (``http_proxy=0:8080``, ``PGHOST=0``,
  ``DOCKER_HOST=tcp://0:2375``, ``-e https_proxy=...`` of wget, ``-c http.proxy=...`` of git), except ``no_proxy``
  (hosts *not* proxied). A value of such an option or assignment is read when it looks like a destination (a dot, a
  port, a user, brackets, a number, ``localhost``): ``SERVER=prod`` and ``BASE_URL=/api`` are not (a bare single
  label there is an environment's name as often as a host's; a client's operand or ``-h`` value is read whatever it
  looks like). Session 23: a proxy is a host whatever it looks like (``--proxy``, ``--preproxy``, ``--socks5...``,
  ``--https-proxy`` and a ``*_proxy`` assignment: ``curl --proxy corp-proxy`` resolves corp-proxy through the search
  domains), and so is a known client's own ``--host``/``--server``/``--url`` (``mysql --host corp``);
- **servers queried**: ``dig @SERVER``, ``nslookup NAME SERVER``, ``host NAME SERVER``; ``//server/share`` of
  ``smbclient`` and ``mount``; ``/v:HOST`` of ``xfreerdp``; ``grpcurl``'s ``host:port`` operand.

Options are read with each program's short options that take a value (OpenBSD nc's getopt, curl's, wget's, ping's);
an option this module does not know is read as taking none, so its value is read as an operand (fail closed: a host
there refuses, never allows). A listening address is read as a destination (``--host 0.0.0.0`` of a server) but for
the servers of :data:`LISTENERS` (session 25: ``uvicorn --host``, ``gunicorn -b``, ``python -m http.server --bind``),
whose listening option's words :func:`quiet_text` also takes out of the text readings (once per option: a word spelled
the same for another program is still read).
Written by hand: no Python package reads these programs' command lines (each program's own parser is C).
"""

from __future__ import annotations

import re
from typing import Sequence

from .network_sockets import curl_long, program_sockets

__all__ = ["CASED_CLIENTS", "LISTENERS", "assigned_destinations", "bare_host", "program_destinations", "quiet_text",
           "without_listening", "xargs_literal"]

#: programs whose operands are destinations, with their short options that take a value
_OPERANDS: dict[str, str] = {
    "curl": "AbcCdDeEFHKmoPQrTuUwxXyYz", "wget": "aAbBDeiIlLoOPQRtTUwXY", "http": "abfvhs", "https": "abfvhs",
    "xh": "abfvhs", "nc": "IiMmOPpqsTVWwXx", "ncat": "cedgGimopsw", "netcat": "IiMmOPpqsTVWwXx",
    "telnet": "beklnSXt", "ping": "cfFiIlmMpQsStTwW", "ping6": "cfFiIlmMpQsStTwW", "traceroute": "fgimNpqstwz",
    "tracepath": "lmp", "mtr": "abBcfimPsQuUyYZ", "nmap": "bDeiopS", "fping": "bBcCiIoOpQrtS",
    "hping3": "acdeEHiImMOopstTwWx",
    "cqlsh": "ekpuf", "lwp-request": "bcCHimopt",
    # session 23: clients whose operand is a host or URL (each one's getopt letters that take a value)
    "ftp": "oPqrsTux", "lftp": "cefpu", "tftp": "mRc", "aria2c": "dosxkjilUmtTMNpC", "lynx": "", "w3m": "oTIO",
    "links": "", "elinks": "", "ab": "AbBcCeEgHmnpPsStTuvwXxyz", "showmount": "", "ssh-keyscan": "fpTtO",
    "ssh-copy-id": "ipoFt", "rdesktop": "AuLdscpnkgSTXaxr", "vncviewer": "", "mongosh": "up", "mongo": "up",
    "whois": "hpisTgq", "finger": "", "rlogin": "el", "rsh": "l", "ipmitool": "HUPpLIycCkKfoOeEtTbBlz"}
#: programs whose operand at an index (after the options) names the server they query (``nslookup x.com 10.0.0.1``,
#: ``host x.com 10.0.0.1``), with their short options that take a value; ``dig @10.0.0.1`` names it with an ``@``
_SERVER_OPERAND: dict[str, tuple[int, str]] = {"nslookup": (1, ""), "host": (1, "cNRtW"), "dig": (-1, "bcfkpqtxy"),
                                              "kdig": (-1, "bcfkpqtxy"), "drill": (-1, "ackopqrst")}
#: libwww-perl's web client under its method names (``GET URL``; bash runs them as written: ``HEAD`` is no ``head``)
CASED_CLIENTS = {"GET": "lwp-request", "HEAD": "lwp-request", "POST": "lwp-request", "PUT": "lwp-request"}
#: programs whose short option names the server, and the letter
_SHORT_HOST = {**{p: "h" for p in ("redis-cli", "psql", "pg-dump", "pg-dumpall", "pg-restore", "pg-isready",
                                   "createdb", "dropdb", "vacuumdb", "mysql", "mysqldump", "mysqladmin", "mariadb",
                                   "mariadb-dump", "clickhouse-client", "memcstat")},
               "docker": "H", "podman": "H", "curl": "x", "lwp-request": "p",
               **{p: "h" for p in ("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldappasswd",
                                   "ldapcompare", "ldapmodrdn", "ldapexop", "mongodump", "mongorestore",
                                   "mongoexport", "mongoimport")},
               "sqlcmd": "S", "smbclient": "IL", "rpcclient": "I", "whois": "h", "nc": "x", "netcat": "x",
               "kubectl": "s"}
#: long options (without dashes) that name a destination, in any program
_LONG_HOST = frozenset({"host", "hostname", "server", "proxy", "preproxy", "socks4", "socks4a", "socks5",
                        "socks5-hostname", "url", "endpoint", "endpoints", "connect", "proxy1.0", "doh-url",
                        "docker-host", "server-url", "base-url", "api-url", "host-url"})
#: long options of the clients above that take the next word (read so that their value is no operand)
_LONG_VALUE = frozenset({
    "output", "data", "data-raw", "data-binary", "data-urlencode", "data-ascii", "json", "header", "user",
    "user-agent", "referer", "cookie", "cookie-jar", "request", "form", "form-string", "max-time", "connect-timeout",
    "retry", "retry-delay", "retry-max-time", "write-out", "upload-file", "config", "cacert", "capath", "cert", "key",
    "range", "limit-rate", "output-dir", "proxy-user", "oauth2-bearer", "url-query", "aws-sigv4", "dump-header",
    "trace", "trace-ascii", "stderr", "max-filesize", "interface", "local-port", "unix-socket", "abstract-unix-socket",
    "variable", "netrc-file", "time-cond", "etag-save", "etag-compare", "hsts", "alt-svc", "cert-type", "key-type",
    "pass", "ciphers", "tls-max", "mail-from", "mail-rcpt", "output-document", "append-output", "directory-prefix",
    "tries", "timeout", "wait", "post-data", "post-file", "body-data", "body-file", "method", "execute", "input-file",
    "password", "http-user", "http-password", "level", "accept", "reject", "domains", "exclude-domains", "auth",
    "auth-type", "session", "session-read-only", "verify", "print", "style", "pretty", "format-options", "source",
    "wait-for", "count", "interval", "ttl", "port", "keyfile", "username", "database", "dbname", "file", "command",
    "eval", "encoding", "out", "sendonly", "recvonly", "noproxy"})   # (curl --noproxy LIST: hosts not proxied)
#: socat address types that carry host:port, and OpenSSL options that name one
_SOCAT = re.compile(r"(?:tcp[46]?|udp[46]?|openssl|ssl|proxy|tcp[46]?-connect|udp[46]?-connect|socks4a?)"
                    r":([^,]+)", re.I)
_OPENSSL_HOST = frozenset({"-connect", "-proxy"})
#: long options that name a proxy in every client that has them (curl, pip, npm, ncat, wget's ``-e``): the value is a
#: host whatever it looks like (``--proxy corp-proxy``: curl connects to corp-proxy:1080; session 23)
_PROXY_LONG = frozenset({"proxy", "preproxy", "socks4", "socks4a", "socks5", "socks5-hostname", "proxy1.0",
                         "https-proxy", "http-proxy"})
#: the last part of an assignment's name that makes its value a destination (no_proxy is excepted)
_ASSIGNED = frozenset({"host", "hostname", "server", "endpoint", "proxy", "url", "uri", "upstream"})
_SWITCHES = frozenset({"on", "off", "true", "false", "yes", "no"})   # wget -e use_proxy=on: a switch, no host
_ASSIGNMENT = re.compile(r"-{0,2}([A-Za-z_][\w.-]*)=(.+)", re.S)


def bare_host(value: str) -> str:
    """The host of a scheme-less destination ``[user@]host[:port][/path|?query|#fragment]`` (``[v6]:port`` and a
    bare IPv6 literal too), as written."""
    head = re.split(r"[/?#]", value, maxsplit=1)[0]
    head = head.rsplit("@", 1)[-1]
    if head.startswith("["):
        return head[1:head.find("]")] if "]" in head else head[1:]
    if head.count(":") == 1:
        return head.split(":")[0]
    return head


_NUMBER = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]+")


def _shaped(value: str) -> bool:
    """Whether a value of a generic host-named option or assignment looks like a destination: a URL, an address or a
    name with a dot, a port, a user or brackets, a number (``0``, ``2130706433``) or ``localhost``; not a path
    (``BASE_URL=/api``) nor a bare word (``SERVER=prod``: an environment's name as often as a host's)."""
    if not value or value[0] in "/.~$":
        return False
    return bool(re.search(r"[.:@\[]", value)) or bool(_NUMBER.fullmatch(value)) or value.lower() == "localhost"


def assigned_destinations(word: str) -> list[str]:
    """The value of a word ``NAME=VALUE`` (also ``--NAME=VALUE``) whose name's last part names a host
    (``http_proxy``, ``PGHOST``, ``DOCKER_HOST``, ``http.proxy``; not ``no_proxy``), else []."""
    m = _ASSIGNMENT.fullmatch(word)
    if m is None:
        return []
    name = m.group(1).lower()
    last = re.split(r"[\W_]+", name)[-1]
    named = last in _ASSIGNED or (last.endswith(("host", "url", "proxy")) and last not in ("ghost", "curl"))
    proxy = last.endswith("proxy")   # http_proxy=corp-proxy, git -c http.proxy=corp: a host whatever it looks like
    if name.endswith("no_proxy") or not named or m.group(2).lower() in _SWITCHES or not (
            _shaped(m.group(2)) or (proxy and m.group(2)[:1] not in ("", "/", ".", "~", "$"))):
        return []
    return [m.group(2)]


_CONFIG_VALUES = frozenset({"--file", "-f", "--blob", "--type", "--default", "--comment", "--location", "--editor"})


def _config_set(argv: Sequence[str]) -> list[str]:
    """The destination a ``PROGRAM config [set] KEY VALUE`` command writes for the program's next connections (read
    as the assignment ``KEY=VALUE``: a key whose last part names a host or proxy)."""
    if "config" not in argv[1:4]:
        return []
    rest: list[str] = []
    k = argv.index("config") + 1
    while k < len(argv):
        w = argv[k]
        k += 1
        if w in _CONFIG_VALUES:
            k += 1
        elif not w.startswith("-") and w not in ("set", "add") or rest:
            rest.append(w)
    if len(rest) == 1 and "=" in rest[0]:
        return assigned_destinations(rest[0])
    return assigned_destinations(f"{rest[0]}={rest[1]}") if len(rest) >= 2 and "=" not in rest[0] else []


def _curl_values(name: str, value: str) -> list[str]:
    if name == "resolve":   # [+]HOST:PORT:ADDR[,ADDR]...
        parts = value.lstrip("+").split(":", 2)
        return [a.strip() for a in parts[2].split(",")] if len(parts) == 3 else [value]
    if name == "connect-to":   # HOST1:PORT1:HOST2:PORT2
        m = re.match(r"(\[[^\]]*\]|[^:]*):[^:]*:(\[[^\]]*\]|[^:]*)(?::|$)", value)
        return [m.group(2)] if m and m.group(2) else []
    return []


def program_destinations(argv: Sequence[str]) -> list[str]:
    """The words of the command ``argv`` (as bash expanded them, program first) that name a destination, as written
    (see the module docstring); [] for a program that names none."""
    if not argv:
        return []
    base = argv[0].rsplit("/", 1)[-1]
    prog = CASED_CLIENTS.get(base) or base.lower().replace("_", "-")   # (the shell reader's names: "redis_cli")
    out = [v for w in argv[1:] for v in assigned_destinations(w)]
    # an assignment as an option's value ("wget --execute=http_proxy=corp") and a client's configuration written
    # for its next run ("git config http.proxy corp", "npm config set proxy corp", "pip config set global.proxy x")
    out += [v for w in argv[1:] if w.startswith("-") and w.count("=") > 1 for v in assigned_destinations(
        w.split("=", 1)[1])]
    out += _config_set(argv)
    out += program_sockets(argv)   # curl --unix-socket PATH, nc -U PATH, socat UNIX-CONNECT:PATH (session 26)
    if prog == "openssl":
        out += [argv[k + 1] for k in range(1, len(argv) - 1) if argv[k] in _OPENSSL_HOST]
    if prog == "socat":
        out += [m.group(1) for w in argv[1:] for m in [_SOCAT.match(w)] if m]
    values = _OPERANDS.get(prog)
    short_host = _SHORT_HOST.get(prog, "")
    server = _SERVER_OPERAND.get(prog, (0, ""))
    operands: list[str] = []
    k, options = 1, True
    while k < len(argv):
        w = argv[k]
        k += 1
        if options and w == "--":
            options = False
            continue
        if options and w.startswith("--") and len(w) > 2:
            name, eq, value = w[2:].partition("=")
            name = curl_long(name.lower()) if prog == "curl" else name.lower()   # (curl reads "--resol" as --resolve)
            takes = name in _LONG_HOST or name in _LONG_VALUE or name in _PROXY_LONG or name in ("resolve",
                                                                                                "connect-to")
            if not eq and takes and k < len(argv):
                value, k = argv[k], k + 1
            # a client's own server option (not docker run's --hostname, the container's name)
            client = values is not None or (short_host != "" and name != "hostname")
            known = name in _PROXY_LONG or (name in _LONG_HOST and client)
            if (name in _LONG_HOST or name in _PROXY_LONG) and (eq or takes) and (known or _shaped(value)) \
                    and not value.startswith("-"):   # (no host name starts with "-": the next option)
                out.append(value)   # a client's own host option is read whatever its value looks like
            if prog == "curl":
                out += _curl_values(name, value)
            continue
        if options and w.startswith("-") and len(w) > 1:
            for j, letter in enumerate(w[1:], start=1):
                if letter in short_host or letter in server[1] or (values is not None and letter in values):
                    value = w[j + 1:]
                    if not value and k < len(argv):
                        value, k = argv[k], k + 1
                    if letter in short_host:
                        out.append(value)
                    break
            continue
        operands.append(w)
    if prog in ("http", "https", "xh") and operands:   # HTTPie: [METHOD] URL [items]; ":8080" is the local host
        url = operands[1] if re.fullmatch(r"[A-Z]+", operands[0]) and len(operands) > 1 else operands[0]
        operands = ["localhost" + url if url.startswith(":") else url]
    if values is not None:
        out += [w for i, w in enumerate(operands) if w and not (i > 0 and re.fullmatch(r"\d{1,5}", w))]
    if prog in _SERVER_OPERAND:   # the queried server: "@server" anywhere (dig), or the operand at its index
        at = server[0]
        out += [w[1:] for w in operands if w.startswith("@")]
        out += [operands[at]] if at >= 0 and len(operands) > at and not operands[at].startswith("-") else []
    if prog in ("smbclient", "rpcclient", "mount", "mount.cifs", "smbget"):   # //server/share, \\server\share
        out += [m.group(1) for w in operands if (m := re.match(r"[\\/]{2}([^\\/]+)", w))]
    if prog in ("xfreerdp", "wlfreerdp", "sdl-freerdp"):   # /v:host[:port]
        out += [w[3:] for w in argv[1:] if w.lower().startswith("/v:")]
    if prog == "grpcurl":   # [flags] address [verb]: Go flags (-d '{}' takes a value): every operand with a port
        out += [w for w in operands if re.fullmatch(r"[^\s{}\[\]]*:\d{1,5}|\[[0-9a-fA-F:.%]+\]:\d{1,5}", w)]
    return [w for w in out if w]


#: servers whose option names the address they listen on, not one they connect to (session 25): program (a Python
#: module run with ``-m`` by its module name) -> its listening options (long names without dashes, short letters)
LISTENERS: dict[str, tuple[frozenset[str], str]] = {
    "uvicorn": (frozenset({"host"}), ""), "gunicorn": (frozenset({"bind"}), "b"),
    "hypercorn": (frozenset({"bind"}), "b"), "daphne": (frozenset({"bind"}), "b"),
    "http.server": (frozenset({"bind"}), "b"), "flask": (frozenset({"host"}), "h"),
    "jupyter": (frozenset({"ip"}), ""), "mkdocs": (frozenset({"dev-addr"}), "a")}


def _listener(argv: Sequence[str]) -> tuple[str, Sequence[str]] | None:
    """The listening server ``argv`` runs and its arguments: ``uvicorn ...``, ``python -m http.server ...``
    (``flask run``, ``mkdocs serve``, ``jupyter notebook|lab``: only those subcommands), or None."""
    prog = argv[0].rsplit("/", 1)[-1].lower() if argv else ""
    args = list(argv[1:])
    if re.fullmatch(r"python[0-9.]*", prog) and args[:1] == ["-m"] and len(args) > 1:
        prog, args = args[1], args[2:]
    if prog not in LISTENERS or (prog, args[:1]) in (("flask", []), ("mkdocs", []), ("jupyter", [])):
        return None
    if prog in ("flask", "mkdocs", "jupyter") and args[0] not in ("run", "serve", "notebook", "lab", "server"):
        return None
    return prog, args


def _listening(argv: Sequence[str]) -> tuple[list[str], list[tuple[str, ...]]]:
    """``(argv without its listening options, those options' words)`` of a server ``argv`` (:data:`LISTENERS`):
    ``--host 127.0.0.1``, ``--host=127.0.0.1``, ``-b 127.0.0.1:8000``, ``-b127.0.0.1``."""
    found = _listener(argv)
    if found is None:
        return list(argv), []
    prog, args = found
    longs, shorts = LISTENERS[prog]
    kept, spans, k = list(argv[:len(argv) - len(args)]), [], 0
    while k < len(args):
        w = args[k]
        name, eq, _ = w.partition("=")
        joined = bool(eq) if name.startswith("--") else len(w) > 2
        if (name.startswith("--") and name[2:] in longs) or (w[:1] == "-" and w[1:2] in tuple(shorts)):
            spans.append(tuple(args[k:k + (1 if joined else 2)]))
            k += 1 if joined else 2
            continue
        kept.append(w)
        k += 1
    return kept, spans


def without_listening(argv: Sequence[str]) -> list[str]:
    """``argv`` without the listening options of the server it runs (:data:`LISTENERS`: the address it binds is
    no destination), for the option grammar."""
    return _listening(argv)[0]


# a no_proxy assignment's value, and curl's --noproxy value, is a list of hosts NOT proxied (connected to by no one
# for it): only host-list characters, so that nothing else in the text is hidden with it
_NO_PROXY = re.compile(r"(?:(?<![\w.-])no_proxy=|(?<!\S)--noproxy(?:=|\s+))"
                       r"(?:'[\w.,:*/\[\]%-]*'|\"[\w.,:*/\[\]%-]*\"|[\w.,:*/\[\]%-]*)(?=$|[\s;&|)])", re.I)


def quiet_text(text: str, argvs: Sequence[Sequence[str]]) -> str:
    """``text`` without the words that name a host no one connects to, for the text readings of hosts
    (:func:`.network_hosts.command_hosts`): a ``no_proxy=...`` assignment's or curl's ``--noproxy`` value, and each
    listening option of a server the command runs (:func:`without_listening`, once per option found: a same-spelled
    word of another program stays, and its own reading still refuses it)."""
    text = _NO_PROXY.sub(" ", text)
    for argv in argvs:
        for words in _listening(argv)[1]:
            spelled = r"\s+".join(re.escape(w) for w in words)
            text = re.sub(rf"(?<!\S){spelled}(?!\S)", " ", text, count=1)
    return text


# ``echo WORDS | xargs [-n N] [-r] [-t] PROG ARGS``, every word plain (no quote, expansion or operator): xargs runs
# PROG ARGS WORDS (in groups of N), so the words it hands PROG are those echo prints
_PLAIN = r"[\w:/.?=&%@+,~-]+"
_XARGS = re.compile(rf"\s*echo((?:\s+{_PLAIN})+)\s*\|\s*xargs((?:\s+(?:-n\s*\d+|-[rt]+|--no-run-if-empty))*)"
                    rf"\s+((?![-])(?:{_PLAIN})(?:\s+{_PLAIN})*)\s*")   # (PROG is no option of xargs: -a f)


def xargs_literal(text: str) -> tuple[str, ...] | None:
    """The command xargs runs for a whole text ``echo WORDS | xargs [-n N] [-r] [-t] PROG ARGS`` (plain words only):
    ``PROG ARGS WORDS``, or None for any other text (its stdin words stay unknown: refused)."""
    m = _XARGS.fullmatch(text)
    if m is None or m.group(1).split()[0].startswith("-"):
        return None
    return (*m.group(3).split(), *m.group(1).split())
