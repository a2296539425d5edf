"""Composition on AgentDojo: the Pro2Guard proactive guard over predicates of the call history.

The provenance guard (:mod:`agentguard.bench.agentdojo`) decides on one call at a time. Pro2Guard's
mechanism (:mod:`agentguard.predictive`) predicts ahead: it abstracts the run so far to a bit-vector of
predicates, learns a DTMC over those states from sampled runs (Eq. 1), and warns when the probability of
reaching the unsafe state is too high (Algorithm 2). Here:

- predicates over the call history (:data:`PREDICATES`, computed from what a deployed guard observes: the
  prompt, the calls and their results, labelled by the same :class:`~agentguard.policies.provenance.ProvenanceLedger`
  and source declaration as the provenance guard; no task, injection slot or environment):

  ``untrusted_read`` (a third-party field with text was read), ``new_target`` (third-party content named an
  e-mail address, URL or IBAN that neither the prompt nor a trusted record contains), ``sensitive_read`` (a
  read of the user's own records: tool name mentions :data:`SENSITIVE_WORDS`, chosen from the tool names),
  ``send_proposed`` (a SEND-kind call was proposed);
- the unsafe bit (last) is set on the state in which an injection task's call is proposed (the replay knows
  which calls are the injection's; it is the training label only, never an input at run time);
- the DTMC is learned from the no-guard replays of the DESIGN half of one version: each user task alone
  (benign) and each injection pair (user task calls, then the injection task's calls);
- the threshold (on ``P_safe``, the guard warns when ``P_safe < theta``) is chosen on the design half
  (maximum of warn-before rate minus false-warning rate, ties to the lower theta);
- on the HELD-OUT half: for each injection pair, whether the guard warned in some state before the first
  injected call was proposed; for each benign run, whether it ever warned (a false warning).

What it cannot show: the replay order (every user-task call, then the injection's) is the simulated
hijack's, not an LLM's; the DTMC's probabilities reflect the mix of the training replays (one benign run per
user task, one injected run per pair), not a deployment's base rate of attacks.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from ..core.errors import require
from ..core.types import Context, Decision, ToolCall, Verdict
from ..policies.library.extractors.agentdojo_grounding import KIND, SEND
from ..policies.provenance import UNTRUSTED, ProvenanceLedger, trust_level
from ..policies.provenance_guard import ProvenanceGuard

__all__ = ["HistoryRecorder", "PREDICATES", "SENSITIVE_WORDS", "choose_threshold", "evaluate", "history_bits",
           "learn_model", "replay_paths", "score", "warned"]

PREDICATES = ("untrusted_read", "new_target", "sensitive_read", "send_proposed")
SENSITIVE_WORDS = ("iban", "balance", "transaction", "user_info", "user_information", "email", "file", "contact",
                   "calendar", "inbox", "channel_messages")
END = "end"


def history_bits(ledger: ProvenanceLedger, proposed: list[str], unsafe: bool = False) -> str:
    """The abstract state of a run: one bit per :data:`PREDICATES`, then the unsafe bit."""
    src = ledger.sources[UNTRUSTED]
    untrusted = any(w.strip() for w in src.words)
    new_target = any(kind in ("email", "url", "iban") and trust_level(ledger.labels(form)) == 0
                     for kind, form in src.entities)
    sensitive = any(any(w in c for w in SENSITIVE_WORDS) for c in ledger.calls)
    send = any(KIND.get(c) == SEND for c in proposed)
    return "".join("1" if b else "0" for b in (untrusted, new_target, sensitive, send, unsafe))


class HistoryRecorder(ProvenanceGuard):
    """Allows every call; records the abstract state before each proposal (and the unsafe state when the
    call with index ``injected_from`` is proposed). Set ``injected_from`` before each replay."""

    def __init__(self) -> None:
        from ..core.runs import RunMemory
        from ..policies.library.extractors.agentdojo_provenance import AGENTDOJO_SOURCES

        base = ProvenanceGuard.agentdojo()
        super().__init__(base.inner, base.toolset, base.lexicon, name="history-recorder")
        # the predicates read a value-set ledger over the same per-tool declaration
        self.runs = RunMemory(lambda: ProvenanceLedger(AGENTDOJO_SOURCES), 10_000)  # type: ignore[assignment]
        self.injected_from: int | None = None
        self.path: list[str] = []
        self.proposed: list[str] = []
        self.done = False

    def start(self, injected_from: int | None) -> None:
        self.injected_from, self.path, self.proposed, self.done = injected_from, [], [], False

    def check(self, context: Context, proposal: Any) -> Verdict:
        if not isinstance(proposal, ToolCall):   # the final answer: no tool call, no step of the path
            return Verdict(Decision.ALLOW, "recorded (an answer)", self.name)
        led = self.runs.get(context.run_id)
        if not self.done:
            self.path.append(history_bits(led, self.proposed))
            if self.injected_from is not None and len(self.proposed) == self.injected_from:
                self.path.append(history_bits(led, self.proposed + [proposal.name], unsafe=True))
                self.done = True
        self.proposed.append(proposal.name)
        return Verdict(Decision.ALLOW, "recorded", self.name)

    def end_run(self, run_id: str) -> None:
        if not self.done:
            self.path.append(history_bits(self.runs.get(run_id), self.proposed))
            self.done = True
        super().end_run(run_id)


def replay_paths(version: str = "v1", max_pairs: int | None = None,
                 progress: Callable[[str], None] | None = None,
                 suites: list[str] | None = None) -> list[dict[str, Any]]:
    """No-guard replays of every user task (benign) and injection pair (at most ``max_pairs`` injection
    tasks per user task), as abstract-state paths."""
    from . import agentdojo as bench

    load_suites = require("agentdojo.task_suite.load_suites", "policies")
    base_attacks = require("agentdojo.attacks.base_attacks", "policies")
    design_ids = json.loads(_intent_file().read_text(encoding="utf-8"))["design"]
    rec = HistoryRecorder()
    out: list[dict[str, Any]] = []
    for sname, raw in sorted(load_suites.get_suites(version).items()):
        if suites is not None and sname not in suites:
            continue
        suite = bench._cached(raw)
        attack = base_attacks.BaseAttack(suite, None)
        design = set(design_ids.get(sname, ()))
        for uid, ut in suite.user_tasks.items():
            half = "design" if uid in design else "heldout"
            rec.start(None)
            bench._run(suite, ut, None, {}, rec, "", [])
            out.append({"suite": sname, "user_task": uid, "injection_task": None, "half": half, "path": rec.path})
            try:
                candidates = attack.get_injection_candidates(ut)
            except ValueError:
                continue
            for n, (iid, it) in enumerate(suite.injection_tasks.items()):
                if max_pairs is not None and n >= max_pairs:
                    break
                injections = bench._injections(suite, ut, it, candidates)
                if injections is None:
                    continue
                env = ut.init_environment(suite.load_and_inject_default_environment(injections))
                rec.start(len(ut.ground_truth(env)))
                bench._run(suite, ut, it, injections, rec, "", [], iid)
                out.append({"suite": sname, "user_task": uid, "injection_task": iid, "half": half,
                            "path": rec.path})
        if progress:
            progress(f"{version} {sname}: {sum(r['suite'] == sname for r in out)} replays")
    return out


def _intent_file() -> Any:
    """The seeded design/held-out split of the user tasks (kept in ``agentdojo_intent.json``)."""
    from ..policies.library import library_path

    return library_path("agentdojo_provenance").parent / "extractors" / "agentdojo_intent.json"


def learn_model(paths: list[list[str]]) -> Any:
    """The DTMC of Eq. 1 (Laplace alpha = 1, terminal ``end``) over the abstract paths; ``unsafe`` labels the
    states whose last bit is set."""
    from ..predictive import DTMCLearner

    learner = DTMCLearner(valid="any", terminal=END, alpha=1,
                          labels={"unsafe": lambda s: s != END and s.endswith("1")})
    return learner.add_paths(paths).model()


def _before(path: list[str]) -> list[str]:
    """The states of a path before its unsafe state (all of them for a benign run)."""
    return [s for s in path if not s.endswith("1")]


def warned(guard: Any, path: list[str]) -> bool:
    """Whether ``guard`` warns in some state of ``path`` before its unsafe state."""
    return any(guard.probability(s)[0] < guard.threshold for s in _before(path))


def score(guard: Any, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Warn-before rate on injected runs and false-warning rate on benign runs of ``guard``
    (a :class:`~agentguard.predictive.ProactiveGuard`)."""

    inj = [r for r in runs if r["injection_task"] is not None and any(s.endswith("1") for s in r["path"])]
    ben = [r for r in runs if r["injection_task"] is None]
    wi = sum(warned(guard, r["path"]) for r in inj)
    wb = sum(warned(guard, r["path"]) for r in ben)
    return {"injected_runs": len(inj), "warned_before_injected_call": wi,
            "warn_before_rate": wi / len(inj) if inj else 0.0, "benign_runs": len(ben), "false_warnings": wb,
            "false_warning_rate": wb / len(ben) if ben else 0.0}


