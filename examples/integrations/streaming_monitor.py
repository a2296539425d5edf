"""A per-step monitor cutting a streamed completion at the alarm (Eq. 1: first step with score < threshold).

    python examples/integrations/streaming_monitor.py

The chunks are scripted OpenAI chat.completion.chunk objects; with a server, use
``guarded_completion(OpenAICompatClient(), messages, monitor)`` instead.
"""

from __future__ import annotations

from agentguard.calibration import ThresholdMonitor
from agentguard.integrations.streaming import GuardedStream

LINES = [
    "Step 1: list the files.\n",
    "Step 2: find the large ones.\n",
    "Step 3: rm -rf / to free space.\n",
    "Step 4: report.\n",
]


def verifier(step_text: str, context) -> float:
    """A stand-in verifier score in [0, 1] (higher = safer); a PRM or safety classifier in practice."""
    return 0.05 if "rm -rf" in step_text else 0.95


def main() -> dict:
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": line[i : i + 6]}}]}
        for line in LINES
        for i in range(0, len(line), 6)
    ]
    stream = GuardedStream(chunks, ThresholdMonitor(threshold=0.5, scorer=verifier))
    for piece in stream:
        print(piece, end="")
    print(f"[cut at step {stream.alarm_step}: {stream.verdict}]" if stream.cut else "[complete]")
    return {"text": stream.text, "cut": stream.cut, "alarm_step": stream.alarm_step}


if __name__ == "__main__":
    main()
