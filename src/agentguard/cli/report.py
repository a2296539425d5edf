"""``agentguard report shadow``: what the guards in shadow mode would have refused, by guard and rule, over a
time window, from an audit log (the library's JSONL audit sink, or the service's audit store)."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from typing import Any, Optional

import typer

from .options import JSON, echo_json

__all__ = ["register", "when"]

_SPAN = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def when(text: Optional[str], now: float) -> Optional[float]:
    """A window edge: ``24h`` / ``30m`` / ``7d`` / ``90s`` ago, an ISO 8601 time (UTC when no zone), or
    seconds since the epoch; None for none."""
    if text is None or text == "":
        return None
    m = _SPAN.match(text.strip())
    if m:
        return now - float(m.group(1)) * _UNIT[m.group(2)]
    try:
        return float(text)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        from ..core.errors import InputError

        raise InputError(f"not a time: {text!r} (use 24h, 30m, 7d, an ISO 8601 time or epoch seconds)") from None
    return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).timestamp()


def _records(audit: Optional[str], db: Optional[str], since: Optional[float], until: Optional[float]) -> Any:
    from ..core.errors import InputError

    if (audit is None) == (db is None):
        raise InputError("give one of --audit FILE.jsonl (a JsonlAuditSink log) or --db URL (the service's store)")
    if audit is not None:
        from ..core.audit import JsonlAuditSink

        try:
            return list(JsonlAuditSink.read(audit))
        except OSError as exc:
            raise InputError(f"cannot read audit log {audit}: {exc.strerror}") from None
    from ..server.audit import AuditStore
    from .audit import require_existing_store

    store = AuditStore(require_existing_store(db))  # type: ignore[arg-type]
    try:
        return store.shadow_decisions(since, until)
    finally:
        store.close()


def register(app: typer.Typer, bench: typer.Typer) -> None:
    report = typer.Typer(help="Reports over the audit log.", no_args_is_help=True)
    app.add_typer(report, name="report")

    @report.command()
    def shadow(
        audit: Optional[str] = typer.Option(None, "--audit", help="JSONL audit log (JsonlAuditSink)."),
        db: Optional[str] = typer.Option(None, "--db", help="The service's audit store URL (sqlite:///...)."),
        since: Optional[str] = typer.Option("24h", "--since", help="Window start: 24h, 30m, 7d ago, ISO time, "
                                                                  "epoch seconds; '' for the beginning."),
        until: Optional[str] = typer.Option(None, "--until", help="Window end (same forms; default now)."),
        limit: int = typer.Option(50, "--limit", min=0, help="Entries listed (the counts cover all)."),
        as_json: bool = JSON,
    ) -> None:
        """What the guards in shadow mode would have refused or changed, by guard and rule, and each call."""
        from ..core.shadow import shadow_report

        now = time.time()
        lo, hi = when(since, now), when(until, now)
        rep = shadow_report(_records(audit, db, lo, hi), since=lo, until=hi)
        if as_json:
            echo_json(rep)
            return
        typer.echo(f"{rep['decisions']} decisions, {rep['would_refuse']} would-be refusals by shadow guards")
        for r in rep["by_guard_rule"]:
            typer.echo(f"  {r['guard']:<24} refuse {r['would_refuse']:>5}  change {r['would_change']:>5}  {r['rule']}")
        for e in rep["entries"][:limit]:
            ts = datetime.fromtimestamp(e["time"], timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            typer.echo(f"{ts} run {e['run_id']} {e['tool'] or '-'}: {e['guard']} would {e['would']} "
                       f"(enforced {e['enforced']}): {e['reason']}")
