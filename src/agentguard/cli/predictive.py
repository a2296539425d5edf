"""Commands of the proactive mechanism (Pro2Guard), registered by :mod:`agentguard.cli`.

``agentguard check MODEL --property 'P=? [F s=3|s=7]' [--json] [--engine native|storm]``
``agentguard laws LAWS.txt [--law NAME] [--model DRIVING_FOLDER] [--json]``
``agentguard learn TRACES --spec SPEC --out MODEL.json [--prism MODEL.prism] [--from-identity NAME] [--json]``
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Iterator

import typer

from .options import JSON, ticker

__all__ = ["register"]

MAX_TABLE_ROWS = 60


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add ``check``, ``laws``, ``learn`` and ``type-traces`` to the main app."""
    _check_command(app)
    _laws_command(app)
    _learn_command(app)
    _typed_command(app)


def _typed_command(app: typer.Typer) -> None:
    @app.command("type-traces")
    def type_traces(
        src: str = typer.Argument(..., help="Parquet traces with JSON-text states (a .parquet file or a folder)"),
        dst: str = typer.Argument(..., help="folder for the typed copies (one file per input file)"),
        as_json: bool = JSON,
    ) -> None:
        """Store the states of Parquet traces as a typed struct column (``state_typed``), which
        ``learn --engine columnar|spark`` reads without parsing JSON; states that do not fit stay text."""
        from ..predictive.trace_stream import write_typed_parquet

        stats = write_typed_parquet(src, dst)
        if as_json:
            typer.echo(json.dumps(stats))
        else:
            typer.echo(f"{stats['rows']} rows: {stats['typed']} typed, {stats['text']} kept as JSON text -> {dst}")


def _check_command(app: typer.Typer) -> None:
    @app.command("check")
    def check_cmd(
        model: str | None = typer.Argument(
            None, help="PRISM file (dtmc), Storm DRN file, saved agentguard model (.json), or a Pro2Guard "
                       "release model folder."),
        prop: list[str] | None = typer.Option(None, "--property", "-p",
                                              help="PCTL property, e.g. 'P=? [F s=3|s=7]' or 'R=? [F \"done\"]' "
                                                   "(repeatable)."),
        props_file: str | None = typer.Option(None, "--props", help="a properties file (one property a line or "
                                                                    "';'-separated, // comments, const lines)."),
        const: str | None = typer.Option(None, "--const", help="values of undefined constants, e.g. N=5,p=0.3"),
        as_json: bool = JSON,
        engine: str = typer.Option("native", "--engine", "-e", help="native (own sparse solver) or storm (stormpy)."),
        storm_mode: str = typer.Option("default", "--storm-mode", help="Storm solver: default, sound or exact."),
        method: str = typer.Option("auto", "--method", help="Native linear solver: auto, direct or iterative."),
    ) -> None:
        """Check PCTL properties on every state of a DTMC and print the value of each state."""
        from ..core.errors import InputError

        if model is None:
            raise InputError("missing MODEL (a PRISM file or a saved agentguard model)")
        if not prop and props_file is None:
            raise InputError("missing --property, e.g. --property 'P=? [F s=3]' (or --props FILE)")
        if engine not in ("native", "storm"):
            raise InputError(f"unknown engine {engine!r} (use native or storm)")
        if method not in ("auto", "direct", "iterative"):
            raise InputError(f"unknown method {method!r} (use auto, direct or iterative)")
        if storm_mode not in ("default", "sound", "exact"):  # checked with either engine: never ignored silently
            raise InputError(f"unknown storm mode {storm_mode!r} (use default, sound or exact)")
        dtmc, results = _run_check(model, list(prop or []), props_file, const, engine, storm_mode, method)
        outs = []
        for res in results:
            out = res.to_json_dict()
            out["model"] = str(model)
            out["states"] = dtmc.n
            out["initial_state"] = int(dtmc.initial)
            if dtmc.variables:  # values[i] is the state whose variables have these values (PRISM: s = lo + i)
                out["variables"] = {k: v.tolist() for k, v in dtmc.variables.items()}
            outs.append(out)
        if as_json:
            typer.echo(json.dumps(outs[0] if len(outs) == 1 else {"model": str(model), "results": outs}))
            return
        for res, out in zip(results, outs):
            _print_table(dtmc, res, out)


