"""Latency of one policy check without an LLM extractor: raw ``Policy.evaluate`` and a full
``ToolCallGuard.check`` (deterministic extraction + evaluation + verdict + in-memory audit record), per
shipped policy with its shipped extractor, on representative calls from each benchmark. Reports median and
99th percentile in µs."""

from __future__ import annotations

import platform
import time
from typing import Any, Callable

from ..core.types import Context, ToolCall
from ..policies import (MappingExtractor, MemoryAuditSink, PolicyBinding, ToolCallGuard, library_extractor,
                        library_path, load_policy)

__all__ = ["measure"]


def _stats(ns: list[int]) -> dict[str, float]:
    ns = sorted(ns)
    return {"median_us": ns[len(ns) // 2] / 1e3, "p99_us": ns[int(len(ns) * 0.99)] / 1e3, "mean_us": sum(ns) / len(ns) / 1e3}


def _cases() -> list[tuple[str, Any, dict[str, Any], ToolCall, Context]]:
    trusted = ("{\"contacts\": [\"alice@example.com\"], \"iban\": \"GB29NWBK60161331926819\"} " * 200).lower()
    return [
        ("mind2web_sc", library_extractor("mind2web_sc"),
         dict(category=3, age=17, domestic=True, dr_license=True, vaccine=True, membership=True),
         ToolCall("web_action", {"action": "[button] Book -> CLICK"}),
         Context(metadata={"task": "Find the cheapest hotel room in Seoul for 2 adults", "website": "booking",
                           "user_info": {"age": 17, "domestic": True, "dr_license": True, "vaccine": True,
                                         "membership": True}})),
        ("agentdojo_grounding", library_extractor("agentdojo_grounding"),
         dict(kind=3, targets_trusted=True, requested=True, values_trusted=True),
         ToolCall("send_money", {"recipient": "GB29NWBK60161331926819", "amount": 10.0, "subject": "rent",
                                 "date": "2024-05-01"}),
         Context(metadata={"prompt_lower": "please pay my rent to gb29nwbk60161331926819", "trusted_lower": trusted})),
        ("asb_declared_tools", MappingExtractor({"tool": lambda c, x: 7, "declared": lambda c, x: [3, 7]}),
         dict(tool=7, declared=[3, 7]), ToolCall("sys_monitor"), Context()),
    ]


def measure(n: int = 20000, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Per shipped policy: raw evaluation and full guard check timings over ``n`` calls each; ``progress`` (if
    given) is told which policy is being timed, before its timing starts (never inside the timed loop)."""
    out: dict[str, Any] = {"n": n, "python": platform.python_version(), "machine": platform.machine(), "policies": {}}
    cases = _cases()
    for i, (name, extractor, args, call, ctx) in enumerate(cases):
        if progress:
            progress(f"timing policy {i + 1}/{len(cases)}: {name} ({n:,} checks)")
        policy = load_policy(library_path(name))
        guard = ToolCallGuard([PolicyBinding(policy, extractor)], audit=MemoryAuditSink(maxlen=1000))
        for _ in range(200):  # warm-up
            policy.evaluate(args)
            guard.check(ctx, call)
        raw, full = [], []
        pc = time.perf_counter_ns
        for _ in range(n):
            t0 = pc()
            policy.evaluate(args)
            t1 = pc()
            guard.check(ctx, call)
            t2 = pc()
            raw.append(t1 - t0)
            full.append(t2 - t1)
        out["policies"][policy.id] = {"evaluate": _stats(raw), "guard_check": _stats(full),
                                      "verdict": guard.check(ctx, call).decision.name}
    return out
