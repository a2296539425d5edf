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


# -- completeness (issue 12): every public name is exported by its package, like httpx's test ----------
PACKAGES = ("core", "predictive", "calibration", "policies", "control", "spec", "llm")
# Modules whose public names are deliberately not re-exported by their package, with the reason.
INTERNAL_MODULES = {
    "policies/_nagini_worker.py": "subprocess entry point run inside the Nagini virtual environment",
    "predictive/linsolve.py": "the linear solvers behind check(); users pick an engine, not a solver",
    "predictive/prism_syntax.py": "the text-level helpers of read_prism",
    "predictive/storm_engine.py": "the Storm back end behind check(engine='storm') and check_storm",
}


def _all_of(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return [ast.literal_eval(e) for e in node.value.elts]
    return None


def _missing_exports(package: str) -> list[str]:
    pkg = SRC / package
    init = _all_of(ast.parse((pkg / "__init__.py").read_text())) or []
    missing = []
    for path in sorted(pkg.glob("*.py")):
        rel = f"{package}/{path.name}"
        if path.name == "__init__.py" or path.name.startswith("_") or rel in INTERNAL_MODULES:
            continue
        names = _all_of(ast.parse(path.read_text())) or []
        missing += [f"{rel}: {n}" for n in names if n not in init]
    return missing


def test_every_public_name_of_a_mechanism_is_exported_by_its_package():
    """A name a module lists in ``__all__`` is public: its package's ``__init__`` exports it too (or the
    module is internal: a leading underscore, or listed in INTERNAL_MODULES with a reason)."""
    missing = {p: _missing_exports(p) for p in PACKAGES if (SRC / p / "__init__.py").exists()}
    missing = {p: m for p, m in missing.items() if m}
    assert not missing, "public names not exported by their package:\n" + "\n".join(
        f"  {p}: {', '.join(m)}" for p, m in missing.items())


def test_top_level_lazy_names_are_exported_by_their_packages():
    """Every name ``agentguard`` serves lazily is in the ``__all__`` of the package it points at."""
    tree = ast.parse((SRC / "__init__.py").read_text())
    table = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets))
    lazy = {ast.literal_eval(k): ast.literal_eval(v) for k, v in zip(table.keys, table.values)}
    assert list(lazy) == sorted(lazy)
    bad = []
    for name, module in lazy.items():
        rel = module.split(".")[1:]
        path = SRC.joinpath(*rel, "__init__.py") if (SRC.joinpath(*rel)).is_dir() else SRC.joinpath(*rel[:-1],
                                                                                                      rel[-1] + ".py")
        if name not in (_all_of(ast.parse(path.read_text())) or []):
            bad.append(f"{name} (from {module})")
    assert not bad, "lazy top-level names missing from their package's __all__: " + ", ".join(bad)


def test_import_agentguard_is_light_and_main_names_resolve_without_torch_or_stormpy():
    import json
    import subprocess
    import sys

    mechanisms = ("predictive", "calibration", "policies", "control")
    code = ("import sys, json, agentguard; first = sorted(sys.modules); "
            "from agentguard import ProactiveGuard, ToolCallGuard, ThresholdMonitor, SafetyFilter, check, "
            "DTMCLearner, ThresholdCalibrator, PolicyBinding, load_policy, RunMemory, check_guard; "
            "print(json.dumps([first, sorted(sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    first, after = json.loads(out.stdout)
    loaded = [m for m in first if m.split(".")[:2] in [["agentguard", x] for x in mechanisms]]
    assert not loaded, f"import agentguard imported mechanisms: {loaded}"
    heavy = [m for m in after if m.split(".")[0] in ("torch", "stormpy", "transformers")]
    assert not heavy, f"the top-level names imported heavy packages: {sorted(set(m.split('.')[0] for m in heavy))}"
