"""The layout's rules, checked statically and in a fresh interpreter (issue 12).

Data flows one way: core -> spec -> mechanisms (predictive, calibration, policies, control, llm) ->
adapters (integrations, server, cli). Benchmarks (``agentguard.bench``), demos (``agentguard.demo``)
and environments (``agentguard.envs``) use the library and are never used by it. There are no import
cycles, no function over 120 lines and no module over 500 lines.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "agentguard"
MECHANISMS = ("predictive", "calibration", "policies", "control")
# what each layer may import from inside agentguard (top-level sub-package names)
ALLOWED = {
    "core": {"core"},
    "spec": {"core", "spec"},
    "llm": {"core", "llm"},
    "predictive": {"core", "spec", "predictive"},
    "calibration": {"core", "spec", "calibration", "llm"},
    "policies": {"core", "spec", "policies", "llm"},
    "control": {"core", "spec", "control", "llm"},
}
NEVER_FROM_LIBRARY = ("envs", "bench", "demo")
MAX_FUNCTION_LINES = 120
MAX_MODULE_LINES = 500


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py")) if "migrations" not in p.parts}


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path, modules: set[str], *, top_level_only: bool) -> set[str]:
    """agentguard modules imported by ``name`` (resolved to the longest existing module name)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found: set[str] = set()

    def resolve(target: str) -> str | None:
        parts = target.split(".")
        while parts:
            cand = ".".join(parts)
            if cand in modules:
                return cand
            parts.pop()
        return None

    def record(node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                r = resolve(a.name) if a.name.startswith("agentguard") else None
                if r:
                    found.add(r)
            return
        if node.level:
            anchor = base[: len(base) - (node.level - 1)]
            mod = ".".join(anchor + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        if not mod.startswith("agentguard"):
            return
        for a in node.names:
            r = f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else resolve(mod)
            if r:
                found.add(r)

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                record(node)
            elif isinstance(node, ast.If) and _is_type_checking(node):
                continue
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not top_level_only:
                    visit(node.body)
            else:  # if / try / with / class bodies run at import time
                for field in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, field, []) or []:
                        if isinstance(child, ast.ExceptHandler):
                            visit(child.body)
                        elif isinstance(child, ast.stmt):
                            visit([child])

    visit(tree.body)
    found.discard(name)
    return found


def _graph(top_level_only: bool) -> dict[str, set[str]]:
    src = _sources()
    mods = set(src)
    return {m: _imports(m, p, mods, top_level_only=top_level_only) for m, p in src.items()}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_layers_import_only_downwards():
    """No module under core, spec, llm or a mechanism imports envs, bench, demo, an adapter, or a
    layer above it, lazily or not."""
    bad = []
    for mod, deps in _graph(top_level_only=False).items():
        layer = _layer(mod)
        if layer not in ALLOWED:
            continue
        for dep in deps:
            if _layer(dep) and _layer(dep) not in ALLOWED[layer]:
                bad.append(f"{mod} -> {dep}")
    assert not bad, "imports against the layering:\n" + "\n".join(sorted(bad))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    return out


def test_no_import_cycles():
    """Imports, lazy ones inside functions included (TYPE_CHECKING blocks aside), form no cycle.
    A package ``__init__`` that re-exports its submodules is part of the graph like any module."""
    cycles = _cycles(_graph(top_level_only=False))
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_mechanisms_import_no_benchmark_demo_or_environment():
    code = ("import sys, json; import agentguard.policies, agentguard.predictive, agentguard.calibration, "
            "agentguard.control; print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out)
    offending = [m for m in loaded if len(m.split(".")) > 1 and m.split(".")[0] == "agentguard"
                 and m.split(".")[1] in NEVER_FROM_LIBRARY]
    heavy = [m for m in loaded if m.split(".")[0] in ("torch", "stormpy", "transformers")]
    assert not offending, offending
    assert not heavy, heavy


def test_no_function_over_120_lines_and_no_module_over_500():
    long_functions, long_modules = [], []
    for name, path in _sources().items():
        text = path.read_text()
        n = len(text.splitlines())
        if n > MAX_MODULE_LINES:
            long_modules.append(f"{name}: {n} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.append(f"{name}.{node.name}: {length} lines")
    assert not long_functions, long_functions
    assert not long_modules, long_modules
