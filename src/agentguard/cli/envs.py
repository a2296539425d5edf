"""``agentguard bench household``: Table 3 of Pro2Guard on the household (:mod:`agentguard.bench.household`)."""

from __future__ import annotations

import json

import typer

from .options import DATA, JSON, data_dir

__all__ = ["register"]


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add the environment benchmarks to the `bench` group."""

    @bench.command("household")
    def household(
        as_json: bool = JSON,
        data: str = DATA,
        png: str = typer.Option("bench-output/household_tradeoff.png",
                                help="trade-off plot (PNG; '' for none). The committed figure is "
                                     "benchmarks/household_table3.py's, never overwritten by default"),
        seed: int = typer.Option(0, min=0, help="split seed"),
        live: str = typer.Option("", help="also run a live agent: 'gemma' or 'openai' (AGENTGUARD_LLM_*)"),
        live_tasks: int = typer.Option(6, min=1, help="live: unsafe and safe held-out tasks each"),
    ) -> None:
        """Table 3 of Pro2Guard on the household: unguarded, reactive rules, proactive stop/reflect."""
        from ..bench.household import run_bench
        from ..bench.household_eval import table_text

        client = None
        if live == "gemma":
            from ..llm.local import LocalGemmaClient  # calib's client (offline gemma-3-270m)

            client = LocalGemmaClient()
        elif live == "openai":
            from ..llm import OpenAICompatClient

            client = OpenAICompatClient()
        elif live:
            from ..core.errors import InputError

            raise InputError(f"unknown live client {live!r}: expected 'gemma' or 'openai'")
        out = run_bench(str(data_dir(data or None)), seed=seed, png=png or None, live=client,
                        live_tasks=live_tasks, quiet=as_json)
        if as_json:
            typer.echo(json.dumps(out, default=str))
            return
        typer.echo(table_text(out["rows"] + out.get("live", {}).get("rows", []), name_width=48))
        for th, d in out["flagged_before_hazard"].items():
            typer.echo(f"theta={th}: flagged strictly before the hazard in {d['flagged_strictly_before']}/"
                       f"{d['runs_reaching_hazard']} held-out runs that reach one")
        typer.echo(f"plot: {out.get('png')}")
