"""Commands of the verified-policies mechanism (:mod:`agentguard.policies`).

- ``agentguard verify POLICY.py...``: sandbox check, generated tests, then Nagini. Exit 0 when every file
  is verified, 1 when Nagini found a counterexample (printed) or the tests failed, 2 for an invalid policy.
- ``agentguard synthesize SPEC.md --out POLICY.py``: the LLM refine loop (OpenAI-compatible endpoint).
- ``agentguard bench mind2web-sc | agentdojo | asb | policy-latency``: the evaluations in
  :mod:`agentguard.bench` (``mind2web``, ``agentdojo``, ``asb``, ``policy_latency``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, List, Optional

import typer

from .options import DATA, JSON, OUT, data_dir

__all__ = ["register"]


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add this mechanism's commands to the main app and to the ``bench`` group."""
    app.command()(verify)
    app.command()(synthesize)
    setup = typer.Typer(help="Install what a mechanism needs outside the Python package (the Nagini verifier).",
                        no_args_is_help=True)
    setup.command("nagini")(setup_nagini_cmd)
    app.add_typer(setup, name="setup")
    bench.command("mind2web-sc")(bench_mind2web)
    bench.command("asb")(bench_asb)
    bench.command("agentdojo")(bench_agentdojo)
    bench.command("policy-latency")(bench_policy_latency)


def _load_and_test(path: Path, tests: bool, as_json: bool, out: list[dict[str, Any]], spec_arg: str | None = None,
                   specs: dict[str, Any] | None = None) -> int:
    """Load one policy, check it carries its specification's contract (and run its generated tests): 0 when it
    may go to Nagini, else its exit code."""
    from ..core.errors import PolicyError
    from ..policies.conformance import contract_problems, load_spec, spec_for, spec_problems
    from ..policies.model import load_policy
    from ..policies.testing import run_tests, vacuity_problem

    try:
        pol = load_policy(path)
    except PolicyError as exc:
        out.append({"path": str(path), "status": "invalid", "error": str(exc)})
        typer.echo(f"{path}: invalid: {exc}", err=not as_json)
        return 2
    spec = load_spec(spec_arg) if spec_arg else spec_for(pol.id)
    if specs is not None:
        specs[str(path)] = spec.name if spec else None
    if spec is not None:
        problems = spec_problems(spec) + contract_problems(pol.source, spec)
        if problems:
            out.append({"path": str(path), "status": "contract-mismatch", "spec": spec.name, "problems": problems})
            if not as_json:
                typer.echo(f"{path}: refused: its contract is not the one fixed by specification {spec.name}:")
                for pr in problems:
                    typer.echo("  " + pr)
            return 1
    elif not as_json:
        typer.echo(f"{path}: note: no specification for policy {pol.id!r}: Nagini proves it against its own "
                   "contract only (pass --spec to tie it to a rule)", err=True)
    vacuous = vacuity_problem(pol)  # with or without --no-tests: a vacuous contract is proved of any policy
    if vacuous:
        out.append({"path": str(path), "status": "vacuous-contract", "problems": [vacuous]})
        if not as_json:
            typer.echo(f"{path}: refused: {vacuous}")
        return 1
    if tests:
        rep = run_tests(pol)
        if not rep.passed:
            out.append({"path": str(path), "status": "tests-failed", "cases": rep.cases,
                        "failures": [f.describe() for f in rep.failures]})
            if not as_json:
                typer.echo(f"{path}: generated tests failed ({len(rep.failures)} of {rep.cases} cases):")
                for f in rep.failures:
                    typer.echo("  " + f.describe())
            return 1
    return 0


def _prove(paths: list[Path], as_json: bool, out: list[dict[str, Any]], specs: dict[str, Any] | None = None) -> int:
    """Verify ``paths`` with one warm Nagini worker; the worst exit code (0 verified, 1 failed, 2 invalid)."""
    from ..policies import nagini  # looked up at call time (tests stand in for the verifier)

    def note(msg: str) -> None:  # progress on stderr (a cold start is minutes of silence otherwise)
        if not as_json:
            typer.echo(msg, err=True)

    worst = 0
    verifier = nagini.NaginiVerifier()  # a missing Nagini is one error line, before any progress line
    note("starting the Nagini verifier (JVM and Viper: one to two minutes the first time) ...")
    with verifier as v:
        note(f"Nagini ready in {v.startup_seconds or 0.0:.0f}s")
        for i, p in enumerate(paths, 1):
            note(f"[{i}/{len(paths)}] proving {p} ...")
            r = v.verify(p)
            d = r.to_dict()
            d["startup_seconds"] = v.startup_seconds
            d["spec"] = (specs or {}).get(str(p))
            out.append(d)
            if not as_json:
                typer.echo(r.describe())
            if r.status == "invalid":
                worst = 2
            elif not r.verified:
                worst = max(worst, 1)
    return worst


