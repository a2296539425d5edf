"""The one DTMC loader: a saved agentguard model, a PRISM file, or a Pro2Guard release folder."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import InputError
from .dtmc import DTMC

__all__ = [
    "is_drn",
    "load_dtmc",
    "read_prism_file",
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


def load_dtmc(path: str | Path, constants=None) -> DTMC:
    """A DTMC from ``path``, whatever form it has:

    * a model folder of the Pro2Guard release (:func:`~agentguard.predictive.prism.read_pro2guard`:
      state names and the ``"unsafe"`` label);
    * a saved agentguard model (:meth:`DTMC.save` JSON: a ``.json`` file, or any file whose text starts
      with ``{``);
    * a DRN file of Storm (``.drn``, or text starting with ``@type``/``// Exported by storm``), read by
      Storm (:func:`~agentguard.predictive.prism_storm.read_drn`);
    * a PRISM DTMC (:func:`read_prism_file`): the native reader for one-command-per-state files
      (learned models, :func:`~agentguard.predictive.prism.write_prism`), Storm's parser and builder
      for the rest of the language. ``constants`` (``"N=5,p=0.3"`` or a mapping) define the file's
      undefined constants.

    Model files are data, parsed and never executed. InputError for a missing path or a folder that
    is not a release folder; ParseError/ModelError from the readers for a bad file.
    """
    from .prism import read_pro2guard

    p = Path(path)
    if not p.exists():
        raise InputError(f"model file not found: {p}")
    if is_release_folder(p):
        return read_pro2guard(p)
    if p.is_dir():
        raise InputError(f"model path is a directory without {', '.join(RELEASE_FILES)}: {p}")
    if _is_json(p):
        return DTMC.load(p)
    if is_drn(p):
        from .prism_storm import read_drn

        return read_drn(p)
    return read_prism_file(p, constants)


def is_drn(p: Path) -> bool:
    """A DRN file of Storm (explicit format): ``.drn``, or text that starts like one."""
    if p.suffix.lower() == ".drn":
        return True
    try:
        head = p.read_text(errors="replace")[:400].lstrip()
    except OSError:
        return False
    return head.startswith("@type") or head.startswith("// Exported by storm")


def read_prism_file(p: Path, constants=None) -> DTMC:
    """A PRISM DTMC by the fast native reader where it applies (one ``s=K`` command per state, as
    learned and written models have), else by Storm; errors name what neither path reads."""
    from ..core.errors import DependencyError, ParseError
    from .prism import native_form, read_prism
    from .storm_engine import available

    try:
        text = p.read_text()
    except OSError as exc:
        raise InputError(f"cannot read PRISM model {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ParseError(f"{p} is not a text file") from None
    storm = available()
    if not storm or native_form(text):
        try:
            return read_prism(p, constants=constants)
        except ParseError as exc:
            if not storm:
                raise ParseError(f"{exc} (the native reader reads one-variable models; installing the "
                                 "'storm' extra, pip install 'agentguard[storm]', reads the full PRISM "
                                 "language)") from None
    try:
        from .prism_storm import read_prism_storm

        return read_prism_storm(p, constants)
    except DependencyError:  # pragma: no cover - available() said yes
        raise


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
