"""The ``agentguard`` command line.

Each area registers its own commands from ``agentguard/cli/<area>.py`` through a
``register(app, bench)`` function (``bench`` is the ``agentguard bench ...`` group), importing its
heavy dependencies inside the commands so ``agentguard --help`` stays fast.

Errors: any :class:`~agentguard.AgentGuardError` is printed as one line ``error: <message>`` on
stderr with exit status 2; no traceback reaches the user. So is bad input that a reader did not name
itself (:func:`input_failure`): a file that is not UTF-8 (``UnicodeDecodeError``), a structure nested
too deeply (``RecursionError``), a number out of range (``OverflowError``, e.g. ``1e-400`` where an
exact value is needed), an input too large to hold (``MemoryError``), a path that cannot be read or written
(an ``OSError`` naming the file). Click's usage errors (a wrong flag, a missing argument) are one line too
(:func:`usage_error`). Exit status 3 is left for a genuine bug (``error: unexpected ...``, still one line).

Numbers: every float option refuses ``nan`` and ``inf`` as a usage error before the command runs
(:func:`finite_numbers`), and every integer option declares its range (``min=``/``max=``: a seed ``>= 0``, a count
``>= 1``, a port ``0..65535``), so a value out of range is one line naming the option, not a failure deep inside
the command (``--seed -1`` was ``unexpected ValueError`` from numpy); ``tests/cli/test_init_refusals.py`` checks
that every integer option of the tree has one.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer

from ..core.errors import AgentGuardError, sole_exception

app = typer.Typer(
    name="agentguard",
    help="Keep LLM agents safe while they run.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
bench = typer.Typer(help="Reproduce the papers' evaluations (prints JSON with --json).", no_args_is_help=True)
app.add_typer(bench, name="bench")

COMMAND_MODULES = (
    "agentguard.cli.demo",
    "agentguard.cli.decide",
    "agentguard.cli.predictive",
    "agentguard.cli.calibration",
    "agentguard.cli.policies",
    "agentguard.cli.control",
    "agentguard.cli.envs",
    "agentguard.cli.integrations",
    "agentguard.cli.server",
    "agentguard.cli.audit",
    "agentguard.cli.report",
)


@app.callback()
def _root(otel: bool = typer.Option(False, "--otel", help="OpenTelemetry spans and metrics for every decision "
                                    "(exporters from the standard OTEL_* environment variables).")) -> None:
    """Keep LLM agents safe while they run."""
    if otel:
        import os

        from ..core.telemetry import ENV_FLAG

        os.environ[ENV_FLAG] = "1"  # read by the first Pipeline of this process and of its workers


@app.command()
def version() -> None:
    """Print the installed version."""
    from .. import __version__

    typer.echo(__version__)


def _register_all() -> None:
    for mod_name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as exc:
            if exc.name == mod_name:
                continue
            raise
        register = getattr(mod, "register", None)
        if register is not None:
            register(app, bench)


_register_all()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning agentguard errors into one line and exit status 2."""
    try:
        # with standalone_mode=False, click returns the code of a ``typer.Exit`` instead of exiting
        rc = finite_numbers(literal_help(typer.main.get_command(app)))(args=argv, standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except SystemExit:
        raise
    except BaseException as exc:
        sys.exit(answer(sole_exception(exc)))


def answer(exc: BaseException) -> int:
    """Print the one line for ``exc`` (raised by a command) on stderr and return the exit status: 2 for bad input
    (an :class:`AgentGuardError`, :func:`input_failure`, :func:`missing_extra`) or a usage error, 130 for Ctrl-C,
    3 for anything else (a bug: ``error: unexpected ...``)."""
    if isinstance(exc, SystemExit):
        raise exc
    if isinstance(exc, AgentGuardError):
        typer.echo(f"error: {one_line(str(exc))}", err=True)
        return 2
    if isinstance(exc, typer.Exit):
        return int(exc.exit_code)
    if isinstance(exc, (typer.Abort, KeyboardInterrupt)):
        typer.echo("aborted", err=True)
        return 130
    if not isinstance(exc, Exception):
        raise exc
    if isinstance(exc, _click_exceptions()):  # click usage errors
        usage: Any = exc
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help is the answer
            usage.show()
        else:
            typer.echo(f"error: {usage_error(exc)}", err=True)
        return int(usage.exit_code)
    why = input_failure(exc) or missing_extra(exc)
    if why is not None:
        typer.echo(f"error: {why}", err=True)
        return 2
    typer.echo(f"error: unexpected {type(exc).__name__}: {one_line(str(exc))}", err=True)
    return 3


def usage_error(exc: Any) -> str:
    """One line for a click error (an unknown option or command, a missing argument, a value of the wrong
    type): click's own message, then where the command's help is (``see 'agentguard decide --help'``)
    instead of click's three-line usage block, as the README promises for every error."""
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "agentguard"
    return f"{one_line(exc.format_message()).rstrip('.')} (see '{where} --help')"


def literal_help(command: Any) -> Any:
    """``command`` with every help text of its tree escaped for Rich, so that it prints as written.

    Typer renders help through Rich markup, which swallows a bracketed word: "the config file's [server]
    table" printed as "the config file's  table". Escaping (``rich.markup.escape``) keeps the text the
    docstrings and option helps say; nothing is escaped when Typer prints without Rich (``TYPER_USE_RICH=0``
    or a command not in ``rich`` mode), where the backslashes would show."""
    from rich.markup import escape
    from typer.core import HAS_RICH

    if not HAS_RICH:
        return command
    todo = [command]
    while todo:
        cmd = todo.pop()
        todo.extend(getattr(cmd, "commands", {}).values())
        if getattr(cmd, "rich_markup_mode", None) != "rich" or getattr(cmd, "_help_escaped", False):
            continue
        cmd._help_escaped = True
        for owner in (cmd, *cmd.params):
            for attr in ("help", "short_help", "epilog"):
                text = getattr(owner, attr, None)
                if isinstance(text, str):
                    setattr(owner, attr, escape(text))
    return command


def finite_numbers(command: Any) -> Any:
    """``command`` with every float option of its tree refusing ``nan``, ``inf`` and ``-inf`` (a usage error: one
    line naming the option), after the option's own conversion and range check (a NaN passes an option without
    ``min``/``max``, as Python's ``float("nan")`` does). No option of agentguard means anything by a non-finite
    value; an option already wrapped is left as it is."""
    import math

    todo = [command]
    while todo:
        cmd = todo.pop()
        todo.extend(getattr(cmd, "commands", {}).values())
        for param in getattr(cmd, "params", ()):
            desc = getattr(param, "type_descriptor", None)
            kinds = (desc.annotation, *getattr(desc.annotation, "__args__", ())) if desc is not None else ()
            if float not in kinds or getattr(param, "finite_only", False):
                continue

            def process_value(ctx: Any, value: Any, _own: Any = param.process_value, _param: Any = param) -> Any:
                out = _own(ctx, value)
                if isinstance(out, float) and not math.isfinite(out):
                    raise typer.BadParameter(f"{out!r} is not a finite number", ctx=ctx, param=_param)
                return out

            param.process_value = process_value
            param.finite_only = True
    return command


def one_line(text: str, limit: int = 2000) -> str:
    """``text`` on one line (line breaks and runs of blanks become one space), cut at ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def input_failure(exc: BaseException) -> str | None:
    """The one-line message for an exception that bad input causes in a reader, or None for a bug.

    - ``UnicodeDecodeError``: a trace, spec, policy or model file that is not UTF-8 text;
    - ``RecursionError``: a property, spec or JSON/YAML document nested too deeply to parse;
    - ``OverflowError``: a number too large or too small for the value it must become (``1e-400``
      read as an exact probability, ``1e400`` as an integer);
    - ``MemoryError``: an input that asks for more memory than there is (readers check sizes first
      where they can; this is the backstop);
    - ``OSError`` naming a file (missing folder, permission, a file where a folder is needed): a path given
      on the command line that cannot be read or written (``--prism /nowhere/m.prism``, ``--out FILE``);
      an ``OSError`` without a file name is input only when its errno says the disk refused the write
      (``ENOSPC``: ``--out /dev/full``, ``EDQUOT``, ``EROFS``, ``EFBIG``, ``EIO``); others (a socket, the OS
      itself) stay unexpected;
    - ``json.JSONDecodeError`` a reader did not name itself: a file given as JSON that is not (a UTF-8 byte order
      mark, a cut-off line), with its line and column;
    - an error of the Parquet/Arrow reader (``pyarrow``: ``ArrowInvalid``, ``ArrowIOError``): a file given as
      Parquet that is not (``type-traces``, ``learn --engine columnar``);
    - ``sqlalchemy.exc.DatabaseError`` (``OperationalError`` included): a database URL or file given on the
      command line that is not an audit store (a file that is not SQLite, a store without its tables);
    - ``py4j``'s ``Py4JJavaError`` (``learn --engine spark``): the Spark job failed, typically on input it cannot
      read (JSONL where Parquet is read); its first line only (Spark's own log lines on stderr are its own).
    Recognised by class name and module for the optional libraries, so neither is imported here.
    """
    import errno
    import json

    if isinstance(exc, json.JSONDecodeError):
        return f"input is not valid JSON: {one_line(exc.msg, 200)} (line {exc.lineno} column {exc.colno})"
    mod = type(exc).__module__ or ""
    if mod.split(".")[0] == "pyarrow":
        return f"input is not a readable Parquet/Arrow file: {one_line(str(exc), 200)}"
    if mod.startswith("sqlalchemy") and any(c.__name__ == "DatabaseError" for c in type(exc).__mro__):
        why = getattr(exc, "orig", None) or exc
        return f"the database given is not a usable audit store: {one_line(str(why), 200)}"
    if type(exc).__name__ == "Py4JJavaError" and mod.startswith("py4j"):  # learn --engine spark
        first = str(getattr(exc, "java_exception", "") or exc).strip().splitlines() or [""]
        return f"the Spark job failed (input not readable as given?): {one_line(first[0], 300)}"
    disk = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO}
    if isinstance(exc, OSError) and exc.filename is None and exc.errno in disk:
        return f"cannot write the output: {one_line(exc.strerror or str(exc), 200)}"
    if isinstance(exc, UnicodeDecodeError):
        return (f"input is not UTF-8 text ({exc.encoding} cannot decode byte 0x{exc.object[exc.start]:02x} "
                f"at position {exc.start}): {one_line(exc.reason, 200)}")
    if isinstance(exc, UnicodeError):
        return f"input is not valid text: {one_line(str(exc), 200)}"
    if isinstance(exc, RecursionError):
        return "input nested too deeply (a property, spec or document deeper than the parser's limit)"
    if isinstance(exc, OverflowError):
        return f"number out of range in the input: {one_line(str(exc), 200)}"
    if isinstance(exc, MemoryError):
        return "input too large: it needs more memory than is available"
    if isinstance(exc, OSError) and exc.filename is not None:
        what = exc.strerror or type(exc).__name__
        return f"cannot use {exc.filename}: {one_line(what, 200)} (check the path given on the command line)"
    return None


def missing_extra(exc: BaseException) -> str | None:
    """The one-line message for an optional dependency that is not installed, naming the extra that brings it
    (read from the installed package's own metadata, ``Requires-Dist: X; extra == "E"``), or None when ``exc``
    is not a ``ModuleNotFoundError`` of one of them (then it is a bug)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    extras = sorted(extras_providing(top))
    if not extras:
        return None
    return (f"optional dependency '{top}' is missing: pip install 'agentguard[{extras[0]}]'"
            + (f" (also in: {', '.join(extras[1:])})" if len(extras) > 1 else ""))


def extras_providing(module: str) -> set[str]:
    """The extras of the installed agentguard whose requirements include the distribution importing as ``module``
    (distribution names compared in normalised form: ``psycopg[binary]`` is ``psycopg``, ``PyYAML`` is ``pyyaml``)."""
    import re
    from importlib import metadata

    try:
        reqs = metadata.requires("agentguard") or []
    except metadata.PackageNotFoundError:
        return set()
    want = re.sub(r"[-_.]+", "_", module).lower()
    out = set()
    for req in reqs:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)[^;]*;.*extra\s*==\s*[\"']([^\"']+)[\"']", req)
        if m and re.sub(r"[-_.]+", "_", m.group(1)).lower() == want and m.group(2) not in ("all", "dev"):
            out.add(m.group(2))
    return out


def _click_exceptions() -> tuple[type, ...]:
    """ClickException classes that may reach us: typer >= 0.29 vendors click as ``typer._click``, and
    a separately installed click may also be present; usage errors come from the vendored copy."""
    classes: list[type] = []
    for mod in ("typer._click.exceptions", "click.exceptions"):
        try:
            classes.append(__import__(mod, fromlist=["ClickException"]).ClickException)
        except ImportError:
            pass
    return tuple(classes)
