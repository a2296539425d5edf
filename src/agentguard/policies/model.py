"""The policy model: a Python function over a typed argument schema, with Nagini contracts.

A policy file (see ``policies/library/*.py`` for the shipped ones) is a Python module that both Nagini and
the sandbox accept::

    from nagini_contracts.contracts import *

    POLICY_ID = "hotel-age"          # optional; default: the file's stem
    POLICY_VERSION = "1"             # optional; default "0"
    HOTEL = 3                        # enums are int constants
    REASONS = ["allowed", "User aged under 18 cannot book a hotel"]   # optional: text per verdict code

    def check(category: int, age: int) -> int:            # the entry point: ``check`` by default
        Requires(0 <= category and category <= 6)          # the argument domain (also the test schema)
        Requires(0 <= age and age <= 150)
        Ensures(Implies(category == HOTEL and age < 18, Result() != 0))   # the safety property
        if category == HOTEL and age < 18:
            return 1
        return 0

The entry point returns ``bool`` (True allows) or ``int`` (0 allows, ``k > 0`` denies with reason
``REASONS[k]``). Its parameters are the schema: ``int`` (an enum is an int with a bounded ``Requires``
range), ``bool`` and ``List[int]`` (membership tests), the only types the verified core uses; string facts
(is this IBAN in the user's prompt?) are computed outside the verified core by an argument extractor and
passed in as booleans or ints. The ``Requires`` clauses bound the domain; run-time arguments outside it
fail closed (:class:`~agentguard.policies.sandbox.PreconditionViolation`), because the proof says nothing
about them.
"""

from __future__ import annotations

import ast
import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import GuardTimeout, PolicyError
from ._bounded_ops import MAX_SEQ
from .sandbox import CompiledPolicyCode, compile_policy, validate

__all__ = ["Param", "Policy", "PolicyResult", "load_policy", "policy_from_source"]

_TYPES = {"int": int, "bool": bool, "List[int]": list, "list[int]": list}
#: the widest int argument a policy accepts (bits); wider ones are refused before the policy runs
MAX_ARG_BITS = 64
_ARG_LIMIT = 2**MAX_ARG_BITS - 1


def _within_bounds(v: Any) -> bool:
    if isinstance(v, list):
        return len(v) <= MAX_SEQ and all(x.bit_length() <= MAX_ARG_BITS for x in v)
    return not isinstance(v, int) or v.bit_length() <= MAX_ARG_BITS


def _checked_argument(pid: str, p: "Param", args: Mapping[str, Any]) -> Any:
    """One argument as the verified core may see it: an exact ``int`` (not a bool, not a subclass whose
    ``__lt__``/``__eq__`` could lie to the policy's comparisons), an exact ``bool``, or a private copy of an
    exact ``list`` of exact ints; ints of at most MAX_ARG_BITS bits, lists of at most MAX_SEQ elements."""
    try:
        v = args[p.name]
    except KeyError:
        raise PolicyError(f"policy {pid}: missing argument {p.name!r}") from None
    t = _TYPES[p.type]
    if type(v) is not t:
        raise PolicyError(f"policy {pid}: argument {p.name!r} must be {p.type}, got {type(v).__name__}")
    if t is list:
        if len(v) > MAX_SEQ:
            raise PolicyError(f"policy {pid}: argument {p.name!r} is too large (lists of at most {MAX_SEQ} elements)")
        v = list.copy(v)  # the list's own storage: no subclass __iter__, and the caller cannot change it mid-call
        if not all(type(x) is int for x in v):
            raise PolicyError(f"policy {pid}: argument {p.name!r} must be List[int] (exact ints)")
    if not _within_bounds(v):
        raise PolicyError(f"policy {pid}: argument {p.name!r} is too large (ints of at most "
                          f"{MAX_ARG_BITS} bits, lists of at most {MAX_SEQ} elements)")
    return v


@dataclass(frozen=True)
class Param:
    """One schema field: name, type (``int``, ``bool`` or ``List[int]``) and, for ints, bounds from Requires."""

    name: str
    type: str
    lo: int | None = None
    hi: int | None = None

    def domain(self) -> tuple[int, int] | None:
        return (self.lo, self.hi) if self.lo is not None and self.hi is not None else None


@dataclass(frozen=True)
class PolicyResult:
    """A policy's answer: allow or deny, the verdict code (0 = allow) and the reason."""

    allow: bool
    code: int
    reason: str
    seconds: float = 0.0


