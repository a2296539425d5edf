"""A model bundle: the learned DTMC together with the spec it was learned with.

``agentguard learn TRACES --spec SPEC --out model.json`` writes one JSON file holding the DTMC (states,
rows, counts, labels, the PAC report) and, under ``meta["abstraction"]``, the spec: the predicates
(expression texts), the unsafe condition and extra labels, the terminal state, the unseen-state policy,
the valid transitions and infeasible states, and the state function the traces were recorded with
(``state``: ``"history"`` or ``"package.module:attr"``). With it the library, the CLI and the service
turn a *concrete* state (a dict) into the model's abstract state themselves: a ``type = "proactive"``
guard whose ``model`` is a bundle needs nothing else (:meth:`ProactiveGuard.from_config
<agentguard.predictive.guard.ProactiveGuard.from_config>`).

Models saved before the bundle (they already carried ``meta["abstraction"]`` without ``state`` and
``states``) load the same way. A model without a spec (a PRISM file, a Pro2Guard release folder) takes
one from ``spec = "spec.yaml"`` in the guard file, or is given abstract states (bit strings such as
``"1001"``). A model learned with Python-callable predicates cannot carry them; it needs ``spec=``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..spec.predicates import Abstraction, load_spec
from .dtmc import DTMC

__all__ = ["bundle_spec", "load_bundle"]


def bundle_spec(model: DTMC, source: str = "model") -> Abstraction | None:
    """The spec a learned model carries (None when it carries none); InputError for one learned with
    Python predicates (they are not data)."""
    d = model.meta.get("abstraction")
    if not isinstance(d, Mapping) or not d.get("predicates"):
        return None
    texts: list[Any] = [p.get("expr") for p in d["predicates"] if isinstance(p, Mapping)]
    texts += [d.get("valid_transition"), d.get("unsafe"), *(d.get("infeasible") or []),
              *dict(d.get("labels") or {}).values()]
    if "<python>" in texts:
        raise InputError(f"{source} was learned with Python predicates, which a model file cannot carry; "
                         "give the guard a spec file (spec = \"spec.yaml\") or an abstraction")
    keep = {k: v for k, v in d.items() if v is not None and k != "description"}
    return Abstraction.from_dict(keep, source=source)


def _norm(text: Any) -> Any:
    return " ".join(text.split()) if isinstance(text, str) else text


def _same_predicates(model: DTMC, ab: Abstraction, model_name: str, spec_name: str) -> None:
    """InputError unless ``ab`` has the predicates (names, order and expression texts up to white
    space) the model was learned with, when the model carries them: bit i of a model state means
    predicate i of ITS spec, so another spec of the same width would read every state under another
    meaning (mis-indexed, not refused). A predicate the model names as ``<python>`` is compared by name."""
    d = model.meta.get("abstraction")
    if not isinstance(d, Mapping) or not isinstance(d.get("predicates"), list):
        return  # a model without a spec (PRISM file, release folder): only the width can be checked
    learned = [(p.get("name"), p.get("expr")) for p in d["predicates"] if isinstance(p, Mapping)]
    given = [(n, e.get("expr")) for n, e in zip(ab.names, ab.describe()["predicates"])]
    same = len(learned) == len(given) and all(
        ln == gn and (le == "<python>" or ge == "<python>" or _norm(le) == _norm(ge))
        for (ln, le), (gn, ge) in zip(learned, given))
    if not same:
        raise InputError(f"spec {spec_name} does not match the predicates model {model_name} was learned with "
                         f"({', '.join(str(n) for n, _ in learned)} vs {', '.join(ab.names)}, or their "
                         "expressions differ): its states would be read with another meaning")


def load_bundle(path: str | Path, spec: str | Path | None = None) -> tuple[DTMC, Abstraction | None]:
    """``(model, spec)`` of a model path (any form :func:`~agentguard.predictive.load.load_dtmc` reads):
    the spec file ``spec`` when given, else the one the model carries, else None. A spec whose predicate
    count differs from the width of the model's bit-vector states is an InputError naming both, and so
    is a given spec whose predicates differ from those the model carries (:func:`_same_predicates`)."""
    from .load import load_dtmc

    model = load_dtmc(path)
    ab = load_spec(spec) if spec is not None else bundle_spec(model, f"model {Path(path).name}")
    if ab is not None and model.state_names:
        widths = {len(s) for s in model.state_names if s and not set(s) - {"0", "1"}}
        if widths and widths != {ab.width}:
            raise InputError(f"the spec has {ab.width} predicates but the model's states have "
                             f"{'/'.join(map(str, sorted(widths)))} bits")
    if spec is not None and ab is not None:
        _same_predicates(model, ab, Path(path).name, str(spec))
    return model, ab
