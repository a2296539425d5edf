"""Every module's ``__all__`` is a literal, sorted list of names the module defines or imports
(DESIGN.md: re-exports through a sorted ``__all__`` that a test enforces). Read statically: no import."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "agentguard"


def _modules():
    for p in sorted(SRC.rglob("*.py")):
        if "migrations" in p.parts:
            continue
        yield p, ast.parse(p.read_text(), filename=str(p))


def _bound_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        names.add(n.id)
        elif isinstance(node, (ast.If, ast.Try)):     # conditional imports/definitions
            sub = ast.Module(body=list(ast.iter_child_nodes(node)), type_ignores=[])
            sub.body = [b for b in sub.body if isinstance(b, ast.stmt)]
            names |= _bound_names(sub)
    return names


def _lazy_names(tree: ast.Module) -> set[str]:
    """Names a module serves through a module-level ``__getattr__`` from a literal name -> module dict."""
    if not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
        return set()
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            out.update(k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return out


def test_every_all_is_a_sorted_literal_of_bound_names():
    checked = 0
    for path, tree in _modules():
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                    for t in node.targets):
                rel = path.relative_to(SRC)
                assert isinstance(node.value, ast.List), f"{rel}: __all__ must be a literal list"
                names = [ast.literal_eval(e) for e in node.value.elts]
                assert names == sorted(names), f"{rel}: __all__ is not sorted"
                assert len(set(names)) == len(names), f"{rel}: __all__ repeats a name"
                missing = set(names) - _bound_names(tree) - _lazy_names(tree)
                assert not missing, f"{rel}: __all__ names undefined {sorted(missing)}"
                checked += 1
    assert checked >= 30
