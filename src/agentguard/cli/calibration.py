"""Command-line commands of the calibrated-monitoring mechanism (registered by :mod:`agentguard.cli`).

``agentguard monitor-eval SIGNALS.csv.gz --method crc|ucb|evaluator-anytime|evaluator-pac
--risk false_alarm|missed_detection --alpha A --delta D --splits N --seed S [--json]`` runs the
evaluation protocol of the online-safety-monitoring paper (random calibration/test splits) on any
long-format file with the e-valuator columns and prints the means over splits.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from .options import JSON


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add this mechanism's commands to the main app and to the `bench` group."""

    @app.command("monitor-eval")
    def monitor_eval(
        signals: Path = typer.Argument(..., help="CSV(.gz) with uq_problem_idx, num_steps, judge_probability, solved"),
        method: str = typer.Option("crc", help="crc | ucb | evaluator-anytime | evaluator-pac"),
        risk: str = typer.Option("false_alarm", help="false_alarm | missed_detection"),
        alpha: float = typer.Option(0.1, help="risk level in (0, 1)"),
        delta: float = typer.Option(0.1, help="failure probability (ucb, evaluator-pac) in (0, 1)"),
        splits: int = typer.Option(10, min=1, help="random calibration/test splits"),
        seed: int = typer.Option(0, min=0, help="seed of the splits"),
        cal_frac: float = typer.Option(0.2, help="fraction of sequences used for calibration"),
        bound: str = typer.Option("hb", help="ucb bound: hb (Hoeffding-Bentkus) | binomial (exact)"),
        on_infeasible: str = typer.Option("raise", help="too few calibration sequences: raise (error) | trivial "
                                                         "(evaluate the trivially safe monitor, as the paper's notebook)"),
        as_json: bool = JSON,
    ) -> None:
        """Calibrate a monitor on random splits of SIGNALS and report test metrics (means over splits)."""
        from ..bench.calibration import ALL_METHODS, run_protocol
        from ..calibration.data import load_signals
        from ..core.errors import InputError
        from .options import progress

        if method not in ALL_METHODS:
            raise InputError(f"unknown method {method!r}; expected one of {', '.join(ALL_METHODS)}")
        data = load_signals(signals)
        with progress(quiet=as_json) as show:  # on a terminal only: "split 3/10 done"
            out = run_protocol(data, methods=[method], risk=risk, alphas=[alpha], delta=delta, splits=splits,
                               seed=seed, cal_frac=cal_frac, bound=bound, on_infeasible=on_infeasible,
                               progress=show)
        res = out["results"][method]
        summary = {k: res["mean"][k][0] for k in res["mean"]}
        summary.update({
            "method": method, "risk": risk, "alpha": alpha, "delta": delta, "splits": splits, "seed": seed,
            "file": str(signals), "n_sequences": data.n,
            "violating_splits": res["violating_splits"][0], "trivial_splits": res["trivial_splits"][0],
            "std": {k: res["std"][k][0] for k in res["std"]},
            "thresholds": [row[0] for row in res["per_split"]["threshold"]],
        })
        if method in ("crc", "ucb"):
            # the split-average's limit (Eq. 3's left side for this data set), computed exactly
            from ..bench.calibration_exact import split_expected_risk
            key = "false_alarm_rate" if risk == "false_alarm" else "missed_detection_rate"
            exact = split_expected_risk(data, risk=risk, method=method, alpha=alpha, delta=delta, bound=bound,
                                        cal_frac=cal_frac)
            summary["exact_mean_over_all_splits"] = {key: exact["mean"]}
        if as_json:
            typer.echo(json.dumps(summary, indent=2))
            return
        typer.echo(f"{method} ({risk}, alpha={alpha:g}, delta={delta:g}) on {signals.name}: "
                   f"{data.n} sequences, {splits} splits")
        for k in ("false_alarm_rate", "power", "detection_delay", "missed_detection_rate"):
            v = summary[k]
            typer.echo(f"  {k:<22} {'n/a' if v is None else f'{v:.4f}'}")
        typer.echo(f"  splits violating the controlled risk: {summary['violating_splits']}/{splits}")
        for k, v in summary.get("exact_mean_over_all_splits", {}).items():
            typer.echo(f"  {k} averaged over every possible split (exact): {v:.4f}")
