"""Who may feed a run: a run belongs to the identity that started it (``run_binding = "identity"``).

Guarantee (``run_binding = "identity"``): a check, step or signal of a run that already has
a stored input is decided only for the identity whose credential asked for the run's first input; any
other identity gets 403 and nothing is decided or stored (it cannot feed the run, make its guards latch a
HALT, move its strategy counters or its monitor). Approvals are not bound: an approver answers other
identities' escalations by design (:mod:`.routes.approvals`; it may never answer a run it asked anything
of).

Where it is enforced: in the store. The owner is the ``principal`` of the decision of the run's input
``idx = 0``; ``(run_id, idx)`` is unique in the ``inputs`` table, so of two identities starting the same
run at once, on any replicas of one database (SQLite or PostgreSQL), exactly one writes ``idx = 0``; the
other's write is a conflict, its request is decided again on the rebuilt run (:meth:`.service.Service.decide`)
and is refused here. The rule is asked before the run's state is read and, when that state holds inputs, again
after: a run that looked new when first asked but was started by another identity (another replica) before the
state was read is refused then, never decided as its next input. The owner never changes once stored, so each process keeps it (bounded memory) after
reading it once per run.

What the refusal reveals: the 403 says only that the run id is not available to this credential, the same
text whatever the other run holds (its owner, decisions, halt, length are never in it). That the id is
taken is inherent in any shared run-id namespace (a free id would have been accepted): clients should use
unguessable run ids (a UUID). A run stored before the inputs table (migration 0003) or before ``principal``
(migration 0004) has no recorded owner and is refused to every identity (fail closed).

The run ``default`` (what a check without ``run_id`` names, and the client's default) is one per identity under
``run_binding = "identity"`` (session 22): :meth:`RunBinding.scope` reads ``default`` from identity ``I`` as the run
``default:<first 32 hex digits of SHA-256(I)>`` (:func:`own_default`), the id the answer, the audit store and the
approver then use. Before, the first identity to send a check without a run id owned ``default`` and every other
identity got 403 for it (a denial of service to any client that relied on the default). An id of that form is
reserved: one that is not the caller's own (``default:`` followed by anything else) is refused with the same 403,
so nobody can take another identity's default run before it does (its name is computable from the identity).
Under ``shared`` the run ``default`` is the one shared run, as before.

``run_binding = "identity"`` is the default (session 19): a run belongs to its creator unless the operator says
otherwise. ``run_binding = "shared"``: any agent credential may feed any run, the behaviour before this setting,
for deployments where several identities feed one run on purpose (``tests/server/test_server_roles.py`` and
``test_server_idempotency.py`` set it for theirs).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from functools import lru_cache
from typing import Any

import sqlalchemy as sa
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from . import schema
from .gate import error

__all__ = ["BINDINGS", "DEFAULT_RUN", "RunBinding", "own_default", "refusal"]

BINDINGS = ("identity", "shared")
DEFAULT_RUN = "default"  # the run a check without run_id names
_OWN_PREFIX = DEFAULT_RUN + ":"
_NO_OWNER = "\x00no owner recorded"  # never an identity (identities are printable, 1-100 characters)


def refusal(run_id: str) -> Response:
    """The one answer to a request for a run of another identity (the same whatever that run holds)."""
    return error(403, f"run {run_id} is not available to this credential: a run belongs to the identity that "
                      "started it (run_binding = identity); use a run id of your own")


@lru_cache(maxsize=4096)  # identities are a credential file's (few); a hash per request otherwise
def own_default(identity: str) -> str:
    """The run ``default`` of ``identity`` under ``run_binding = "identity"``: ``default:`` and 32 hex digits
    (a valid run id, 40 characters; distinct identities get distinct ids up to a SHA-256 collision)."""
    return _OWN_PREFIX + hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class RunBinding:
    """The ``run_binding`` rule of one service process (see the module docstring)."""

    def __init__(self, mode: str, store: Any, max_cached: int = 100_000) -> None:
        if mode not in BINDINGS:
            raise ValueError(f"run_binding must be one of {', '.join(BINDINGS)}, got {mode!r}")
        self.mode = mode
        self.store = store
        self.max_cached = max_cached
        self._owners: OrderedDict[str, str] = OrderedDict()

    def scope(self, run_id: str, identity: str) -> str | Response:
        """The run ``run_id`` names when ``identity`` sends it: under ``identity`` binding ``default`` is the
        caller's own default run (:func:`own_default`) and a ``default:...`` id that is not the caller's own is
        the 403 (reserved); any other id, and every id under ``shared``, is itself. Pure and cheap (one hash
        only for ``default``)."""
        if self.mode == "shared" or not run_id.startswith(DEFAULT_RUN):
            return run_id
        if run_id == DEFAULT_RUN:
            return own_default(identity)
        if run_id.startswith(_OWN_PREFIX) and run_id != own_default(identity):
            return refusal(run_id)
        return run_id

    def owner(self, run_id: str) -> str | None:
        """The identity that started ``run_id`` as the store says (``""`` for a run started without one),
        None when the run has no stored input yet; blocking (a worker thread, or the loop on a SQLite file)."""
        if self.store.local:
            r = self.store._reader().execute(
                "SELECT d.principal FROM inputs i JOIN decisions d ON d.decision_id = i.decision_id "
                "WHERE i.run_id = ? AND i.idx = 0", (run_id,)).fetchone()
        else:
            i, d = schema.inputs, schema.decisions
            q = (sa.select(d.c.principal).select_from(i.join(d, d.c.decision_id == i.c.decision_id))
                 .where(i.c.run_id == run_id, i.c.idx == 0))
            with self.store.engine.connect() as c:
                r = c.execute(q).first()
        if r is None:
            return None
        return _NO_OWNER if r[0] is None else str(r[0])

    async def refused(self, run_id: str, identity: str) -> Response | None:
        """None when ``identity`` may feed ``run_id``, else the 403. Asked before the run's state is read, so
        another identity's request learns nothing of it (not even that it expired) and costs it no rebuild.

        A run with no stored input is anyone's to start: the store's unique ``(run_id, idx)`` decides who
        did, and the loser, decided again on the rebuilt run, is asked again here (then refused)."""
        if self.mode == "shared":
            return None
        owner = self._owners.get(run_id)
        if owner is None:
            owner = self.owner(run_id) if self.store.local else await run_in_threadpool(self.owner, run_id)
            if owner is None:  # nothing stored yet: a new run
                return None
            self._owners[run_id] = owner
            if len(self._owners) > self.max_cached:
                self._owners.popitem(last=False)
        return None if owner == (identity or _NO_OWNER) else refusal(run_id)
