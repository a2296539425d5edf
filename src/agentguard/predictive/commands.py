"""Command-line commands of agentguard.predictive (registered by agentguard.cli).

``agentguard check MODEL --property 'P=? [F s=3|s=7]' [--json] [--engine native|storm]``
``agentguard laws LAWS.txt [--law NAME] [--model DRIVING_FOLDER] [--json]``
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

MAX_TABLE_ROWS = 60


def _release_folder(p: Path) -> bool:
    return p.is_dir() and all((p / f).is_file() for f in ("dtmc.prism", "model.json", "abstraction.json"))


def load_model(path: str | Path):
    """A PRISM file, a saved agentguard JSON model (:meth:`DTMC.load`), or a model folder of the
    Pro2Guard release (``dtmc.prism`` + ``model.json`` + ``abstraction.json``: read with state
    names and the ``"unsafe"`` label, see :func:`~agentguard.predictive.prism.read_pro2guard`)."""
    from ..core.errors import InputError
    from .dtmc import DTMC
    from .prism import read_prism, read_pro2guard

    p = Path(path)
    if not p.exists():
        raise InputError(f"model file not found: {p}")
    if _release_folder(p):
        return read_pro2guard(p)
    if p.is_dir():
        raise InputError(f"model path is a directory without dtmc.prism, model.json and abstraction.json: {p}")
    try:
        head = p.read_text(errors="replace")[:4096].lstrip()
    except OSError as exc:
        raise InputError(f"cannot read model {p}: {exc.strerror or exc}") from None
    if p.suffix == ".json" or head.startswith("{"):
        return DTMC.load(p)
    return read_prism(p)


def _prism_source(path: Path) -> Path | None:
    """The PRISM file Storm should parse itself, if the model came from one."""
    if _release_folder(path):
        return path / "dtmc.prism"
    return path if _is_prism(path) else None


def _is_prism(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        return not path.read_text(errors="replace")[:4096].lstrip().startswith("{") and path.suffix != ".json"
    except OSError:
        return False


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add this mechanism's commands to the main app and to the `bench` group."""
    _laws_command(app)

    @app.command("check")
    def check_cmd(
        model: str | None = typer.Argument(
            None, help="PRISM file (dtmc), saved agentguard model (.json), or a Pro2Guard release model folder."),
        prop: str | None = typer.Option(None, "--property", "-p",
                                           help="PCTL property, e.g. 'P=? [F s=3|s=7]' or 'P=? [G !\"unsafe\"]'."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object (values, initial, seconds, ...)."),
        engine: str = typer.Option("native", "--engine", "-e", help="native (own sparse solver) or storm (stormpy)."),
        storm_mode: str = typer.Option("default", "--storm-mode", help="Storm solver: default, sound or exact."),
        method: str = typer.Option("auto", "--method", help="Native linear solver: auto, direct or iterative."),
    ) -> None:
        """Check a PCTL property on every state of a DTMC and print the probability of each state."""
        from ..core.errors import InputError
        from ..spec.pctl import parse_property
        from .checker import check

        if model is None:
            raise InputError("missing MODEL (a PRISM file or a saved agentguard model)")
        if prop is None:
            raise InputError("missing --property, e.g. --property 'P=? [F s=3]'")
        if engine not in ("native", "storm"):
            raise InputError(f"unknown engine {engine!r} (use native or storm)")
        if method not in ("auto", "direct", "iterative"):
            raise InputError(f"unknown method {method!r} (use auto, direct or iterative)")
        p = parse_property(prop)
        dtmc = load_model(model)
        if engine == "storm":
            from .storm_engine import check_storm

            res = check_storm(dtmc, p, mode=storm_mode, prism=_prism_source(Path(model)))
        else:
            res = check(dtmc, p, engine="native", method=method)
        out = res.to_json_dict()
        out["model"] = str(model)
        out["states"] = dtmc.n
        out["initial_state"] = int(dtmc.initial)
        if dtmc.variables:  # values[i] is the state whose variable(s) have these values (PRISM: s = lo + i)
            out["variables"] = {k: v.tolist() for k, v in dtmc.variables.items()}
        if as_json:
            typer.echo(json.dumps(out))
            return
        _print_table(dtmc, res, out)


def _laws_command(app: typer.Typer) -> None:
    @app.command("laws")
    def laws_cmd(
        laws_file: Path = typer.Argument(..., help="LawBreaker STL file (e.g. ../shared/data/pro2guard/av_laws.txt)."),
        law: str | None = typer.Option(None, "--law", help="One law (default: all; with --model: the model's rule)."),
        model: Path | None = typer.Option(None, "--model", help="A driving model folder of the Pro2Guard release: "
                                                                "compose the law's monitor with it and print P[F viol]."),
        unknown: str = typer.Option("error", help="an atom the abstraction does not observe: error | true | false"),
        steps_per_unit: int = typer.Option(50, help="DTMC steps per LawBreaker time unit (Example 2: F[0,2] = F[0,100])"),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Reduce LawBreaker STL traffic laws to Pro2Guard's bounded-response rules (Definition 5), and
        with --model compute the probability of violating one from every state (Definition 6 product)."""
        from ..core.errors import InputError, ParseError
        from ..spec.stl import bounded_response, is_law, law_of_rule, parse_laws, show
        from .traffic import law_products, read_driving_model

        if not laws_file.is_file():
            raise InputError(f"laws file not found: {laws_file}")
        laws = parse_laws(laws_file.read_text())
        out: dict = {"file": str(laws_file), "laws": {}}
        if model is not None:
            if not _release_folder(model):
                raise InputError(f"--model needs a driving model folder (dtmc.prism, model.json, abstraction.json): {model}")
            dtmc, ab = read_driving_model(model)
            law = law or law_of_rule(ab["rule"])
        names = [law] if law else list(laws)
        for name in names:
            if name not in laws:
                raise InputError(f"no law {name!r} in {laws_file} (has {', '.join(laws)})")
            if law is None and not is_law(laws[name]):   # a building block of a law (no G), not a law
                out["laws"][name] = {"component": show(laws[name])}
                continue
            try:
                out["laws"][name] = [{"rule": str(r), "K": r.K} for r in bounded_response(laws[name], name)]
            except ParseError as exc:
                out["laws"][name] = {"outside_stl_lb": str(exc)}
        if model is not None:
            out["model"] = str(model)
            out["results"] = []
            for r, prod, unobserved in law_products(dtmc, ab, laws, law, unknown=unknown,
                                                    steps_per_unit=steps_per_unit):
                safe = prod.safe_probability()
                p_viol = [1.0 - float(safe[prod.index(*prod.start(s))]) for s in range(dtmc.n)]
                out["results"].append({"rule": str(r), "K_steps": r.K * steps_per_unit, "assumed": unobserved,
                                       "unknown": unknown, "states": dtmc.state_names, "P_F_viol": p_viol,
                                       "initial": p_viol[dtmc.initial]})
        if as_json:
            typer.echo(json.dumps(out))
            return
        for name, rules in out["laws"].items():
            if isinstance(rules, dict):
                if "outside_stl_lb" in rules:
                    typer.echo(f"{name}: {rules['outside_stl_lb']}")
            else:
                for r in rules:
                    typer.echo(f"{name}: {r['rule']}")
        for res in out.get("results", []):
            typer.echo(f"{res['rule']}  (K = {res['K_steps']} steps; assumed {res['unknown']}: {res['assumed'] or '-'})")
            for st, pv in zip(res["states"], res["P_F_viol"]):
                typer.echo(f"  {st}  P[F viol] = {pv:.4f}")
            typer.echo(f"  initial state: {res['initial']:.4f}")


def _print_table(dtmc, res, out) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    var = next(iter(dtmc.variables), None)
    table = Table(title=escape(f"{res.property}  [{res.engine}]"))
    table.add_column("state", justify="right")
    if var is not None:
        table.add_column(var, justify="right")
    if dtmc.state_names:
        table.add_column("name")
    table.add_column("probability", justify="right")
    if res.satisfied is not None:
        table.add_column("satisfied")
    for i in range(min(dtmc.n, MAX_TABLE_ROWS)):
        row = [str(i) + (" (init)" if i == dtmc.initial else "")]
        if var is not None:
            row.append(str(int(dtmc.variables[var][i])))
        if dtmc.state_names:
            row.append(escape(str(dtmc.state_names[i])))
        row.append(f"{res.values[i]:.10g}")
        if res.satisfied is not None:
            row.append("yes" if res.satisfied[i] else "no")
        table.add_row(*row)
    console.print(table)
    if dtmc.n > MAX_TABLE_ROWS:
        console.print(f"... {dtmc.n - MAX_TABLE_ROWS} more states (use --json for all)")
    console.print(f"initial state {dtmc.initial}: {res.initial:.10g}   ({res.seconds * 1e3:.2f} ms, {dtmc.n} states)")
