"""Proactive prediction (Pro2Guard): DTMC learning, PAC stopping rule, model checking, runtime guards.

The public names, by what they do (each lives in a small module named after what it holds):

* guards: :class:`ProactiveGuard` (alarm when the predicted ``P_safe < theta``; ``from_config`` for
  configuration files), :class:`ProductGuard` (bounded-response rules over a DTMC x monitor
  product), :class:`MinProbabilityGuard`, :class:`TrafficLawGuard`,
  and the AgentSpec-style reactive baseline :class:`RuleGuard`;
* learning: :class:`DTMCLearner` (Eq. 1; ``add_file`` streams JSONL or Parquet), :func:`learn_dtmc`,
  the PAC stopping rule (:func:`pac_report`, :class:`PACReport`);
* model checking: :func:`check` (PCTL on every state, native or Storm; :class:`CheckResult`),
  :func:`reach`, :func:`until`, :func:`globally`, :func:`bounded_until`;
* models: :class:`DTMC`, :func:`load_dtmc` (the one loader: JSON, PRISM, Pro2Guard folders),
  :func:`read_prism`, :func:`write_prism`, :func:`read_pro2guard`, :func:`draw_dtmc`; bounded-response
  monitors and products (:class:`BoundedResponse`, :func:`product`).

The rest stays public in its module, not here: streamed readers and DuckDB counting
(:mod:`.trace_stream`), the PAC check :func:`~.pac_validation.simulate_guarantee`, the other PCTL
operators and ``error_bound`` (:mod:`.checker`), rewards (:mod:`.rewards`), the Storm engine
(:mod:`.storm_engine`, :mod:`.prism_storm`), rule files of the reactive baseline (:mod:`.reactive`),
the traffic-law helpers (:mod:`.traffic`) and the monitor automaton (:mod:`.monitor`).

Every name is imported on first use (module ``__getattr__`` over the literal table ``_LAZY``), so
``import agentguard.predictive`` imports neither scipy nor matplotlib nor stormpy.
"""

from __future__ import annotations

from typing import Any

from ..core.lazy import LazyExports

# name -> the module that defines it
_LAZY = {
    "BoundedResponse": "agentguard.predictive.monitor",
    "CheckResult": "agentguard.predictive.checker",
    "DTMC": "agentguard.predictive.dtmc",
    "DTMCLearner": "agentguard.predictive.learn",
    "MinProbabilityGuard": "agentguard.predictive.guard",
    "PACReport": "agentguard.predictive.pac",
    "ProactiveGuard": "agentguard.predictive.guard",
    "ProductGuard": "agentguard.predictive.guard",
    "RuleGuard": "agentguard.predictive.reactive",
    "TrafficLawGuard": "agentguard.predictive.traffic",
    "bounded_until": "agentguard.predictive.checker",
    "check": "agentguard.predictive.checker",
    "draw_dtmc": "agentguard.predictive.draw",
    "globally": "agentguard.predictive.checker",
    "learn_dtmc": "agentguard.predictive.learn",
    "load_dtmc": "agentguard.predictive.load",
    "pac_report": "agentguard.predictive.pac",
    "product": "agentguard.predictive.monitor",
    "reach": "agentguard.predictive.checker",
    "read_prism": "agentguard.predictive.prism",
    "read_pro2guard": "agentguard.predictive.prism",
    "until": "agentguard.predictive.checker",
    "write_prism": "agentguard.predictive.prism",
}

__all__ = [
    "BoundedResponse",
    "CheckResult",
    "DTMC",
    "DTMCLearner",
    "MinProbabilityGuard",
    "PACReport",
    "ProactiveGuard",
    "ProductGuard",
    "RuleGuard",
    "TrafficLawGuard",
    "bounded_until",
    "check",
    "draw_dtmc",
    "globally",
    "learn_dtmc",
    "load_dtmc",
    "pac_report",
    "product",
    "reach",
    "read_prism",
    "read_pro2guard",
    "until",
    "write_prism",
]


_exports = LazyExports(__name__, _LAZY, globals())


def __getattr__(name: str) -> Any:
    return _exports.attr(name)


def __dir__() -> list[str]:
    return _exports.dir()
