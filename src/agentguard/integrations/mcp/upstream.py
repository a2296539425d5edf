"""Upstream MCP servers of the guard proxy, and a stdio transport over a server started early.

Light on purpose (no ``mcp`` import at module level): the ``agentguard mcp-proxy`` command parses its
``--upstream`` options and starts the upstream servers (:meth:`Upstream.spawn`) *before* it imports
the MCP SDK and builds the guard stack, so the upstream's own start-up overlaps the proxy's and the
proxy adds little start-up time over the server alone. :func:`popen_transport` then speaks MCP's stdio
transport (newline-delimited JSON-RPC, spec 2025-11-25 "Transports") over the started process's pipes;
the server's stderr is inherited, and, as with the SDK's own ``stdio_client``, the server gets only the
safe default environment variables plus ``env``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from ...core.errors import InputError

__all__ = ["Upstream", "parse_upstream", "popen_transport"]

# the variables mcp.client.stdio passes on POSIX (get_default_environment)
SAFE_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")


@dataclass
class Upstream:
    """An upstream MCP server: ``command`` + ``args`` (stdio), ``url`` (Streamable HTTP), or ``server``
    (an ``mcp`` server object in this process, e.g. an ``MCPServer``: what ``mcp.Client`` accepts)."""

    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    url: str | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    process: subprocess.Popen | None = field(default=None, repr=False, compare=False)
    server: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name or "__" in self.name:
            raise InputError(f"upstream name {self.name!r} must be non-empty and contain no '__'")
        if sum(x is not None for x in (self.command, self.url, self.server)) != 1:
            raise InputError(f"upstream {self.name}: give exactly one of a command, a url or a server")

    def spawn(self) -> None:
        """Start the stdio server now (its start-up then overlaps ours); :meth:`target` uses it."""
        if self.command is None or self.process is not None:
            return
        env = {k: v for k in SAFE_ENV if (v := os.environ.get(k)) is not None and not v.startswith("()")}
        try:
            self.process = subprocess.Popen(  # noqa: S603 - the operator's own --upstream command
                [self.command, *self.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                env={**env, **(self.env or {})}, cwd=self.cwd, start_new_session=True,
            )
        except OSError as exc:
            raise InputError(f"upstream {self.name}: cannot start {self.command!r}: {exc}") from None

    def target(self) -> Any:
        """What ``mcp.Client`` connects to: the in-process server, the URL, a transport over the started
        process, or the SDK's stdio transport (stderr to ours)."""
        if self.server is not None:
            return self.server
        if self.url is not None:
            return self.url
        if self.process is not None:
            return popen_transport(self.process)
        from mcp import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=str(self.command), args=list(self.args), env=self.env, cwd=self.cwd)
        return stdio_client(params, errlog=_errlog())


def parse_upstream(spec: str) -> Upstream:
    """``NAME=COMMAND ARGS...`` or ``NAME=http(s)://...`` (the CLI's ``--upstream`` syntax)."""
    name, sep, rest = spec.partition("=")
    if not sep or not name.strip() or not rest.strip():
        raise InputError(f"bad upstream {spec!r}: expected NAME=COMMAND [ARGS...] or NAME=URL")
    rest = rest.strip()
    if rest.startswith(("http://", "https://")):
        return Upstream(name.strip(), url=rest)
    try:
        parts = shlex.split(rest)
    except ValueError as exc:
        raise InputError(f"bad upstream {spec!r}: {exc}") from None
    cmd = sys.executable if parts[0] in ("python", "python3") else parts[0]
    return Upstream(name.strip(), command=cmd, args=parts[1:])


def _errlog() -> Any:
    """The upstream's stderr sink: our current stderr if it is a real file, else the process's original
    one (``stdio_client``'s default is bound when ``mcp`` is imported and may be closed by now)."""
    for f in (sys.stderr, sys.__stderr__):
        try:
            if f is not None:
                f.fileno()
                return f
        except (OSError, ValueError, AttributeError):
            continue
    return open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process


@asynccontextmanager
async def popen_transport(proc: subprocess.Popen) -> AsyncIterator[tuple[Any, Any]]:
    """MCP stdio transport streams ``(read, write)`` over a started process's pipes (asyncio loop).
    On exit: stdin is closed, the process gets 2 s to exit, then SIGTERM, then SIGKILL."""
    import asyncio

    import anyio
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26, loop=loop)
    rtrans, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), proc.stdout)
    wtrans, _ = await loop.connect_write_pipe(asyncio.Protocol, proc.stdin)
    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)

    async def pump_out() -> None:
        async with read_send:
            while line := await reader.readline():
                try:
                    item: Any = SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
                except ValueError as exc:
                    item = exc
                try:
                    await read_send.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def pump_in() -> None:
        async with write_recv:
            async for msg in write_recv:
                if wtrans.is_closing():
                    return
                wtrans.write(msg.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_out)
        tg.start_soon(pump_in)
        try:
            yield read_recv, write_send
        finally:
            with anyio.CancelScope(shield=True):
                wtrans.close()
                for sig, wait in ((None, 2.0), ("terminate", 2.0), ("kill", 2.0)):
                    if sig is not None and proc.poll() is None:
                        getattr(proc, sig)()
                    with anyio.move_on_after(wait):
                        while proc.poll() is None:
                            await anyio.sleep(0.01)
                    if proc.poll() is not None:
                        break
                rtrans.close()
            tg.cancel_scope.cancel()
