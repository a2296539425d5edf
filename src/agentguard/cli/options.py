"""The flags every command shares, under one name each, and the one resolver of the data folder.

Commands declare ``as_json: bool = JSON``, ``data: str = DATA`` and so on, so ``--json`` means the
same thing everywhere and the parameter is always called ``as_json``. :func:`data_dir` is the only
place that decides where the benchmark data live: ``--data`` if given, else ``$AGENTGUARD_DATA``,
else ``../shared/data`` next to the repository (the one environment variable for it).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

import typer

from ..envs.data import DATA_ENV, data_dir

__all__ = ["DATA", "JSON", "OUT", "SEED", "data_dir", "echo_json", "progress", "ticker"]

#: ``--json``: print one JSON object instead of a table (parameter name: ``as_json``).
JSON = typer.Option(False, "--json", help="Print one JSON object instead of a table.")
#: ``--data``: the benchmark data folder (parameter name: ``data``); see :func:`data_dir`.
DATA = typer.Option("", "--data", help="Data folder (default $AGENTGUARD_DATA, else ../shared/data).")
#: ``--out``: where a command writes its result files (parameter name: ``out``).
OUT = typer.Option(None, "--out", help="Write the results (JSON) to this file.")
#: ``--seed``: the random seed (parameter name: ``seed``).
SEED = typer.Option(0, "--seed", min=0, help="Random seed (>= 0).")

def echo_json(obj: Any) -> None:
    """Print ``obj`` as one line of JSON (numpy values and paths become plain JSON)."""
    typer.echo(json.dumps(obj, default=_plain))


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


@contextmanager
def ticker(label: str, count: Callable[[], str], every_s: float = 10.0, quiet: bool = False) -> Iterator[None]:
    """While the block runs, print ``label: <count()> (<seconds> s)`` on stderr every ``every_s`` seconds, so a
    long step (learning from millions of steps: about a minute per million with the rows engine) is not silence.

    Nothing is printed when ``quiet`` (``--json``) or when the block ends before the first tick; stdout is never
    written. The thread is a daemon and is joined on exit, so no line comes after the block."""
    if quiet:
        yield
        return
    done = threading.Event()
    t0 = time.monotonic()

    def tick() -> None:
        while not done.wait(every_s):
            try:
                now = count()
            except Exception:  # a count that fails mid-update is skipped, never the work
                continue
            typer.echo(f"{label}: {now} ({time.monotonic() - t0:.0f} s)", err=True)

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@contextmanager
def progress(quiet: bool = False, stream: Any = None) -> Iterator[Optional[Callable[[str], None]]]:
    """A progress callback for a long command (``split 3/10 done``), or None where none should show.

    It shows only on a terminal: ``stream`` (default stderr) is a TTY, ``CI`` is not ``true`` and not ``quiet``
    (``--json``). Each message overwrites the previous one on the same line (carriage return, erase line), and the
    line is erased when the block exits, so the command's own output starts on a clean line; stdout is never
    written. Yields None otherwise, which every ``progress=`` parameter of the library takes as "no progress", so
    a log file or a pipe gets nothing extra."""
    out = stream if stream is not None else sys.stderr
    tty = bool(getattr(out, "isatty", lambda: False)())
    if quiet or not tty or os.environ.get("CI", "").lower() == "true":
        yield None
        return
    shown = False

    def show(msg: str) -> None:
        nonlocal shown
        out.write("\r\x1b[2K" + " ".join(msg.split()))
        out.flush()
        shown = True

    try:
        yield show
    finally:
        if shown:
            out.write("\r\x1b[2K")
            out.flush()
