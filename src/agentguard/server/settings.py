"""The service's own settings: where to listen, the bearer token, the audit database, limits.

This is deliberately small: it configures the *service* (host, port, token, database URL, trace
directory, per-run expiry, body limit, workers). Which guards run is the guard stack's business
(``agentguard.config`` / ``agentguard.toml``), not this object's.

Sources, later ones win: defaults < the ``[server]`` table of a TOML config file < environment
variables (``AGENTGUARD_TOKEN``, ``AGENTGUARD_DB_URL``, ``AGENTGUARD_STATE_DIR``) < explicit arguments.

The service's own folder (audit database, stored traces) is its *state* folder: ``state_dir`` /
``AGENTGUARD_STATE_DIR`` / ``agentguard serve --state-dir``. It was called ``data_dir`` /
``AGENTGUARD_DATA_DIR`` before, which collided in name and idea with the benchmark data folder
(``AGENTGUARD_DATA``, read only by the command line's ``--data``). Migration: the environment
variable ``AGENTGUARD_DATA_DIR`` and the ``[server] data_dir`` key are refused with an error naming
the new name (a deployment is never silently moved to a new, empty audit database); the Python
keyword ``ServerSettings(data_dir=...)`` and the ``--data-dir`` option still work as deprecated
aliases of ``state_dir``.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import InitVar, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..core.errors import InputError

__all__ = ["LOG_LEVELS", "OLD_STATE_ENV", "SETTINGS_ENV", "STATE_ENV", "ServerSettings", "check_db_url", "load_settings"]

SETTINGS_ENV = "AGENTGUARD_SERVER_SETTINGS"  # JSON of the settings, handed to uvicorn worker processes
STATE_ENV = "AGENTGUARD_STATE_DIR"  # the service's state folder (audit database, stored traces)
OLD_STATE_ENV = "AGENTGUARD_DATA_DIR"  # its old name: refused with a message naming STATE_ENV
#: the log levels uvicorn knows (``--log-level``, ``[server] log_level``)
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


@dataclass(frozen=True)
class ServerSettings:
    """Settings of one service process (all replicas of a deployment share the same values).

    Attributes:
        host, port: where to listen.
        token: the bearer token every request except ``GET /health`` (and the public schema and
            dashboard shell, which hold no data) must carry. Never logged, never in ``repr``.
        db_url: SQLAlchemy URL of the audit store. Default: SQLite file ``<state_dir>/audit.sqlite``
            (WAL). ``postgresql+psycopg://user:pw@host/db`` for a shared PostgreSQL. Only a durable store is
            taken (:func:`check_db_url`): ``sqlite://``, ``sqlite:///``, ``sqlite:///:memory:`` and SQLite URI
            options (``?mode=memory&uri=true``) are refused before anything is created (each worker had its own
            empty in-memory audit log, lost at exit).
        state_dir: the service's state folder: where the SQLite file and the Parquet traces live.
            (Not the benchmark data folder; ``data_dir=`` is a deprecated alias.)
        sqlite_synchronous: ``FULL`` (default: every commit fsynced; durable across power loss) or
            ``NORMAL`` (WAL: durable across a process crash, not across an OS crash).
        run_ttl_s: per-run state is dropped after this many idle seconds; a later step of that run is
            refused with 410.
        approval_ttl_s: an ESCALATE of ``/v1/check`` may be answered (``POST /v1/approvals``) for this many
            seconds after it was decided; a later answer is refused with 410 and decides nothing (the
            agent asks again: the human then judges the call in its current context, not a stale one).
        max_body_bytes: requests with larger bodies get 413.
        max_json_values: a decision request (check, step, signal, approval) holding more JSON values is 400:
            each is walked several times on the event loop (about 13 s for 240,000 values measured on a loaded
            2-core machine, every other request of the worker waiting); trace batches are not limited.
        workers: uvicorn worker processes.
        tool_guards, step_guards, signal_guards: guard-stack files (the ``agentguard.toml`` format of
            :mod:`agentguard.config`) for ``/v1/check``, ``/v1/runs/{id}/steps`` and
            ``/v1/runs/{id}/signals``; None = the built-in defaults (:func:`.guards.default_guards`).
        dtmc: a DTMC JSON file (``DTMC.save``) shown on the dashboard.
        calibration: a JSON file of calibration curves ``{name: {x, y, xlabel, ylabel, target}}``.
        reload_s: check the files above for changes every this many seconds and hot-reload them
            (0 = never). A file that fails to load keeps the previous guards (fail safe) and is reported.
        require_verified: every policy the guard files name must pin a ``verified_digest`` its source matches
            (``agentguard.config.build_stack(require_verified=True)``; a guard file cannot switch it off): one
            that does not refuses to load (at start: the service does not start; on reload: the old guards stay).
        monitor_threshold: threshold of the built-in signal monitor when no calibrated one is given.
        strategy: the enforcement strategy of every decision (``TT``, ``AB``, ``TEH``, ``CRP``,
            ``CRP+TEH``, ...; :func:`agentguard.core.strategies.strategy`); None = the stack's own, else
            the deciding guard's (a policy's ``strategy``), else the default.
        max_runs: runs held in memory (least recently used leave first and are rebuilt from the audit
            store when they come back).
        shadow: every guard of the service observes only (:mod:`agentguard.core.shadow`): each decision is
            audited with what it would have been (``decisions.shadow``), and the answer is ALLOW.
        otel: OpenTelemetry spans and metrics for every decision (:mod:`agentguard.core.telemetry`;
            exporters from the ``OTEL_*`` environment; a request's ``traceparent`` is the parent).
        run_binding: ``identity``: a run belongs to the identity whose credential started it; a check, step
            or signal of it by another identity is 403 (:mod:`.binding`, enforced through the store, so across
            workers and replicas; the default). ``shared``: any agent credential feeds any run (several
            identities feeding one run on purpose).
        trace_quota_bytes: what one identity's stored traces (``POST /v1/traces``) may cost on disk, in bytes (the
            Parquet files plus 4096 per run id); a batch over it is 429 (413 when the batch alone is larger than
            the quota) and nothing of it is kept (:class:`.traces.TraceStore`). Default 256 MiB.
        client_facts: ``/v1/check`` metadata keys the agent is trusted to send although a guard in force reads
            them as a grant (e.g. ``["prompt"]`` for the provenance guard); any other such key is 422 (:mod:`.facts`).

        credentials_file: the roles' credentials (TOML, hashed tokens; :mod:`.credentials`), re-read when
            it changes. ``token`` is then optional (the legacy single token: roles agent, reader, admin;
            never approver).
        audit_chain: hash-chain every decision record (:mod:`.chain`); ``agentguard audit verify`` checks it.
        audit_key_file: the Ed25519 private key (PEM) that signs checkpoints; default
            ``<state_dir>/audit_ed25519.pem``, made on first start (keep a copy of its ``.pub.pem`` away from
            the database: the verifier trusts that).
        checkpoint_every: a signed checkpoint every this many records.
        webhook_url, webhook_secret: POST every ESCALATE to this URL, signed with HMAC-SHA256 of the secret
            (:mod:`.webhook`); ``webhook_retries`` attempts ``webhook_backoff_s`` apart (doubling), then a
            dead-letter row.

    Connection limits (per worker process; see :mod:`.protocol` and docs/server.md "Limits"):
        keep_alive_s: an idle keep-alive connection (no byte since its last response) is closed
            after this many seconds (uvicorn ``timeout_keep_alive``).
        header_timeout_s: a connection must complete a request's headers within this many seconds
            of opening (or of its previous response), however slowly the bytes come; else it is closed.
        body_timeout_s: a request body must arrive completely within this many seconds of its
            headers; else 408 and the connection is closed.
        max_header_bytes: headers longer than this close the connection (h11 answers 400).
        max_connections: open connections per worker (clamped below the open-file limit); a new
            connection over it closes the longest-idle one.
        max_concurrency: requests in flight per worker; more get 503 with ``Retry-After: 1``
            (``GET /health`` is never refused by it).
        graceful_shutdown_s: on SIGTERM, requests in flight get this long to finish.
    """

    host: str = "127.0.0.1"
    port: int = 8787
    token: str | None = field(default=None, repr=False)
    db_url: str | None = None
    state_dir: str = "agentguard-data"
    sqlite_synchronous: str = "FULL"
    run_ttl_s: float = 3600.0
    approval_ttl_s: float = 3600.0
    max_body_bytes: int = 1_048_576
    workers: int = 1
    tool_guards: str | None = None
    step_guards: str | None = None
    signal_guards: str | None = None
    dtmc: str | None = None
    calibration: str | None = None
    reload_s: float = 2.0
    monitor_threshold: float = 0.5
    strategy: str | None = None
    max_runs: int = 100_000
    log_level: str = "warning"
    keep_alive_s: float = 5.0
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_header_bytes: int = 16_384
    max_connections: int = 4096
    max_concurrency: int = 512
    graceful_shutdown_s: float = 10.0
    credentials_file: str | None = None
    audit_chain: bool = True
    audit_key_file: str | None = None
    checkpoint_every: int = 1000
    webhook_url: str | None = None
    webhook_secret: str | None = field(default=None, repr=False)
    webhook_retries: int = 5
    webhook_backoff_s: float = 0.5
    shadow: bool = False
    otel: bool = False
    run_binding: str = "identity"
    client_facts: tuple[str, ...] = ()
    max_json_values: int = 10_000
    require_verified: bool = False
    trace_quota_bytes: int = 268_435_456
    data_dir: InitVar[str | None] = None  # deprecated alias of state_dir

    def __post_init__(self, data_dir: str | None) -> None:
        from ..core.limits import declared_scalars

        # a value of another type than the field's (shadow = "false" is truthy: every answer ALLOW; reload_s = nan,
        # workers = true, port = "5") is refused, not coerced (the same rule as a guard's parameters)
        declared_scalars(type(self), {f.name: getattr(self, f.name) for f in fields(self)}, "server settings")
        if data_dir is not None:
            warnings.warn("ServerSettings(data_dir=...) is deprecated: use state_dir=... (the service's "
                          "state folder, not the benchmark data folder)", DeprecationWarning, stacklevel=3)
            object.__setattr__(self, "state_dir", str(data_dir))
        if not (0 < int(self.port) < 65536):
            raise InputError(f"port must be in 1..65535, got {self.port}")
        if self.sqlite_synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise InputError(f"sqlite_synchronous must be FULL, NORMAL or EXTRA, got {self.sqlite_synchronous!r}")
        if self.run_ttl_s <= 0:
            raise InputError(f"run_ttl_s must be positive, got {self.run_ttl_s}")
        if not (0 < self.approval_ttl_s < float("inf")):
            raise InputError(f"approval_ttl_s must be a positive number of seconds, got {self.approval_ttl_s}")
        if self.max_body_bytes < 1024:
            raise InputError(f"max_body_bytes must be at least 1024, got {self.max_body_bytes}")
        if self.strategy is not None:
            from ..core.strategies import strategy as _strategy

            _strategy(self.strategy)  # an unknown name is an InputError naming the known ones
        if not (isinstance(self.max_runs, int) and self.max_runs >= 1):
            raise InputError(f"max_runs must be a positive integer, got {self.max_runs!r}")
        if self.workers < 1:
            raise InputError(f"workers must be >= 1, got {self.workers}")
        if self.log_level not in LOG_LEVELS:  # uvicorn's names; another was a KeyError once serving had begun
            raise InputError(f"log_level must be one of {', '.join(LOG_LEVELS)}, got {self.log_level!r}")
        for name in ("keep_alive_s", "header_timeout_s", "body_timeout_s", "graceful_shutdown_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 < v <= 3600):
                raise InputError(f"{name} must be a number of seconds in (0, 3600], got {v!r}")
        for name, lo in (("max_header_bytes", 1024), ("max_connections", 16), ("max_concurrency", 1)):
            v = getattr(self, name)
            if not (isinstance(v, int) and lo <= v <= 10_000_000):
                raise InputError(f"{name} must be an integer of at least {lo}, got {v!r}")
        if not (isinstance(self.checkpoint_every, int) and self.checkpoint_every >= 1):
            raise InputError(f"checkpoint_every must be a positive integer, got {self.checkpoint_every!r}")
        if self.webhook_url is not None:
            if not str(self.webhook_url).startswith(("http://", "https://")):
                raise InputError("webhook_url must be an http(s) URL")
            if not self.webhook_secret or len(self.webhook_secret) < 16:
                raise InputError("webhook_secret of at least 16 characters is needed with webhook_url")
        if self.run_binding not in ("identity", "shared"):
            raise InputError(f"run_binding must be 'identity' or 'shared', got {self.run_binding!r}")
        if not (isinstance(self.max_json_values, int) and 100 <= self.max_json_values <= 10_000_000):
            raise InputError(f"max_json_values must be an integer of at least 100, got {self.max_json_values!r}")
        if not (type(self.trace_quota_bytes) is int and 4096 <= self.trace_quota_bytes <= 2**50):
            raise InputError(f"trace_quota_bytes must be an integer of at least 4096, got {self.trace_quota_bytes!r}")
        if isinstance(self.client_facts, (str, bytes)) or not all(isinstance(k, str) for k in self.client_facts):
            raise InputError(f"client_facts must be a list of metadata keys, got {self.client_facts!r}")
        object.__setattr__(self, "client_facts", tuple(self.client_facts))
        if self.db_url:
            check_db_url(self.db_url)
        if self.token is not None and len(self.token) < 8:
            raise InputError("the bearer token must be at least 8 characters long")

    @property
    def database_url(self) -> str:
        """The audit-store URL (the SQLite default under ``state_dir`` when none was given)."""
        if self.db_url:
            return self.db_url
        return f"sqlite:///{Path(self.state_dir).resolve() / 'audit.sqlite'}"

    @property
    def traces_dir(self) -> Path:
        return Path(self.state_dir) / "traces"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "ServerSettings":
        return cls(**json.loads(text))

    def with_(self, **changes: Any) -> "ServerSettings":
        if changes.get("data_dir") is not None:
            changes["state_dir"] = changes.pop("data_dir")
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def check_db_url(url: str) -> None:
    """Refuse (:class:`InputError`) an audit-store URL that is not a durable store this service opens: allowed are
    SQLite on a file path (``sqlite:///path`` or ``sqlite+pysqlite:///path``, no query options) and PostgreSQL
    (``postgresql[+driver]://...``). An allow-list, read with SQLAlchemy's own URL parser (what the store opens):
    before (session 23) ``sqlite://``, ``sqlite:///:memory:`` and ``sqlite:///file:x?mode=memory&uri=true`` started
    a service whose every worker kept its audit log in memory (nothing durable, workers disagreeing on every run)."""
    import sqlalchemy as sa

    try:
        u = sa.engine.make_url(url)
    except Exception as exc:  # sqlalchemy.exc.ArgumentError
        raise InputError(f"bad database URL: {exc}") from None
    backend = u.get_backend_name()
    if backend == "postgresql":
        return
    if backend != "sqlite":
        raise InputError(f"unsupported audit database {backend!r}: use sqlite:///PATH or postgresql+psycopg://")
    if u.drivername not in ("sqlite", "sqlite+pysqlite") or u.query or not u.database \
            or u.database == ":memory:" or u.database.startswith("file:") or u.host or u.port or u.username:
        raise InputError(f"the audit store must be a file: sqlite:///PATH (relative) or sqlite:////PATH (absolute), "
                         f"without options; got {u.render_as_string(hide_password=True)!r}")


def _top_level_keys() -> set[str]:
    """The top-level keys a service config file may hold: [server], and the guard stack's tables (agentguard.toml
    may be one file for both)."""
    from ..config import SCHEMA

    return {"server", *SCHEMA["properties"]}


def _read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    import tomllib

    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise InputError(f"cannot read config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"config file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:  # as agentguard.config.load_config reads the same file
        raise InputError(f"config file {path} is not UTF-8 text") from None
    except RecursionError:  # tomllib recurses per nesting level: [[[[...]]]] thousands deep
        raise InputError(f"config file {path} is not valid TOML (nested too deeply)") from None
    stray = sorted(set(data) - _top_level_keys())
    if stray:  # "[sever]" was ignored: the service started with none of the settings meant
        import difflib

        near = difflib.get_close_matches(stray[0], sorted(_top_level_keys()), n=1)
        raise InputError(f"config file {path}: unknown top-level key(s) {', '.join(stray)}"
                         + (f" (did you mean [{near[0]}]?)" if near else "")
                         + f"; expected {', '.join(sorted(_top_level_keys()))}")
    table = data.get("server", {})
    if not isinstance(table, dict):
        raise InputError(f"config file {path}: [server] must be a table")
    if "data_dir" in table:
        raise InputError(f"config file {path}: [server] data_dir was renamed state_dir (the service's state "
                         "folder: audit database and stored traces); rename the key")
    known = {f.name for f in fields(ServerSettings)} | {"token_file"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise InputError(f"config file {path}: unknown [server] keys: {', '.join(unknown)}")
    table = dict(table)
    for key in ("tool_guards", "step_guards", "signal_guards", "dtmc", "calibration", "state_dir", "credentials_file",
                "audit_key_file"):
        if isinstance(table.get(key), str) and not Path(table[key]).is_absolute():
            table[key] = str((Path(path).parent / table[key]).resolve())
    token_file = table.pop("token_file", None)
    if token_file and "token" not in table:
        tf = Path(token_file)
        if not tf.is_absolute():
            tf = Path(path).parent / tf
        try:
            table["token"] = tf.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise InputError(f"cannot read token_file {tf}: {exc.strerror}") from None
    return table


def load_settings(config: str | os.PathLike[str] | None = None, **overrides: Any) -> ServerSettings:
    """Build settings from defaults, a TOML file's ``[server]`` table, the environment and ``overrides``.

    ``overrides`` whose value is None are ignored (so CLI options left unset do not clobber the file).
    """
    values: dict[str, Any] = {}
    if config is not None:
        values.update(_read_toml(config))
    env = os.environ
    if env.get("AGENTGUARD_TOKEN"):
        values["token"] = env["AGENTGUARD_TOKEN"]
    if env.get("AGENTGUARD_WEBHOOK_SECRET"):
        values["webhook_secret"] = env["AGENTGUARD_WEBHOOK_SECRET"]
    if env.get("AGENTGUARD_CREDENTIALS_FILE"):
        values["credentials_file"] = env["AGENTGUARD_CREDENTIALS_FILE"]
    if env.get("AGENTGUARD_DB_URL"):
        values["db_url"] = env["AGENTGUARD_DB_URL"]
    if env.get(OLD_STATE_ENV):
        raise InputError(f"{OLD_STATE_ENV} was renamed {STATE_ENV} (the service's state folder: audit database "
                         f"and stored traces; AGENTGUARD_DATA is the benchmark data folder): rename the variable")
    if env.get(STATE_ENV):
        values["state_dir"] = env[STATE_ENV]
    if overrides.get("data_dir") is not None:
        overrides["state_dir"] = overrides.pop("data_dir")
    overrides.pop("data_dir", None)
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return ServerSettings(**values)
    except TypeError as exc:
        raise InputError(f"bad server settings: {exc}") from None
