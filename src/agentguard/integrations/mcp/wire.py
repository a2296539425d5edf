"""The stdio relay's reading and writing of JSON-RPC lines (:mod:`.relay`): request ids as keys, the relay's
own serialisation of a message it read, and a guarded request read as the call the guard sees."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import selectors
import threading
from typing import Any

from ...core.types import ToolCall

__all__ = ["FORWARDED_METHODS", "GUARDED_METHODS", "LINE_LIMIT", "MODERN_VERSIONS", "OWN_ID_PREFIX", "VERSION_META_KEY",
           "as_call", "as_read", "canonical_uri", "dump", "key", "meta_of", "modern", "pipe_reader", "result_text",
           "tool_uses", "uri_reading", "wire"]

VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
MODERN_VERSIONS = ("2026-07-28",)
#: the prefix of the ids of the relay's own requests (elicitations to the client, listings of the upstream);
#: a client request with such an id is refused, so no answer to the relay can be taken for the client's
OWN_ID_PREFIX = "agentguard-"
LINE_LIMIT = 1 << 26  # the longest line read (64 MiB); a longer one ends the connection


#: client requests the relay decides: each runs server code with the client's values (a tool, a prompt's rendering,
#: a resource's reading, a completion handler: ``completion/complete`` runs the server's handler with the argument
#: value the client chose, ``file:///{path}`` completed from ``/etc/`` lists /etc, so it is judged like a read)
GUARDED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read", "completion/complete"})
#: client requests relayed unguarded (they list, subscribe or configure; none runs server code with client values)
FORWARDED_METHODS = frozenset({
    "initialize", "logging/setLevel", "ping", "prompts/list", "resources/list",
    "resources/subscribe", "resources/templates/list", "resources/unsubscribe", "server/discover",
    "subscriptions/listen", "tasks/cancel", "tasks/get", "tasks/list", "tasks/result", "tools/list",
})


def key(rid: Any) -> str:
    """A request id as a dict key (1 and "1" are different ids)."""
    return f"{type(rid).__name__}:{rid}"


def dump(msg: Any) -> bytes:
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def wire(msg: Any) -> bytes:
    """What the relay writes upstream for a client message it read: its own serialisation of exactly that
    message, ASCII (every non-ASCII character escaped), so the only line break is the final ``\\n``.

    Never the client's bytes: JSON allows ``\\r`` as whitespace between tokens, and the MCP SDK's stdio
    server reads its stdin in universal-newline mode (a lone ``\\r`` ends a line), so one message the relay
    read (a ``ping`` whose params hold ``\\r{...tools/call...}\\r``) was three lines upstream, one an
    unguarded call. Any other reader's line breaks (``\\x85``, U+2028) are escaped the same way."""
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode() + b"\n"


