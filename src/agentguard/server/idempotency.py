"""Idempotency keys for the service's write endpoints (``POST /v1/check``, ``/v1/runs/{id}/steps``,
``/v1/runs/{id}/signals``, ``/v1/approvals``).

A client that sends a request and loses the answer (a timeout, a dropped connection, a replica killed
after its commit) cannot know whether the decision was stored. Sent again with the same
``Idempotency-Key`` header, the request is answered from the store, never decided (and appended to the
run) a second time:

- the key is scoped to the caller's identity (two tenants may use the same key): ``scope`` is the
  SHA-256 of the identity and the key, unique in the ``idempotency_keys`` table (migration 0007);
- the stored row holds the SHA-256 of the request (its path and canonical JSON body) and, for a decision
  request (check, step, signal), of what the server gives the guards about the caller besides the body (its
  credential's roles and ``facts``, :mod:`.facts`): the same key with a different request is refused with 422
  (never answered with another request's decision), and so is a retry after the credential's roles or facts
  were changed (session 26 red team: an ALLOW decided under a fact the operator has since withdrawn was
  replayed; the retry is decided again, with a new key, under the credential in force). Keys stored before
  session 26 digest no credential: their retries are 422 too (fail closed);
- the row is written in the decision's own transaction (with the decision, its input row and its step),
  so either both are durable or neither: a key is never stored without its decision, nor a decision of a
  keyed request without its key. Two replicas that get the same keyed request at once both decide, but
  only one commits (the scope is unique); the other's write fails, and its retry finds the stored answer;
- only decided requests are stored (200 with a verdict). A refusal before any decision (400, 401, 410,
  413, 422, a 503 for an unavailable store) stores nothing, so the retry is decided normally.

The answer of a replayed request carries the header ``Idempotent-Replayed: true``. A stored answer that
runs a call (:func:`runs_a_call`) is not replayed once the run was halted after it, nor once the call's tool
was halted for the run (:class:`~agentguard.core.strategies.HaltTool`, matched by
:func:`~agentguard.core.strategies.halted_tool`): 409, the stop holds for every call not yet run, the retried
one included (:func:`replayed`), nor once the guard files in force changed since it was decided (another
``guard_version``, or a decision row that cannot be read): 409, the request is sent again with a new key and the
guards in force decide it, as an approval under other guards is refused (a refusal, which runs nothing, is
still replayed).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Mapping

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ..core.strategies import halted_tool
from .jsonutil import RequestJSONError, canonical, loads, loads_request

__all__ = ["HEADER", "IdemKey", "IdempotencyError", "caller_facts", "idem_key", "key_from_headers", "replayed",
           "runs_a_call"]

#: the request header (case-insensitive, as HTTP headers are)
HEADER = "idempotency-key"
_HEADER_B = HEADER.encode()
_VALID = re.compile(r"[\x21-\x7e]{1,200}")  # visible ASCII, 1-200 characters (a UUID, a ULID, a hash)


class IdempotencyError(ValueError):
    """An ``Idempotency-Key`` header that is not 1-200 visible ASCII characters."""


@dataclass(frozen=True)
class IdemKey:
    """A request's idempotency key: ``scope`` (identity and key, hashed) and ``digest`` (the request)."""

    scope: str
    digest: str

    def row(self, run_id: str, decision_id: str, ts: float, response: bytes) -> dict[str, Any]:
        """The ``idempotency_keys`` row of this request's decided answer."""
        return {"scope": self.scope, "request_digest": self.digest, "ts": ts, "run_id": run_id,
                "decision_id": decision_id, "status": 200, "response": response.decode()}


