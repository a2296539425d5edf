"""What the service (and ``agentguard decide``) answers for a Pipeline outcome (no web dependencies)."""

from __future__ import annotations

from ..core.enforcement import Outcome
from ..core.types import Decision, Verdict

__all__ = ["answered"]


def answered(out: Outcome) -> tuple[Decision, str]:
    """The decision and reason the service answers for an outcome: what the client must do. ``ESCALATE``
    (ask a human), ``HALT`` (the run stops), ``ALLOW``/``MODIFY``/``RECOVER`` (run the call, or
    ``action`` instead), ``REJECT`` (do not run it; the run goes on): a strategy that refuses an allowed
    call (TEH after the tool was halted) or stops on a REJECT (TT) is answered as what it does."""
    v = out.verdict or Verdict(Decision.HALT, "no verdict")
    if out.ask:
        return Decision.ESCALATE, v.reason
    if out.stop:
        return Decision.HALT, v.reason if v.decision is Decision.HALT else (out.message or v.reason)
    if out.execute and v.decision in (Decision.ALLOW, Decision.MODIFY, Decision.RECOVER):
        return v.decision, v.reason
    if out.execute:
        return Decision.RECOVER, out.message or v.reason
    return Decision.REJECT, v.reason if v.decision is Decision.REJECT else (out.message or v.reason)
