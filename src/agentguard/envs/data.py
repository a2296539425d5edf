"""Where the benchmark data live: the one resolver of the data folder.

``--data`` (given explicitly) if any, else ``$AGENTGUARD_DATA``, else ``../shared/data`` beside the
repository. Environments, benchmarks, demos and the command line all ask :func:`data_dir`.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV", "data_dir"]

DATA_ENV = "AGENTGUARD_DATA"


def data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The benchmark data folder: ``explicit`` if given, else ``$AGENTGUARD_DATA``, else
    ``../shared/data`` beside the repository. The folder may not exist; callers check."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[4] / "shared" / "data"
