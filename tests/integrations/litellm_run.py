"""Running the real LiteLLM proxy (its own venv, scripts/setup_litellm.sh) for the proxy tests: a stub model and
agentguard's guardrail endpoint served in threads, LiteLLM configured with the docs recipe's guardrail file."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from agentguard.integrations.litellm import serve_in_thread

REPO = Path(__file__).resolve().parents[2]
STREAM_SAFE = REPO / "examples" / "integrations" / "litellm_stream_safe.py"  # the docs recipe's guardrail file
LITELLM = REPO / ".litellm-venv" / "bin" / "litellm"
TOKEN, MASTER = "agentguard-tok", "sk-master-1234"


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@contextlib.contextmanager
def litellm_proxy(tmp: Path, endpoint: Any, model: type, mode: str) -> Iterator[str]:
    """The proxy's base URL, in front of the stub ``model`` (an HTTP handler class), with agentguard's
    ``endpoint`` as the guardrail (LiteLLM ``mode``); everything stopped on exit."""
    gsrv = serve_in_thread(endpoint, token=TOKEN)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), model)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = free_port()
    cfg = tmp / "config.yaml"
    shutil.copy(STREAM_SAFE, tmp / STREAM_SAFE.name)
    cfg.write_text(f"""
model_list:
  - model_name: stub
    litellm_params:
      model: openai/stub
      api_base: http://127.0.0.1:{srv.server_address[1]}/v1
      api_key: unused
guardrails:
  - guardrail_name: agentguard
    litellm_params:
      guardrail: {STREAM_SAFE.stem}.AgentGuardGuardrail
      mode: {mode}
      default_on: true
      api_base: http://127.0.0.1:{gsrv.server_address[1]}
      api_key: {TOKEN}
""")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))},
           "LITELLM_MASTER_KEY": MASTER, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_DOCS": "True"}
    proc = subprocess.Popen([str(LITELLM), "--config", str(cfg), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=open(tmp / "litellm.log", "w"), env=env, cwd=tmp)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            if proc.poll() is not None:
                pytest.fail("litellm exited: " + (tmp / "litellm.log").read_text()[-2000:])
            try:
                if httpx.get(base + "/health/liveliness", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.25)
        else:
            pytest.fail("litellm did not start: " + (tmp / "litellm.log").read_text()[-2000:])
        yield base
    finally:
        proc.terminate()
        proc.wait(20)
        gsrv.shutdown()
        srv.shutdown()
