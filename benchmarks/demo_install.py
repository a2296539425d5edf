"""`make demo` on a fresh clone: install size, wall time, and the demo's output (issue 29).

    python benchmarks/demo_install.py --repo /work/main --label before
    python benchmarks/demo_install.py --repo /work/wt-firstuse --label after

Each run clones ``--repo`` into a fresh folder (``git clone``: tracked files only, no virtual
environment, no ``../shared/data`` next to it, so the demo runs on its embedded defaults), runs
``make demo`` there with a wall clock around it, and measures the size of every virtual environment
the clone holds afterwards (``du -sb``). The results go under ``--label`` in
``benchmarks/results/demo_install.json`` (other labels are kept), with the commands, the load average
and the packages installed. Wheels come from the machine's local wheel store and pip's cache, so the
install is "warm": no download time is in these figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "demo_install.json"


def du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--dest", default=None)
    args = ap.parse_args()
    dest = Path(args.dest or f"/tmp/fresh-demo-{args.label}")
    if dest.exists():
        shutil.rmtree(dest)
    subprocess.run(["git", "clone", "-q", args.repo, str(dest)], check=True)
    commit = subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    load_before = os.getloadavg()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "AGENTGUARD_DATA")}
    t0 = time.time()
    proc = subprocess.run(["make", "demo"], cwd=dest, capture_output=True, text=True, env=env)
    wall = time.time() - t0
    venvs = {p.name: du(p) for p in dest.iterdir() if p.is_dir() and (p / "pyvenv.cfg").is_file()}
    pkgs = []
    for name in venvs:
        pip = dest / name / "bin" / "pip"
        pkgs.append(len(subprocess.run([str(pip), "list", "--format=freeze"], capture_output=True, text=True).stdout.split()))
    record = {
        "command": f"python benchmarks/demo_install.py --repo {args.repo} --label {args.label}",
        "what": "git clone REPO DEST && cd DEST && make demo (a fresh virtual environment; warm local wheel store)",
        "commit": commit,
        "returncode": proc.returncode,
        "wall_s": round(wall, 1),
        "venv_bytes": venvs,
        "venv_total_mb": round(sum(venvs.values()) / 1e6, 1),
        "packages_installed": sum(pkgs),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "stdout_tail": proc.stdout[-6000:],
        "stderr_tail": proc.stderr[-3000:],
    }
    data = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    data[args.label] = record
    if "before" in data and "after" in data:
        b, a = data["before"], data["after"]
        data["ratios"] = {"venv_size_after_over_before": round(a["venv_total_mb"] / b["venv_total_mb"], 3),
                          "wall_after_over_before": round(a["wall_s"] / b["wall_s"], 3)}
    data["note"] = ("pip installs from the machine's local wheel store (/opt/wheels, a file:// index): a warm cache, "
                    "no download time; both runs on the same shared 2-core machine (see loadavg).")
    RESULTS.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps({k: record[k] for k in ("returncode", "wall_s", "venv_total_mb", "packages_installed")}))
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
