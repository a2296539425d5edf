"""Contracts derived from the rule, not from the code (issue 26).

A *specification* (:class:`Spec`; the shipped ones are ``policies/library/specs/<policy>.py``) is written
from the natural-language rule alone: the facts' signature and finite domain, a reference predicate
``reference(**facts) -> verdict code``, boundary rows read off the rule text, and the Nagini contract
(``Requires``/``Ensures`` clauses) of the policy's entry point.

Two checks tie a policy to its rule:

- :func:`spec_problems` (the specification is sound): every boundary row gets the verdict the rule text
  gives; every fact in the domain meets the ``Requires``; values just outside an int fact's bounds fail
  them; and, for every fact in the domain, the ``Ensures`` clauses admit exactly one verdict code, the one
  :func:`Spec.reference` gives; and every name a clause uses is a parameter, a specification constant or
  contract vocabulary (else the policy would define what it means). The domain is finite, so this is
  exhaustive: the contract is *equivalent* to the rule over the extracted facts ("denied exactly when the
  rule says so", in both directions, with the rule's code).
- :func:`contract_problems` (the policy carries that contract): the entry point's signature and its
  ``Requires``/``Ensures`` clauses are the specification's, clause for clause (compared as ASTs), and the
  constants they name have the specification's values and types (``True`` is not the constant ``1``).
  Nagini then proves the implementation against it, so a policy that edits its contract (an off-by-one in
  both code and contract, a rule removed from both) is refused before Nagini is asked.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import itertools
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..core.errors import InputError
from ._bounded_ops import RUNTIME_HELPERS
from .contracts import CONTRACT_NAMES
from .nagini_semantics import rewrite_expression

__all__ = ["Spec", "contract_problems", "load_spec", "policy_header", "shipped_specs", "spec_for", "spec_problems"]

_SPECS_DIR = Path(__file__).resolve().parent / "library" / "specs"
_REQUIRED = ("POLICY_ID", "RULE", "CONSTANTS", "SIGNATURE", "RETURNS", "CODES", "DOMAIN", "reference", "BOUNDARY",
             "CONTRACT")


@dataclass(frozen=True)
class Spec:
    """One rule's specification (see the module docstring)."""

    name: str
    policy_id: str
    rule: str
    constants: Mapping[str, int]
    signature: Sequence[tuple[str, str]]
    returns: str
    codes: Sequence[int]
    domain: Mapping[str, Sequence[Any]]
    reference: Callable[..., int]
    boundary: Sequence[tuple[dict, int]]
    contract: Sequence[str]
    entry: str = "check"
    bounds: Mapping[str, tuple[int, int]] | None = None

    @property
    def param_names(self) -> list[str]:
        return [n for n, _ in self.signature]

    def facts(self) -> Iterator[dict[str, Any]]:
        """Every fact in the (finite) domain."""
        names = self.param_names
        for values in itertools.product(*(self.domain[n] for n in names)):
            yield dict(zip(names, values))

    def requires(self) -> list[str]:
        return [c for c in self.contract if c.startswith("Requires(")]

    def ensures(self) -> list[str]:
        return [c for c in self.contract if c.startswith("Ensures(")]

    def int_bounds(self) -> dict[str, tuple[int, int]]:
        out = {}
        for n, t in self.signature:
            if t == "int":
                d = list(self.domain[n])
                out[n] = (min(d), max(d))
        out.update(self.bounds or {})
        return out


def _from_module(mod: ModuleType, name: str) -> Spec:
    missing = [k for k in _REQUIRED if not hasattr(mod, k)]
    if missing:
        raise InputError(f"specification {name} lacks {', '.join(missing)}")
    return Spec(name=name, policy_id=mod.POLICY_ID, rule=mod.RULE, constants=dict(mod.CONSTANTS),
                signature=list(mod.SIGNATURE), returns=mod.RETURNS, codes=list(mod.CODES), domain=dict(mod.DOMAIN),
                reference=mod.reference, boundary=list(mod.BOUNDARY), contract=list(mod.CONTRACT),
                entry=getattr(mod, "ENTRY", "check"), bounds=getattr(mod, "BOUNDS", None))


