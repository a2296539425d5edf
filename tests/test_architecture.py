"""The layout's rules, checked statically and in a fresh interpreter (issues 12 and 24).

Data flows one way. Every module of ``agentguard`` sits in one layer (its sub-package, or the
top-level module's own name) and imports, lazily or not, only the layers ``ALLOWED`` lists for it:

====================  ================================================================================
layer                 may import
====================  ================================================================================
``core``              nothing else: types, Guard, Pipeline, strategies, audit, RunMemory, load_attr
``spec``              core
mechanisms            core, spec, and ``llm`` (calibration, policies, control); ``llm`` core only;
                      no mechanism imports another (predictive, calibration, policies, control, llm)
``testing``           core (``agentguard.testing``: ``check_guard``, the guard conformance checker; it
                      sits beside the mechanisms)
``agentguard``        the top-level ``__init__``: core eagerly, mechanisms and ``testing`` lazily (its
                      ``_LAZY`` table); it is the facade users import, above the mechanisms
``config``            the library below it (``config.py`` builds guards from the mechanisms, by
                      ``module:attr`` strings resolved with ``core.loading.load_attr``)
``asgi``              core only (the one HTTP hardening middleware; framework-neutral)
``integrations``,     the library below them (config, asgi included); neither imports the other
``server``
``envs``              the library up to ``config`` (environments use guards, not adapters)
``bench``             the whole library, adapters included (latency benchmarks time them), and envs
``demo``              what bench may import, and bench (the demos replay a benchmark's evaluation)
``cli``, ``__main__`` everything (``__main__`` only calls ``cli.main``)
====================  ================================================================================

So nothing in the library imports envs, bench, demo or cli. An import counts wherever it is written
(module level, inside a function, in a ``try``), except under ``if TYPE_CHECKING:``; a string literal
that names an agentguard module (``"agentguard.policies.rules:ToolRuleGuard"`` in a factory table,
``"agentguard.predictive"`` in a ``_LAZY`` table, ``sys.modules.get("agentguard...")``) counts too.
A new package must be placed in ``ALLOWED`` before its first module lands. There are no import
cycles, no function over 120 lines and no module over 500 lines.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "agentguard"
MECHANISMS = ("predictive", "calibration", "policies", "control", "llm")
# the layers a library module may lean on, up to and including config (the guard-building layer)
_GUARD_LIBRARY = {"core", "spec", *MECHANISMS, "testing", "agentguard", "config"}
_LIBRARY = _GUARD_LIBRARY | {"asgi", "integrations", "server"}
# what each layer may import from inside agentguard (top-level sub-package or top-level module names)
ALLOWED: dict[str, set[str]] = {
    "core": {"core"},
    "spec": {"core", "spec"},
    "llm": {"core", "llm"},
    "predictive": {"core", "spec", "predictive"},
    "calibration": {"core", "spec", "calibration", "llm"},
    "policies": {"core", "spec", "policies", "llm"},
    "control": {"core", "spec", "control", "llm"},
    "testing": {"core", "testing"},
    "agentguard": {"core", "spec", *MECHANISMS, "testing", "agentguard"},
    "config": set(_GUARD_LIBRARY),
    "asgi": {"core", "asgi"},
    "integrations": _GUARD_LIBRARY | {"asgi", "integrations"},
    "server": _GUARD_LIBRARY | {"asgi", "server"},
    "envs": _GUARD_LIBRARY | {"envs"},
    "bench": _LIBRARY | {"envs", "bench"},
    "demo": _LIBRARY | {"envs", "bench", "demo"},
    "cli": _LIBRARY | {"envs", "bench", "demo", "cli"},
    "__main__": _LIBRARY | {"envs", "bench", "demo", "cli", "__main__"},
}
NEVER_FROM_LIBRARY = ("envs", "bench", "demo", "cli")
MAX_FUNCTION_LINES = 120
MAX_MODULE_LINES = 500
_MODULE_STRING = re.compile(r"agentguard(\.[A-Za-z_][A-Za-z_0-9]*)+(:[A-Za-z_][A-Za-z_0-9.]*)?")


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


def _imports(name: str, path: Path, modules: set[str], *, top_level_only: bool, strings: bool = False) -> set[str]:
    """agentguard modules imported by ``name`` (resolved to the longest existing module name); with
    ``strings``, also those a string literal names (``"agentguard.mod:attr"``, ``"agentguard.mod"``)."""
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
    if strings:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_STRING.fullmatch(node.value):
                r = resolve(node.value.partition(":")[0])
                if r:
                    found.add(r)
    found.discard(name)
    return found


def _graph(top_level_only: bool, strings: bool = False) -> dict[str, set[str]]:
    src = _sources()
    mods = set(src)
    return {m: _imports(m, p, mods, top_level_only=top_level_only, strings=strings) for m, p in src.items()}


def _layer(module: str) -> str:
    """``agentguard.<x>...`` -> ``x`` (a sub-package or a top-level module); ``agentguard`` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _violations(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{mod} -> {dep}" for mod, deps in graph.items() for dep in deps
                  if _layer(dep) not in ALLOWED.get(_layer(mod), set()))


