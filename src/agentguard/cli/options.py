"""The flags every command shares, under one name each, and the one resolver of the data folder.

Commands declare ``as_json: bool = JSON``, ``data: str = DATA`` and so on, so ``--json`` means the
same thing everywhere and the parameter is always called ``as_json``. :func:`data_dir` is the only
place that decides where the benchmark data live: ``--data`` if given, else ``$AGENTGUARD_DATA``,
else ``../shared/data`` next to the repository (the one environment variable for it).
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import typer

from ..envs.data import DATA_ENV, data_dir

__all__ = ["DATA", "JSON", "OUT", "SEED", "data_dir", "echo_json", "ticker"]

#: ``--json``: print one JSON object instead of a table (parameter name: ``as_json``).
JSON = typer.Option(False, "--json", help="Print one JSON object instead of a table.")
#: ``--data``: the benchmark data folder (parameter name: ``data``); see :func:`data_dir`.
DATA = typer.Option("", "--data", help="Data folder (default $AGENTGUARD_DATA, else ../shared/data).")
#: ``--out``: where a command writes its result files (parameter name: ``out``).
OUT = typer.Option(None, "--out", help="Write the results (JSON) to this file.")
#: ``--seed``: the random seed (parameter name: ``seed``).
SEED = typer.Option(0, "--seed", help="Random seed.")

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
