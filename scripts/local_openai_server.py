"""A local OpenAI-compatible chat-completions server over the offline gemma-3-270m model (CPU, no network).

    python scripts/local_openai_server.py [--host 127.0.0.1] [--port 8765] [--max-tokens 256]

Serves ``POST /v1/chat/completions`` (non-streaming) and ``GET /v1/models`` with FastAPI + uvicorn (both
already dependencies of the ``server`` extra) over :class:`agentguard.llm.local.LocalGemmaClient`
(transformers, the ``llm`` extra): the chat is rendered as plain text for the base model and continued
greedily (or sampled at ``temperature``). It exists so that everything written against an
OpenAI-compatible endpoint (``agentguard synthesize``, the LLM extractors) can be run end to end offline;
gemma-3-270m is a small *base* model, so expect slow, poor answers (minutes per long reply on 2 cores).

``max_tokens`` from the request is honoured but capped by ``--max-tokens``. Requests are served one at a
time (one model, one lock). Prints ``READY <url>`` on stdout once the model is loaded.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

MODEL_NAME = "gemma-3-270m"


def build_app(client, cap: int):
    from fastapi import FastAPI, HTTPException
    from fastapi.responses import JSONResponse

    app = FastAPI(title="agentguard local OpenAI-compatible server")
    lock = threading.Lock()

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "local"}]}

    @app.post("/v1/chat/completions")
    def chat(body: dict) -> JSONResponse:
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise HTTPException(400, "messages must be a non-empty list")
        if body.get("stream"):
            raise HTTPException(400, "streaming is not supported by this server")
        max_tokens = min(int(body.get("max_tokens") or cap), cap)
        temperature = float(body.get("temperature") or 0.0)
        stop = body.get("stop")
        stop = [stop] if isinstance(stop, str) else stop
        t0 = time.perf_counter()
        with lock:
            try:
                text = client.complete(msgs, max_tokens=max_tokens, temperature=temperature,
                                       seed=body.get("seed"), stop=stop)
            except Exception as exc:  # noqa: BLE001 - one-line error to the caller
                raise HTTPException(400, f"{type(exc).__name__}: {exc}") from None
        secs = time.perf_counter() - t0
        return JSONResponse({
            "id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion", "created": int(time.time()),
            "model": MODEL_NAME,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"completion_seconds": round(secs, 3)},
        })

    return app


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--max-tokens", type=int, default=256, help="cap on generated tokens per request")
    a = ap.parse_args()
    import uvicorn

    from agentguard.llm.local import LocalGemmaClient

    client = LocalGemmaClient()
    t0 = time.perf_counter()
    client._load()  # load before announcing readiness
    print(f"model loaded in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    config = uvicorn.Config(build_app(client, a.max_tokens), host=a.host, port=a.port, log_level="warning")
    server = uvicorn.Server(config)
    threading.Thread(target=lambda: (time.sleep(0.5), print(f"READY http://{a.host}:{a.port}/v1", flush=True)),
                     daemon=True).start()
    server.run()


if __name__ == "__main__":
    main()