def _run_check(model: str, props: list[str], props_file: str | None, const: str | None, engine: str,
               storm_mode: str, method: str):
    """Read the model and check every property: ``(dtmc, [CheckResult, ...])``. With ``--engine storm``
    a general PRISM file goes to Storm end to end (its parser, builder and checker), never through the
    native reader."""
    from ..core.errors import InputError
    from ..predictive.checker import check
    from ..predictive.load import is_drn, load_dtmc, prism_source
    from ..predictive.prism_storm import parse_constants
    from ..spec.pctl import parse_properties, parse_property

    consts = parse_constants(const)
    texts = list(props)
    if props_file is not None:
        try:
            texts.append(Path(props_file).read_text())
        except OSError as exc:
            raise InputError(f"cannot read properties file {props_file}: {exc.strerror or exc}") from None
    path = Path(model)
    general = engine == "storm" and path.is_file() and prism_source(path) == path and not is_drn(path)
    if general:
        from ..predictive.prism import native_form

        general = not native_form(path.read_text(errors="replace"), consts)
    if general:
        from ..predictive.storm_engine import check_program

        model_consts = dict(consts)
        parsed = _parse_all(texts, props, props_file, model_consts, parse_properties, parse_property)
        return check_program(path, parsed, consts, storm_mode)
    dtmc = load_dtmc(model, consts or None)
    known = dict(dtmc.meta.get("constants") or {})
    known.update({k: _num(v) for k, v in consts.items()})
    parsed = _parse_all(texts, props, props_file, known, parse_properties, parse_property)
    if engine == "storm":
        from ..predictive.storm_engine import check_storm

        src = prism_source(model) if dtmc.meta.get("reader") != "storm-drn" else None
        return dtmc, [check_storm(dtmc, p, mode=storm_mode, prism=src) for p in parsed]
    return dtmc, [check(dtmc, p, engine="native", method=method) for p in parsed]


def _num(v: str):
    if v in ("true", "false"):
        return v == "true"
    try:
        return int(v)
    except ValueError:
        from fractions import Fraction

        return float(Fraction(v))


def _parse_all(texts, props, props_file, consts, parse_properties, parse_property):
    out = [parse_property(t, consts) for t in props]
    if props_file is not None:
        out += parse_properties(texts[-1], consts)
    return out



def _laws_command(app: typer.Typer) -> None:
    @app.command("laws")
    def laws_cmd(
        laws_file: Path = typer.Argument(..., help="LawBreaker STL file (e.g. ../shared/data/pro2guard/av_laws.txt)."),
        law: str | None = typer.Option(None, "--law", help="One law (default: all; with --model: the model's rule)."),
        model: Path | None = typer.Option(None, "--model", help="A driving model folder of the Pro2Guard release: "
                                                                "compose the law's monitor with it and print P[F viol]."),
        unknown: str = typer.Option("error", help="an atom the abstraction does not observe: error | true | false"),
        steps_per_unit: int = typer.Option(50, min=1, help="DTMC steps per LawBreaker time unit (Example 2: F[0,2] = F[0,100])"),
        as_json: bool = JSON,
    ) -> None:
        """Reduce LawBreaker STL traffic laws to Pro2Guard's bounded-response rules (Definition 5), and
        with --model compute the probability of violating one from every state (Definition 6 product)."""
        from ..core.errors import InputError, ParseError
        from ..predictive.load import is_release_folder
        from ..predictive.traffic import law_products, read_driving_model
        from ..spec.stl import bounded_response, is_law, law_of_rule, parse_laws, show

        if unknown not in ("error", "true", "false"):  # checked with or without --model: never ignored silently
            raise InputError(f"unknown --unknown {unknown!r} (use error, true or false)")
        if not laws_file.is_file():
            raise InputError(f"laws file {laws_file} is a folder, not a file" if laws_file.is_dir()
                             else f"laws file not found: {laws_file}")
        laws = parse_laws(laws_file.read_text())
        out: dict = {"file": str(laws_file), "laws": {}}
        if model is not None:
            if not is_release_folder(model):
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



