"""The ``agentguard`` console script's entry point (``[project.scripts]``): Ctrl-C at any moment is one line.

A console script runs ``from <module> import main`` before ``main`` is called, so the entry point's module and
every package above it are imported outside any handler of the command line: with ``agentguard.cli:main`` a
Ctrl-C in the first second (while ``import agentguard`` ran) printed a ``KeyboardInterrupt`` traceback and the
process died of the signal instead of printing ``aborted`` with exit status 130, as :func:`agentguard.cli.main`
does once it runs. This module sits outside the ``agentguard`` package and imports nothing but ``sys`` (already
loaded by the interpreter), so the whole import of the command line happens inside the handler below. Only the
interpreter's own start-up (before this module runs) is outside it.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Import and run :func:`agentguard.cli.main`; a Ctrl-C before it takes over is ``aborted``, exit 130."""
    try:
        from agentguard.cli import main as run

        run()
    except KeyboardInterrupt:
        sys.stderr.write("aborted\n")
        sys.stderr.flush()
        raise SystemExit(130) from None
