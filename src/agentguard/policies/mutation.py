"""Mutation testing of policies: how many wrong versions of a policy do its checks reject? (issue 26)

Why a mutation tool of our own, over the AST, rather than mutmut or cosmic-ray: those mutate importable
modules and judge a mutant by a project's pytest run. A policy file is not importable (it imports
``nagini_contracts``, which only the Nagini venv has) and each mutant must be judged by *our* pipeline, stage
by stage (the sandbox, the specification's contract, the generated tests, exhaustive comparison, Nagini),
and tagged with where it struck (the contract, the code, the constants). That is ~150 lines over ``ast``.

Operators (each applied at every site where it fits):

- ``ror``: relational operator replacement at a boundary (``<``<->``<=``, ``>``<->``>=``, ``==``<->``!=``,
  ``in``<->``not in``);
- ``const``: an int literal, or a name of an int constant used in code, replaced by its value +1 / -1
  (boundary shifts and swapped enum values); a module-level int constant's value +1;
- ``negate``: an ``if`` condition inverted; ``not x`` -> ``x``; ``and`` <-> ``or``;
- ``drop``: an ``if`` statement removed (a missing branch), or a contract clause removed;
- ``return``: a returned verdict replaced by ALLOW, or ALLOW by a denial.

A mutant in the entry point's code whose mutated expression also occurs, identically, in its contract gets a
*paired* twin mutated in both places (the issue's "off-by-one in code and contract").
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Iterator

__all__ = ["Mutant", "mutants"]

_ROR = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
        ast.In: ast.NotIn, ast.NotIn: ast.In}
_CONTRACT_CALLS = {"Requires", "Ensures", "Invariant", "Assert", "Decreases"}


@dataclass(frozen=True)
class Mutant:
    """One mutant: its source, the operator, where it struck (``code``/``contract``/``code+contract``/
    ``constants``), the line and a one-line description."""

    id: str
    source: str
    operator: str
    where: str
    line: int
    description: str


def _is_contract_stmt(node: ast.AST) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
            and node.value.func.id in _CONTRACT_CALLS)


def _regions(tree: ast.Module) -> dict[int, str]:
    """id(node) -> 'contract' | 'code' | 'constants' for every node of the file."""
    out: dict[int, str] = {}
    for top in tree.body:
        if isinstance(top, ast.Assign):
            for n in ast.walk(top):
                out[id(n)] = "constants"
        elif isinstance(top, ast.FunctionDef):
            for n in ast.walk(top):
                out.setdefault(id(n), "code")
            for st in ast.walk(top):
                if _is_contract_stmt(st):
                    for n in ast.walk(st):
                        out[id(n)] = "contract"
    return out


def _int_constants(tree: ast.Module) -> dict[str, int]:
    consts = {}
    for top in tree.body:
        if isinstance(top, ast.Assign) and len(top.targets) == 1 and isinstance(top.targets[0], ast.Name):
            v = top.value
            if isinstance(v, ast.Constant) and isinstance(v.value, int) and not isinstance(v.value, bool):
                consts[top.targets[0].id] = v.value
    return consts


def _edits(tree: ast.Module, consts: dict[str, int], entry: str) -> Iterator[tuple[str, ast.AST, object, str]]:
    """(operator, node, how, description): ``how`` is a replacement node, or 'drop' (remove the statement)."""
    allow_name = "ALLOW" if "ALLOW" in consts else None
    deny_names = [k for k, v in consts.items() if k != allow_name and allow_name is not None
                  and v != consts[allow_name] and k.isupper()]
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _ROR:
                    new = copy.deepcopy(node)
                    new.ops[i] = _ROR[type(op)]()
                    yield "ror", node, new, f"{ast.unparse(node)} -> {ast.unparse(new)}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            for d in (1, -1):
                yield "const", node, ast.Constant(node.value + d), f"{node.value} -> {node.value + d}"
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in consts:
            for d in (1, -1):
                v = consts[node.id] + d
                yield "const", node, ast.Constant(v), f"{node.id} -> {v}"
        elif isinstance(node, ast.If):
            new = copy.deepcopy(node)
            new.test = ast.UnaryOp(ast.Not(), new.test)
            yield "negate", node, new, f"if {ast.unparse(node.test)} -> if not (...)"
            yield "drop", node, "drop", f"branch 'if {ast.unparse(node.test)}' removed"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield "negate", node, copy.deepcopy(node.operand), f"{ast.unparse(node)} -> {ast.unparse(node.operand)}"
        elif isinstance(node, ast.BoolOp):
            new = copy.deepcopy(node)
            new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            yield "negate", node, new, f"{'and' if isinstance(node.op, ast.And) else 'or'} swapped"
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and allow_name and deny_names:
            alt = allow_name if node.value.id != allow_name else deny_names[0]
            yield "return", node, ast.Return(ast.Name(alt, ast.Load())), f"return {node.value.id} -> return {alt}"
        if _is_contract_stmt(node):
            yield "drop", node, "drop", f"contract clause removed: {ast.unparse(node)}"


def mutants(source: str, entry: str = "check") -> list[Mutant]:
    """Every mutant of a policy file (deduplicated by resulting source; none equal to the original)."""
    base = ast.parse(source)
    original = ast.unparse(base)
    consts = _int_constants(base)
    seen: set[str] = {original}
    out: list[Mutant] = []
    sites = list(_edits(base, consts, entry))
    for k, (op, node, how, desc) in enumerate(sites):
        tree = ast.parse(source)
        regions = _regions(tree)
        # find the node at the same position in the fresh tree
        twin = _same(tree, base, node)
        if twin is None:
            continue
        where = regions.get(id(twin), "code")
        if isinstance(twin, ast.Constant) and where == "constants" and op == "const" and _delta(how, twin) < 0:
            continue  # a module constant: +1 is enough (a swapped enum value)
        variants = [([twin], where)]
        if where == "code" and how != "drop":
            dump = ast.dump(twin)
            pair = [n for n in ast.walk(tree) if regions.get(id(n)) == "contract" and ast.dump(n) == dump]
            if pair:
                variants.append(([twin, *pair], "code+contract"))
        for targets, w in variants:
            t2 = ast.parse(source)
            tgt = [_same(t2, tree, x) for x in targets]
            mutated = _replace(t2, [x for x in tgt if x is not None], how)
            if mutated is None:
                continue
            try:
                text = ast.unparse(mutated)
                compile(text, "<mutant>", "exec", dont_inherit=True)
            except (SyntaxError, ValueError):
                continue
            if text in seen:
                continue
            seen.add(text)
            out.append(Mutant(f"m{len(out) + 1:03d}", text + "\n", op, w, getattr(node, "lineno", 0),
                              desc + (" (in code and contract)" if w == "code+contract" else "")))
    return out


def _delta(how: object, node: ast.Constant) -> int:
    return (how.value - node.value) if isinstance(how, ast.Constant) else 0  # type: ignore[attr-defined]


def _same(tree: ast.AST, ref: ast.AST, node: ast.AST) -> ast.AST | None:
    """The node of ``tree`` at the position ``node`` has in ``ref`` (both parsed from the same source)."""
    for a, b in zip(ast.walk(tree), ast.walk(ref)):
        if b is node:
            return a
    return None


def _replace(tree: ast.Module, targets: list[ast.AST], how: object) -> ast.Module | None:
    ids = {id(t) for t in targets}

    def rec(node: ast.AST) -> ast.AST | None:
        if id(node) in ids:
            return None if how == "drop" else copy.deepcopy(how)  # type: ignore[arg-type]
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                new = []
                for v in value:
                    if isinstance(v, ast.AST):
                        r = rec(v)
                        if r is not None:
                            new.append(r)
                    else:
                        new.append(v)
                if field in ("body",) and not new and isinstance(node, (ast.FunctionDef, ast.If, ast.For)):
                    new = [ast.Pass()]
                setattr(node, field, new)
            elif isinstance(value, ast.AST):
                r = rec(value)
                if r is None:
                    return None if how != "drop" else node
                setattr(node, field, r)
        return node

    out = rec(tree)
    return ast.fix_missing_locations(out) if out is not None else None  # type: ignore[arg-type]


# ------------------------------------------------------------------ judging a mutant, stage by stage

#: stages, in order; the first that rejects a mutant names its fate
STAGES = ("refused-at-load", "refused-contract", "killed-by-tests", "equivalent", "needs-nagini")


def judge(source: str, spec, reference_table: list, *, examples: int = 100) -> tuple[str, str]:
    """(stage, why) for one mutant of a policy with specification ``spec``.

    ``reference_table`` is :func:`~agentguard.policies.conformance.behaviour` of the original policy (or of the
    spec's reference predicate): a mutant with the same table on every fact of the finite domain is
    *equivalent* (it returns the same verdict for every extracted fact), shown exhaustively, not sampled."""
    from ..core.errors import PolicyError
    from .conformance import behaviour, contract_problems
    from .model import policy_from_source
    from .testing import run_tests

    try:
        pol = policy_from_source(source, path="mutant.py")
    except PolicyError as exc:
        return "refused-at-load", str(exc)
    problems = contract_problems(source, spec)
    if problems:
        return "refused-contract", problems[0]
    rep = run_tests(pol, examples=examples)
    if not rep.passed:
        return "killed-by-tests", rep.failures[0].describe()
    table = behaviour(lambda f: pol.evaluate(f).code, spec)
    if table == reference_table:
        return "equivalent", "returns the original's verdict on every fact of the finite domain"
    diff = next(f for f, a, b in zip(spec.facts(), table, reference_table) if a != b)
    return "needs-nagini", f"differs from the rule on {diff} (the generated tests missed it)"
