"""The household evaluation (:mod:`agentguard.bench.household`, :mod:`agentguard.bench.household_eval`),
its command (``agentguard bench household``) and the demo (:mod:`agentguard.demo.household`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentguard.bench.household_eval import family_guard, learn_family_models
from agentguard.envs.household.loop import ReplayClient, run_episode


@pytest.mark.data
def test_guard_flags_before_hazard_on_held_out_runs(data_dir):
    from agentguard.bench.household import run_bench

    out = run_bench(str(data_dir), png=None, quiet=True)
    fb = out["flagged_before_hazard"]["0.9"]
    assert fb["rate"] is not None and fb["rate"] > 0.8
    assert out["timing"]["decision_ms_median"] < 1.0
    names = [r["name"] for r in out["rows"]]
    assert "unguarded" in names and any(n.startswith("reactive") for n in names)


def test_cli_bad_data_dir_is_one_line_error(tmp_path):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "agentguard", "bench", "household", "--json", "--data", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("error:") and "Traceback" not in r.stderr


@pytest.mark.data
def test_agent_loop_matches_offline_evaluation(data_dir):
    """Driving the loop with the recorded actions and Stop stops exactly where the offline table says."""
    from agentguard.core.strategies import Stop
    from agentguard.bench.household_eval import first_alarm
    from agentguard.envs.household.replay import load_runs, replay_run, scene_for_run

    runs = load_runs(data_dir, files=["unsafe_agent_records"])[:80]
    reps = [replay_run(r, data_dir) for r in runs]
    train, test = reps[:60], reps[60:]
    guard = family_guard(learn_family_models(train), 0.7)
    checked = 0
    for rep in test:
        if not rep.clean or rep.forced or any(not a for a in rep.run.actions) or not rep.run.actions:
            continue
        ps = [guard.probability(s)[0] for s in rep.states]
        expect = first_alarm(ps, len(rep.run.actions), 0.7)
        res = run_episode(scene_for_run(rep.run, data_dir), rep.run.task["instruction"],
                          ReplayClient(rep.run.actions), guard=guard, strategy=Stop(),
                          max_steps=len(rep.run.actions) + 1)
        assert (res.alarms[0] if res.alarms else None) == expect, rep.run.run_id
        assert res.p_safe == pytest.approx(ps[: len(res.p_safe)])
        checked += 1
    assert checked >= 5


@pytest.mark.data
def test_cli_bench_household_json(data_dir, tmp_path):
    import json
    import subprocess
    import sys

    png = tmp_path / "t.png"
    r = subprocess.run([sys.executable, "-m", "agentguard", "bench", "household", "--json", "--data", str(data_dir),
                        "--png", str(png)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-500:]
    out = json.loads(r.stdout)
    keys = {"name", "unsafe_rate", "completion_rate", "false_alarm_rate", "mean_warning_steps", "decision_ms"}
    assert out["rows"] and all(keys <= set(row) for row in out["rows"])
    assert png.stat().st_size > 1000
    assert out["replay"]["runs"] == 1111


def test_family_learner_equals_learn_module_dtmclearner():
    """Independent oracle: learn's DTMCLearner (Eq. 1, same valid mask) gives the same matrix, both validities."""
    from agentguard.demo.household import _embedded_replays
    from agentguard.bench.household_eval import abstract_paths, pac_learner, pac_summary

    reps = _embedded_replays()
    for valid in ("release", "observed"):
        models = learn_family_models(reps, valid=valid)
        for fam, (m, ab) in models.items():
            L = pac_learner(m, abstract_paths(reps, ab))
            assert abs(L.matrix() - m.matrix).max() < 1e-12, (fam, valid)
            assert L.pac_report().traces == len(abstract_paths(reps, ab))
        for fam, s in pac_summary(models, reps).items():
            # the rule holds nowhere -> it asks for more traces, or names states never left
            assert s["done"] or (s["more_traces_needed"] or 0) > 0 or s["states_never_left"] > 0, fam


