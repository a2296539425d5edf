"""Latency of the full provenance-guarded check on AgentDojo's own calls (issue 15's latency must-show).

Every user task of each suite (and, optionally, the first ``max_pairs`` injection pairs) is replayed
through AgentDojo's runtime exactly as :mod:`agentguard.bench.agentdojo` does, under a
:class:`~agentguard.policies.provenance_guard.ProvenanceGuard` whose two per-call entry points are timed:

- ``check``: canonicalising the proposed call's argument values, looking their labels up in the run's
  ledger, the policy's extractor and the verified policy, and the verdict (with the inner
  ``ToolCallGuard``'s audit record);
- ``observe``: labelling the result the call returned (label propagation into the ledger).

The figure of the must-show is ``full`` = check + observe of the same call (one guarded call's whole
cost), reported as median, p99, mean and max in microseconds, per suite and overall; the prompt's
labelling (once per run) is timed apart. Single-shot timings taken during the replay on whatever machine
runs it (the result records the load average): nothing is re-run to pick a best time.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from ..core.errors import InputError
from ..policies.provenance_guard import ProvenanceGuard, answer_text

__all__ = ["TimedProvenanceGuard", "measure"]


class TimedProvenanceGuard(ProvenanceGuard):
    """The shipped AgentDojo :class:`ProvenanceGuard` that records the nanoseconds of each entry point."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.samples: list[dict[str, Any]] = []   # one per checked call: tool, check_ns, observe_ns
        self.prompt_ns: list[int] = []
        self.answer_ns: list[int] = []
        self._pending: dict[str, dict[str, Any]] = {}

    def observe_prompt(self, run_id: str, prompt: str) -> None:
        t0 = time.perf_counter_ns()
        super().observe_prompt(run_id, prompt)
        self.prompt_ns.append(time.perf_counter_ns() - t0)

    def check(self, context: Any, proposal: Any) -> Any:
        t0 = time.perf_counter_ns()
        verdict = super().check(context, proposal)
        dt = time.perf_counter_ns() - t0
        if answer_text(proposal) is not None:   # the final answer's check (policies/answers.py): timed apart
            self.answer_ns.append(dt)
            return verdict
        s = {"tool": getattr(proposal, "name", "?"), "check_ns": dt, "observe_ns": 0, "allowed": verdict.allowed}
        self.samples.append(s)
        self._pending[context.run_id] = s
        return verdict

    def observe_result(self, run_id: str, call: Any, result: Any) -> None:
        t0 = time.perf_counter_ns()
        super().observe_result(run_id, call, result)
        dt = time.perf_counter_ns() - t0
        s = self._pending.pop(run_id, None)
        if s is not None:
            s["observe_ns"] = dt


def _stats(ns: list[int]) -> dict[str, float]:
    if not ns:
        return {"n": 0}
    ns = sorted(ns)
    return {"n": len(ns), "median_us": ns[len(ns) // 2] / 1e3, "p99_us": ns[min(len(ns) - 1, int(len(ns) * 0.99))] / 1e3,
            "mean_us": sum(ns) / len(ns) / 1e3, "max_us": ns[-1] / 1e3}


def _summary(samples: list[dict[str, Any]], prompt_ns: list[int]) -> dict[str, Any]:
    slow = sorted(samples, key=lambda s: -(s["check_ns"] + s["observe_ns"]))[:8]
    return {"full": _stats([s["check_ns"] + s["observe_ns"] for s in samples]),
            "slowest": [{"tool": s["tool"], "check_us": s["check_ns"] / 1e3, "observe_us": s["observe_ns"] / 1e3}
                        for s in slow],
            "check": _stats([s["check_ns"] for s in samples]),
            "observe": _stats([s["observe_ns"] for s in samples if s["allowed"]]),
            "prompt_once_per_run": _stats(prompt_ns)}


def measure(suites: list[str] | None = None, *, version: str = "v1", max_pairs: int | None = 0,
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Replay each suite's user tasks (+ ``max_pairs`` injection pairs; None = all; the first pairs in
    AgentDojo's order, every injection task's calls, simulated where none ship) under a timed guard."""
    from ..core.errors import require
    from . import agentdojo as ad

    load_suites = require("agentdojo.task_suite.load_suites", "policies")
    base_attacks = require("agentdojo.attacks.base_attacks", "policies")
    if version not in ad.versions():
        raise InputError(f"unknown AgentDojo version {version!r}; the package ships {', '.join(ad.versions())}")
    all_suites = load_suites.get_suites(version)
    out: dict[str, Any] = {"agentdojo_version": version, "max_pairs_per_suite": max_pairs, "suites": {},
                           "load_average_1m_before": os.getloadavg()[0], "what": __doc__.split("\n\n")[0]}
    every: list[dict[str, Any]] = []
    prompts: list[int] = []
    answers: list[int] = []
    for sname in suites or sorted(all_suites):
        suite = ad._cached(all_suites[sname])
        guard = TimedProvenanceGuard.agentdojo()
        for ut in suite.user_tasks.values():
            ad._run(suite, ut, None, {}, guard, "", [])
        attack = base_attacks.BaseAttack(suite, None)
        pairs = 0
        for ut in suite.user_tasks.values():
            if max_pairs is not None and pairs >= max_pairs:
                break
            try:
                candidates = attack.get_injection_candidates(ut)
            except ValueError:
                continue
            for iid, it in suite.injection_tasks.items():
                if max_pairs is not None and pairs >= max_pairs:
                    break
                injections = ad._injections(suite, ut, it, candidates)
                pairs += 1
                ad._run(suite, ut, it, injections, guard, "", [], iid)
        out["suites"][sname] = {"pairs": pairs, **_summary(guard.samples, guard.prompt_ns),
                                "answer_once_per_run": _stats(guard.answer_ns)}
        every += guard.samples
        prompts += guard.prompt_ns
        answers += guard.answer_ns
        if progress:
            progress(f"{sname}: {len(guard.samples)} calls, full median "
                     f"{out['suites'][sname]['full']['median_us']:.1f} us")
    out["all"] = {**_summary(every, prompts), "answer_once_per_run": _stats(answers)}
    out["load_average_1m_after"] = os.getloadavg()[0]
    out["target"] = "full (check + observe) median under 1000 us per call"
    out["meets_target"] = out["all"]["full"].get("median_us", float("inf")) < 1000.0
    return out
