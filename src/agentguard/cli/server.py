"""``agentguard serve``: run the guard service (registered by :mod:`agentguard.cli`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ..core.errors import InputError, require

__all__ = ["NO_GUARDS", "SERVER_MODULES", "example_guards_file", "register"]

#: what ``serve`` imports from the ``server`` extra (checked first, so a missing one names the extra)
SERVER_MODULES = ("fastapi", "uvicorn", "sqlalchemy", "alembic")

NO_GUARDS = ("no guard files: give --tool-guards FILE (an agentguard.toml guard stack for /v1/check; also "
             "--step-guards, --signal-guards, or the config file's [server] tool_guards), or --example-guards "
             "for the generic default-deny example (docs/server.md)")


def example_guards_file() -> Path:
    """The shipped generic default-deny guard stack (``agentguard/server/examples/rules.toml``)."""
    return Path(__file__).resolve().parents[1] / "server" / "examples" / "rules.toml"


def _guard_files(settings: Any) -> str:
    return ", ".join(f"{k}={Path(v).name}" for k in ("tool_guards", "step_guards", "signal_guards")
                     if (v := getattr(settings, k, None))) or "none"


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add ``agentguard serve`` to the main app."""

    @app.command()
    def serve(
        host: Optional[str] = typer.Option(None, help="Interface to listen on (default 127.0.0.1)."),
        port: Optional[int] = typer.Option(None, help="Port (default 8787)."),
        config: Optional[str] = typer.Option(None, help="TOML file with a [server] table (token, db_url, ...)."),
        db_url: Optional[str] = typer.Option(None, help="Audit store URL (default SQLite under --state-dir)."),
        state_dir: Optional[str] = typer.Option(
            None, "--state-dir", "--data-dir",
            help="The service's state folder: SQLite audit file and stored traces (env AGENTGUARD_STATE_DIR; "
                 "--data-dir is a deprecated alias)."),
        workers: Optional[int] = typer.Option(None, help="uvicorn worker processes."),
        run_ttl: Optional[float] = typer.Option(None, help="Seconds of inactivity after which a run expires."),
        max_body: Optional[int] = typer.Option(None, help="Largest accepted request body in bytes."),
        log_level: Optional[str] = typer.Option(None, help="uvicorn log level (default warning)."),
        tool_guards: Optional[str] = typer.Option(None, help="Guard-stack file for /v1/check."),
        step_guards: Optional[str] = typer.Option(None, help="Guard-stack file for /v1/runs/{id}/steps."),
        signal_guards: Optional[str] = typer.Option(None, help="Guard-stack file for /v1/runs/{id}/signals."),
        strategy: Optional[str] = typer.Option(None, help="Enforcement strategy of every decision (TT, AB, TEH, "
                                                          "CRP, CRP+TEH, ...); default: the deciding policy's own."),
        credentials: Optional[str] = typer.Option(None, help="Roles' credentials file (TOML, hashed tokens; env "
                                                             "AGENTGUARD_CREDENTIALS_FILE); re-read when it changes."),
        no_chain: bool = typer.Option(False, "--no-chain", help="Do not hash-chain the audit records."),
        shadow: bool = typer.Option(False, "--shadow", help="Every guard observes only: decisions are audited "
                                    "with what they would have been, the answer is ALLOW (agentguard report shadow)."),
        otel: bool = typer.Option(False, "--otel", help="OpenTelemetry spans and metrics (exporters from OTEL_*)."),
        example_guards: bool = typer.Option(
            False, "--example-guards",
            help="Start with the shipped generic default-deny example for /v1/check (server/examples/rules.toml: "
                 "an allow list of tools and shell commands); without it, a guard file is required."),
    ) -> None:
        """Run the guard service (FastAPI + uvicorn). The bearer token comes from AGENTGUARD_TOKEN or
        the config file's [server] token / token_file; GET /health needs none. The guards come from
        --tool-guards / --step-guards / --signal-guards (or the config file's [server] keys), or
        --example-guards: without any, it refuses to start (it never guesses a policy)."""
        for module in SERVER_MODULES:  # a missing extra names the extra (exit 2), before anything else
            require(module, "server")
        from ..server.settings import load_settings

        if example_guards:
            if tool_guards:
                raise InputError("give --tool-guards or --example-guards, not both")
            tool_guards = str(example_guards_file())
        overrides = dict(host=host, port=port, db_url=db_url, state_dir=_abs(state_dir), workers=workers,
                         run_ttl_s=run_ttl, max_body_bytes=max_body, log_level=log_level,
                         tool_guards=_abs(tool_guards), step_guards=_abs(step_guards),
                         signal_guards=_abs(signal_guards), strategy=strategy,
                         credentials_file=_abs(credentials), audit_chain=False if no_chain else None,
                         shadow=True if shadow else None, otel=True if otel else None)
        settings = load_settings(config, **overrides)
        if not settings.token and not settings.credentials_file:
            raise InputError("no credentials: give --credentials (roles' hashed tokens), or set AGENTGUARD_TOKEN or "
                             "`token`/`token_file` in the config file's [server] table")
        if not (settings.tool_guards or settings.step_guards or settings.signal_guards):
            raise InputError(NO_GUARDS)
        from ..server.guards import load_guards

        load_guards(settings)  # a broken guard file fails here, with one line, before anything starts
        from ..server.credentials import CredentialStore

        CredentialStore(settings.credentials_file, settings.token)  # a broken credentials file fails here
        require("uvicorn", "server")
        _check_host(settings.host, settings.port)  # before the state folder is created
        # Open (and migrate) the audit store once here so a bad URL fails before workers start.
        from ..server.audit import AuditStore
        from ..server.runner import serve as run_service

        from ..server.chain import Signer

        key = Path(settings.audit_key_file or Path(settings.state_dir) / "audit_ed25519.pem")
        if settings.audit_chain and key.exists():  # a key that does not load is refused before anything is created
            Signer.load_or_create(key)
        AuditStore(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous).close()
        if settings.audit_chain:  # the checkpoint key exists before workers start (each loads it)
            Signer.load_or_create(key)
        typer.echo(f"agentguard serving on http://{settings.host}:{settings.port} "
                   f"(workers={settings.workers}, state folder {Path(settings.state_dir).resolve()}, "
                   f"audit={_safe(settings.database_url)}, guards: {_guard_files(settings)})", err=True)
        run_service(settings, config, overrides)


    @app.command("new-credential")
    def new_credential(
        identity: str = typer.Option(..., help="Who holds it (an approver's name is what the audit log records)."),
        role: list[str] = typer.Option(..., help="agent, approver, reader or admin (repeat for several)."),
    ) -> None:
        """Print a fresh bearer token (stdout, first line) and its entry for the credentials file (stderr):
        only the token's SHA-256 goes in the file."""
        from ..server.credentials import new_credential as make

        token, entry = make(identity, role)
        typer.echo(token)
        typer.echo(entry, err=True)


def _abs(path: Optional[str]) -> Optional[str]:
    import os

    return os.path.abspath(path) if path else None


def _safe(url: str) -> str:
    import sqlalchemy as sa

    return sa.engine.make_url(url).render_as_string(hide_password=True)


def _check_host(host: str, port: int) -> None:
    """InputError when ``host`` names no address to listen on (``--host 999.1.1.1``): uvicorn found out only after
    the service said it was serving, and logged it on two lines."""
    import socket

    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise InputError(f"cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}") from None