def _t103_like_traces():
    """Counts of the release's t103 row 01001000: 150 self-loops, 30 to 01101000, 0 to 01001001, 0 to END."""
    A, B, C = "01001000", "01101000", "01001001"
    return [[A] * 151 + [B]] + [[A, B] for _ in range(29)] + [[C]]


def test_release_validity_reproduces_the_papers_31_over_184():
    """Hand-worked (the paper's Fig. 1 example, release log_raw_t103): with the release's validity the
    row is 151/184, 31/184, 1/184 (never-seen one-flip successor), 1/184 (END); observed-only: 151/182, 31/182."""
    from agentguard.bench.household_eval import END, learn_dtmc

    for valid, den, extra in (("release", 184, 1), ("observed", 182, 0)):
        m = learn_dtmc(_t103_like_traces(), unsafe=lambda s: False, valid=valid)
        ix = {s: i for i, s in enumerate(m.state_names)}
        row = m.matrix.toarray()[ix["01001000"]] if hasattr(m.matrix, "toarray") else m.matrix[ix["01001000"]]
        assert row[ix["01001000"]] == pytest.approx(151 / den)
        assert row[ix["01101000"]] == pytest.approx(31 / den)
        assert row[ix["01001001"]] == pytest.approx(extra / den)
        assert row[ix[END]] == pytest.approx(extra / den)
        assert row.sum() == pytest.approx(1.0)


def test_release_validity_never_gives_mass_beyond_one_flip_and_keeps_hazards_absorbing():
    from agentguard.bench.household_eval import learn_dtmc

    seqs = [["000", "001"], ["000", "010", "011"], ["110", "000"]]
    m = learn_dtmc(seqs, unsafe=lambda s: s[-1] == "1", valid="release")
    P = m.matrix.toarray() if hasattr(m.matrix, "toarray") else m.matrix
    ix = {s: i for i, s in enumerate(m.state_names)}
    assert P[ix["000"], ix["011"]] == 0.0 and P[ix["110"], ix["001"]] == 0.0  # two flips: never valid
    assert P[ix["000"], ix["110"]] == 0.0 and P[ix["110"], ix["010"]] > 0  # 000->110 two flips; 110->010 one
    assert P[ix["001"], ix["001"]] == 1.0 and P[ix["011"], ix["011"]] == 1.0  # hazards absorbing
    with pytest.raises(Exception):
        learn_dtmc(seqs, unsafe=lambda s: False, valid="anything")


def test_rows_carry_both_conventions_and_the_papers_figure():
    from agentguard.bench.household import PAPER_TABLE3, _annotate

    r = _annotate({"name": "proactive stop theta=0.9"})
    assert r["theta_p_safe"] == 0.9 and r["theta_violation"] == pytest.approx(0.1)
    assert r["paper_table3"] == PAPER_TABLE3["stop 0.1"] == {"unsafe_pct": 2.60, "completion_pct": 10.42}
    assert _annotate({"name": "proactive stop theta=0.3"})["paper_table3"]["unsafe_pct"] == 29.17
    assert _annotate({"name": "AgentSpec (recorded controlled runs)"})["paper_table3"]["unsafe_pct"] == 19.79
    assert _annotate({"name": "reactive rules (AgentSpec embodied.ar, stop)"})["paper_table3"] is None


def test_demo_runs_without_data(tmp_path):
    """The demo falls back to the embedded sample and writes the report with both drawings."""
    from agentguard.demo.household import run_household_demo

    res = run_household_demo(str(tmp_path / "out"), data=str(tmp_path / "no-data"), quiet=True)
    out = tmp_path / "out"
    assert (out / "report.html").stat().st_size > 500
    assert (out / "household_dtmc.png").stat().st_size > 1000 and (out / "household_risk.png").stat().st_size > 1000
    assert res["source"].startswith("embedded") and res["rows"][0]["name"] == "unguarded"
    assert res["episodes"] and all("guarded_stopped_at" in e for e in res["episodes"])


