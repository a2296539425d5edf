"""The contract vocabulary of a policy file: which Nagini constructs constrain (and where they may stand),
and which would add facts without proof (refused wherever they are mentioned). Used by the sandbox's
:func:`~agentguard.policies.sandbox.validate` before anything else reads the file."""

from __future__ import annotations

import ast
import io
import tokenize
from typing import Any, Callable

from ..core.errors import PolicyError

__all__ = ["CONTRACT_NAMES", "CONTRACT_ONLY_TERMS", "CONTRACT_STATEMENTS", "ESCAPE_CONSTRUCTS", "PreconditionViolation",
           "RUNTIME_CONTRACTS", "check_contract_placement", "check_encoding", "check_escapes", "err", "pre_failed"]


def err(node: ast.AST | None, msg: str, filename: str) -> PolicyError:
    """A one-line PolicyError naming the file and line."""
    line = getattr(node, "lineno", "?")
    return PolicyError(f"policy {filename}:{line} refused: {msg}")


CONTRACT_NAMES = frozenset({
    "Requires", "Ensures", "Invariant", "Assert", "Implies", "Result", "Old", "Pure", "Acc",
    "list_pred", "Forall", "Exists", "Decreases",
})
#: contract statements: only as a statement of their own (``Requires``/``Ensures``/``Decreases`` at the top
#: of a function body, ``Invariant`` at the top of a loop body, ``Assert`` anywhere in a function)
CONTRACT_STATEMENTS = frozenset({"Requires", "Ensures", "Invariant", "Assert", "Decreases"})
#: contract terms that mean something only inside a contract (at run time they are stand-ins)
CONTRACT_ONLY_TERMS = frozenset({"Result", "Old", "Acc", "list_pred", "Forall", "Exists"})
#: Nagini constructs that add facts without proving them, or switch proof obligations off: one of them in
#: a policy file would let it be "verified" with a hidden bug (``Assume(False)`` proves anything), so any
#: mention of one is refused at load, with the reason
ESCAPE_CONSTRUCTS = {
    "Assume": "assumes a fact without proof (Assume(False) makes any contract 'verified')",
    "Inhale": "adds a fact or permission without proof",
    "Exhale": "removes proof obligations without checking them where they are needed",
    "Fold": "predicate folding is not part of the policy language (it can hide facts from the proof)",
    "Unfold": "predicate unfolding is not part of the policy language (it can hide facts from the proof)",
    "Unfolding": "predicate unfolding is not part of the policy language (it can hide facts from the proof)",
    "Predicate": "user predicates are not part of the policy language (an abstract predicate is an unproved fact)",
    "Reveal": "opaque functions are not part of the policy language",
    "Opaque": "opaque functions hide their body from the proof",
    "Trusted": "marks code as trusted: Nagini would skip its proof",
    "ContractOnly": "Nagini would use the contract and never verify the body",
    "Ghost": "ghost code is not part of the policy language",
    "GhostReturns": "ghost code is not part of the policy language",
    "Inline": "inlined functions are not part of the policy language",
    "Refute": "Refute is not part of the policy language",
    "Exsures": "exception contracts are not part of the policy language",
    "Let": "Let is not part of the policy language",
    "Declassify": "information-flow constructs are not part of the policy language",
    "Low": "information-flow constructs are not part of the policy language",
    "LowVal": "information-flow constructs are not part of the policy language",
    "LowEvent": "information-flow constructs are not part of the policy language",
    "LowExit": "information-flow constructs are not part of the policy language",
    "AllLow": "information-flow constructs are not part of the policy language",
    "PreservesLow": "information-flow constructs are not part of the policy language",
    "TerminatesSif": "information-flow constructs are not part of the policy language",
    "Wildcard": "wildcard permissions are not part of the policy language",
    "Rd": "read permissions other than Acc(list_pred(...)) are not part of the policy language",
    "ARP": "abstract read permissions are not part of the policy language",
    "MayCreate": "object permissions are not part of the policy language",
    "MaySet": "object permissions are not part of the policy language",
}

class PreconditionViolation(PolicyError):
    """The arguments fall outside the policy's ``Requires`` (where its proof says nothing): fail closed."""


# -- the run-time meaning of the contract terms (ensures/invariants are proved by Nagini and dropped)

def pre_failed(text: str) -> None:
    """What a failed ``Requires`` runs: raise :class:`PreconditionViolation` (the guard fails closed)."""
    raise PreconditionViolation(f"arguments violate the policy's precondition {text}")


def _implies(a: Any, b: Any) -> bool:
    return (not a) or bool(b)


def _acc(*args: Any) -> bool:
    return True


def _pure(f: Callable) -> Callable:
    return f


