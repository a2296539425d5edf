"""Dashboard on real data, screenshotted in headless Chromium.

The service runs the three real guards from guard files: the verified Mind2Web-SC policy for tool calls,
Pro2Guard's ProactiveGuard over a DTMC from the Pro2Guard release (``pro2guard/embodied_dtmcs/<task>``)
for steps, and a ThresholdMonitor whose threshold is calibrated here (CRC, false-alarm risk) on the
e-valuator GSM8K verifier scores. Runs are paths sampled from the DTMC, each with the verifier scores of
one held-out GSM8K trajectory streamed as its signal. Writes the PNG and a JSON with the command.

    python benchmarks/server_dashboard.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TOKEN = "dashboard-demo-token"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--task", default="log_raw_t103", help="Pro2Guard household model folder")
    ap.add_argument("--signals", default="evaluator/gsm8k_w_scores_compressed.csv.gz")
    ap.add_argument("--alpha", type=float, default=0.1, help="false-alarm risk level for CRC calibration")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_dashboard_real.png"))
    args = ap.parse_args()

    import httpx

    from agentguard.calibration import ThresholdCalibrator
    from agentguard.calibration.data import load_signals
    from agentguard.predictive import load_dtmc
    from agentguard.predictive.learn import sample_paths
    from agentguard.server.app import create_app
    from agentguard.server.browser import screenshot_dashboard
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    data = Path(args.data)
    rng = np.random.default_rng(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="agentguard-dash-"))
    print("calibrating the monitor ...", file=sys.stderr)
    seqs = load_signals(data / args.signals)
    cal_part, test_part = seqs.split(seqs.n // 2, rng)
    cal = ThresholdCalibrator(risk="false_alarm", method="crc", alpha=args.alpha).calibrate(cal_part)
    lam = np.round(np.linspace(0.0, 1.0, 41), 4)
    mins = test_part.minima()
    safe = test_part.labels == 1
    far = [float(np.mean(mins[safe] < t)) for t in lam]  # safe runs alarmed (Eq. 1: alarm iff min < lambda)
    det = [float(np.mean(mins[~safe] < t)) for t in lam]  # unsafe runs alarmed
    calib = {"threshold": cal.threshold_, "alpha": args.alpha, "method": "crc", "risk": "false_alarm",
             "n_calibration": int(cal.n_calibration_), "curves": {
                 "false-alarm rate (held-out safe runs)": {"x": lam.tolist(), "y": far, "xlabel": "threshold",
                                                           "ylabel": "false-alarm rate", "target": args.alpha},
                 "detection rate (held-out unsafe runs)": {"x": lam.tolist(), "y": det, "xlabel": "threshold",
                                                           "ylabel": "detection rate"}}}
    (tmp / "calibration.json").write_text(json.dumps(calib))
    # Also kept as a result: a calibration file ThresholdMonitor.from_config reads (docs/server.md).
    calib_out = Path(args.out).with_name("server_monitor_calibration.json")
    calib_out.write_text(json.dumps({**calib, "signals": args.signals, "command": "python " + " ".join(
        [str(Path(__file__).relative_to(REPO))] + sys.argv[1:])}, indent=1) + "\n")
    model_dir = data / "pro2guard" / "embodied_dtmcs" / args.task
    (tmp / "steps.toml").write_text(
        '[[guards]]\ntype = "python"\nfactory = "agentguard.predictive:ProactiveGuard"\n'
        f'model = "{model_dir}"\nthreshold = 0.5\n')
    (tmp / "signals.toml").write_text(
        '[[guards]]\ntype = "python"\nfactory = "agentguard.calibration:ThresholdMonitor"\n'
        f'calibration = "{tmp / "calibration.json"}"\nsignal = "score"\n')
    settings = ServerSettings(token=TOKEN, state_dir=str(tmp / "data"), step_guards=str(tmp / "steps.toml"),
                              signal_guards=str(tmp / "signals.toml"))
    m = load_dtmc(model_dir)
    flat, lengths = sample_paths(m.matrix, m.initial, 500, rng, max_len=25)
    pool = np.split(flat, np.cumsum(lengths)[:-1])
    unsafe_states = set(np.flatnonzero(m.label("unsafe")).tolist())
    hit = [p for p in pool if unsafe_states & set(p.tolist())]
    rest = sorted((p for p in pool if not unsafe_states & set(p.tolist())), key=len, reverse=True)
    # show runs that reach an unsafe state (alarms) next to the longest safe ones
    paths = (hit[: (args.runs + 1) // 2] + rest)[: args.runs]
    unsafe_test = np.flatnonzero(~safe)
    safe_test = np.flatnonzero(safe)
    h = {"Authorization": f"Bearer {TOKEN}"}
    alarm_run = None
    with serve_in_thread(create_app(settings)) as base, httpx.Client(base_url=base, headers=h, timeout=30) as c:
        user = {"age": 16, "domestic": False, "dr_license": False, "vaccine": True, "membership": True}
        for tool in ["search_movies", "book_hotel", "rent_car", "book_flight", "buy_product"]:
            c.post("/v1/check", json={"run_id": "web-agent-1", "tool_call": {"name": tool},
                                      "metadata": {"user_info": user}}).raise_for_status()
        for k, path in enumerate(paths):
            run = f"{args.task}-run{k}"
            for s in path:
                c.post(f"/v1/runs/{run}/steps", json={"state": m.state_names[int(s)], "action": "step"}
                       ).raise_for_status()
            pick = unsafe_test if k % 2 == 0 else safe_test
            seq = test_part.sequence(int(pick[rng.integers(len(pick))]))
            for x in seq:
                r = c.post(f"/v1/runs/{run}/signals", json={"signals": {"score": float(x)}})
                r.raise_for_status()
            runinfo = c.get(f"/v1/runs/{run}").json()
            if alarm_run is None and any(d["decision"] != "ALLOW" for d in runinfo["decisions"]):
                alarm_run = run
        alarm_run = alarm_run or f"{args.task}-run0"
        info = screenshot_dashboard(base, TOKEN, args.out, run_id=alarm_run, height=1600)
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps({
        "command": "python " + " ".join([str(Path(__file__).relative_to(REPO))] + sys.argv[1:]),
        "screenshot": out.name, "model": str(model_dir.relative_to(data)), "model_states": m.n,
        "calibrated_threshold": cal.threshold_, "alpha": args.alpha, "n_calibration": int(cal.n_calibration_),
        "runs": len(paths), "shown_run": alarm_run,
        "page": {k: v for k, v in info.items() if k != "decisions"}, "decisions_shown": len(info["decisions"]),
        "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=2) + "\n")
    print(json.dumps({"screenshot": str(out), "threshold": cal.threshold_, "page_errors": info["page_errors"]}))


if __name__ == "__main__":
    main()