def key_from_headers(headers: Any) -> str | None:
    """The ``Idempotency-Key`` header of an ASGI header list (``[(name, value), ...]`` bytes) or a
    mapping; None when absent. Raises :class:`IdempotencyError` for a malformed or repeated key."""
    found: list[bytes] = []
    if type(headers) is list and all(type(k) is bytes for k, _v in headers):  # ASGI: names are lower case
        found = [v for k, v in headers if k == _HEADER_B or (len(k) == len(_HEADER_B) and k.lower() == _HEADER_B)]
    else:
        items = headers.items() if isinstance(headers, Mapping) else headers
        for k, v in items:
            name = k.lower() if isinstance(k, bytes) else k.lower().encode()
            if name == _HEADER_B:
                found.append(v if isinstance(v, bytes) else str(v).encode())
    if not found:
        return None
    if len(found) > 1:
        raise IdempotencyError("more than one Idempotency-Key header")
    try:
        key = found[0].decode("ascii")
    except UnicodeDecodeError:
        raise IdempotencyError("Idempotency-Key must be 1-200 visible ASCII characters") from None
    if not _VALID.fullmatch(key):
        raise IdempotencyError("Idempotency-Key must be 1-200 visible ASCII characters")
    return key


def idem_key(key: str | None, identity: str, path: str, raw: bytes,
             caller: Mapping[str, Any] | None = None) -> IdemKey | None:
    """The :class:`IdemKey` of a request (None without a key). The digest covers the path, the body read as
    JSON (canonical form, so a retry that re-serialises the same body still matches; a body that is not JSON
    is digested as its bytes: it is refused later anyway) and ``caller``, when given: what the guards are told
    about the caller besides the body (:func:`caller_facts`), so a changed credential makes another request."""
    if key is None:
        return None
    scope = hashlib.sha256(b"idem\x00" + identity.encode() + b"\x00" + key.encode()).hexdigest()
    try:
        body = canonical(loads_request(raw))
    except (RequestJSONError, ValueError, TypeError):
        body = b"raw\x00" + raw
    if caller is not None:
        body += b"\x00caller\x00" + canonical(dict(caller))
    digest = hashlib.sha256(path.encode() + b"\x00" + body).hexdigest()
    return IdemKey(scope, digest)


def caller_facts(roles: Any, facts: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a decision request's digest covers of its credential (:func:`idem_key` ``caller``): its roles
    (the guards read them in ``principal.roles``) and its ``facts``."""
    return {"facts": dict(facts or {}), "roles": sorted(roles)}


def runs_a_call(response: str) -> bool:
    """Whether a stored answer lets the client run a call (``execute`` not false: ALLOW, MODIFY, an approved
    ESCALATE); an unreadable one counts as running a call (the riskier kind, checked against the halt)."""
    try:
        body = loads(response)
    except ValueError:
        return True
    return not isinstance(body, dict) or body.get("execute") is not False


async def replayed(svc: Any, idem: IdemKey, run_id: str, proposal: Any = None) -> Response | None:
    """The stored answer of an already decided keyed request of the service ``svc`` (422 when the key was used
    for another request), or None when it was not decided yet. A stored answer that runs a call is replayed
    only while the run is not halted and the tool of ``proposal`` (the request's call, step or approved call)
    is not halted (:func:`~agentguard.core.strategies.halted_tool`); once a later input of the run latched
    either, the retry is 409 (do not run the call). Called under the run's lock."""
    from .gate import error

    row = await run_in_threadpool(svc.store.idempotent, idem.scope)
    if row is None:
        return None
    if row["request_digest"] != idem.digest:
        return error(422, "this Idempotency-Key was already used for a different request (another body or path, or "
                          "the credential's roles or facts changed since); use a new key")
    if runs_a_call(row["response"]):
        decided = await run_in_threadpool(svc.store.decision, row["decision_id"])
        then, now = (decided or {}).get("guard_version"), svc.pipelines().version
        if then != now:
            return error(409, f"the guards changed since this request was decided (version {then} -> {now}); its "
                              "answer is not replayed: send the request again with a new Idempotency-Key")
        st = await svc.astate(run_id, svc.pipelines(), False)
        tool = halted_tool(st.context.metadata, proposal)
        if st.halted is not None or tool is not None:
            why = st.halted.reason[:200] if st.halted is not None else f"tool {tool} was halted for this run"
            return error(409, f"run {run_id} was halted after this request was decided ({why}); its answer is not "
                              "replayed: do not run the call")
    return Response(row["response"].encode(), status_code=int(row["status"]), media_type="application/json",
                    headers={"Idempotent-Replayed": "true"})
