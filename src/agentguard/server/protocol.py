"""uvicorn's HTTP protocols with the limits a public-facing service needs (slowloris, idle floods).

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive`` but has no timer on a
connection that is still sending its request line and headers: a client that opens a connection and
sends nothing, or one byte every few seconds (slowloris), holds it for ever, and ~20,000 of them
exhaust the process's file descriptors so ``/health`` stops answering. These subclasses add:

- **header timeout** (``header_timeout_s``): from the moment a connection opens, or a response on it
  completes, the next request's headers must be complete within this many seconds, however the bytes
  trickle in; otherwise the connection is closed. uvicorn's own keep-alive timer (reset by any byte)
  still closes a silent keep-alive connection after ``timeout_keep_alive``.
- **header size** (``max_header_bytes``): a request whose headers are not complete after this many
  bytes is closed (h11 enforces it itself through ``h11_max_incomplete_event_size``; httptools does not).
- **connection cap** (``max_connections``, clamped below the process's open-file limit): when a new
  connection would exceed it, the connection idle the longest (waiting for a request, none in
  flight) is closed to make room; if every connection has a request in flight the new one is closed.
  A flood of idle connections therefore cannot lock out a client that sends its request at once
  (a load balancer's ``GET /health``).

The httptools class also sends an answer's status line and headers in the same write as its body
(:class:`_OneWrite`; uvloop sends each ``write`` at once): one ``send`` and one wake-up of the client per
answer instead of two (issue 32). Nothing waits for it longer than the event loop's current pass.

The limits travel on the uvicorn ``Config`` as the attribute ``agentguard_limits`` (a
:class:`Limits`), so they reach worker processes with the pickled config.
"""

from __future__ import annotations

import asyncio
import resource
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["H11Limited", "HttpToolsLimited", "Limits", "RESERVED_FDS", "protocol_class", "raise_nofile_limit"]

#: File descriptors kept free for the audit database, guard files, logs and the listening socket.
RESERVED_FDS = 128


@dataclass(frozen=True)
class Limits:
    """Connection limits of one worker process (see the module docstring)."""

    header_timeout_s: float = 10.0
    max_header_bytes: int = 16_384
    max_connections: int = 4096

    def connection_cap(self) -> int:
        """``max_connections``, lowered so the process never runs out of file descriptors."""
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return self.max_connections
        return max(16, min(self.max_connections, soft - RESERVED_FDS))


def raise_nofile_limit() -> int:
    """Raise this process's soft open-file limit to its hard limit (children inherit it); the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return int(soft)


class _Guarded:
    """The limits, mixed into a uvicorn HTTP protocol class (h11 or httptools)."""

    transport: Any
    loop: Any
    connections: set
    server_state: Any
    config: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ag_setup()

    # -- the protocol hooks both subclasses share (cooperative: the uvicorn protocol comes next in the MRO)
    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._ag_wait()
        self._ag_admit()

    def connection_lost(self, exc: Exception | None) -> None:
        self._ag_stop()
        super().connection_lost(exc)  # type: ignore[misc]

    def data_received(self, data: bytes) -> None:
        self._ag_data(data)
        if not self.transport.is_closing():
            super().data_received(data)  # type: ignore[misc]

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._ag_wait()
        super().on_response_complete()  # type: ignore[misc]

    def _ag_setup(self) -> None:
        limits = getattr(self.config, "agentguard_limits", None) or Limits()
        self._ag_limits: Limits = limits
        state = self.server_state
        idle = getattr(state, "agentguard_idle", None)
        if idle is None:  # one registry per server: connections waiting for a request, oldest first
            idle = OrderedDict()
            state.agentguard_idle = idle
            state.agentguard_cap = limits.connection_cap()
            state.agentguard_evicted = 0
        self._ag_idle: OrderedDict = idle
        self._ag_timer: asyncio.TimerHandle | None = None
        self._ag_bytes = 0
        self._ag_tail = b""  # the last bytes of the headers read so far (a blank line split across reads)
        self._ag_done = False  # the blank line ending this request's headers was read

    # -- waiting for a request --------------------------------------------------------------------
    def _ag_wait(self) -> None:
        """Start waiting for the next request's headers: arm the header timer, count as idle."""
        self._ag_stop()
        self._ag_bytes, self._ag_tail, self._ag_done = 0, b"", False
        self._ag_timer = self.loop.call_later(self._ag_limits.header_timeout_s, self._ag_expire)
        self._ag_idle[self] = None

    def _ag_stop(self) -> None:
        if self._ag_timer is not None:
            self._ag_timer.cancel()
            self._ag_timer = None
        self._ag_idle.pop(self, None)

    def _ag_expire(self) -> None:
        self._ag_timer = None
        self._ag_idle.pop(self, None)
        self._ag_close()

    def _ag_close(self) -> None:
        t = self.transport
        if t is not None and not t.is_closing():
            t.close()

    def _ag_admit(self) -> None:
        """Make room when this connection is over the cap: close the longest-idle one (or this one)."""
        cap = self.server_state.agentguard_cap
        while len(self.connections) > cap:
            victim = next(iter(self._ag_idle), None)
            if victim is None or victim is self:
                self._ag_stop()
                self._ag_close()
                return
            victim._ag_stop()
            victim._ag_close()
            victim.connections.discard(victim)  # gone now for the count; connection_lost follows
            self.server_state.agentguard_evicted += 1

    def _ag_data(self, data: bytes) -> None:
        """Count the bytes of the request's headers, up to the blank line that ends them (``\r\n\r\n``, found
        across reads): the body bytes that arrive in the same read as the headers are not header bytes. Before
        (session 21 red team), a read holding the headers and more than ``max_header_bytes`` of body (any POST
        over 16 KiB whose first segment carried both) closed the connection without an answer."""
        if self._ag_timer is None or self._ag_done:
            return
        tail = self._ag_tail
        end = (tail + data[:3]).find(b"\r\n\r\n") if tail else -1  # a blank line across two reads comes first
        if end < 0 and (end := data.find(b"\r\n\r\n")) >= 0:  # (no copy of the read: it may hold a large body)
            end += len(tail)
        if end >= 0:  # the headers end in this read (``end``: where, counted from the tail's start)
            self._ag_done = True
            total = self._ag_bytes - len(tail) + end + 4
        else:
            self._ag_tail = (tail + data)[-3:] if len(data) < 3 else data[-3:]
            self._ag_bytes += len(data)
            total = self._ag_bytes
        if total > self._ag_limits.max_header_bytes:
            self._ag_stop()
            self._ag_close()


