"""`agentguard learn` and `agentguard demo` from the command line: results and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentguard.cli import main
from agentguard.predictive.dtmc import DTMC

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "examples" / "microwave_traces.jsonl"
SPEC = REPO / "examples" / "microwave_spec.yaml"


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
        raise SystemExit(0)
    cap = capsys.readouterr()
    return exc.value.code, cap.out, cap.err


def test_learn_example_json(tmp_path, capsys):
    out = tmp_path / "model.json"
    code, stdout, err = run(["learn", str(TRACES), "--spec", str(SPEC), "--out", str(out), "--json",
                             "--epsilon", "0.3", "--delta", "0.1"], capsys)
    assert code == 0, err
    d = json.loads(stdout)
    assert d["traces"] == 40 and d["pac"]["epsilon"] == 0.3 and d["pac"]["delta"] == 0.1
    rows = d["pac"]["states"]
    assert {r["state"] for r in rows} == set(d["state_names"])
    assert all(set(r) >= {"count", "required", "holds"} for r in rows)
    assert d["pac"]["done"] is all(r["holds"] for r in rows)
    m = DTMC.load(out)
    assert m.counts is not None and int(m.counts.sum()) == d["pac"]["transitions"]
    assert m.labels["unsafe"].any() and "fork_in_microwave" in m.labels


def test_learn_table_and_prism(tmp_path, capsys):
    code, stdout, err = run(["learn", str(TRACES), "--spec", str(SPEC), "--out", str(tmp_path / "m.json"),
                             "--alpha", "0.5", "--prism", str(tmp_path / "m.prism")], capsys)
    assert code == 0, err
    assert "PAC report" in stdout and "stopping rule holds" in stdout and "required" in stdout
    from agentguard.predictive.prism import read_prism

    back = read_prism(tmp_path / "m.prism")
    assert back.n == DTMC.load(tmp_path / "m.json").n


def _state(open_=False, on=False, fork="CounterTop"):
    return {"objects": [{"objectType": "Microwave", "isOpen": open_, "isToggled": on},
                        {"objectType": "Fork", "parentReceptacles": [fork]},
                        {"objectType": "Potato", "parentReceptacles": ["CounterTop"]}]}


BAD_TRACES = {
    "empty": ("", "is empty"),
    "malformed": ('{"steps": [\n', "not valid JSON"),
    "no_steps_key": ('{"run": 1}\n', "'steps'"),
    "no_steps": ('{"steps": []}\n', "has no steps"),
    # red team: 'steps' not a list (was "unexpected TypeError", exit 3; a string was read as characters)
    "steps_number": ('{"steps": 5}\n', "'steps' list"),
    "steps_text": ('{"steps": "abc"}\n', "'steps' list"),
    "steps_object": ('{"steps": {"state": {}}}\n', "'steps' list"),
    "trace_list": ('[{"state": {}}]\n', "'steps' list"),
    "infeasible_state": (json.dumps({"steps": [{"state": _state()}, {"state": _state(open_=True, on=True)}]}) + "\n",
                         "infeasible"),
    "predicate_error": (json.dumps({"steps": [{"state": {"objects": 3}}]}) + "\n", "predicate"),
    "no_state": (json.dumps({"steps": [{"action": "x"}]}) + "\n", "no 'state'"),
    "invalid_transition": (json.dumps({"steps": [{"state": _state()}, {"state": _state(open_=True, fork="Microwave")}]})
                           + "\n", "not a valid transition"),
}


@pytest.mark.parametrize("case", sorted(BAD_TRACES))
def test_bad_traces_give_one_line_errors(case, tmp_path, capsys):
    text, msg = BAD_TRACES[case]
    p = tmp_path / "t.jsonl"
    p.write_text(text)
    code, _, err = run(["learn", str(p), "--spec", str(SPEC), "--out", str(tmp_path / "m.json")], capsys)
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert msg in err, err
    assert not (tmp_path / "m.json").exists()


def test_trace_outside_the_specs_state_list(tmp_path, capsys):
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({"predicates": {"hot": "temp > 50", "door": "door_open"}, "states": ["00", "10"]}))
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"steps": [{"state": {"temp": 20, "door_open": False}},
                                       {"state": {"temp": 20, "door_open": True}}]}) + "\n")
    code, _, err = run(["learn", str(p), "--spec", str(spec), "--out", str(tmp_path / "m.json")], capsys)
    assert code == 2 and "unknown state '01'" in err and "step 1" in err


BAD_SPECS = {
    "yaml": ("predicates: [unclosed\n", "not valid YAML"),
    "json": ('{"predicates": ', "not valid JSON"),
    "unknown_key": ('{"predicates": {"a": "x > 1"}, "colour": 1}', "unknown key"),
    "call": ('{"predicates": {"a": "__import__(\'os\').system(\'true\')"}}', "not allowed"),
    "dunder": ('{"predicates": {"a": "x.__class__"}}', "not allowed"),
    "lambda": ('{"predicates": {"a": "(lambda: 1)()"}}', "not allowed"),
    "syntax": ('{"predicates": {"a": "x >"}}', "does not parse"),
    "unknown_pred_in_unsafe": ('{"predicates": {"a": "x > 1"}, "unsafe": "a and b"}', "unknown predicate"),
    "no_predicates": ('{"unsafe": "a"}', "'predicates'"),
    "bad_unseen": ('{"predicates": {"a": "x > 1"}, "unseen": "guess"}', "unseen policy"),
    "bad_alpha": ('{"predicates": {"a": "x > 1"}, "alpha": "one"}', "'alpha' must be a number"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_bad_specs_give_one_line_errors(case, tmp_path, capsys):
    text, msg = BAD_SPECS[case]
    spec = tmp_path / ("s.yaml" if case == "yaml" else "s.json")
    spec.write_text(text)
    code, _, err = run(["learn", str(TRACES), "--spec", str(spec), "--out", str(tmp_path / "m.json")], capsys)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert msg in err, err


def test_bad_numbers_and_missing_files(tmp_path, capsys):
    for extra, msg in ((["--alpha", "-1"], "alpha"), (["--epsilon", "2"], "epsilon"), (["--variant", "x"], "pac_variant")):
        code, _, err = run(["learn", str(TRACES), "--spec", str(SPEC), "--out", str(tmp_path / "m.json"), *extra], capsys)
        assert code == 2 and msg in err, err
    code, _, err = run(["learn", str(tmp_path / "none.jsonl"), "--spec", str(SPEC), "--out", str(tmp_path / "m.json")],
                       capsys)
    assert code == 2 and "cannot read trace file" in err
    code, _, err = run(["learn", str(TRACES), "--spec", str(tmp_path / "none.yaml"), "--out", str(tmp_path / "m.json")],
                       capsys)
    assert code == 2 and "cannot read spec" in err


def test_demo_command(tmp_path, capsys):
    code, stdout, err = run(["demo", "--out", str(tmp_path), "--json"], capsys)
    assert code == 0, err
    d = json.loads(stdout)
    for f in ("model.json", "model.prism", "dtmc.png", "summary.json"):
        assert (tmp_path / f).stat().st_size > 0
    assert 0 < d["risk_initial"] < 1 and d["unsafe_states"] == ["1101"]
    assert d["risk"]["1101"] == pytest.approx(1.0) and d["risk"]["finish"] == 0.0


def test_usage_errors_are_not_tracebacks(capsys):
    code, _, err = run(["learn"], capsys)
    assert code == 2 and "Missing argument" in err and "Traceback" not in err
    code, _, err = run(["learn", str(TRACES), "--out", "x.json"], capsys)
    assert code == 2 and "--spec" in err and "Traceback" not in err


def test_learn_on_traces_without_states_says_how_to_record_them(tmp_path, capsys):
    """Adapters record ``state: null`` without a state function; learning from that names the fix."""
    traces = tmp_path / "t.jsonl"
    traces.write_text(json.dumps({"run_id": "run-42", "steps": [{"state": None, "action": {"name": "x"}}]}) + "\n")
    code, stdout, err = run(["learn", str(traces), "--spec", str(SPEC), "--out", str(tmp_path / "m.json")], capsys)
    assert code == 2
    line = err.strip()
    assert "\n" not in line and "trace run-42 step 0 has no 'state'" in line
    assert "state_fn" in line and 'state = "history"' in line and "--state history" in line


def test_learn_writes_a_bundle(tmp_path, capsys):
    """The learned model carries the spec (the bundle a proactive guard file points at)."""
    out = tmp_path / "model.json"
    code, _, err = run(["learn", str(TRACES), "--spec", str(SPEC), "--out", str(out), "--json"], capsys)
    assert code == 0, err
    from agentguard.predictive.bundle import load_bundle

    model, ab = load_bundle(out)
    assert ab is not None and ab.name == "microwave-fork" and ab.unseen == "pessimistic" and ab.terminal == "finish"
    assert ab.width == len(model.state_names[0])


def test_learn_engine_columnar_gives_the_row_engines_model(tmp_path, capsys):
    """`--engine columnar` on the service's Parquet store: the same model as the default engine."""
    from agentguard.core.types import read_traces
    from agentguard.server.traces import write_parquet

    write_parquet(tmp_path / "store" / "b.parquet", read_traces(TRACES))
    models = {}
    for engine in ("rows", "columnar"):
        out = tmp_path / f"{engine}.json"
        code, stdout, err = run(["learn", str(tmp_path / "store"), "--spec", str(SPEC), "--out", str(out), "--json",
                                 "--engine", engine], capsys)
        assert code == 0, err
        models[engine] = DTMC.load(out)
    a, b = models["rows"], models["columnar"]
    assert a.state_names == b.state_names and (a.counts != b.counts).nnz == 0
    code, _, err = run(["learn", str(TRACES), "--spec", str(SPEC), "--out", str(tmp_path / "x.json"),
                        "--engine", "columnar"], capsys)
    assert code != 0 and "reads Parquet" in err and "Traceback" not in err