def test_every_module_sits_in_a_layer():
    """A new package (or top-level module) is placed in ALLOWED before it lands, so nothing escapes."""
    unplaced = sorted({_layer(m) for m in _sources()} - set(ALLOWED))
    assert not unplaced, f"modules in no layer (add them to ALLOWED in tests/test_architecture.py): {unplaced}"


def test_layers_import_only_downwards():
    """No module imports a layer above its own (or a peer it is not allowed), lazily, by string or not;
    in particular nothing in the library imports envs, bench, demo or cli."""
    bad = _violations(_graph(top_level_only=False, strings=True))
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def test_the_layering_is_a_partial_order():
    """ALLOWED itself has no cycle between two layers (each layer may import itself), and no library
    layer may reach a user of the library."""
    graph = {layer: deps - {layer} for layer, deps in ALLOWED.items()}
    assert not _cycles(graph), _cycles(graph)
    for layer in set(ALLOWED) - {"envs", "bench", "demo", "cli", "__main__"}:
        assert not ALLOWED[layer] & set(NEVER_FROM_LIBRARY), layer


def test_the_layer_check_catches_lazy_and_string_imports(tmp_path):
    """The checker itself: a lazy import inside a function, a ``from .. import`` and a factory string
    pointing upwards are all found; an import under ``if TYPE_CHECKING:`` is not."""
    mods = {"agentguard", "agentguard.core", "agentguard.core.x", "agentguard.cli", "agentguard.server",
            "agentguard.integrations", "agentguard.envs", "agentguard.config"}
    src = tmp_path / "x.py"
    src.write_text("from typing import TYPE_CHECKING\n"
                   "if TYPE_CHECKING:\n    from ..config import A\n"
                   "def f():\n    from ..cli import main\n"
                   "try:\n    from .. import envs\nexcept ImportError:\n    pass\n"
                   "T = {'a': 'agentguard.integrations.langchain:X', 'b': 'agentguard.server'}\n")
    found = _imports("agentguard.core.x", src, mods, top_level_only=False, strings=True)
    assert found == {"agentguard.cli", "agentguard.envs", "agentguard.integrations", "agentguard.server"}
    assert _violations({"agentguard.core.x": found}) == [
        "agentguard.core.x -> agentguard.cli", "agentguard.core.x -> agentguard.envs",
        "agentguard.core.x -> agentguard.integrations", "agentguard.core.x -> agentguard.server"]
    assert _violations({"agentguard.server.y": {"agentguard.integrations"}}) == [
        "agentguard.server.y -> agentguard.integrations"]
    assert _violations({"agentguard.asgi.y": {"agentguard.config"}}) == ["agentguard.asgi.y -> agentguard.config"]
    assert _violations({"agentguard.bench.y": {"agentguard.cli.options"}}) == [
        "agentguard.bench.y -> agentguard.cli.options"]
    assert _violations({"agentguard.cli.y": {"agentguard.bench", "agentguard.server"}}) == []


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


