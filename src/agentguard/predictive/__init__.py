"""Proactive prediction (Pro2Guard): DTMC learning, PAC stopping rule, model checking, runtime guards.

The public names, by what they do (each lives in a small module named after what it holds):

* guards: :class:`ProactiveGuard` (alarm when the predicted ``P_safe < theta``; ``from_config`` for
  configuration files), :class:`ProductGuard` (bounded-response rules over a DTMC x monitor
  product), :class:`MinProbabilityGuard`, :class:`TrafficLawGuard` (:func:`traffic_law_guard`),
  and the AgentSpec-style reactive baseline :class:`RuleGuard`;
* learning: :class:`DTMCLearner` (Eq. 1; ``add_file`` streams JSONL or Parquet), :func:`learn_dtmc`,
  streamed readers and DuckDB counting (:func:`iter_jsonl_runs`, :func:`iter_parquet_runs`,
  :func:`abstract_parquet`, :func:`duckdb_counts`, :func:`parquet_files`), the PAC stopping rule
  (:func:`pac_report`, :class:`PACReport`) and its empirical check :func:`simulate_guarantee`;
* model checking: :func:`check` (PCTL on every state, native or Storm), :func:`reach`, :func:`until`,
  :func:`globally`, :func:`bounded_until`, :func:`error_bound`;
* models: :class:`DTMC`, :func:`load_dtmc` (the one loader: JSON, PRISM, Pro2Guard folders),
  :func:`read_prism`, :func:`write_prism`, :func:`read_pro2guard`, :func:`draw_dtmc`; monitors and
  products (:class:`BoundedResponse`, :class:`MonitorAutomaton`, :func:`product`).

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
    "MAX_RANGE": "agentguard.predictive.prism_storm",
    "MinProbabilityGuard": "agentguard.predictive.guard",
    "MonitorAutomaton": "agentguard.predictive.monitor",
    "PACReport": "agentguard.predictive.pac",
    "PAC_VARIANTS": "agentguard.predictive.pac",
    "ProactiveGuard": "agentguard.predictive.guard",
    "Product": "agentguard.predictive.monitor",
    "ProductGuard": "agentguard.predictive.guard",
    "Rule": "agentguard.predictive.reactive",
    "RuleGuard": "agentguard.predictive.reactive",
    "RulePredicate": "agentguard.predictive.reactive",
    "SolveInfo": "agentguard.predictive.reachability",
    "TrafficLawGuard": "agentguard.predictive.traffic",
    "abstract_parquet": "agentguard.predictive.trace_stream",
    "amplification_factor": "agentguard.predictive.pac",
    "bounded_until": "agentguard.predictive.checker",
    "bsccs": "agentguard.predictive.rewards",
    "check": "agentguard.predictive.checker",
    "check_duplicates": "agentguard.predictive.prism_storm",
    "check_program": "agentguard.predictive.storm_engine",
    "check_storm": "agentguard.predictive.storm_engine",
    "compare": "agentguard.predictive.result",
    "count_transitions": "agentguard.predictive.learn",
    "cumulative_reward": "agentguard.predictive.rewards",
    "draw_dtmc": "agentguard.predictive.draw",
    "driving_abstraction": "agentguard.predictive.traffic",
    "duckdb_counts": "agentguard.predictive.trace_stream",
    "embodied_predicates": "agentguard.predictive.reactive",
    "error_bound": "agentguard.predictive.checker",
    "expected_reward": "agentguard.predictive.rewards",
    "filter_value": "agentguard.predictive.result",
    "globally": "agentguard.predictive.checker",
    "interval_until": "agentguard.predictive.reachability",
    "is_drn": "agentguard.predictive.load",
    "iter_jsonl_runs": "agentguard.predictive.trace_stream",
    "iter_parquet_runs": "agentguard.predictive.trace_stream",
    "last_solve_info": "agentguard.predictive.reachability",
    "law_products": "agentguard.predictive.traffic",
    "learn_dtmc": "agentguard.predictive.learn",
    "load_dtmc": "agentguard.predictive.load",
    "load_rules": "agentguard.predictive.reactive",
    "long_run": "agentguard.predictive.rewards",
    "native_form": "agentguard.predictive.prism",
    "next_": "agentguard.predictive.checker",
    "pac_report": "agentguard.predictive.pac",
    "parquet_files": "agentguard.predictive.trace_stream",
    "parse_constants": "agentguard.predictive.prism_storm",
    "parse_rules": "agentguard.predictive.reactive",
    "prob0": "agentguard.predictive.checker",
    "prob01": "agentguard.predictive.pac",
    "prob1": "agentguard.predictive.checker",
    "product": "agentguard.predictive.monitor",
    "proposal_text": "agentguard.predictive.reactive",
    "reach": "agentguard.predictive.checker",
    "reach_probability": "agentguard.predictive.guard",
    "read_driving_model": "agentguard.predictive.traffic",
    "read_drn": "agentguard.predictive.prism_storm",
    "read_prism": "agentguard.predictive.prism",
    "read_prism_file": "agentguard.predictive.load",
    "read_prism_storm": "agentguard.predictive.prism_storm",
    "read_pro2guard": "agentguard.predictive.prism",
    "required_count": "agentguard.predictive.pac",
    "safety_values": "agentguard.predictive.guard",
    "sample_paths": "agentguard.predictive.learn",
    "sat_states": "agentguard.predictive.checker",
    "simulate_guarantee": "agentguard.predictive.pac_validation",
    "smoothed_matrix": "agentguard.predictive.learn",
    "state_formula_vector": "agentguard.predictive.monitor",
    "storm_program": "agentguard.predictive.prism_storm",
    "storm_to_dtmc": "agentguard.predictive.prism_storm",
    "to_prism": "agentguard.predictive.prism",
    "traffic_law_guard": "agentguard.predictive.traffic",
    "until": "agentguard.predictive.checker",
    "write_prism": "agentguard.predictive.prism",
}

__all__ = [
    "BoundedResponse",
    "CheckResult",
    "DTMC",
    "DTMCLearner",
    "MAX_RANGE",
    "MinProbabilityGuard",
    "MonitorAutomaton",
    "PACReport",
    "PAC_VARIANTS",
    "ProactiveGuard",
    "Product",
    "ProductGuard",
    "Rule",
    "RuleGuard",
    "RulePredicate",
    "SolveInfo",
    "TrafficLawGuard",
    "abstract_parquet",
    "amplification_factor",
    "bounded_until",
    "bsccs",
    "check",
    "check_duplicates",
    "check_program",
    "check_storm",
    "compare",
    "count_transitions",
    "cumulative_reward",
    "draw_dtmc",
    "driving_abstraction",
    "duckdb_counts",
    "embodied_predicates",
    "error_bound",
    "expected_reward",
    "filter_value",
    "globally",
    "interval_until",
    "is_drn",
    "iter_jsonl_runs",
    "iter_parquet_runs",
    "last_solve_info",
    "law_products",
    "learn_dtmc",
    "load_dtmc",
    "load_rules",
    "long_run",
    "native_form",
    "next_",
    "pac_report",
    "parquet_files",
    "parse_constants",
    "parse_rules",
    "prob0",
    "prob01",
    "prob1",
    "product",
    "proposal_text",
    "reach",
    "reach_probability",
    "read_driving_model",
    "read_drn",
    "read_prism",
    "read_prism_file",
    "read_prism_storm",
    "read_pro2guard",
    "required_count",
    "safety_values",
    "sample_paths",
    "sat_states",
    "simulate_guarantee",
    "smoothed_matrix",
    "state_formula_vector",
    "storm_program",
    "storm_to_dtmc",
    "to_prism",
    "traffic_law_guard",
    "until",
    "write_prism",
]


_exports = LazyExports(__name__, _LAZY, globals())


def __getattr__(name: str) -> Any:
    return _exports.attr(name)


def __dir__() -> list[str]:
    return _exports.dir()