def result_text(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    parts = []
    for c in result.get("content") or []:
        t = c.get("text") if isinstance(c, dict) else None
        parts.append(t if isinstance(t, str) else f"<{c.get('type', 'content') if isinstance(c, dict) else 'content'}>")
    return "\n".join(parts)


def meta_of(msg: dict) -> dict:
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else {}


def modern(msg: dict) -> bool:
    """A request of the 2026-07-28 (stateless) protocol: its version rides in ``_meta``."""
    return meta_of(msg).get(VERSION_META_KEY) in MODERN_VERSIONS


def as_call(method: str, params: Any, rid: Any) -> ToolCall | str:
    """The guarded request as the call the guard sees (as GuardProxy builds it), or why it is malformed.

    ``arguments`` absent or ``null`` is no arguments (the SDK's reading); any other value that is not an
    object (``[]``, ``""``, ``0``, ``false``) is malformed: it once read as ``{}`` for the guard (``or {}``)
    while the upstream was sent the value itself. A ``prompts/get`` argument must be a string (the spec's
    ``{[key: string]: string}``, what the SDK proxy's own validation enforces): the guard then reads exactly the text
    the server's prompt function validates (:func:`~agentguard.policies.arguments.readings` read it as pydantic's lax
    ``validate_call`` does), not a list or number another server might take as it is."""
    if not isinstance(params, dict):
        return "params is not an object"
    if method in ("tools/call", "prompts/get"):
        name, args = params.get("name"), params.get("arguments")
        args = {} if args is None else args
        if not isinstance(name, str) or not name:
            return "name is not a non-empty string"
        if not isinstance(args, dict):
            return f"arguments is {type(args).__name__}, not an object"
        if method == "prompts/get" and not all(isinstance(v, str) for v in args.values()):
            return "a prompt argument is not a string (MCP: prompts/get arguments are strings)"
        return (ToolCall(name, dict(args), str(rid)) if method == "tools/call"
                else ToolCall("prompts/get", {"name": name, "arguments": dict(args)}))
    if method == "completion/complete":
        return _completion(params)
    uri = params.get("uri")
    reading = uri_reading(uri) if isinstance(uri, str) else None
    return ToolCall("resources/read", {"uri": reading}) if reading else "uri is not a URI with one reading"


def _completion(params: dict) -> ToolCall | str:
    """A ``completion/complete`` as ``ToolCall("completion/complete", {"ref", "argument"[, "context"]})``: the prompt
    or resource template it completes against (its name or template, as given: it names, it is not read), the argument
    (``name``, ``value``: strings) and the values of the other arguments given as context; anything else is
    malformed (refused)."""
    ref, argument, context = params.get("ref"), params.get("argument"), params.get("context")
    if not (isinstance(ref, dict) and ref.get("type") in ("ref/prompt", "ref/resource")):
        return "ref is not a prompt or resource reference"
    field = "name" if ref["type"] == "ref/prompt" else "uri"
    if not isinstance(ref.get(field), str):
        return f"ref.{field} is not a string"
    if not (isinstance(argument, dict) and isinstance(argument.get("name"), str)
            and isinstance(argument.get("value"), str)):
        return "argument is not an object with a string name and value"
    if context is not None and not (isinstance(context, dict) and isinstance(context.get("arguments", {}), dict)):
        return "context is not an object of arguments"
    args: dict[str, Any] = {"ref": {"type": ref["type"], field: ref[field]},
                            "argument": {"name": argument["name"], "value": argument["value"]}}
    if context is not None and context.get("arguments"):
        args["context"] = {"arguments": dict(context["arguments"])}
    return ToolCall("completion/complete", args)


def uri_reading(uri: str) -> str | None:
    """A resource URI as the server reads it, which the guard judges (the request forwarded carries
    :func:`canonical_uri`, whose escapes the server decodes): the canonical URI with every escape decoded once, as
    the MCP SDK's ``MCPServer`` hands a resource template's function its values (``db://query/{sql}`` read with
    ``DROP%20TABLE%20users`` ran with ``"DROP TABLE users"`` while a rule forbidding ``DROP TABLE`` read the escapes;
    ``%252e`` reaches it as ``%2e``, read once). None for a URI with no single reading (:func:`canonical_uri`), or
    whose escapes decode to no UTF-8 text (the server reads replacement characters)."""
    from urllib.parse import unquote

    canonical = canonical_uri(uri)
    if canonical is None:
        return None
    try:
        return unquote(canonical, errors="strict")
    except UnicodeDecodeError:
        return None


def tool_uses(msg: Any, limit: int = 256) -> list[ToolCall] | None:
    """Every ``tool_use`` content block anywhere in a client message (a sampling result, the
    ``inputResponses`` of a 2026-07-28 retry), as the calls the upstream will run: MCP sampling with tools
    (2025-11-25) has the *server* execute the tools the client's model chose there, past ``tools/call``.
    None when a block is malformed (no string name, input not an object) or there are more than ``limit``."""
    found: list[ToolCall] = []
    todo = [msg]
    while todo:
        o = todo.pop()
        if isinstance(o, list):
            todo.extend(o)
        elif isinstance(o, dict):
            if o.get("type") == "tool_use":
                name, args = o.get("name"), o.get("input")
                if not isinstance(name, str) or not name or not isinstance(args, dict) or len(found) >= limit:
                    return None
                found.append(ToolCall(name, dict(args), str(o.get("id") or "")))
            todo.extend(o.values())
    return found


async def pipe_reader(file: Any) -> asyncio.StreamReader:
    """An asyncio reader over a pipe, a socket or a character device (``file``: a binary file object);
    a regular file, or a device the OS cannot poll (``/dev/null`` under epoll: stdin of a service started with
    ``< /dev/null``), is read in a thread, so it ends with EOF instead of an error in the loop and a hang."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT, loop=loop)
    try:
        if not _pollable(file):
            raise ValueError("not pollable")
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), file)
    except ValueError:  # a regular file, or a device the selector refuses
        try:  # the descriptor itself: a thread inside the buffered object's read holds its lock, and an interpreter
            fd = file.fileno()  # that ends meanwhile (the upstream exited at once) died of a Fatal Python error
            read = functools.partial(os.read, fd, 65536)
        except (AttributeError, OSError, ValueError):
            read = functools.partial(file.read1, 65536)

        def pump() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed first: nobody reads any more
                for chunk in iter(read, b""):
                    loop.call_soon_threadsafe(reader.feed_data, chunk)
                loop.call_soon_threadsafe(reader.feed_eof)

        threading.Thread(target=pump, daemon=True, name="agentguard-stdin").start()
    return reader


def _pollable(file: Any) -> bool:
    """Whether the event loop's selector accepts ``file`` for reading (epoll refuses regular files and
    ``/dev/null`` with EPERM, which asyncio reports only later, inside the loop)."""
    try:
        fd = file.fileno()
    except (AttributeError, OSError, ValueError):
        return True  # not a file descriptor: let connect_read_pipe decide
    sel = selectors.DefaultSelector()
    try:
        sel.register(fd, selectors.EVENT_READ)
        return True
    except (OSError, ValueError):
        return False
    finally:
        sel.close()


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def canonical_uri(uri: str) -> str | None:
    """A resource URI in one spelling (RFC 3986 section 6.2.2: scheme and host in lower case, percent-encoded
    unreserved characters decoded, other escapes upper case, dot segments removed), which the guard judges
    and the relay forwards; None for a URI with no single reading: a backslash, a control character or
    space, an escaped ``/``, ``\\`` or control character (an escaped space is kept), a lone ``%``, an empty path segment (``//etc``).

    ``file:///tmp/../etc/shadow`` and ``file:///%65tc/shadow`` are ``file:///etc/shadow`` to a server that
    resolves them, and were other strings to a rule forbidding ``^file:///etc``."""
    import re
    from urllib.parse import urlsplit, urlunsplit

    if "\\" in uri or any(ord(c) < 0x21 or ord(c) == 0x7F for c in uri) or re.search(r"%(?![0-9A-Fa-f]{2})", uri):
        return None

    def fix(m: Any) -> str:
        ch = chr(int(m.group(1), 16))
        if ch in "/\\" or ord(ch) < 0x20 or ord(ch) == 0x7F:
            raise ValueError(ch)
        return ch if ch in _UNRESERVED else "%" + m.group(1).upper()

    try:
        parts = urlsplit(re.sub(r"%([0-9A-Fa-f]{2})", fix, uri))
    except ValueError:
        return None
    if "//" in parts.path:  # an empty segment: a host to one reader (file:////etc), dropped by another (a//../b)
        return None
    out: list[str] = []
    segments = parts.path.split("/")
    for i, seg in enumerate(segments):
        if seg == "..":
            if len(out) > 1:
                out.pop()
        elif seg != ".":
            out.append(seg)
        if seg in (".", "..") and i == len(segments) - 1:
            out.append("")
    path = "/".join(out)
    if "//" in path:
        return None
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, parts.fragment))


def as_read(msg: dict, line: bytes, call: ToolCall) -> tuple[dict, bytes]:
    """The message forwarded for the call the guard read: a ``resources/read`` with its canonical URI (the one
    spelling whose server reading, :func:`uri_reading`, is the call's ``uri``)."""
    params = msg.get("params")
    if msg.get("method") == "resources/read" and isinstance(params, dict):
        canonical = canonical_uri(params["uri"])  # a string with one reading: as_call read these very params
        if canonical is not None and params["uri"] != canonical:
            msg = {**msg, "params": {**params, "uri": canonical}}
            return msg, wire(msg)
    return msg, line