def load_spec(name_or_path: str | Path) -> Spec:
    """A shipped specification by policy stem (``load_spec("mind2web_sc")``) or a specification module's path.

    A path is imported as Python: it is the caller's own specification, trusted like any code they run."""
    p = Path(name_or_path)
    if p.suffix == ".py" and p.exists():
        spec = importlib.util.spec_from_file_location(f"agentguard_spec_{p.stem}", p)
        if spec is None or spec.loader is None:
            raise InputError(f"cannot load specification {p}")
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except Exception as exc:  # noqa: BLE001 - a broken spec file is an input error, one line
            raise InputError(f"specification {p} failed to load: {type(exc).__name__}: {exc}") from None
        return _from_module(mod, p.stem)
    stem = str(name_or_path)
    if not (_SPECS_DIR / f"{stem}.py").exists() or stem.startswith("_"):
        have = ", ".join(s.name for s in shipped_specs())
        raise InputError(f"no specification {stem!r} (a shipped policy's stem or a .py file); have: {have}")
    return _from_module(importlib.import_module(f"agentguard.policies.library.specs.{stem}"), stem)


def shipped_specs() -> list[Spec]:
    return [load_spec(p.stem) for p in sorted(_SPECS_DIR.glob("*.py")) if not p.name.startswith("_")]


def spec_for(policy_id: str) -> Spec | None:
    """The shipped specification of the policy with this ``POLICY_ID`` (None if there is none)."""
    return next((s for s in shipped_specs() if s.policy_id == policy_id), None)


# ------------------------------------------------------------------ the contract as an executable relation

