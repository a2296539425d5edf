"""Starting the service under uvicorn: connection limits, workers that die with their master, and no
secrets in any child's environment.

``agentguard serve`` calls :func:`serve`. It hands the worker processes a *recipe* in the environment
variable ``AGENTGUARD_SERVER_RECIPE``: the absolute path of the config file and the command-line
options, never the settings themselves. Each worker rebuilds the settings from it
(:func:`worker_settings`), so a token or database URL read from a file (``token_file``, ``token``,
``db_url`` in the ``[server]`` table) is never in any process's environment; values the operator put
in the environment (``AGENTGUARD_TOKEN``, ``AGENTGUARD_DB_URL``) are removed from each worker's
environment once read, so whatever a worker starts (policy sandboxes, subprocesses) does not inherit
them.

Under ``--workers N`` every worker watches its master (``AGENTGUARD_SERVER_MASTER``): on Linux the
kernel sends it SIGTERM when the master dies (``prctl(PR_SET_PDEATHSIG)``), and a thread polling the
parent pid every half second does the same everywhere; a worker still alive ``graceful_shutdown_s + 2``
seconds later exits hard. A ``kill -9`` of the master therefore leaves no worker serving or holding the
port.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from .settings import SETTINGS_ENV, ServerSettings, load_settings

__all__ = ["MASTER_ENV", "RECIPE_ENV", "SECRET_ENVS", "serve", "uvicorn_config", "watch_master",
           "worker_settings"]

RECIPE_ENV = "AGENTGUARD_SERVER_RECIPE"
MASTER_ENV = "AGENTGUARD_SERVER_MASTER"
#: Environment variables that may hold secrets; removed from a worker's environment once read.
SECRET_ENVS = ("AGENTGUARD_TOKEN", "AGENTGUARD_DB_URL", SETTINGS_ENV)


def uvicorn_config(settings: ServerSettings, app: Any = "agentguard.server.app:app_from_env") -> Any:
    """The uvicorn ``Config`` for ``settings``: the limited protocol class (:mod:`.protocol`) and the
    keep-alive, header-size and shutdown limits, with the :class:`~.protocol.Limits` attached."""
    import uvicorn

    from .protocol import Limits, protocol_class

    kwargs: dict[str, Any] = {}
    try:
        import uvloop  # noqa: F401

        kwargs["loop"] = "uvloop"
    except ImportError:
        pass
    cfg = uvicorn.Config(app, factory=isinstance(app, str), host=settings.host, port=settings.port,
                         workers=settings.workers, log_level=settings.log_level, access_log=False,
                         proxy_headers=False, server_header=False, date_header=False, http=protocol_class(),
                         timeout_keep_alive=settings.keep_alive_s,  # type: ignore[arg-type]
                         h11_max_incomplete_event_size=settings.max_header_bytes,
                         timeout_graceful_shutdown=max(1, int(settings.graceful_shutdown_s)), backlog=2048,
                         **kwargs)
    cfg.agentguard_limits = Limits(header_timeout_s=settings.header_timeout_s,  # type: ignore[attr-defined]
                                   max_header_bytes=settings.max_header_bytes,
                                   max_connections=settings.max_connections)
    return cfg


def serve(settings: ServerSettings, config: str | None, overrides: dict[str, Any]) -> None:
    """Serve with uvicorn (``settings.workers`` processes); workers rebuild ``settings`` from
    ``config`` and ``overrides`` (see the module docstring)."""
    import uvicorn

    from .protocol import raise_nofile_limit

    recipe = {"config": str(Path(config).resolve()) if config else None,
              "overrides": {k: v for k, v in overrides.items() if v is not None}}
    os.environ[RECIPE_ENV] = json.dumps(recipe)
    os.environ.pop(SETTINGS_ENV, None)
    if settings.workers > 1:
        os.environ[MASTER_ENV] = str(os.getpid())
    else:
        os.environ.pop(MASTER_ENV, None)
    raise_nofile_limit()
    cfg = uvicorn_config(settings)
    server = uvicorn.Server(cfg)
    if settings.workers > 1:
        from uvicorn.supervisors import Multiprocess

        sock = cfg.bind_socket()
        Multiprocess(cfg, sockets=[sock]).run()
    else:
        server.run()


def worker_settings() -> ServerSettings:
    """The settings of this worker: from the recipe (or, for embedding, ``AGENTGUARD_SERVER_SETTINGS``
    JSON); then the secrets leave the environment and a worker of ``--workers N`` watches its master."""
    from ..core.errors import AgentGuardError

    raw = os.environ.get(RECIPE_ENV)
    if raw:
        recipe = json.loads(raw)
        settings = load_settings(recipe.get("config"), **recipe.get("overrides", {}))
    elif os.environ.get(SETTINGS_ENV):
        settings = ServerSettings.from_json(os.environ[SETTINGS_ENV])
    else:
        raise AgentGuardError(f"neither {RECIPE_ENV} nor {SETTINGS_ENV} is set")
    for key in SECRET_ENVS:
        os.environ.pop(key, None)
    master = os.environ.get(MASTER_ENV)
    if master and master.isdigit() and int(master) != os.getpid():
        watch_master(int(master), settings.graceful_shutdown_s)
    return settings


def _pdeathsig(sig: int) -> None:
    """Ask the kernel for ``sig`` when the parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``); no-op elsewhere."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(sig), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


def watch_master(master_pid: int, grace_s: float, poll_s: float = 0.5) -> threading.Thread | None:
    """Die with the master: SIGTERM to this process when ``master_pid`` is no longer its parent (kernel
    signal and a polling thread), and a hard exit ``grace_s + 2`` seconds later."""
    if os.getppid() != master_pid:  # the master is already gone
        os._exit(1)
    _pdeathsig(signal.SIGTERM)

    def watch() -> None:
        while os.getppid() == master_pid:
            time.sleep(poll_s)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace_s + 2)
        os._exit(1)

    t = threading.Thread(target=watch, name="agentguard-master-watch", daemon=True)
    t.start()
    return t
