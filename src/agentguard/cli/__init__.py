"""The ``agentguard`` command line.

Each area registers its own commands from ``agentguard/cli/<area>.py`` through a
``register(app, bench)`` function (``bench`` is the ``agentguard bench ...`` group), importing its
heavy dependencies inside the commands so ``agentguard --help`` stays fast.

Errors: any :class:`~agentguard.AgentGuardError` is printed as one line ``error: <message>`` on
stderr with exit status 2; no traceback reaches the user.
"""

from __future__ import annotations

import importlib
import sys

import typer

from ..core.errors import AgentGuardError

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
)


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
        rc = app(args=argv, standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except AgentGuardError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("aborted", err=True)
        sys.exit(130)
    except Exception as exc:  # click usage errors and the like
        if isinstance(exc, _click_exceptions()):
            exc.show()
            sys.exit(exc.exit_code)
        typer.echo(f"error: unexpected {type(exc).__name__}: {exc}", err=True)
        sys.exit(3)


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
