"""``agentguard learn``: learn a DTMC from traces of concrete states and print the PAC report."""

from __future__ import annotations

import typer


def register(app: typer.Typer, bench: typer.Typer) -> None:
    @app.command()
    def learn(
        traces: str = typer.Argument(..., help="JSON Lines file, one trace a line: {\"steps\": [{\"state\": {...}}, ...]}"),
        spec: str = typer.Option(..., "--spec", help="abstraction spec (YAML or JSON): predicates, unsafe, ..."),
        out: str = typer.Option(..., "--out", help="where to write the learned model (JSON, with counts)"),
        alpha: float | None = typer.Option(None, "--alpha", help="Laplace constant of Eq. 1 (0 = frequency); default: spec or 1"),
        epsilon: float | None = typer.Option(None, "--epsilon", help="PAC error; default: spec or 0.05"),
        delta: float | None = typer.Option(None, "--delta", help="PAC confidence; default: spec or 0.05"),
        variant: str = typer.Option("conservative", "--variant", help="PAC rule: conservative, appendix or line11"),
        prism: str | None = typer.Option(None, "--prism", help="also write the model as a PRISM file"),
        json_out: bool = typer.Option(False, "--json", help="print one JSON object instead of a table"),
    ) -> None:
        """Learn a DTMC (Eq. 1 of Pro2Guard) from TRACES and print the PAC report (Algorithm 1, line 11)."""
        import json
        import math
        from fractions import Fraction

        from ..core.errors import InputError
        from ..core.types import read_traces
        from ..spec.predicates import load_spec
        from .learn import DTMCLearner

        ab = load_spec(spec)
        tr = read_traces(traces)
        o = ab.options
        a = alpha if alpha is not None else o.get("alpha", 1)
        if isinstance(a, float) and a.is_integer():
            a = int(a)  # exact rational rows for integer alpha
        elif isinstance(a, float) and math.isfinite(a):
            a = Fraction(str(a))
        learner = DTMCLearner(
            ab,
            alpha=a,
            epsilon=epsilon if epsilon is not None else o.get("epsilon", 0.05),
            delta=delta if delta is not None else o.get("delta", 0.05),
            target=str(o.get("target", "unsafe")),
            pac_variant=variant,
        )
        learner.add(tr)
        model = learner.model()
        model.meta["name"] = ab.name
        try:
            model.save(out)
        except OSError as exc:
            raise InputError(f"cannot write model {out}: {exc.strerror}") from None
        if prism:
            from .prism import write_prism

            write_prism(model, prism)
        rep = learner.pac_report()
        d = rep.to_dict()
        if json_out:
            typer.echo(json.dumps({"model": out, "n_states": model.n, "traces": len(tr),
                                   "state_names": model.state_names, "alpha": float(a), "pac": d}))
            return
        from rich.console import Console
        from rich.table import Table

        con = Console()
        con.print(f"learned {model.n} states from {len(tr)} traces ({d['transitions']} transitions), "
                  f"alpha={a}; model written to {out}")
        t = Table(title=f"PAC report (epsilon={rep.epsilon}, delta={rep.delta}, delta'={rep.delta_prime:.3g}, "
                        f"B={rep.B:.4g}, {rep.variant})")
        for c in ("state", "n_p", "required", "holds"):
            t.add_column(c, justify="right" if c in ("n_p", "required") else "left")
        for r in d["states"]:
            req = "fixed" if r["determined"] else ("inf" if r["required"] is None else str(r["required"]))
            t.add_row(r["state"], str(r["count"]), req, "yes" if r["holds"] else "no")
        con.print(t)
        con.print("stopping rule holds: " + ("[green]yes[/green]" if rep.done else "[yellow]no[/yellow] (collect more traces)"))