def choose_threshold(guard: Any, runs: list[dict[str, Any]]) -> tuple[float, list[dict[str, Any]]]:
    """The theta that maximises warn-before rate minus false-warning rate on ``runs`` (ties: lower theta),
    over the midpoints between the distinct P_safe values the runs visit; with the whole sweep."""
    vals = sorted({round(guard.probability(s)[0], 12) for r in runs for s in _before(r["path"])})
    cands = [0.0] + [(a + b) / 2 for a, b in zip(vals, vals[1:])] + [min(1.0, vals[-1] + 1e-9)] if vals else [0.5]
    sweep = []
    for th in cands:
        s = score(guard.with_threshold(th), runs)
        sweep.append({"theta": th, **s, "j": s["warn_before_rate"] - s["false_warning_rate"]})
    best = max(sweep, key=lambda r: (r["j"], -r["theta"]))
    return best["theta"], sweep


def evaluate(version: str = "v1", max_pairs: int | None = None,
             progress: Callable[[str], None] | None = None, suites: list[str] | None = None) -> dict[str, Any]:
    """Learn on the design half, pick theta there, score both halves (see the module docstring)."""
    from ..predictive import ProactiveGuard

    t0 = time.perf_counter()
    runs = replay_paths(version, max_pairs, progress, suites)
    design = [r for r in runs if r["half"] == "design"]
    held = [r for r in runs if r["half"] == "heldout"]
    model = learn_model([r["path"] for r in design])
    guard = ProactiveGuard(model, "G !unsafe", 0.5, unseen="nearest")
    theta, sweep = choose_threshold(guard, design)
    guard = guard.with_threshold(theta)
    states = {s: {"p_safe": guard.probability(s)[0],
                  "predicates": dict(zip(PREDICATES + ("unsafe",), map(int, s)))}
              for s in model.state_names if s != END}
    return {"agentdojo_version": version, "predicates": list(PREDICATES), "sensitive_words": list(SENSITIVE_WORDS),
            "trained_on": "no-guard replays of the design half (benign user tasks and injection pairs)",
            "threshold_rule": "warn when P_safe < theta; theta maximises warn-before minus false-warning rate "
                              "on the design half",
            "theta": theta, "model_states": states, "design": score(guard, design), "heldout": score(guard, held),
            "design_sweep": sweep, "seconds": time.perf_counter() - t0,
            "runs": [{k: r[k] for k in ("suite", "user_task", "injection_task", "half")}
                     | {"warned": warned(guard, r["path"])} for r in runs],
            "unseen_policy": "nearest (Hamming; see agentguard.spec.unseen)"}
