"""Install the Nagini verifier in its own virtual environment (``agentguard setup nagini``).

Nagini 1.2.0 pins pytest 7.0, mypy 0.900 and z3-solver 4.8.7, which clash with the project's own
environment, so :mod:`agentguard.policies.nagini` runs it out of process from a separate virtual
environment. This module makes that environment, from a source checkout and from a pip install alike
(``scripts/setup_nagini.sh`` is a thin wrapper around it):

- where: ``venv`` if given, else ``$AGENTGUARD_NAGINI_VENV``, else ``<repo>/.nagini-venv`` in a source
  checkout, else ``<sys.prefix>/.nagini-venv`` (inside the user's virtual environment, where
  :func:`agentguard.policies.nagini.find_nagini_venv` looks);
- Java 11+ is needed (Viper's back ends run on the JVM): when ``java`` is missing it is installed with
  ``apt-get`` when that is possible (root), else the error says to install it;
- idempotent: an environment that already imports Nagini at the pinned version is kept.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..core.errors import DependencyError

__all__ = ["NAGINI_VERSION", "default_nagini_venv", "setup_nagini"]

NAGINI_VERSION = "1.2.0"


def default_nagini_venv() -> Path:
    """Where ``setup nagini`` puts the environment when no folder is named (see the module docstring)."""
    env = os.environ.get("AGENTGUARD_NAGINI_VENV")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[3]
    if (repo / "pyproject.toml").is_file() and (repo / "src" / "agentguard").is_dir():
        return repo / ".nagini-venv"
    return Path(sys.prefix) / ".nagini-venv"


def _ensure_java(log) -> None:
    if shutil.which("java"):
        return
    apt = shutil.which("apt-get")
    if apt is None or (hasattr(os, "geteuid") and os.geteuid() != 0):
        raise DependencyError("Nagini needs Java 11+ and `java` is not on PATH: install a JRE "
                              "(e.g. apt-get install openjdk-17-jre-headless) and run `agentguard setup nagini` again")
    log("setup nagini: java not found, installing a JRE with apt-get")
    for cmd in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "openjdk-17-jre-headless"]):
        if subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr).returncode != 0:  # noqa: S603
            raise DependencyError("could not install Java with apt-get; install Java 11+ by hand")


def _ready(venv: Path) -> bool:
    py = venv / "bin" / "python"
    if not (py.exists() and (venv / f".stamp-{NAGINI_VERSION}").exists()):
        return False
    return subprocess.run([str(py), "-c", "import nagini_translation, nagini_contracts"],  # noqa: S603
                          capture_output=True).returncode == 0


def setup_nagini(venv: str | Path | None = None, python: str | None = None, log=None) -> Path:
    """Make (or keep) the Nagini environment; return its folder. ``python``: the interpreter the environment
    is made from (default ``$NAGINI_PYTHON``, else this one). Raises DependencyError when it cannot."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    target = Path(venv) if venv else default_nagini_venv()
    _ensure_java(log)
    if _ready(target):
        log(f"setup nagini: {target} already has nagini {NAGINI_VERSION}")
        return target
    log(f"setup nagini: creating {target} with nagini=={NAGINI_VERSION} (one-off, a few minutes)")
    if target.exists():
        shutil.rmtree(target)
    base = python or os.environ.get("NAGINI_PYTHON") or sys.executable
    steps = [[base, "-m", "venv", str(target)],
             [str(target / "bin" / "pip"), "install", "-q", f"nagini=={NAGINI_VERSION}"],
             [str(target / "bin" / "python"), "-c", "import nagini_translation.main, nagini_contracts.contracts"]]
    for cmd in steps:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True)  # noqa: S603 - fixed commands
        except OSError as exc:
            raise DependencyError(f"setup nagini: `{' '.join(cmd[:3])} ...` failed: {exc.strerror}") from None
        if proc.returncode != 0:
            tail = " ".join((proc.stderr or proc.stdout).split())[-300:]
            raise DependencyError(f"setup nagini: `{' '.join(cmd[:3])} ...` failed: {tail}")
    (target / f".stamp-{NAGINI_VERSION}").touch()
    log(f"setup nagini: ready at {target}" + ("" if target == default_nagini_venv() else
                                               f" (set AGENTGUARD_NAGINI_VENV={target} so agentguard finds it)"))
    return target
