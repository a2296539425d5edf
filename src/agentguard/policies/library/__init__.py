"""Shipped policy files (``*.py`` here other than this one). They are data for the sandbox and Nagini, never
imported as Python modules: they import ``nagini_contracts``, which only the Nagini venv has."""

from __future__ import annotations

from pathlib import Path

__all__ = ["library_path", "shipped_policies"]

_DIR = Path(__file__).resolve().parent


def library_path(name: str) -> Path:
    """Path of a shipped policy file by stem (``library_path("mind2web_sc")``)."""
    p = _DIR / f"{name}.py"
    if not p.exists() or name.startswith("_"):
        from ...core.errors import InputError

        raise InputError(f"no shipped policy {name!r}; have: {', '.join(p.stem for p in shipped_policies())}")
    return p


def shipped_policies() -> list[Path]:
    """Every shipped policy file, sorted."""
    return sorted(p for p in _DIR.glob("*.py") if not p.name.startswith("_"))