def _quantifier(every: bool) -> Callable[..., bool]:
    """``Forall``/``Exists`` at run time. They run only where a ``Requires`` holds them (Ensures/Invariant/Assert
    are dropped): a precondition the run time took as True would let inputs the proof never covered through.
    So a quantifier over a list (or range) with a function of the file is evaluated; anything else (a type as
    the domain: ``Forall(int, ...)``) cannot be checked here and fails closed."""
    name = "Forall" if every else "Exists"

    def q(domain: Any, pred: Any = None, *rest: Any) -> bool:
        if type(domain) not in (list, tuple, range) or not callable(pred) or rest:
            raise PreconditionViolation(f"{name} over {type(domain).__name__} cannot be checked at run time")
        seen = (pred(x) is True for x in domain)
        return all(seen) if every else any(seen)
    return q


RUNTIME_CONTRACTS: dict[str, Any] = {
    "Implies": _implies, "Acc": _acc, "list_pred": lambda x: x, "Pure": _pure, "Forall": _quantifier(True),
    "Exists": _quantifier(False), "Old": lambda x: x,
}



def check_escapes(tree: ast.Module, filename: str) -> None:
    """Refuse every mention of a construct that adds facts without proof (a name, an import, a decorator)."""
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.alias):
            name = node.name
        if name in ESCAPE_CONSTRUCTS:
            raise err(node, f"{name} {ESCAPE_CONSTRUCTS[name]}", filename)


def _contract_call(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CONTRACT_NAMES:
        return node.func.id
    return None


def check_contract_placement(tree: ast.Module, filename: str) -> None:
    """Contracts only where Nagini checks them and the run time treats them accordingly.

    ``Requires``/``Ensures``/``Decreases`` are statements at the top of a function body (before any code),
    ``Invariant`` at the top of a loop body, ``Assert`` a statement of a function; ``Result``/``Old``/
    ``Acc``/``list_pred``/``Forall``/``Exists`` appear only inside those statements (``Result``/``Old`` only in
    ``Ensures``/``Invariant``/``Assert``); ``Pure`` only as a decorator. Anywhere else the run time would
    evaluate a stand-in (``Forall`` is True at run time) where Nagini reasons about the real thing.
    """
    allowed_stmt: dict[int, str] = {}  # id(Expr) -> contract name, for contract statements in a legal place

    def scan_body(body: list[ast.stmt], lead: frozenset[str]) -> None:
        leading = True
        for stmt in body:
            name = _contract_call(stmt.value) if isinstance(stmt, ast.Expr) else None
            if name in lead and leading:
                allowed_stmt[id(stmt)] = name
                continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and leading:
                continue  # docstring
            leading = False
            if name == "Assert":
                allowed_stmt[id(stmt)] = name

    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        scan_body(fn.body, frozenset({"Requires", "Ensures", "Decreases"}))
        for node in ast.walk(fn):
            if isinstance(node, ast.For):
                scan_body(node.body, frozenset({"Invariant"}))
            elif isinstance(node, ast.If):
                scan_body(node.body, frozenset())
                scan_body(node.orelse, frozenset())

    def visit(node: ast.AST, inside: str | None) -> None:
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                if not (isinstance(dec, ast.Name) and dec.id == "Pure"):
                    raise err(dec, "only the @Pure decorator is allowed", filename)
            for child in [*node.args.args, *node.body]:
                visit(child, None)
            return
        if isinstance(node, ast.Expr) and id(node) in allowed_stmt:
            call = node.value
            assert isinstance(call, ast.Call)
            for a in call.args:
                visit(a, allowed_stmt[id(node)])
            return
        name = _contract_call(node)
        if name in CONTRACT_STATEMENTS:
            where = ("at the top of a loop body" if name == "Invariant" else "as a statement of a function"
                     if name == "Assert" else "at the top of a function body, before any code")
            raise err(node, f"{name}(...) is allowed only {where}", filename)
        if name in CONTRACT_ONLY_TERMS:
            if inside is None:
                raise err(node, f"{name}(...) is allowed only inside a contract", filename)
            if name in ("Result", "Old") and inside not in ("Ensures", "Invariant", "Assert"):
                raise err(node, f"{name}() is allowed only in Ensures/Invariant/Assert", filename)
        if isinstance(node, ast.Name) and node.id == "Pure":
            raise err(node, "Pure is allowed only as a decorator", filename)
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    for top in tree.body:
        visit(top, None)


def check_encoding(source: str, filename: str) -> None:
    """The file's bytes are read as UTF-8 by every reader: Nagini reads a policy file through ``tokenize.open``,
    which obeys a PEP 263 declaration, while the gate reads UTF-8 text. With ``# coding: utf-7`` the comment
    ``# +AAo-    if amount > LIMIT: return 1`` is a line of code to the verifier and a comment to the run time: the
    proof is of another program. Any declared encoding but UTF-8 is refused."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source.encode("utf-8", "surrogatepass")).readline)
    except SyntaxError as exc:
        raise PolicyError(f"policy {filename}:1 refused: {exc.msg}") from None
    if encoding not in ("utf-8", "utf-8-sig"):
        line = 1 if "coding" in source.split("\n", 1)[0] else 2
        raise PolicyError(f"policy {filename}:{line} refused: it declares the source encoding {encoding!r} (only "
                          "UTF-8: the verifier would read other code than the run time)")
