"""Which arguments of a tool call the network guard reads as hosts, commands and sockets (split from
:mod:`.networks`, session 26): :func:`host_named` (``host``, ``db_host``, ``proxyUrl``...), the command arguments
(:data:`.rules.COMMAND_ARGS`), and a socket-named one (``socket_path``, ``docker_sock``: its path value is a local
socket, :mod:`.network_sockets`), found in one walk of the arguments (:func:`_named`)."""

from __future__ import annotations

import re
from typing import Any, Mapping

from .arguments import _keyed, keyed_values
from .rules import COMMAND_ARGS

__all__ = ["HOST_ARGS", "HOST_WORDS", "host_named", "socket_named"]

#: argument names (canonical) whose values are hosts a tool connects to (read as a URL's host)
HOST_ARGS = frozenset({"host", "hosts", "hostname", "server", "servers", "endpoint", "proxy", "proxies", "base_url",
                       "api_base", "api_url", "server_url", "ip", "ip_address", "address", "addr", "remote", "domain",
                       "url", "uri", "link", "href", "webhook", "webhook_url", "callback", "callback_url", "origin"})

#: the last word of a compound argument name that makes it host-named (``db_host``, ``proxy_url``, ``dns_server``)
HOST_WORDS = frozenset({"host", "hostname", "server", "endpoint", "proxy", "url", "uri", "ip", "domain", "webhook",
                        "upstream", "origin"})
_HOST_SUFFIXES = ("host", "hostname", "url", "uri", "endpoint")   # camelCase folded: dbhost, proxyurl


def host_named(key: str) -> bool:
    """Whether an argument (canonical name) holds a host a tool connects to: a name of :data:`HOST_ARGS`, a
    compound name whose last word (after ``_``, ``.`` or any separator) is in :data:`HOST_WORDS` (``db_host``, ``redis_url``), or a folded
    camelCase name ending in ``host``, ``url``, ``uri`` or ``endpoint`` (``dbhost``, ``proxyurl``; not ``ghost``)."""
    return key in HOST_ARGS or re.split(r"[\W_]+", key.strip("_. "))[-1] in HOST_WORDS or \
        (key.endswith(_HOST_SUFFIXES) and key not in ("ghost", "ghosts"))


def socket_named(key: str) -> bool:
    """Whether an argument (canonical name) holds a socket a tool connects to (``socket``, ``unix_socket``,
    ``docker_sock``, ``socket_path``: a name with the word ``socket`` or ``sock``, read when its value is a path;
    session 26)."""
    return "sock" in key and not {"socket", "sock"}.isdisjoint(re.split(r"[\W_]+", key))


def _wanted(key: str) -> bool:
    return host_named(key) or key in COMMAND_ARGS or socket_named(key)


def _named(arguments: Mapping[str, Any], shell: bool) -> tuple[list[Any] | None, list[Any] | None, list[Any]]:
    """``keyed_values`` of the host-named arguments, (but for a shell tool: all its arguments) of the command
    arguments and of the socket-named ones, in one walk where all fit (the walk is the same whatever it keeps;
    within MAX_ENTRIES together, each is); each walked apart otherwise."""
    found, deep = _keyed(arguments, _wanted)
    if found is None:
        sockets = keyed_values(arguments, socket_named)
        return keyed_values(arguments, host_named) if sockets is not None else None, [arguments] if shell else \
            keyed_values(arguments, lambda k: k in COMMAND_ARGS), sockets or []
    if deep:
        return None, [arguments] if shell else None, []
    return [v for k, v in found if host_named(k)], [arguments] if shell else [
        v for k, v in found if k in COMMAND_ARGS], [v for k, v in found if socket_named(k)]
