"""``agentguard demo`` (issue 29): it opens with a guarded agent's tool calls, and its household part says what
its figures are (train = test on the embedded sample; the thresholds at which the guard changes nothing)."""

from __future__ import annotations

import json

from agentguard.cli import main
from agentguard.demo.tool_calls import SCRIPT, THRESHOLD, history_state, learn_leak_model, run_tool_call_demo
from agentguard.predictive import check


def test_the_guarded_agent_run_refuses_asks_and_warns_before_the_hazard():
    out = run_tool_call_demo(quiet=True)
    by_name = [(r["call"]["name"], r["decision"], r["guard"], r["ran"]) for r in out["rows"]]
    assert by_name[1] == ("delete_file", "ESCALATE -> approved", "rules", True)          # an approval
    assert by_name[2][:3] == ("send_email", "REJECT", "internal-mail") and not by_name[2][3]  # a refused call
    assert by_name[3][1] == "ALLOW" and by_name[3][3]                                    # the run went on
    warn = out["rows"][5]
    assert warn["call"]["name"] == "create_share_link" and warn["guard"] == "leak-forecast" and not warn["ran"]
    assert warn["p_safe"] < THRESHOLD and out["warned_before_hazard"] and not out["hazard_reached"]
    # without the guard, the state that call leads to is one post away from the hazard (not in it yet)
    assert history_state(SCRIPT[:6]) == {"secret_read": True, "public_link": True, "posted": False}
    assert out["rows"][1]["approver"] == "alice" and out["rows"][4]["ran"]  # reading .env alone is allowed


def test_refusing_the_approval_keeps_the_call_from_running():
    out = run_tool_call_demo(quiet=True, approve=False)
    assert out["rows"][1]["decision"] == "ESCALATE -> refused" and not out["rows"][1]["ran"]
    assert "delete_file" not in out["ran"]


def test_the_warning_comes_from_the_learned_model():
    """The P_safe the guard printed is the model checker's value for the state the call leads to (no fixed number)."""
    model, ab = learn_leak_model()
    p_safe = 1 - check(model, 'P=? [F "unsafe"]').values
    state = ab.abstract(history_state(SCRIPT[:6]))
    out = run_tool_call_demo(quiet=True)
    assert abs(out["rows"][5]["p_safe"] - p_safe[model.state_names.index(state)]) < 1e-9


def test_cli_demo_output_shows_tool_calls_and_is_honest_about_the_sample(tmp_path, capsys):
    main(["demo", "--out", str(tmp_path / "out"), "--data", str(tmp_path / "no-data")])
    cap = capsys.readouterr()
    first = cap.out.splitlines()[0]
    assert first.startswith("guarded agent run")
    assert "delete_file(path='/tmp/old-report.pdf')" in cap.out and "alice approves" in cap.out
    assert "REJECT by internal-mail" in cap.out and "REJECT by leak-forecast" in cap.out
    assert "held-out" not in cap.out + cap.err  # the embedded sample is learned from and replayed: train = test
    assert "train = test" in cap.err and "sample (train = test) runs" in cap.out
    assert "the paper's Table-3 thresholds" in cap.out
    res = json.loads((tmp_path / "out" / "household_results.json").read_text())
    rows = {r["name"]: r for r in res["rows"]}
    inert = [n for n, r in rows.items() if n.startswith("proactive stop") and
             (r["unsafe_rate"], r["completion_rate"]) == (rows["unguarded"]["unsafe_rate"],
                                                          rows["unguarded"]["completion_rate"])]
    for name in inert:  # every threshold at which the guard changes nothing is named in the output
        assert name.rsplit("=", 1)[-1] in next(n for n in res["notes"] if "changes nothing" in n)


def test_make_demo_installs_the_plain_package_and_make_test_every_extra():
    """``make demo`` installs the plain package (a fresh clone's run of it on that install, with its size and time, is
    benchmarks/results/demo_install.json); ``make test`` keeps the full environment, also after a ``make demo``."""
    import re
    from pathlib import Path

    mk = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    rule = lambda target: re.search(rf"^{re.escape(target)}:(.*)\n((?:\t.*\n)*)", mk, re.M)  # noqa: E731
    demo, plain, full, test = rule("demo"), rule("$(VENV)/.stamp-demo"), rule("$(VENV)/.stamp"), rule("test")
    assert "$(VENV)/.stamp-demo" in demo.group(1) and "venv" not in demo.group(1).split()
    assert "pip install -q -e ." in plain.group(2) and "[" not in plain.group(2).split("pip install")[-1]
    assert "-e '.[all]'" in full.group(2) and "venv" in test.group(1).split()


def test_a_threshold_out_of_range_is_refused_before_any_work(tmp_path, capsys):
    """``--threshold 2`` once failed after the minutes of replay and learning; now before anything runs."""
    import pytest

    from agentguard.core.errors import InputError
    from agentguard.demo.household import run_household_demo

    with pytest.raises(InputError, match=r"threshold must be in \[0, 1\], got 2"):
        run_household_demo(str(tmp_path / "out"), data=str(tmp_path / "no-data"), threshold=2.0)
    assert not (tmp_path / "out").exists()
    with pytest.raises(SystemExit) as e:
        main(["demo", "--out", str(tmp_path / "out"), "--threshold", "2"])
    cap = capsys.readouterr()
    assert e.value.code == 2 and cap.out == "" and "guarded agent run" not in cap.err
    assert cap.err.startswith("error: ") and "--threshold" in cap.err and len(cap.err.strip().splitlines()) == 1


def test_the_fallback_names_the_folder_it_looked_in(tmp_path, capsys):
    from agentguard.demo.household import run_household_demo

    run_household_demo(str(tmp_path / "out"), data=str(tmp_path / "no-data"))
    assert f"no recorded runs under {tmp_path / 'no-data'}" in capsys.readouterr().err
