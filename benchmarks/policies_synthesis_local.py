"""`agentguard synthesize` end to end against a local OpenAI-compatible server serving the offline gemma model.

Starts ``scripts/local_openai_server.py`` (gemma-3-270m on CPU), runs the CLI as a user would
(``agentguard synthesize mind2web_sc --base-url ... --model gemma-3-270m --timeout ... --rounds N``, Nagini
on unless ``--no-verify``), and records the outcome, each round's stage and reason, and how long the model
load, each LLM reply and the whole loop took. gemma-3-270m is a small base model: the expected outcome is
"no valid policy in N rounds", with the reasons; what this shows is that the loop runs to the end without
a client timeout.

    python benchmarks/policies_synthesis_local.py [--rounds 2] [--max-tokens 192] [--no-verify]

Writes benchmarks/results/policies_synthesis_local.json with the command that made it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(max_tokens: int, env: dict) -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(REPO / "scripts/local_openai_server.py"), "--port", str(port),
                             "--max-tokens", str(max_tokens)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY"):
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, line.split()[1], time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=192)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--spec", default="mind2web_sc")
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/policies_synthesis_local.json"))
    a = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc, url, load_s = start_server(a.max_tokens, env)
    try:
        out = Path(a.out).with_suffix(".policy.py")
        cmd = [sys.executable, "-c", "import sys; from agentguard.cli import main; main(sys.argv[1:])", "synthesize", a.spec, "--out", str(out), "--base-url", url,
               "--model", "gemma-3-270m", "--timeout", str(a.timeout), "--rounds", str(a.rounds),
               "--max-tokens", str(a.max_tokens)] + (["--no-verify"] if a.no_verify else [])
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.rounds * a.timeout + 900)
        loop_s = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    rounds = [ln for ln in r.stderr.splitlines() if ln.startswith("round ")]
    res = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "cpus": os.cpu_count(), "model": "gemma-3-270m (Q4_K_M GGUF dequantized, CPU, transformers)",
           "server_start_seconds": round(load_s, 1), "loop_seconds": round(loop_s, 1),
           "seconds_per_round": round(loop_s / max(1, len(rounds)), 1), "exit_code": r.returncode,
           "timed_out": "timed out" in r.stderr, "rounds": rounds, "stderr_tail": r.stderr[-4000:],
           "stdout": r.stdout[-1000:], "cli": "agentguard " + " ".join(cmd[3:])}
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    print(f"exit {r.returncode} after {loop_s:.0f}s ({len(rounds)} rounds); timed out: {res['timed_out']}")
    print("\n".join(rounds))


if __name__ == "__main__":
    main()