def verify(
    policies: List[Path] = typer.Argument(..., help="policy files (Python with Nagini contracts)"),
    tests: bool = typer.Option(True, help="run the generated boundary and property tests first"),
    spec: Optional[str] = typer.Option(None, "--spec", help="specification whose contract the policy must carry "
                                       "(a shipped policy's stem or a spec .py file; default: the shipped "
                                       "specification with the policy's POLICY_ID, if any)"),
    as_json: bool = JSON,
) -> None:
    """Validate, check the contract against the rule's specification, test and formally verify policies with
    Nagini (exit 0 verified, 1 counterexample / contract not the specification's / tests failed, 2 invalid)."""
    worst = 0
    out: list[dict[str, Any]] = []
    loaded = []
    specs: dict[str, Any] = {}
    for p in policies:
        code = _load_and_test(p, tests, as_json, out, spec, specs)
        if code == 2:
            worst = 2
        elif code == 1:
            worst = max(worst, 1)
        else:
            loaded.append(p)
    if loaded:
        proved = _prove(loaded, as_json, out, specs)
        worst = 2 if proved == 2 else max(worst, proved)
    if as_json:
        typer.echo(json.dumps(out, indent=2, default=str))
    sys.exit(worst)  # not typer.Exit: agentguard.cli.main(standalone_mode=False) drops its code


def synthesize(
    spec: str = typer.Argument(..., help="specification: a shipped policy's stem (mind2web_sc), a specification "
                               ".py module (fixed contract), or a text/markdown file (the LLM writes the contract)"),
    out: Path = typer.Option(..., "--out", help="where to write the verified policy"),
    rounds: int = typer.Option(3, min=1, help="maximum refine rounds"),
    model: Optional[str] = typer.Option(None, help="model name for the OpenAI-compatible endpoint"),
    base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible endpoint (default from environment)"),
    timeout: float = typer.Option(600.0, "--timeout", help="seconds to wait for each LLM reply (a local CPU model "
                                  "needs minutes)"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=1, help="cap on each reply's tokens"),
    no_verify: bool = typer.Option(False, "--no-verify", help="stop after the tests (result is NOT verified)"),
) -> None:
    """Write a policy from a specification with an LLM, test it and verify it with Nagini, refining on
    counterexamples. With a specification module the contract is fixed before the LLM writes code, and a
    candidate that edits it is refused."""
    from ..core.errors import InputError
    from ..llm.openai_compat import OpenAICompatClient
    from ..policies import nagini
    from ..policies.conformance import load_spec
    from ..policies.synthesis import synthesize as run

    if timeout <= 0:
        raise InputError("--timeout must be positive")
    p = Path(spec)
    target: Any
    if p.suffix == ".py" or not p.exists():
        target = load_spec(spec)  # a shipped stem or a specification module; InputError otherwise
    else:
        try:
            target = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read specification {spec}: {exc.strerror}") from None
        if not target.strip():
            raise InputError(f"specification {spec} is empty: write the rule the policy must enforce")
    kwargs: dict[str, Any] = {"timeout_s": timeout}
    if model:
        kwargs["model"] = model
    if base_url:
        kwargs["base_url"] = base_url
    client = OpenAICompatClient(**kwargs)  # no endpoint: the one error line, before any note
    if isinstance(target, str):
        typer.echo("note: a text specification fixes no contract: the LLM writes it and nothing checks it "
                   "against the rule (give a specification module to fix it)", err=True)
    opts = {"max_tokens": max_tokens} if max_tokens else None
    if no_verify:
        res = run(target, client, verifier=None, max_rounds=rounds, complete_options=opts)
    else:
        with nagini.NaginiVerifier() as v:
            res = run(target, client, verifier=v, max_rounds=rounds, complete_options=opts)
    for r in res.rounds:
        typer.echo(f"round {r.index}: {r.stage}" + (f"\n{r.feedback}" if r.feedback else ""), err=True)
    if not res.ok or res.source is None:
        typer.echo(f"no valid policy in {len(res.rounds)} rounds", err=True)
        sys.exit(1)
    out.write_text(res.source, encoding="utf-8")
    how = "verified by Nagini" if res.verified else "tested, NOT verified"
    typer.echo(f"wrote {out} ({how}{'' if res.contract_fixed else '; contract written by the LLM, not fixed'})")