class H11Limited(_Guarded, H11Protocol):
    """uvicorn's h11 protocol with the header timeout, header size limit and connection cap."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ag_cycle: Any = None

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and self.cycle is not self._ag_cycle:  # a request's headers arrived
            self._ag_cycle = self.cycle
            self._ag_stop()


class _OneWrite:
    """The transport as one request's response cycle sees it: the cycle's first write (the status line and
    headers) is held until its next write (the body) and leaves with it, so an answer costs one ``send`` on
    the socket instead of two (uvloop writes at once on each ``write``: two TCP segments, two wake-ups of the
    client). A held write leaves by the end of the event loop's current pass at the latest (``call_soon``),
    or before a close, so nothing is delayed behind an application that awaits between them, and the bytes
    keep their order."""

    __slots__ = ("_t", "_loop", "_held", "_first")

    def __init__(self, transport: Any, loop: Any) -> None:
        self._t, self._loop, self._held, self._first = transport, loop, b"", True

    def write(self, data: bytes) -> None:
        if self._held:
            data, self._held = self._held + data, b""
        elif self._first and data:
            self._first = False
            self._held = data
            self._loop.call_soon(self._flush)
            return
        self._t.write(data)

    def _flush(self) -> None:
        if self._held:
            data, self._held = self._held, b""
            if not self._t.is_closing():
                self._t.write(data)

    def close(self) -> None:
        self._flush()
        self._t.close()

    def is_closing(self) -> bool:
        return bool(self._t.is_closing())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._t, name)


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools not installed
    HttpToolsProtocol = None  # type: ignore[assignment,misc]

if HttpToolsProtocol is not None:

    class HttpToolsLimited(_Guarded, HttpToolsProtocol):  # type: ignore[valid-type,misc]
        """uvicorn's httptools protocol with the header timeout, header size limit and connection cap, whose
        answers leave in one write (:class:`_OneWrite`)."""

        def on_headers_complete(self) -> None:
            self._ag_stop()
            super().on_headers_complete()
            cycle = self.cycle
            if cycle is not None and cycle.transport is self.transport:
                cycle.transport = _OneWrite(self.transport, self.loop)  # type: ignore[assignment]

else:  # pragma: no cover
    HttpToolsLimited = None  # type: ignore[assignment,misc]


def protocol_class(prefer: str = "auto") -> type:
    """The limited protocol class: httptools when installed (``auto``/``httptools``), else h11."""
    if prefer in ("auto", "httptools") and HttpToolsProtocol is not None:
        return HttpToolsLimited
    return H11Limited
