"""Every module's ``__all__`` is a literal, sorted list of names the module defines or imports
(DESIGN.md: re-exports through a sorted ``__all__`` that a test enforces), and each package's
``__all__`` is its curated public face, listed here name by name (issue 24)."""

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


# -- the curated public faces (issue 24) --------------------------------------------------------------
# Each package's ``__all__`` is exactly what a user imports from it (the README, docs and examples show
# these); every other public name stays importable from its submodule (``agentguard.core.strategies``,
# ``agentguard.predictive.trace_stream``, ...) and is listed in that module's own ``__all__``. Changing a
# face is a deliberate edit here.
CURATED = {
    "agentguard": [
        "AgentGuardError", "BaseGuard", "Context", "DTMC", "DTMCLearner", "Decision", "DependencyError",
        "GuaranteeError", "Guard", "GuardError", "GuardStack", "GuardTimeout", "InputError", "LifecycleError",
        "ModelError", "Outcome", "ParseError", "Pipeline", "PolicyBinding", "PolicyError", "ProactiveGuard",
        "ProductGuard", "RunMemory", "SafetyFilter", "Sequences", "Step", "ThresholdCalibrator", "ThresholdMonitor",
        "ToolCall", "ToolCallGuard", "Trace", "Verdict", "__version__", "check", "check_guard", "fail_closed",
        "load_dtmc", "load_policy", "read_traces", "write_traces",
    ],
    "agentguard.core": [
        "AgentGuardError", "AuditRecord", "AuditSink", "BaseGuard", "Context", "Decision", "DependencyError",
        "Enforcement", "Fallback", "GuaranteeError", "Guard", "GuardError", "GuardStack", "GuardTimeout",
        "InputError", "JsonlAuditSink", "LifecycleError", "MemoryAuditSink", "ModelError", "Outcome", "ParseError",
        "Pipeline", "PolicyError", "RunEvicted", "RunMemory", "Step", "ToolCall", "Trace", "Verdict",
        "approval_request", "call_key", "fail_closed", "read_traces", "strategy", "write_traces",
    ],
    "agentguard.spec": [
        "Abstraction", "Expr", "Predicate", "Property", "StateFormula", "UNSEEN_POLICIES", "attr", "bounded_response",
        "compile_expr", "exists", "forall", "load_spec", "parse_laws", "parse_property", "parse_state_formula",
        "resolve_unseen", "rule_vectors", "where",
    ],
    "agentguard.predictive": [
        "BoundedResponse", "CheckResult", "DTMC", "DTMCLearner", "MinProbabilityGuard", "PACReport", "ProactiveGuard",
        "ProductGuard", "RuleGuard", "TrafficLawGuard", "bounded_until", "check", "draw_dtmc", "globally",
        "learn_dtmc", "load_dtmc", "pac_report", "product", "reach", "read_prism", "read_pro2guard", "until",
        "write_prism",
    ],
    "agentguard.calibration": [
        "ChunkSteps", "ClassifierSignal", "EValuator", "EValuatorMonitor", "MonitoredStream", "Sequences",
        "SignalSource", "ThresholdCalibrator", "ThresholdMonitor", "TokenLogprobSignal", "TokenSteps", "UserScores",
        "calibrate_threshold", "gemma_tokens", "load_signals", "monitor_metrics", "monitor_tokens",
        "openai_response_tokens", "openai_tokens", "parse_chunk", "stop_at_alarm",
    ],
    "agentguard.policies": [
        "ArgumentExtractor", "ArgumentRule", "FieldRule", "FlowGuard", "FlowRule", "JsonlAuditSink", "LLMExtractor",
        "MappingExtractor", "MemoryAuditSink", "NaginiVerifier", "NetworkGuard", "Policy", "PolicyBinding", "PreconditionViolation",
        "ProvenanceGuard", "RunBudgetGuard", "SecretLeakGuard", "SourceDeclaration", "SpecExtractor", "ToolCallGuard", "ToolRuleGuard", "VerificationError",
        "VerificationResult", "boundary_cases", "find_nagini_venv", "library_extractor", "library_path",
        "load_policy", "policy_from_source", "run_tests", "shipped_policies", "synthesize", "validate", "verify",
        "write_pytest",
    ],
    "agentguard.control": [
        "AdviceCritic", "AdviceTransitions", "DDQNConfig", "FQIConfig", "HiddenStateEncoder", "KernelFQIConfig",
        "KernelQ", "MiniLMEncoder", "QFunction", "QModel", "SafetyFilter", "TextEncoder", "TokenQ",
        "TransitionSampler", "Transitions", "WordLlamaEncoder", "blend_distribution", "discounted_safety_target",
        "fit_advice_critic", "fitted_q_iteration", "kernel_fitted_q_iteration", "safety_backup", "train_ddqn",
    ],
    "agentguard.llm": [
        "LLMClient", "LocalGemmaClient", "Message", "OpenAICompatClient", "ScriptedClient", "load_gemma",
        "render_prompt",
    ],
}
# names a package holds for its own plumbing (``from __future__ import annotations``, the lazy hooks)
_PLUMBING = {"annotations", "Any", "LazyExports"}


def _all_of(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return [ast.literal_eval(e) for e in node.value.elts]
    return None


def _init_of(package: str) -> Path:
    return SRC.joinpath(*package.split(".")[1:], "__init__.py")


def test_each_package_all_is_its_curated_face():
    for package, names in CURATED.items():
        assert names == sorted(names), f"{package}: the curated list here is not sorted"
        assert _all_of(ast.parse(_init_of(package).read_text())) == names, (
            f"{package}.__all__ differs from its curated face in tests/test_public_api.py")


def test_a_package_serves_its_face_and_nothing_else_public():
    """Every curated name resolves; what a package holds besides its face is private (``_x``), a
    submodule, or plumbing: a name that left ``__all__`` is imported from its submodule."""
    import importlib
    import types

    for package, names in CURATED.items():
        mod = importlib.import_module(package)
        missing = [n for n in names if getattr(mod, n, None) is None]
        assert not missing, f"{package}: curated names that do not resolve: {missing}"
        lazy = set(getattr(mod, "_LAZY", {}))
        held = {n for n, v in vars(mod).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
        extra = sorted((held | lazy) - set(names) - _PLUMBING)
        assert not extra, f"{package} serves names outside its __all__: {extra}"


def test_every_name_a_submodule_lists_is_importable_from_it():
    """The names that are not on a package's face stay public where they are defined."""
    import importlib

    bad = []
    for package in CURATED:
        if package == "agentguard":
            continue
        pkg = SRC.joinpath(*package.split(".")[1:])
        for path in sorted(pkg.glob("*.py")):
            if path.name.startswith("_"):      # __init__, and entry points such as _nagini_worker
                continue
            names = _all_of(ast.parse(path.read_text())) or []
            if not names:
                continue
            mod = importlib.import_module(f"{package}.{path.stem}")
            bad += [f"{package}.{path.stem}.{n}" for n in names if not hasattr(mod, n)]
    assert not bad, bad


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