class _ResultToName(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "Result" and not node.args:
            return ast.copy_location(ast.Name("agres", ast.Load()), node)
        return node


_RUNTIME = {"Implies": lambda a, b: (not a) or bool(b), "Acc": lambda *a: True, "list_pred": lambda x: x}


def _clause_fn(clauses: Sequence[str], spec: Spec) -> Callable[..., bool]:
    """``f(**facts, agres=r) -> all clauses hold`` (the argument of each Requires/Ensures, Result() -> agres)."""
    exprs = []
    for c in clauses:
        call = ast.parse(c, mode="eval").body
        assert isinstance(call, ast.Call) and call.args, c
        exprs.append(rewrite_expression(_ResultToName().visit(call.args[0])))  # read as Nagini proves it
    body = ast.BoolOp(ast.And(), exprs) if len(exprs) > 1 else (exprs[0] if exprs else ast.Constant(True))
    args = [ast.arg(n) for n in (*spec.param_names, "agres")]
    fn = ast.FunctionDef("agclauses", ast.arguments([], args, None, [], [], None, [ast.Constant(None)]),
                         [ast.Return(body)], [], None, type_params=[])
    mod = ast.fix_missing_locations(ast.Module([fn], []))
    ns: dict[str, Any] = {**_RUNTIME, **RUNTIME_HELPERS, **spec.constants}
    exec(compile(mod, f"<contract of {spec.name}>", "exec"), ns)  # noqa: S102 - the spec's own clauses
    f = ns["agclauses"]
    return lambda facts, res=None: bool(f(**facts, agres=res))


def spec_problems(spec: Spec, *, limit: int = 5) -> list[str]:
    """Why the specification is unsound (empty when its contract is equivalent to its reference predicate)."""
    problems: list[str] = []
    for facts, want in spec.boundary:
        got = spec.reference(**facts)
        if got != want:
            problems.append(f"boundary row {facts}: reference gives {got}, the rule text {want}")
    fixed = set(spec.param_names) | set(spec.constants) | CONTRACT_NAMES | {"len", "min", "max", "abs", "bool", "int"}
    for c in spec.contract:  # a name the specification does not fix would be the policy's to define
        free = sorted({n.id for n in ast.walk(ast.parse(c)) if isinstance(n, ast.Name)} - fixed)
        if free:
            problems.append(f"contract clause {c} names {', '.join(free)}, which the specification does not fix "
                            "(the policy would define what it means)")
    if problems:
        return problems[:limit]
    pre, post = _clause_fn(spec.requires(), spec), _clause_fn(spec.ensures(), spec)
    candidates = sorted(set(spec.codes) | {min(spec.codes) - 1, max(spec.codes) + 1})
    for facts in spec.facts():
        if len(problems) >= limit:
            break
        if not pre(facts):
            problems.append(f"{facts} is in the domain but violates the Requires")
            continue
        admitted = [r for r in candidates if post(facts, r)]
        want = spec.reference(**facts)
        if admitted != [want]:
            problems.append(f"{facts}: the rule says {want}, the contract admits {admitted}")
    base = next(spec.facts())
    for n, (lo, hi) in spec.int_bounds().items():
        for v in (lo - 1, hi + 1):
            if pre({**base, n: v}):
                problems.append(f"{n}={v} is outside the domain but meets the Requires")
    return problems[:limit]


# ------------------------------------------------------------------ does a policy carry the contract?

def _norm(expr_src: str) -> str:
    return ast.dump(ast.parse(expr_src.strip(), mode="eval").body)


def _annotation(node: ast.AST | None) -> str:
    return "" if node is None else ast.unparse(node)


def contract_problems(source: str, spec: Spec) -> list[str]:
    """Why ``source`` does not carry ``spec``'s contract (empty when it does, clause for clause)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [f"syntax error: {exc.msg}"]
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == spec.entry), None)
    if fn is None:
        return [f"no function {spec.entry!r}"]
    problems = []
    sig = [(a.arg, _annotation(a.annotation)) for a in fn.args.args]
    if sig != [tuple(x) for x in spec.signature] or _annotation(fn.returns) != spec.returns:
        want = ", ".join(f"{n}: {t}" for n, t in spec.signature)
        problems.append(f"signature differs from the specification's: def {spec.entry}({want}) -> {spec.returns}")
    have = [st.value for st in fn.body if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Name) and st.value.func.id in ("Requires", "Ensures")]
    have_n = [ast.dump(c) for c in have]
    want_n = [_norm(c) for c in spec.contract]
    if have_n != want_n:
        extra = [ast.unparse(c) for c, d in zip(have, have_n) if d not in want_n]
        lacking = [c for c, d in zip(spec.contract, want_n) if d not in have_n]
        parts = []
        if lacking:
            parts.append("lacks " + "; ".join(lacking))
        if extra:
            parts.append("adds or edits " + "; ".join(extra))
        if not parts:
            parts.append("has the clauses in another order")
        problems.append(f"the contract of {spec.entry} is not the specification's: " + " | ".join(parts))
    consts: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                consts[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    for k, v in spec.constants.items():  # the exact type too: True == 1, but to Nagini True is never the element 1
        if k not in consts or type(consts[k]) is not type(v) or consts[k] != v:
            problems.append(f"constant {k} must be {v} (the specification's), is {consts.get(k, 'missing')}")
    return problems


def policy_header(spec: Spec) -> str:
    """The fixed part of a policy for ``spec``: imports, constants, signature and contract (synthesis prompt)."""
    lines = ["from nagini_contracts.contracts import *"]
    if any("List[" in t for _, t in spec.signature):
        lines.append("from typing import List")
    lines += ["", f'POLICY_ID = "{spec.policy_id}"', ""]
    lines += [f"{k} = {v}" for k, v in spec.constants.items()]
    args = ", ".join(f"{n}: {t}" for n, t in spec.signature)
    lines += ["", "", f"def {spec.entry}({args}) -> {spec.returns}:"]
    lines += [f"    {c}" for c in spec.contract]
    return "\n".join(lines) + "\n"


def behaviour(evaluate: Callable[[dict], int], spec: Spec) -> list[Any]:
    """The verdict (or the error's type name) on every fact of the domain: two policies with equal tables
    are equivalent over the extracted facts."""
    out = []
    for facts in spec.facts():
        try:
            out.append(evaluate(facts))
        except Exception as exc:  # noqa: BLE001 - a crash is a behaviour too
            out.append(type(exc).__name__)
    return out