def test_the_library_imports_no_benchmark_demo_environment_or_cli():
    """In a fresh interpreter: importing the mechanisms, config and testing loads no envs, bench, demo or
    cli module, and no torch, stormpy or transformers."""
    code = ("import sys, json; import agentguard.policies, agentguard.predictive, agentguard.calibration, "
            "agentguard.control, agentguard.llm, agentguard.spec, agentguard.config, agentguard.testing; "
            "print(json.dumps(sorted(sys.modules)))")
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


# -- tests mirror src (issue 24) ---------------------------------------------------------------------
# tests/<package>/test_<module>[_<aspect>].py tests src/agentguard/<package>/<module>.py (``test_init`` the
# package's ``__init__``; ``test_docs`` a page of docs/); top-level modules are tests/test_<module>.py.
# integrations and server join when their tests are renamed after their modules (their cross-cutting tests
# - one path, fail-closed paths, concurrency - need an aspect convention first).
MIRRORED = ("core", "spec", "predictive", "calibration", "policies", "policies/shell", "control", "llm", "envs", "envs/driving",
            "envs/household", "bench", "cli", "asgi")
# cross-cutting tests at the top of tests/ (not a module's): the layering, the public faces, mypy, the README
TOP_LEVEL_TESTS = {"architecture", "public_api", "typecheck", "readme", "readme_results", "wheel",
                   "docs_examples"}  # docs_examples: every Python block of README and docs/ is run
# modules with logic whose tests still live in another module's file (or that have none of their own yet);
# a module leaves this list when its test file lands, and a new module cannot join it silently
NO_OWN_TEST_FILE_YET = {
    "core": {"enforcement", "errors", "lazy"},
    "spec": {"_expr_base", "_expr_interp", "pctl_state"},
    "predictive": {"_learn_rows", "draw", "linsolve", "load", "prism_storm", "prism_syntax",
                   "reachability", "reactive", "result", "rewards"},
    "calibration": {"metrics", "risks"},
    "policies": {"_bounded_ops", "_nagini_worker", "audit"},
    "control": {"bellman"},
    "llm": {"base", "openai_compat"},
    "envs": {"data"},
    "envs/driving": {"encoders"},
    "envs/household": {"actions", "hazards", "objects", "replay", "rules", "scene"},
    "bench": {"asb", "calibration", "commerce", "driving", "household_eval", "llm_driver", "policy_latency",
              "provenance_latency"},
    "cli": {"envs"},
}
TESTS = SRC.parent / "tests"


def _tested_module(test_stem: str, modules: set[str]) -> str | None:
    name = test_stem.removeprefix("test_")
    hits = [m for m in modules if name == m or name.startswith(m + "_")]
    return max(hits, key=len) if hits else None


def test_tests_mirror_src():
    """Every test file of a mirrored package is named after a module of that package, and every module
    of it has a test file of its own (or is listed in NO_OWN_TEST_FILE_YET)."""
    misnamed, untested, stale = [], [], []
    for package in MIRRORED:
        modules = {"init" if p.stem == "__init__" else p.stem for p in (PKG / package).glob("*.py")} | {"docs"}
        tested = set()
        for test in sorted((TESTS / package).glob("test_*.py")):
            hit = _tested_module(test.stem, modules)
            if hit is None:
                misnamed.append(str(test.relative_to(TESTS)))
            tested.add(hit)
        known = NO_OWN_TEST_FILE_YET.get(package, set())
        untested += [f"{package}/{m}.py" for m in sorted(modules - tested - known - {"init", "docs"})]
        stale += [f"{package}/{m}" for m in sorted(known & tested)]
    for test in sorted(TESTS.glob("test_*.py")):
        name = test.stem.removeprefix("test_")
        if name not in TOP_LEVEL_TESTS and not (PKG / f"{name}.py").exists():
            misnamed.append(test.name)
    assert not misnamed, f"test files named after no module: {misnamed}"
    assert not untested, f"modules without a test file of their own: {untested}"
    assert not stale, f"modules listed in NO_OWN_TEST_FILE_YET that now have a test file: {stale}"