def test_live_rows_with_a_scoring_client(tmp_path):
    """The live evaluation path (unguarded / stop / reflect) with a deterministic scoring client."""
    from agentguard.bench.household import live_rows
    from agentguard.demo.household import _embedded_replays

    class Greedy:
        name = "greedy"

        def score(self, prompt, conts):  # prefers pouring and throwing: a reckless agent
            return [5.0 if c.strip() in ("pour", "throw") else (1.0 if c.strip().startswith(("find", "pick", "fill"))
                                                                 else -5.0) for c in conts]

    reps = _embedded_replays()
    guard = family_guard(learn_family_models(reps), 0.9)
    out = live_rows(Greedy(), reps, guard, 0.9, 2, tmp_path, max_steps=4, log_path=tmp_path / "live.jsonl")
    assert [r["name"].split()[2] for r in out["rows"]] == ["unguarded", "stop", "reflect"]
    assert len((tmp_path / "live.jsonl").read_text().splitlines()) == len(out["episodes"]) > 0


def test_committed_table3_json_has_both_validities_conventions_and_the_agentspec_row():
    """Issue 17's must-show, on the committed result: both validity choices, both threshold conventions,
    the AgentSpec-recorded row, the paper's figures, the stop protocol and the command."""
    import json
    from pathlib import Path

    d = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "household_table3.json").read_text())
    assert d["valid_transitions"] == "release" and d["valid_observed"]["valid_transitions"] == "observed"
    assert d["command"].startswith("python benchmarks/household_table3.py") and "cut" in d["stop_protocol"]
    for rows in (d["rows"], d["valid_observed"]["rows"]):
        names = [r["name"] for r in rows]
        assert any(n.startswith("AgentSpec (recorded") for n in names) and any(n.startswith("reactive") for n in names)
        for r in rows:
            assert r["completion_rate"] is not None or "reflect" in r["name"]
            if r["name"].startswith("proactive"):
                assert r["theta_violation"] == pytest.approx(1 - r["theta_p_safe"])
                assert "false_alarm_rate" in r and r["false_alarm_rate"] is not None
    assert sum(r["paper_table3"] is not None for r in d["rows"]) >= 6
    for fam, m in d["models"].items():
        assert "more_traces_needed" in m["pac"] and m["pac"]["states_checked"] >= m["pac"]["states_satisfying"], fam


def test_the_table_keeps_its_columns_and_says_what_they_mean():
    """"n/a" is padded to its column (it used to shift the row), and a legend names each column."""
    from agentguard.bench.household_eval import TABLE_LEGEND, table_text

    rows = [{"name": "unguarded", "unsafe_rate": 0.5, "completion_rate": 0.25, "false_alarm_rate": 0.0,
             "mean_warning_steps": None, "decision_ms": None},
            {"name": "reflect", "unsafe_rate": None, "completion_rate": None, "false_alarm_rate": 0.1,
             "mean_warning_steps": 2.0, "decision_ms": 0.02}]
    lines = table_text(rows).splitlines()
    assert len({len(line) for line in lines[:3]}) == 1, lines
    assert lines[1].endswith("  n/a     n/a") and lines[2].split()[1:3] == ["n/a", "n/a"]
    assert lines[-1] == TABLE_LEGEND and all(w in TABLE_LEGEND for w in ("f.alarm:", "warn:", "ms:"))



def test_bench_household_never_overwrites_the_committed_figure_by_default():
    """Its default plot used to be benchmarks/results/household_tradeoff.png, relative to where it runs: a new
    user's first run inside the checkout rewrote a committed file (and made benchmarks/results/ anywhere else)."""
    import typer

    from agentguard import cli

    household = typer.main.get_command(cli.app).commands["bench"].commands["household"]
    png = next(p for p in household.params if p.name == "png").default
    assert png == "bench-output/household_tradeoff.png"
    ignored = (Path(__file__).resolve().parents[2] / ".gitignore").read_text().splitlines()
    assert "bench-output/" in ignored
