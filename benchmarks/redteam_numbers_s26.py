"""Session 26 red team of the numbers (calibration, predictive, stream): each attack run against the
base commit's ``src`` and this tree's, in fresh interpreters, recording what each answered.

An answer is the value returned (a fail-open when it certifies/allows) or the exception class. The
base tree is extracted with ``git archive BASE src`` into a temporary folder.
Writes benchmarks/results/redteam_numbers_s26.json.

    python benchmarks/redteam_numbers_s26.py [--base 7ee4499]
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ATTACKS = {
    "Sequences(labels=[2]*20+[1]*20): calibrated n (false alarm)": """
import numpy as np
from agentguard.calibration import Sequences, ThresholdCalibrator
s = np.arange(40, dtype=float) / 40
out = ThresholdCalibrator(alpha=0.2).calibrate(Sequences(s, np.arange(40), np.ones(40, int), np.array([2] * 20 + [1] * 20))).n_calibration_
""",
    "calibrate_threshold(zeros((30, 2)), alpha=0.1): n": """
import numpy as np
from agentguard.calibration import calibrate_threshold
out = calibrate_threshold(np.zeros((30, 2)), alpha=0.1).n
""",
    "max_losses(30, 0.1, delta=1.5)": """
from agentguard.calibration.bounds import max_losses
out = max_losses(30, 0.1, 1.5)
""",
    "crc_max_losses(9, alpha=1.5)": """
from agentguard.calibration.calibrate import crc_max_losses
out = crc_max_losses(9, 1.5)
""",
    "hb_pvalue(0, n=0, 0.1)": """
from agentguard.calibration.bounds import hb_pvalue
out = repr(float(hb_pvalue(0, 0, 0.1)))
""",
    "binomial_pvalue(k=-1, 30, 0.1)": """
from agentguard.calibration.bounds import binomial_pvalue
out = float(binomial_pvalue(-1, 30, 0.1))
""",
    "ProactiveGuard on row [1.2, 0.3, -0.5] -> unsafe: P_safe(state 0)": """
import numpy as np
from agentguard.predictive import DTMC, ProactiveGuard
P = np.array([[1.2, 0.3, -0.5], [0, 1, 0], [0, 0, 1]])
out = ProactiveGuard(DTMC(P, labels={"unsafe": [False, False, True]}, state_names=["00", "01", "11"]), threshold=0.5).table_["00"]
""",
    "ProactiveGuard on row [0.9, 0.9, 0.1] (sums to 1.9): P_safe(state 0)": """
import numpy as np
from agentguard.predictive import DTMC, ProactiveGuard
P = np.array([[0.9, 0.9, 0.1], [0, 1, 0], [0, 0, 1]])
out = ProactiveGuard(DTMC(P, labels={"unsafe": [False, False, True]}, state_names=["00", "01", "11"]), threshold=0.5).table_["00"]
""",
    "DTMC label given as indices [0, 2, 5]": """
import numpy as np
from agentguard.predictive import DTMC
out = DTMC(np.eye(3), labels={"unsafe": [0, 2, 5]}).labels["unsafe"].tolist()
""",
    "required_count([10, 20], n_p=5, eps=0.1, delta'=0.1, B=1)": """
import numpy as np
from agentguard.predictive.pac import required_count
out = required_count(np.array([10.0, 20.0]), 5.0, 0.1, 0.1, 1.0)
""",
    "MonitoredStream(scorer -> 0.1) on ThresholdMonitor(0.5, signal='verifier'): released": """
from agentguard.calibration import MonitoredStream, ThresholdMonitor
from agentguard.core.types import Step
st = MonitoredStream([Step(output="x", signals={"verifier": 0.9})], ThresholdMonitor(0.5, signal="verifier"), scorer=lambda t, c: 0.1)
out = list(st)
""",
    "first_alarm_steps([0.9, nan | 0.7], threshold 0.5): alarm steps": """
import numpy as np
from agentguard.calibration.monitor import first_alarm_steps
out = first_alarm_steps(np.array([0.9, np.nan, 0.7]), np.array([0, 2]), np.array([2, 1]), 0.5).tolist()
""",
    "NOT CHANGED (documented): stop_at_alarm(score_fn -> None) releases the item unchecked": """
from agentguard.calibration import ThresholdMonitor, stop_at_alarm
out = list(stop_at_alarm(["unscored text"], ThresholdMonitor(0.5), score_fn=lambda item: None))
""",
    "FIXED by the lead (core.runs: an overflowed tombstone goes to a Bloom filter, rebuilt or refused): ThresholdMonitor(max_runs=1) run A alarms, 11 other runs, A again at 0.9": """
from agentguard.calibration import ThresholdMonitor
from agentguard.core.types import Context
m = ThresholdMonitor(0.5, max_runs=1)
first = m.check(Context(run_id="A"), 0.1).decision.name
for i in range(11):
    m.check(Context(run_id=f"x{i}"), 0.9)
out = [first, m.check(Context(run_id="A"), 0.9).decision.name]
""",
}

WRAP = """
import json, warnings
warnings.simplefilter("ignore")
try:
{body}
    res = {{"answer": out if isinstance(out, (int, float, str, list)) else repr(out)}}
except Exception as exc:
    res = {{"raises": type(exc).__name__, "message": str(exc)[:160]}}
print(json.dumps(res, default=repr))
"""


def run(src: Path, code: str) -> dict:
    body = "\n".join("    " + line for line in code.strip().splitlines())
    p = subprocess.run([sys.executable, "-c", WRAP.format(body=body)], capture_output=True, text=True,
                       env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}, timeout=300)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except Exception:  # noqa: BLE001
        return {"error": p.stderr[-400:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="7ee4499")
    args = ap.parse_args()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        arch = subprocess.run(["git", "archive", args.base, "src"], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=arch, check=True)
        rows = [{"attack": name, "base": run(Path(tmp) / "src", code), "this_tree": run(ROOT / "src", code)}
                for name, code in ATTACKS.items()]
    out = {"command": "python benchmarks/" + Path(__file__).name + " " + shlex.join(sys.argv[1:]),
           "base": args.base, "head": head, "attacks": rows}
    dest = ROOT / "benchmarks" / "results" / "redteam_numbers_s26.json"
    dest.write_text(json.dumps(out, indent=1) + "\n")
    for r in rows:
        print(r["attack"], "| base:", r["base"], "| now:", r["this_tree"])


if __name__ == "__main__":
    main()
