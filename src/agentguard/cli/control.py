"""``agentguard bench driving`` and ``agentguard bench commerce`` (the ReGuard paper's evaluations).

- ``agentguard bench driving [--json] [--quick] [--episodes N] [--base weak|random|llm] [--plots DIR]``
- ``agentguard bench driving --eval-seed S --episodes N [--json] [--guards no_guard,exact,privileged,reguard]``:
  the FROZEN committed critics on N fresh starts from seed S (no training, no selection;
  :mod:`agentguard.bench.driving_fresh`)
- ``agentguard bench commerce [--json] [--quick] [--episodes N] [--base random|cheapest|llm] [--task plain|bundles]``

Both load trained weights when present (``benchmarks/results/control_*.pt`` for the full mode,
``~/.cache/agentguard/control`` for ``--quick`` and for the value grid) and otherwise train them with
the given seed (``--retrain`` forces it). Progress goes to stderr; ``--json`` prints only the report.
The evaluations themselves live in :mod:`agentguard.bench.driving` and :mod:`agentguard.bench.commerce`.
"""

from __future__ import annotations

import json

import typer

from .options import JSON

__all__ = ["register"]


def _emit(report: dict, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(report, indent=2, default=float))
        return
    for name, m in report.get("guards", {}).items():
        cells = " ".join(f"{k}={v:.3f}" for k, v in m.items() if isinstance(v, float))
        typer.echo(f"{name:16s} {cells}")


def _flags(quick: bool, retrain: bool, iterations: int | None, as_json: bool) -> str:
    return ((" --quick" if quick else "") + (" --retrain" if retrain else "")
            + (f" --iterations {iterations}" if iterations else "") + (" --json" if as_json else ""))


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add the control commands to the `bench` group."""

    @bench.command("driving")
    def bench_driving(
        as_json: bool = JSON,
        quick: bool = typer.Option(False, "--quick", help="small grid and tiny training (seconds; for tests)"),
        episodes: int = typer.Option(200, min=1, help="number of seeded initial states"),
        base: str = typer.Option("weak", help="base policy: weak (scripted driver), random, llm"),
        seed: int = typer.Option(0, min=0, help="seed of training and evaluation"),
        retrain: bool = typer.Option(False, help="train even when weights are cached"),
        plots: str | None = typer.Option(None, help="folder for the safe-set and rollout PNGs"),
        encoder: str = typer.Option("wordllama+numbers", help="encoder of the 'text + parsed numbers' row"),
        text_encoder: str | None = typer.Option(None, help="text-only ReGuard latent (gemma-L<k>-<last|mean>, "
                                                 "wordllama-<dim>, minilm; default gemma in full, wordllama-64 quick)"),
        iterations: int | None = typer.Option(None, min=1, help="DDQN iterations (default 24000; quick 400)"),
        quiet: bool = typer.Option(False, "--quiet", help="no progress on stderr"),
        epsilon: float = typer.Option(0.1, help="switching threshold of the learned and myopic filters"),
        eval_seed: int | None = typer.Option(None, "--eval-seed", min=0, help="score the frozen committed critics on "
                                             "--episodes fresh starts drawn from this seed (no training)"),
        guards: str = typer.Option("no_guard,exact,privileged,reguard", help="with --eval-seed: the guards scored"),
        templates: bool = typer.Option(False, "--templates", help="with --eval-seed: held-out observation texts"),
    ) -> None:
        """Agentic Driving: Table 1 / Figure 4 metrics for Privileged, ReGuard, Myopic, classifier+stop, none."""
        from ..bench.driving import run_driving_bench

        if eval_seed is not None:
            from ..bench.driving_fresh import run_fresh_eval

            names = tuple(g.strip() for g in guards.split(",") if g.strip())
            rep = run_fresh_eval(eval_seed, episodes, quiet=quiet, guards=names, templates=templates)
            rep["command"] = (f"agentguard bench driving --eval-seed {eval_seed} --episodes {episodes} "
                              f"--guards {','.join(names)}" + (" --templates" if templates else "")
                              + (" --json" if as_json else ""))
            _emit(rep, as_json)
            return
        rep = run_driving_bench(quick=quick, episodes=episodes, base=base, seed=seed, retrain=retrain,
                                plots=plots, quiet=quiet, encoder_kind=encoder, iterations=iterations,
                                epsilon=epsilon, text_encoder=text_encoder)
        rep["command"] = (f"agentguard bench driving --episodes {episodes} --base {base} --seed {seed} "
                          f"--encoder {encoder} --epsilon {epsilon}" + (f" --text-encoder {text_encoder}" if text_encoder else "")
                          + _flags(quick, retrain, iterations, as_json))
        _emit(rep, as_json)

    @bench.command("commerce")
    def bench_commerce(
        as_json: bool = JSON,
        quick: bool = typer.Option(False, "--quick", help="tiny training (seconds; for tests)"),
        episodes: int = typer.Option(200, min=1, help="number of seeded initial carts"),
        base: str = typer.Option("random", help="base policy: random, cheapest, llm"),
        seed: int = typer.Option(0, min=0, help="seed of training and evaluation"),
        retrain: bool = typer.Option(False, help="train even when weights are cached"),
        iterations: int | None = typer.Option(None, min=1, help="DDQN iterations"),
        quiet: bool = typer.Option(False, "--quiet", help="no progress on stderr"),
        task: str = typer.Option("plain", help="plain, or bundles (bundle discounts: delayed consequences)"),
        text_episodes: int = typer.Option(50, min=1, help="carts for the rows that run gemma at decision time"),
    ) -> None:
        """Agentic Commerce: success (cart within the $50 budget at checkout), failure, interventions, value F1."""
        from ..bench.commerce import run_commerce_bench

        rep = run_commerce_bench(quick=quick, episodes=episodes, base=base, seed=seed, retrain=retrain,
                                 iterations=iterations, quiet=quiet, task=task, text_episodes=text_episodes)
        rep["command"] = (f"agentguard bench commerce --episodes {episodes} --base {base} --seed {seed} "
                          f"--task {task} --text-episodes {text_episodes}"
                          + _flags(quick, retrain, iterations, as_json))
        _emit(rep, as_json)
