"""Issue 13's hostile-input suite: every file in ``hostile/`` is refused at load, or stopped within twice its
time limit (CPU time of the evaluating thread) and under the documented memory cap, and nothing it tries
outside the policy happens (its marker file is never written).

Each file starts with ``# hostile: <what it tries>`` and ``# args: <JSON>`` (``"LIST10000"`` stands for a
10,000-element list). The marker path ``MARKER_PATH`` is replaced by a fresh temporary path.
"""

from __future__ import annotations

import json
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from agentguard.core.errors import GuardTimeout, PolicyError
from agentguard.policies import policy_from_source
from agentguard.policies.sandbox import MEMORY_CAP_BYTES

HOSTILE = sorted((Path(__file__).parent / "hostile").glob("*.py"))
LIMIT_S = 0.05


def _load(path: Path, marker: Path):
    text = path.read_text(encoding="utf-8").replace("MARKER_PATH", str(marker))
    meta = dict(line[2:].split(": ", 1) for line in text.splitlines()[:2])
    args = {k: (list(range(10_000)) if v == "LIST10000" else v) for k, v in json.loads(meta["args"]).items()}
    return text, args


def test_the_suite_is_large_enough():
    assert len(HOSTILE) >= 40


@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: p.stem)
def test_hostile_policy_is_refused_or_stopped(path, tmp_path):
    marker = tmp_path / "pwned"
    source, args = _load(path, marker)
    try:
        policy = policy_from_source(source, path=path.name, timeout_s=LIMIT_S)
    except PolicyError as exc:
        assert "\n" not in str(exc) and "refused" in str(exc)
        assert not marker.exists()
        return
    # it loaded: it must stop (or finish) within twice its limit, under the memory cap
    c0, t0 = time.thread_time(), time.perf_counter()
    outcome = _run(policy, args)
    cpu, wall = time.thread_time() - c0, time.perf_counter() - t0
    assert cpu <= 2 * LIMIT_S, f"{path.stem}: ran {cpu * 1000:.0f} ms of CPU ({outcome})"
    assert wall <= 20 * LIMIT_S, f"{path.stem}: took {wall * 1000:.0f} ms wall ({outcome})"
    tracemalloc.start()
    try:
        _run(policy, args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= MEMORY_CAP_BYTES, f"{path.stem}: peak {peak / 2**20:.0f} MiB"
    assert not marker.exists()


def _run(policy, args) -> str:
    try:
        policy.evaluate(args)
        return "returned"
    except GuardTimeout:
        return "stopped"
    except PolicyError as exc:
        return f"refused at run time: {exc}"
    except (ValueError, TypeError, IndexError, ZeroDivisionError, OverflowError) as exc:  # the guard fails closed
        return f"failed: {type(exc).__name__}"


def test_threads_sharing_one_policy_keep_their_own_deadlines():
    # issue 13: two threads sharing one policy reset each other's deadline and a loop ran 25 s
    source, args = _load(Path(__file__).parent / "hostile" / "race_loop.py", Path("/nonexistent"))
    policy = policy_from_source(source, timeout_s=LIMIT_S)
    results: dict[int, tuple[str, float]] = {}

    def worker(k: int) -> None:
        time.sleep(0.02 * k)  # staggered starts: a shared deadline would keep moving
        t0 = time.perf_counter()
        results[k] = (_run(policy, args), time.perf_counter() - t0)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(results) == 4
    for k, (outcome, wall) in results.items():
        assert outcome == "stopped", (k, outcome)
        assert wall < 1.0, f"thread {k} ran {wall:.2f}s"


def test_a_slow_policy_does_not_stall_the_event_loop():
    # the service asks its GuardStack asynchronously: a synchronous policy guard runs in a worker thread
    import asyncio

    from agentguard import GuardStack
    from agentguard.core import Context, ToolCall
    from agentguard.policies import PolicyBinding, ToolCallGuard
    from agentguard.policies.extract import SpecExtractor

    source, _ = _load(Path(__file__).parent / "hostile" / "race_loop.py", Path("/nonexistent"))
    policy = policy_from_source(source, timeout_s=0.3)
    ext = SpecExtractor({"x": {"from": "constant", "value": 1}, "xs": {"from": "constant", "value": list(range(10_000))}})
    stack = GuardStack([ToolCallGuard([PolicyBinding(policy, ext)])])

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        t = asyncio.create_task(ticker())
        v = await stack.acheck(Context(), ToolCall("x"))
        t.cancel()
        return v, ticks

    v, ticks = asyncio.run(main())
    assert v.blocks and "GuardTimeout" in v.reason
    # the loop ran on while the policy spent its 300 ms in a worker thread (run inline it would tick 0 times;
    # the CPU-bound thread shares the GIL, so the loop gets a turn every switch interval, not every 10 ms)
    assert ticks >= 2
