"""Shipped policies, each with its own argument extractor.

The policy files (``*.py`` here other than this one) are data for the sandbox and Nagini, never imported
as Python modules: they import ``nagini_contracts``, which only the Nagini venv has. The extractor that
feeds each one lives in ``extractors/<same name>.py`` (ordinary Python: it computes the policy's int and
bool facts from a tool call and its context, outside the proof) and is built by :func:`extractor`::

    from agentguard.policies import PolicyBinding, ToolCallGuard, library_extractor, library_path, load_policy

    guard = ToolCallGuard([PolicyBinding(load_policy(library_path("mind2web_sc")),
                                         library_extractor("mind2web_sc"))])
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

__all__ = ["VERIFIED", "extractor", "library_path", "policy", "shipped_policies"]

_DIR = Path(__file__).resolve().parent


def library_path(name: str) -> Path:
    """Path of a shipped policy file by stem (``library_path("mind2web_sc")``): an ASCII identifier naming a file of
    this folder, never a path (``../../tmp/x`` named a file outside it, and ``extractors/mind2web_sc`` an extractor
    module as a policy); InputError otherwise."""
    plain = isinstance(name, str) and name.isascii() and name.isidentifier()
    p = _DIR / f"{name}.py"
    if not plain or name.startswith("_") or not p.is_file():
        from ...core.errors import InputError

        raise InputError(f"no shipped policy {name!r}; have: {', '.join(p.stem for p in shipped_policies())}")
    return p


#: the SHA-256 (``Policy.digest``) of each shipped policy's source: CI's Nagini run proves every shipped policy
#: (``tests/policies/test_nagini.py``) and ``tests/policies/library/test_init.py`` that these are their digests. A
#: shipped policy a guard loads itself (:func:`policy`) is pinned to it, so it loads under ``require_verified`` and a
#: changed file refuses to load.
VERIFIED = {
    "agentdojo_grounding": "a7d0ed1c558c8055d45532c97b83ed81cfcc81d6a560aa93c7b95c1586f99b01",
    "agentdojo_provenance": "8356ac93a799ebc8dc0c267a6ce19aae6a6991058ae5ef9fb0af42f953f75380",
    "asb_declared_tools": "07238f3e715a2e3aa14091817466072d316ba45ad609dfc3560cd5772d9f04fb",
    "mind2web_sc": "8fc4810df99599839aadd68f1ebeb505513bff0ea760f4fcf71768b629ddb55d",
}


def policy(name: str, *, timeout_s: float = 0.05) -> Any:
    """The shipped policy ``name`` through the one loader (:func:`~agentguard.policies.model.load_policy`), pinned to
    its :data:`VERIFIED` digest (PolicyError when the file is not the source CI proved)."""
    from ..model import load_policy

    path = library_path(name)
    return load_policy(path, timeout_s=timeout_s, verified_digest=VERIFIED.get(name))


def shipped_policies() -> list[Path]:
    """Every shipped policy file, sorted."""
    return sorted(p for p in _DIR.glob("*.py") if not p.name.startswith("_"))


def extractor(name: str, **options: Any) -> Any:
    """The argument extractor shipped with policy ``name`` (``extractor("mind2web_sc")``).

    ``options`` go to that extractor's builder: ``mind2web_sc`` takes none (``llm=True`` or
    ``client=`` for the paper's LLM extractor instead of the keyword rules); ``agentdojo_grounding``
    none; ``asb_declared_tools`` needs ``registry`` (tool name -> index).
    """
    library_path(name)  # an unknown name is an InputError listing the shipped ones
    module = importlib.import_module(f"{__name__}.extractors.{name}")
    ex = module.extractor(**options)
    keys = getattr(module, "GRANT_FACTS", None)  # the context facts it reads as grants (a service's, never a request's)
    if keys:
        try:
            ex.grant_facts = frozenset(keys)
        except AttributeError:  # an extractor that takes no attributes: nothing declared
            pass
    return ex
