"""The one DTMC loader: a saved agentguard model, a PRISM file, or a Pro2Guard release folder."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import InputError
from .dtmc import DTMC

__all__ = [
    "load_dtmc",
]

RELEASE_FILES = ("dtmc.prism", "model.json", "abstraction.json")


def is_release_folder(path: str | Path) -> bool:
    """True for a model folder of the Pro2Guard release (``dtmc.prism``, ``model.json``, ``abstraction.json``)."""
    p = Path(path)
    return p.is_dir() and all((p / f).is_file() for f in RELEASE_FILES)


def _is_json(p: Path) -> bool:
    if p.suffix == ".json":
        return True
    if p.suffix == ".prism":
        return False
    try:
        return p.read_text(errors="replace")[:4096].lstrip().startswith("{")
    except OSError as exc:
        raise InputError(f"cannot read model {p}: {exc.strerror or exc}") from None


def load_dtmc(path: str | Path) -> DTMC:
    """A DTMC from ``path``, whatever form it has:

    * a model folder of the Pro2Guard release (:func:`~agentguard.predictive.prism.read_pro2guard`:
      state names and the ``"unsafe"`` label);
    * a saved agentguard model (:meth:`DTMC.save` JSON: a ``.json`` file, or any file whose text starts
      with ``{``);
    * a PRISM DTMC (``.prism``, or any other text file): :func:`~agentguard.predictive.prism.read_prism`.

    Model files are data, parsed and never executed. InputError for a missing path or a folder that
    is not a release folder; ParseError/ModelError from the readers for a bad file.
    """
    from .prism import read_prism, read_pro2guard

    p = Path(path)
    if not p.exists():
        raise InputError(f"model file not found: {p}")
    if is_release_folder(p):
        return read_pro2guard(p)
    if p.is_dir():
        raise InputError(f"model path is a directory without {', '.join(RELEASE_FILES)}: {p}")
    if _is_json(p):
        return DTMC.load(p)
    return read_prism(p)


def prism_source(path: str | Path) -> Path | None:
    """The PRISM file behind a model path (for Storm to parse itself), or None for a JSON model."""
    p = Path(path)
    if is_release_folder(p):
        return p / "dtmc.prism"
    if not p.is_file():
        return None
    try:
        return None if _is_json(p) else p
    except InputError:
        return None
