"""Command-line commands of agentguard.policies (registered by agentguard.cli).

- ``agentguard verify POLICY.py...``: sandbox check, generated tests, then Nagini. Exit 0 when every file
  is verified, 1 when Nagini found a counterexample (printed) or the tests failed, 2 for an invalid policy.
- ``agentguard synthesize SPEC.md --out POLICY.py``: the LLM refine loop (OpenAI-compatible endpoint).
- ``agentguard bench mind2web-sc | agentdojo | asb | policy-latency``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

DEFAULT_DATA = str(Path(__file__).resolve().parents[3].parent / "shared" / "data")


def _default_data() -> str:
    here = Path.cwd() / ".." / "shared" / "data"
    return str(here) if here.exists() else DEFAULT_DATA


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add this mechanism's commands to the main app and to the `bench` group."""

    @app.command()
    def verify(
        policies: List[Path] = typer.Argument(..., help="policy files (Python with Nagini contracts)"),
        tests: bool = typer.Option(True, help="run the generated boundary and property tests first"),
        as_json: bool = typer.Option(False, "--json", help="print results as JSON"),
    ) -> None:
        """Validate, test and formally verify policies with Nagini (exit 0 verified, 1 counterexample, 2 invalid)."""
        from ..core.errors import PolicyError
        from .model import load_policy
        from .nagini import NaginiVerifier
        from .testing import run_tests

        worst = 0
        out = []
        loaded = []
        for p in policies:
            try:
                pol = load_policy(p)
            except PolicyError as exc:
                out.append({"path": str(p), "status": "invalid", "error": str(exc)})
                typer.echo(f"{p}: invalid: {exc}", err=not as_json)
                worst = 2
                continue
            if tests:
                rep = run_tests(pol)
                if not rep.passed:
                    out.append({"path": str(p), "status": "tests-failed", "cases": rep.cases,
                                "failures": [f.describe() for f in rep.failures]})
                    if not as_json:
                        typer.echo(f"{p}: generated tests failed ({len(rep.failures)} of {rep.cases} cases):")
                        for f in rep.failures:
                            typer.echo("  " + f.describe())
                    worst = max(worst, 1)
                    continue
            loaded.append(p)
        if loaded:
            with NaginiVerifier() as v:
                for p in loaded:
                    r = v.verify(p)
                    d = r.to_dict()
                    d["startup_seconds"] = v.startup_seconds
                    out.append(d)
                    if not as_json:
                        typer.echo(r.describe())
                    if r.status == "invalid":
                        worst = 2
                    elif not r.verified:
                        worst = max(worst, 1)
        if as_json:
            typer.echo(json.dumps(out, indent=2, default=str))
        sys.exit(worst)  # not typer.Exit: agentguard.cli.main(standalone_mode=False) drops its code

    @app.command()
    def synthesize(
        spec: Path = typer.Argument(..., help="natural-language specification (text/markdown file)"),
        out: Path = typer.Option(..., "--out", help="where to write the verified policy"),
        rounds: int = typer.Option(3, help="maximum refine rounds"),
        model: Optional[str] = typer.Option(None, help="model name for the OpenAI-compatible endpoint"),
        base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible endpoint (default from environment)"),
        no_verify: bool = typer.Option(False, "--no-verify", help="stop after the tests (result is NOT verified)"),
    ) -> None:
        """Write a policy from a specification with an LLM, test it and verify it with Nagini, refining on counterexamples."""
        from ..core.errors import InputError
        from ..llm.openai_compat import OpenAICompatClient
        from .nagini import NaginiVerifier
        from .synthesis import synthesize as run

        try:
            text = spec.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read specification {spec}: {exc.strerror}") from None
        kwargs = {}
        if model:
            kwargs["model"] = model
        if base_url:
            kwargs["base_url"] = base_url
        client = OpenAICompatClient(**kwargs)
        if no_verify:
            res = run(text, client, verifier=None, max_rounds=rounds)
        else:
            with NaginiVerifier() as v:
                res = run(text, client, verifier=v, max_rounds=rounds)
        for r in res.rounds:
            typer.echo(f"round {r.index}: {r.stage}" + (f"\n{r.feedback}" if r.feedback else ""), err=True)
        if not res.ok or res.source is None:
            typer.echo(f"no policy passed after {len(res.rounds)} rounds", err=True)
            sys.exit(1)
        out.write_text(res.source, encoding="utf-8")
        typer.echo(f"wrote {out} ({'verified by Nagini' if res.verified else 'tested, NOT verified'})")

    @bench.command("mind2web-sc")
    def bench_mind2web(
        data: str = typer.Option(None, "--data", help="data folder (with mind2web_sc/) or a Mind2Web-SC JSON file"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
        out: Optional[Path] = typer.Option(None, "--out", help="also write the JSON here"),
        llm: bool = typer.Option(False, "--llm", help="LLM argument extractor (endpoint from AGENTGUARD_LLM_*)"),
    ) -> None:
        """Accuracy, precision, recall (positive = deny) and violation accuracy of the six-rule policy."""
        from .bench_mind2web import evaluate, llm_extractor, load_items

        d = Path(data or _default_data())
        target = d / "mind2web_sc" if (d / "mind2web_sc").is_dir() else d
        res = evaluate(load_items(target), extract=llm_extractor() if llm else None)
        _emit(res, as_json, out, ["n", "accuracy", "precision", "recall", "violation_accuracy"])

    @bench.command("asb")
    def bench_asb(
        data: str = typer.Option(None, "--data", help="data folder (with asb/)"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
        out: Optional[Path] = typer.Option(None, "--out", help="also write the JSON here"),
    ) -> None:
        """ASR and TSR over ASB's attack cases with the declared-tools policy."""
        from .bench_asb import evaluate

        res = evaluate(data or _default_data())
        _emit(res, as_json, out, ["cases", "ASR", "TSR"])

    @bench.command("agentdojo")
    def bench_agentdojo(
        suite: List[str] = typer.Option(None, "--suite", help="suites (default: all four)"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
        out: Optional[Path] = typer.Option(None, "--out", help="also write the JSON here"),
        baseline: bool = typer.Option(True, help="also replay without the guard"),
    ) -> None:
        """Utility and attack success per AgentDojo suite, replaying ground-truth calls through a guarded runtime."""
        from .bench_agentdojo import evaluate

        res = evaluate(list(suite or []) or None, with_baseline=baseline, progress=lambda m: typer.echo(m, err=True))
        _emit(res, as_json, out, [])

    @bench.command("policy-latency")
    def bench_latency(
        n: int = typer.Option(20000, help="checks per policy"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
        out: Optional[Path] = typer.Option(None, "--out", help="also write the JSON here"),
    ) -> None:
        """Time one ToolCallGuard check per shipped policy (deterministic extractors, no LLM)."""
        from .latency import measure

        _emit(measure(n), as_json, out, [])


def _emit(res: dict, as_json: bool, out: Optional[Path], keys: list[str]) -> None:
    text = json.dumps(res, indent=2, default=str)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
    if as_json or not keys:
        typer.echo(text)
    else:
        for k in keys:
            v = res[k]
            typer.echo(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}")
