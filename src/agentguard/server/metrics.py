"""Prometheus metrics in the text exposition format (version 0.0.4), without a client library.

Counters and a latency histogram per endpoint kind, kept per process (with several uvicorn workers
each worker exposes its own; Prometheus sums them by scraping through the load balancer or, better,
each replica's port). Cheap enough for the hot path: a dict increment and a bisect.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import defaultdict
from typing import Callable

__all__ = ["Metrics"]

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    def __init__(self) -> None:
        self.started = time.time()
        self.decisions: dict[tuple[str, str], int] = defaultdict(int)  # (kind, decision) -> n
        self.requests: dict[tuple[str, int], int] = defaultdict(int)  # (route, status) -> n
        self._lat_counts: dict[str, list[int]] = {}
        self._lat_sum: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()
        self.gauges: dict[str, Callable[[], float]] = {}

    def decision(self, kind: str, decision: str) -> None:
        self.decisions[(kind, decision)] += 1

    def request(self, route: str, status: int, seconds: float) -> None:
        self.requests[(route, status)] += 1
        counts = self._lat_counts.get(route)
        if counts is None:
            counts = self._lat_counts.setdefault(route, [0] * (len(BUCKETS) + 1))
        counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self._lat_sum[route] += seconds

    def render(self) -> str:
        out: list[str] = []
        out += ["# HELP agentguard_process_start_time_seconds Process start time (seconds since the epoch).",
                "# TYPE agentguard_process_start_time_seconds gauge",
                f"agentguard_process_start_time_seconds {self.started:.3f}"]
        out += ["# HELP agentguard_decisions_total Verdicts answered, by endpoint kind and decision.",
                "# TYPE agentguard_decisions_total counter"]
        for (kind, dec), n in sorted(self.decisions.items()):
            out.append(f'agentguard_decisions_total{{kind="{_esc(kind)}",decision="{_esc(dec)}"}} {n}')
        out += ["# HELP agentguard_http_requests_total HTTP requests by route and status.",
                "# TYPE agentguard_http_requests_total counter"]
        for (route, status), n in sorted(self.requests.items()):
            out.append(f'agentguard_http_requests_total{{route="{_esc(route)}",status="{status}"}} {n}')
        out += ["# HELP agentguard_request_duration_seconds Time to answer, by route.",
                "# TYPE agentguard_request_duration_seconds histogram"]
        for route, counts in sorted(self._lat_counts.items()):
            cum = 0
            r = _esc(route)
            for le, c in zip(BUCKETS, counts):
                cum += c
                out.append(f'agentguard_request_duration_seconds_bucket{{route="{r}",le="{le}"}} {cum}')
            cum += counts[-1]
            out.append(f'agentguard_request_duration_seconds_bucket{{route="{r}",le="+Inf"}} {cum}')
            out.append(f'agentguard_request_duration_seconds_sum{{route="{r}"}} {self._lat_sum[route]:.6f}')
            out.append(f'agentguard_request_duration_seconds_count{{route="{r}"}} {cum}')
        for name, fn in sorted(self.gauges.items()):
            try:
                val = float(fn())
            except Exception:
                continue
            out += [f"# TYPE {name} gauge", f"{name} {val:g}"]
        return "\n".join(out) + "\n"