@dataclass
class Policy:
    """A validated, compiled policy. ``evaluate(args)`` runs it under the sandbox's time limit."""

    id: str
    version: str
    source: str
    params: tuple[Param, ...]
    entry: str = "check"
    path: str | None = None
    reasons: tuple[str, ...] = ()
    returns: str = "int"
    ensures: tuple[str, ...] = ()
    timeout_s: float = 0.05
    code: CompiledPolicyCode | None = field(default=None, repr=False)

    @property
    def digest(self) -> str:
        """The SHA-256 of the source, all 64 hex digits (recorded in every audit record; ``verified_digest`` pins
        it). Not a prefix: 12 hex digits are 48 bits, and whoever writes both files finds two sources with one
        48-bit prefix in about 2**24 tries each (a verified one and a swapped-in one), in minutes."""
        return hashlib.sha256(self.source.encode()).hexdigest()

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def reason_for(self, code: int) -> str:
        if 0 <= code < len(self.reasons):
            return self.reasons[code]
        return "allowed" if code == 0 else f"denied by policy {self.id} (code {code})"

    def evaluate(self, args: Mapping[str, Any]) -> PolicyResult:
        """Run the policy on ``args`` (one value per schema field).

        Raises PolicyError for missing/ill-typed arguments or arguments outside the precondition, and
        GuardTimeout when the call exceeds ``timeout_s``: callers (ToolCallGuard) fail closed on both.
        """
        assert self.code is not None
        fn = self.code.function(self.entry)
        values = [_checked_argument(self.id, p, args) for p in self.params]
        tick = self.code.tick
        t0 = time.perf_counter()
        tick.deadline = t0 + self.timeout_s
        try:
            out = fn(*values)
        finally:
            tick.deadline = float("inf")
        dt = time.perf_counter() - t0
        if dt > self.timeout_s:
            raise GuardTimeout(f"policy {self.id} exceeded its time limit of {self.timeout_s * 1000:.0f} ms")
        return self._verdict(out, dt)

    def _verdict(self, out: Any, dt: float) -> PolicyResult:
        """Read the entry point's answer: only an exact ``bool`` (``True`` allows) or an exact ``int``
        (``0`` allows), of the declared return type. Anything else (a truthy object, a bool/int subclass
        with its own ``__eq__``/``__bool__``, ``None``, a tuple) raises PolicyError: the guard fails closed."""
        kind = type(out)
        if kind is bool and self.returns == "bool":
            return PolicyResult(out is True, 0 if out is True else 1, "allowed" if out is True else
                                self.reason_for(1) if len(self.reasons) > 1 else f"denied by policy {self.id}", dt)
        if kind is int and self.returns == "int":
            return PolicyResult(out == 0, out, self.reason_for(out), dt)
        raise PolicyError(f"policy {self.id} returned {kind.__name__}, expected its declared {self.returns}")

    def __call__(self, **args: Any) -> PolicyResult:
        return self.evaluate(args)


