"""``agentguard audit verify`` / ``agentguard audit export``: check the service's tamper-evident audit log
(:mod:`agentguard.server.chain`) and export one run's records with their proof."""

from __future__ import annotations

import json
from typing import Optional

import typer

__all__ = ["register", "require_existing_store"]


def require_existing_store(db: str) -> str:
    """``db`` unchanged, or an InputError when it names a SQLite file that does not exist: opening one creates
    it, so a mistyped path used to leave an empty file behind and fail on a missing table (or, for ``report
    shadow``, build a new empty store and report nothing). A server URL (PostgreSQL) is left to connect."""
    from pathlib import Path

    import sqlalchemy as sa

    from ..core.errors import InputError

    try:
        url = sa.engine.make_url(db)
    except Exception as exc:  # sqlalchemy.exc.ArgumentError
        raise InputError(f"bad database URL {db!r}: {exc}") from None
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        if not Path(url.database).is_file():
            raise InputError(f"no audit store at {url.database}: the service keeps it in its state folder "
                             "(--state-dir, default ./agentguard-data/audit.sqlite)")
    return db


def register(app: typer.Typer, bench: typer.Typer) -> None:
    audit = typer.Typer(help="The service's tamper-evident audit log: verify it, export a run with its proof.",
                        no_args_is_help=True)
    app.add_typer(audit, name="audit")

    @audit.command()
    def verify(
        db: str = typer.Option(..., "--db", help="Audit store URL (sqlite:///... or postgresql+psycopg://...)."),
        public_key: list[str] = typer.Option([], "--public-key", help="Trusted Ed25519 public key (PEM) of the "
                                             "checkpoints; repeat for several. None: signatures are only "
                                             "checked against the key each checkpoint names."),
        checkpoint_every: Optional[int] = typer.Option(None, min=1, help="The service's checkpoint interval: a missing "
                                                                  "checkpoint at a multiple is then a problem."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    ) -> None:
        """Recompute the hash chain and check the signed checkpoints. Exit 0: intact; 1: tampered (every
        problem listed); 2: cannot read the store."""
        from ..server.audit import make_engine
        from ..server.chain import load_public_key, verify as run_verify

        keys = dict(load_public_key(p) for p in public_key) if public_key else None
        engine = make_engine(require_existing_store(db))
        try:
            rep = run_verify(engine, keys, checkpoint_every=checkpoint_every)
        except Exception as exc:
            from ..core.errors import InputError

            raise InputError(f"cannot verify {db.split('@')[-1]}: {type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        finally:
            engine.dispose()
        if as_json:
            typer.echo(json.dumps(rep.to_dict(), indent=1))
        else:
            trust = "trusted keys" if keys else "the keys the checkpoints name (give --public-key to trust one)"
            typer.echo(f"{'OK' if rep.ok else 'TAMPERED'}: {rep.chained} chained records (last seq {rep.last_seq}), "
                       f"{rep.unchained} unchained, {rep.checkpoints} checkpoints ({rep.signatures_checked} "
                       f"signatures checked against {trust}); {rep.to_dict()['records_per_s']} records/s")
            for p in rep.problems:
                typer.echo(f"  {p}")
        raise typer.Exit(0 if rep.ok else 1)

    @audit.command()
    def export(
        db: str = typer.Option(..., "--db", help="Audit store URL."),
        run: str = typer.Option(..., "--run", help="The run id."),
    ) -> None:
        """Print one run's records (JSON) with their per-run hash chain and the signed checkpoint after them."""
        from ..server.audit import make_engine
        from ..server.chain import export_run

        engine = make_engine(require_existing_store(db))
        try:
            typer.echo(json.dumps(export_run(engine, run), indent=1))
        finally:
            engine.dispose()

    @audit.command("verify-export")
    def verify_export(
        file: str = typer.Argument(..., help="A run exported by `agentguard audit export` (JSON)."),
        public_key: list[str] = typer.Option(..., "--public-key", help="Trusted Ed25519 public key (PEM) of the "
                                             "checkpoints; repeat for several."),
    ) -> None:
        """Check an exported run against the signed checkpoint after it (no database needed): every record is
        the one the service chained at its position (see agentguard.server.chain.verify_run_export for what it
        does not prove: completeness). Exit 0: verified; 1: a problem (each listed)."""
        from pathlib import Path

        from ..server.chain import load_public_key, verify_run_export

        keys = dict(load_public_key(p) for p in public_key)
        problems = verify_run_export(json.loads(Path(file).read_text(encoding="utf-8")), keys)
        typer.echo("VERIFIED" if not problems else "NOT VERIFIED")
        for p in problems:
            typer.echo(f"  {p}")
        raise typer.Exit(0 if not problems else 1)