def test_type_traces_then_columnar_gives_the_row_engines_model(tmp_path, capsys):
    """`agentguard type-traces` (typed state column), then `learn --engine columnar`: the same model
    as the row engine on the JSON-text store; the service's writer can write the typed form itself."""
    from agentguard.core.types import read_traces
    from agentguard.server.traces import write_parquet

    write_parquet(tmp_path / "store" / "b.parquet", read_traces(TRACES))
    write_parquet(tmp_path / "direct" / "b.parquet", read_traces(TRACES), typed=True)
    code, stdout, err = run(["type-traces", str(tmp_path / "store"), str(tmp_path / "typed"), "--json"], capsys)
    assert code == 0, err
    stats = json.loads(stdout)
    assert stats["typed"] == stats["rows"] > 0 and stats["text"] == 0
    models = {}
    for name, folder, engine in (("rows", "store", "rows"), ("typed", "typed", "columnar"), ("direct", "direct", "columnar")):
        out = tmp_path / f"{name}.json"
        code, _, err = run(["learn", str(tmp_path / folder), "--spec", str(SPEC), "--out", str(out), "--json",
                            "--engine", engine], capsys)
        assert code == 0, err
        models[name] = DTMC.load(out)
    for name in ("typed", "direct"):
        assert models[name].state_names == models["rows"].state_names
        assert (models[name].counts != models["rows"].counts).nnz == 0