def _const_value(node: ast.AST, consts: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _const_value(node.operand, consts)
        return -v if isinstance(v, int) else None
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    return None


def _bounds(requires: list[ast.expr], names: set[str], consts: Mapping[str, Any]) -> dict[str, list]:
    """Integer bounds [lo, hi] per parameter from Requires conjuncts like ``0 <= x``, ``x <= C``, ``x < C``."""
    out: dict[str, list] = {n: [None, None] for n in names}

    def conjuncts(e: ast.expr):
        if isinstance(e, ast.BoolOp) and isinstance(e.op, ast.And):
            for v in e.values:
                yield from conjuncts(v)
        else:
            yield e

    def setb(name: str, lo: int | None = None, hi: int | None = None) -> None:
        b = out[name]
        if lo is not None:
            b[0] = lo if b[0] is None else max(b[0], lo)
        if hi is not None:
            b[1] = hi if b[1] is None else min(b[1], hi)

    for r in requires:
        for c in conjuncts(r):
            if not isinstance(c, ast.Compare):
                continue
            items = [c.left, *c.comparators]
            for left, op, right in zip(items, c.ops, items[1:]):
                ln = left.id if isinstance(left, ast.Name) and left.id in names else None
                rn = right.id if isinstance(right, ast.Name) and right.id in names else None
                lv, rv = _const_value(left, consts), _const_value(right, consts)
                if ln and isinstance(rv, int) and not isinstance(rv, bool):
                    if isinstance(op, ast.LtE): setb(ln, hi=rv)  # noqa: E701
                    elif isinstance(op, ast.Lt): setb(ln, hi=rv - 1)  # noqa: E701
                    elif isinstance(op, ast.GtE): setb(ln, lo=rv)  # noqa: E701
                    elif isinstance(op, ast.Gt): setb(ln, lo=rv + 1)  # noqa: E701
                    elif isinstance(op, ast.Eq): setb(ln, rv, rv)  # noqa: E701
                elif rn and isinstance(lv, int) and not isinstance(lv, bool):
                    if isinstance(op, ast.LtE): setb(rn, lo=lv)  # noqa: E701
                    elif isinstance(op, ast.Lt): setb(rn, lo=lv + 1)  # noqa: E701
                    elif isinstance(op, ast.GtE): setb(rn, hi=lv)  # noqa: E701
                    elif isinstance(op, ast.Gt): setb(rn, hi=lv - 1)  # noqa: E701
    return out


def policy_from_source(source: str, *, path: str | None = None, entry: str = "check",
                       timeout_s: float = 0.05, verified_digest: str | None = None) -> Policy:
    """Validate and compile policy source; derive its schema from the entry point's signature and Requires.

    The one loader of every policy (:func:`load_policy`, a configuration's policy guard, the shipped policies a
    guard loads itself, a Python factory's own call): ``verified_digest`` pins the source (:func:`check_pin`), and
    while the configuration being built says ``require_verified`` a source without a pin refuses, before it is
    validated or compiled."""
    filename = path or "<policy>"
    check_pin(source, filename, verified_digest)
    tree = validate(source, filename)
    consts: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            consts[node.targets[0].id] = ast.literal_eval(node.value)
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if entry not in fns:
        raise PolicyError(f"policy {filename} refused: no entry function {entry!r} "
                          f"(functions: {', '.join(fns) or 'none'})")
    fn = fns[entry]
    params = []
    requires, ensures = [], []
    for stmt in fn.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name):
            if stmt.value.func.id == "Requires" and stmt.value.args:
                requires.append(stmt.value.args[0])
            elif stmt.value.func.id == "Ensures" and stmt.value.args:
                ensures.append(stmt.value.args[0])
    names = {a.arg for a in fn.args.args}
    bounds = _bounds(requires, names, consts)
    for a in fn.args.args:
        ann = ast.unparse(a.annotation) if a.annotation is not None else ""
        if ann not in _TYPES:
            raise PolicyError(f"policy {filename}:{a.lineno} refused: parameter {a.arg!r} must be annotated "
                              f"int, bool or List[int] (got {ann or 'nothing'})")
        lo, hi = bounds[a.arg] if ann == "int" else (None, None)
        params.append(Param(a.arg, "List[int]" if ann.lower() == "list[int]" else ann, lo, hi))
    ret = ast.unparse(fn.returns) if fn.returns is not None else ""
    if ret not in ("int", "bool"):
        raise PolicyError(f"policy {filename}:{fn.lineno} refused: {entry} must return int or bool (got {ret or 'nothing'})")
    if not ensures:
        raise PolicyError(f"policy {filename}:{fn.lineno} refused: {entry} states no Ensures (no safety property)")
    if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "Result"
               for e in ensures for n in ast.walk(e)):
        raise PolicyError(f"policy {filename}:{fn.lineno} refused: no Ensures of {entry} mentions Result() "
                          "(a contract that says nothing about the verdict constrains nothing)")
    reasons = consts.get("REASONS", ())
    if not (isinstance(reasons, (list, tuple)) and all(isinstance(r, str) for r in reasons)):
        raise PolicyError(f"policy {filename} refused: REASONS must be a list of strings")
    pid = consts.get("POLICY_ID") or (Path(path).stem if path else "policy")
    code = compile_policy(source, filename, timeout_s)
    return Policy(
        id=str(pid), version=str(consts.get("POLICY_VERSION", "0")), source=source, params=tuple(params),
        entry=entry, path=path, reasons=tuple(reasons), returns=ret,
        ensures=tuple(ast.unparse(e) for e in ensures), timeout_s=timeout_s, code=code,
    )


def check_pin(source: str, filename: str, verified_digest: Any) -> None:
    """PolicyError unless ``source`` may load: its SHA-256 (:attr:`Policy.digest`) equals ``verified_digest`` (all
    64 hex digits: a prefix is refused), or no digest is pinned and :func:`~agentguard.core.loading.verified_required`
    is off (``[stack] require_verified``, ``load_stack(..., require_verified=True)``, the service's setting)."""
    from ..core.loading import verified_required

    if verified_digest is None:
        if verified_required():
            raise PolicyError(f"policy {filename}: no verified_digest pinned and require_verified is on: refusing to "
                              "load an unverified policy (pin the Policy.digest Nagini proved)")
        return
    if isinstance(verified_digest, str) and len(verified_digest) < 64:
        raise PolicyError(f"policy {filename}: verified_digest {verified_digest!r} is a prefix; pin the full SHA-256 "
                          "(Policy.digest, 64 hex digits; another source can match a short prefix): refusing to run "
                          "unverified code")
    digest = hashlib.sha256(source.encode()).hexdigest()
    if digest != verified_digest:
        raise PolicyError(f"policy {filename} has digest {digest}, not the verified {verified_digest}: refusing to run "
                          "unverified code")


def load_policy(path: str | Path, *, entry: str = "check", timeout_s: float = 0.05,
                verified_digest: str | None = None) -> Policy:
    """Read a policy file and load it through the sandbox (PolicyError on refusal, InputError if unreadable);
    ``verified_digest`` and ``require_verified`` as in :func:`policy_from_source`."""
    from ..core.errors import InputError

    p = Path(path)
    try:
        source = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read policy file {p}: {exc.strerror}") from None
    return policy_from_source(source, path=str(p), entry=entry, timeout_s=timeout_s, verified_digest=verified_digest)