def _learn_command(app: typer.Typer) -> None:
    @app.command()
    def learn(
        traces: str = typer.Argument(..., help="JSON Lines file, one trace a line: {\"steps\": [{\"state\": {...}}, ...]}; "
                                               "or Parquet traces (a .parquet file or a folder, the service's store)"),
        spec: str = typer.Option(..., "--spec", help="abstraction spec (YAML or JSON): predicates, unsafe, ..."),
        out: str = typer.Option(..., "--out", help="where to write the learned model (JSON, with counts)"),
        alpha: float | None = typer.Option(None, "--alpha", help="Laplace constant of Eq. 1 (0 = frequency); default: spec or 1"),
        epsilon: float | None = typer.Option(None, "--epsilon", help="PAC error; default: spec or 0.05"),
        delta: float | None = typer.Option(None, "--delta", help="PAC confidence; default: spec or 0.05"),
        variant: str = typer.Option("conservative", "--variant", help="PAC rule: conservative, appendix or line11"),
        prism: str | None = typer.Option(None, "--prism", help="also write the model as a PRISM file"),
        engine: str = typer.Option("rows", "--engine", help="rows (Python per step), columnar (Parquet: predicates "
                                   "evaluated column-wise; fastest on typed traces, see type-traces) or spark (Parquet "
                                   "folder or object-store path on Apache Spark); the same model from each, see "
                                   "docs/learning.md"),
        spark_master: str = typer.Option("local[2]", "--spark-master", help="Spark master URL for --engine spark"),
        from_identity: list[str] = typer.Option([], "--from-identity", help="learn only from the service's uploads "
                                                "by this credential identity (repeatable; TRACES: the service's "
                                                "traces folder). Any agent credential may upload traces: name "
                                                "those you trust"),
        as_json: bool = JSON,
    ) -> None:
        """Learn a DTMC (Eq. 1 of Pro2Guard) from TRACES and print the PAC report (Algorithm 1, line 11)."""
        with _uploads_of(traces, from_identity) as src:
            _learn(src, spec, out, alpha, epsilon, delta, variant, prism, engine, spark_master, as_json)


@contextlib.contextmanager
def _uploads_of(traces: str, identities: list[str]) -> Iterator[str]:
    """``traces`` itself, or (with ``identities``) a temporary folder of links to the service's uploads by them
    (:func:`agentguard.server.traces.select_uploads`, names kept: ingest order), removed afterwards."""
    if not identities:
        yield traces
        return
    from ..core.errors import InputError
    from ..server.traces import select_uploads

    if not Path(traces).is_dir():
        raise InputError(f"--from-identity selects uploads in the service's traces folder; {traces} is not a folder")
    files = select_uploads(traces, identities)
    if not files:
        raise InputError(f"no traces in {traces} were uploaded by {', '.join(map(repr, identities))}")
    with tempfile.TemporaryDirectory(prefix="agentguard-uploads-") as tmp:
        for f in files:
            os.symlink(f.resolve(), Path(tmp) / f.name)
        yield tmp


def _learn(traces: str, spec: str, out: str, alpha: float | None, epsilon: float | None, delta: float | None,
           variant: str, prism: str | None, engine: str, spark_master: str, as_json: bool) -> None:
    """Learn and report (the body of ``agentguard learn``)."""
    import math
    from fractions import Fraction

    from ..core.errors import InputError
    from ..predictive.learn import DTMCLearner
    from ..spec.predicates import load_spec

    ab = load_spec(spec)
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
    with ticker(f"learning from {traces}", lambda: f"{learner.n_traces:,} traces counted so far", quiet=as_json):
        if engine == "spark":
            from ..predictive.spark import learn_spark

            learner.last_stats = learn_spark(learner, traces, master=spark_master)
        else:
            learner.add_file(traces, engine=engine)  # streamed: memory independent of the file size
    model = learner.model()
    model.meta["name"] = ab.name
    try:
        model.save(out)
    except OSError as exc:
        raise InputError(f"cannot write model {out}: {exc.strerror}") from None
    if prism:
        from ..predictive.prism import write_prism

        write_prism(model, prism)
    rep = learner.pac_report()
    d = rep.to_dict()
    warnings = model.meta.get("warnings", [])
    if as_json:
        typer.echo(json.dumps({"model": out, "n_states": model.n, "traces": learner.n_traces,
                               "state_names": model.state_names, "alpha": float(a), "pac": d,
                               "warnings": warnings}))
        return
    for w in warnings:
        typer.echo(f"warning: {w}", err=True)
    from rich.console import Console
    from rich.table import Table

    con = Console()
    con.print(f"learned {model.n} states from {learner.n_traces} traces ({d['transitions']} transitions), "
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