def bench_mind2web(
    data: str = DATA,
    as_json: bool = JSON,
    out: Optional[Path] = OUT,
    llm: bool = typer.Option(False, "--llm", help="LLM argument extractor (endpoint from AGENTGUARD_LLM_*)"),
    seed: int = typer.Option(0, "--seed", min=0, help="seed of the design/held-out split"),
    all_items: bool = typer.Option(False, "--all-items", help="score the hand-written keyword rules on every item "
                                   "(no split; those rules were written looking at the whole file)"),
) -> None:
    """Accuracy, precision, recall (positive = deny) and violation accuracy of the six-rule policy: by default
    the extractor's keyword table is fitted on a seeded half and scored on both halves (--data: the data
    folder with mind2web_sc/, or a Mind2Web-SC JSON file)."""
    from ..bench.mind2web import evaluate, evaluate_split, llm_extractor, load_items

    d = data_dir(data)
    target = d / "mind2web_sc" if (d / "mind2web_sc").is_dir() else d
    items = load_items(target)
    keys = ["n", "accuracy", "precision", "recall", "violation_accuracy"]
    if llm or all_items:
        _emit(evaluate(items, extract=llm_extractor() if llm else None), as_json, out, keys)
        return
    res = evaluate_split(items, seed=seed)
    view = {f"{half}_{k}": res[half][k] for half in ("design", "held_out") for k in keys}
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(res, indent=2, default=str) + "\n", encoding="utf-8")
    _emit(res if as_json else view, as_json, None, list(view))


def bench_asb(data: str = DATA, as_json: bool = JSON, out: Optional[Path] = OUT) -> None:
    """ASR and TSR over ASB's attack cases with the declared-tools policy (--data: folder with asb/)."""
    from ..bench.asb import evaluate

    _emit(evaluate(data_dir(data)), as_json, out, ["cases", "ASR", "TSR"])


def bench_agentdojo(
    suite: List[str] = typer.Option(None, "--suite", help="suites (default: all four)"),
    version: str = typer.Option("v1", "--version", help="AgentDojo benchmark version (v1, v1.1, ..., v1.2.2)"),
    guard: List[str] = typer.Option(None, "--guard", help="none, grounded, provenance (default: none and provenance)"),
    as_json: bool = JSON,
    out: Optional[Path] = OUT,
) -> None:
    """Utility and attack success per AgentDojo suite, guard and injection task, replaying ground-truth
    calls through a guarded runtime (no LLM)."""
    from ..bench.agentdojo import GUARDS, evaluate

    res = evaluate(list(suite or []) or None, version=version, guards=tuple(guard or GUARDS),
                   progress=lambda m: typer.echo(m, err=True))
    _emit(res, as_json, out, [])


def bench_policy_latency(
    n: int = typer.Option(20000, min=1, help="checks per policy (at least 1)"),
    as_json: bool = JSON,
    out: Optional[Path] = OUT,
) -> None:
    """Time one ToolCallGuard check per shipped policy (deterministic extractors, no LLM)."""
    from ..bench.policy_latency import measure
    from .options import progress

    with progress(quiet=as_json) as show:  # on a terminal only (tens of seconds otherwise silent)
        res = measure(n, progress=show)
    _emit(res, as_json, out, [])


def _emit(res: dict, as_json: bool, out: Optional[Path], keys: list[str]) -> None:
    text = json.dumps(res, indent=2, default=str)
    if out is not None:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
    if as_json or not keys:
        typer.echo(text)
    else:
        for k in keys:
            v = res[k]
            typer.echo(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}")


def setup_nagini_cmd(
    venv: Optional[str] = typer.Option(None, "--venv", help="folder of the Nagini environment (default: "
                                       "$AGENTGUARD_NAGINI_VENV, else .nagini-venv of the source checkout or of "
                                       "the active environment)"),
    python: Optional[str] = typer.Option(None, "--python", help="interpreter to make it from (default: this one)"),
) -> None:
    """Install the Nagini verifier (nagini==1.2.0, in its own virtual environment; Java 11+) for `verify`."""
    from ..policies.nagini_setup import setup_nagini

    typer.echo(str(setup_nagini(venv, python)))
