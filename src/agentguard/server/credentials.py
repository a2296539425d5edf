"""Who may do what: roles with their own credentials, stored hashed, rotated without a restart.

Roles (least privilege; a credential has one or more):

==========  =====================================================================================
``agent``   ``POST /v1/check``, ``/v1/runs/{id}/steps``, ``/v1/runs/{id}/signals``, ``/v1/traces``
``approver`` ``POST /v1/approvals`` (answers escalations) and every read (to see what it approves);
            the approver the audit log records is the credential's ``identity``, never a body field,
            and an approver cannot answer an escalation of a run its own identity started or asked
``reader``  every ``GET`` that is not public: dashboard data, ``/metrics``, the audit export
``admin``   every read and every other write (guard reloads); not approvals
==========  =====================================================================================

The credentials file (``credentials_file`` in the settings, ``AGENTGUARD_CREDENTIALS_FILE``) is TOML::

    [[credentials]]
    identity = "agent-prod"
    role = "agent"
    token_sha256 = "9f86d08..."   # SHA-256 (hex) of the bearer token; the token itself is never stored

    [[credentials]]
    identity = "alice@corp"
    roles = ["approver"]
    token_sha256 = "..."
    facts = { contacts = ["*@corp.example"] }   # optional: run facts the server gives the guards (.facts)

``agentguard new-credential --role approver --identity alice@corp`` prints a fresh token and its
entry. The file is read again when it changes (its modification time and size are looked at, at most
once a second): adding a new token for an identity and removing the old one rotates it without a
restart. A file that fails to load is reported (``last_error``) and keeps in force only the credentials
whose digest its text still holds: a token removed by an edit that broke the file is revoked all the same
(an unreadable or deleted file leaves none; a revocation never waits for a clean edit); at start-up it is
an error.

Why SHA-256 and not a password hash (scrypt, argon2): the tokens are 256-bit random secrets made by
:func:`new_token`, not human passwords, so a fast hash cannot be brute-forced, and a slow one would
cost milliseconds on every request of the hot path (the same reasoning as GitHub's token storage). The
lookup is a dictionary of digests, then a constant-time comparison of the digest found.

The legacy single ``token`` (``AGENTGUARD_TOKEN``) still works: it is the identity ``token`` with the
roles ``agent``, ``reader`` and ``admin`` but not ``approver``: the agent's token cannot answer the
escalations it raises (issue 28's self-approval attack). Approvals need an approver credential.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.errors import InputError

__all__ = ["CredentialStore", "Principal", "ROLES", "hash_token", "new_credential", "new_token", "permitted"]

ROLES = ("agent", "approver", "reader", "admin")
AGENT_PATHS_SUFFIX = ("/steps", "/signals")


@dataclass(frozen=True)
class Principal:
    """The caller, as its credential says: an identity, its roles, and the run facts its entry sets
    (``facts``: given to the guards as the server's, never overridable by a request; :mod:`.facts`)."""

    identity: str
    roles: frozenset[str]
    facts: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)

    def has(self, role: str) -> bool:
        return role in self.roles


def hash_token(token: str) -> str:
    """SHA-256 (hex) of a bearer token: what the credentials file stores."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh bearer token: 256 random bits, URL-safe."""
    return "ag_" + secrets.token_urlsafe(32)


def new_credential(identity: str, roles: Iterable[str]) -> tuple[str, str]:
    """(token, TOML entry for the credentials file) of a new credential."""
    rs = _roles(list(roles), identity)
    tok = new_token()
    import json

    entry = (f"[[credentials]]\nidentity = {json.dumps(identity)}\nroles = {json.dumps(sorted(rs))}\n"
             f'token_sha256 = "{hash_token(tok)}"\n')
    return tok, entry


def required_role(method: str, path: str) -> str:
    """The role a request needs (``admin`` also passes every ``reader`` and ``agent`` check)."""
    if method in ("GET", "HEAD"):
        return "reader"
    if path == "/v1/approvals":
        return "approver"
    if path in ("/v1/check", "/v1/traces") or (path.startswith("/v1/runs/") and path.endswith(AGENT_PATHS_SUFFIX)):
        return "agent"
    return "admin"


def permitted(p: Principal, method: str, path: str) -> bool:
    need = required_role(method, path)
    if need == "reader":
        return bool(p.roles & {"reader", "approver", "admin"})
    if need == "approver":
        return p.has("approver")
    return p.has(need)


def _roles(raw: Any, identity: str) -> frozenset[str]:
    rs = [raw] if isinstance(raw, str) else list(raw or [])
    bad = [r for r in rs if r not in ROLES]
    if not rs or bad:
        raise InputError(f"credential {identity!r}: roles must be some of {', '.join(ROLES)}, got {raw!r}")
    return frozenset(rs)


def _facts(raw: Any, identity: str) -> Mapping[str, Any] | None:
    """A credential's ``facts``: a table of JSON values (what a guard reads from ``context.metadata``)."""
    if raw is None:
        return None
    import json

    if not isinstance(raw, dict):
        raise InputError(f"credential {identity!r}: facts must be a table")
    try:
        return json.loads(json.dumps(raw, allow_nan=False))  # JSON values only (no TOML dates)
    except (TypeError, ValueError):
        raise InputError(f"credential {identity!r}: facts must hold JSON values (strings, numbers, booleans, "
                         "arrays, tables)") from None


def _parse(path: Path) -> dict[str, Principal]:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read credentials file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"credentials file {path} is not valid TOML: {exc}") from None
    out: dict[str, Principal] = {}
    entries = data.get("credentials", [])
    if not isinstance(entries, list):
        raise InputError(f"credentials file {path}: [[credentials]] must be an array of tables")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise InputError(f"credentials file {path}: entry {i} is not a table")
        unknown = sorted(set(e) - {"identity", "role", "roles", "token_sha256", "facts"})
        if unknown:
            raise InputError(f"credentials file {path}: entry {i}: unknown keys {', '.join(unknown)}")
        ident = e.get("identity")
        if not isinstance(ident, str) or not (1 <= len(ident) <= 100) or ident == "token":
            raise InputError(f"credentials file {path}: entry {i}: identity must be 1-100 characters (not 'token')")
        digest = str(e.get("token_sha256", "")).lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise InputError(f"credentials file {path}: entry {i} ({ident}): token_sha256 must be 64 hex digits")
        if digest in out:
            raise InputError(f"credentials file {path}: entry {i} ({ident}): the same token is listed twice")
        out[digest] = Principal(ident, _roles(e.get("roles", e.get("role")), ident), _facts(e.get("facts"), ident))
    return out


class CredentialStore:
    """The credentials in force: the file's (re-read when it changes) and the legacy single token."""

    LEGACY = Principal("token", frozenset({"agent", "reader", "admin"}))

    def __init__(self, path: str | os.PathLike[str] | None, legacy_token: str | None = None,
                 check_every_s: float = 1.0) -> None:
        self.path = Path(path) if path else None
        self.legacy = hash_token(legacy_token) if legacy_token else None
        self.check_every_s = check_every_s
        self.last_error: str | None = None
        self.reloads = 0
        self._lock = threading.Lock()
        self._by_digest: dict[str, Principal] = {}
        # tokens already identified, valid while ``_by_digest`` is the same object (a reload replaces it)
        self._known: tuple[dict[str, Principal], dict[bytes, Principal]] = (self._by_digest, {})
        self._stamp: tuple[int, int] | None = None
        self._checked = 0.0
        if self.path is not None:
            self._by_digest = _parse(self.path)  # at start-up a bad file is an error
            self._stamp = self._stat()
            self._checked = time.monotonic()

    @property
    def enabled(self) -> bool:
        """Whether requests are authenticated at all (a token or a credentials file)."""
        return self.path is not None or self.legacy is not None

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat() if self.path is not None else None
        except OSError:
            return None
        return None if st is None else (st.st_mtime_ns, st.st_size)

    def _refresh(self) -> None:
        now = time.monotonic()
        if self.path is None or now - self._checked < self.check_every_s:
            return
        with self._lock:
            if now - self._checked < self.check_every_s:
                return
            self._checked = now
            stamp = self._stat()
            if stamp == self._stamp:
                return
            try:
                self._by_digest = _parse(self.path)
                self._stamp = stamp
                self.last_error = None
                self.reloads += 1
            except InputError as exc:
                self.last_error = str(exc)
                logging.getLogger(__name__).warning("credentials file not reloaded: %s", exc)
                self._by_digest = self._still_named(self._by_digest)
                self._stamp = stamp

    def _still_named(self, current: dict[str, Principal]) -> dict[str, Principal]:
        """The credentials in force after a failed reload: those whose digest the file's text still holds (with
        the roles they had); none when the file cannot be read."""
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace") if self.path is not None else ""
        except OSError:
            return {}
        return {d: p for d, p in current.items() if d in text}

    def principal(self, identity: str) -> Principal | None:
        """The credential in force of ``identity`` (the legacy token's for ``token``), or None when it has none, or
        more than one that differ in roles or facts (which one asked is not known: the caller fails closed)."""
        self._refresh()
        found = {(p.roles, repr(p.facts)): p for p in self._by_digest.values() if p.identity == identity}
        if identity == self.LEGACY.identity and self.legacy is not None:
            found[(self.LEGACY.roles, repr(None))] = self.LEGACY
        return next(iter(found.values())) if len(found) == 1 else None

    def identify(self, token: str | bytes) -> Principal | None:
        """The principal of a bearer token, or None."""
        self._refresh()
        raw = token.encode("utf-8") if isinstance(token, str) else token
        by_digest = self._by_digest
        known = self._known
        if known[0] is by_digest:  # the tokens already identified against these very credentials
            p = known[1].get(raw)
            if p is not None:
                return p
        else:
            known = self._known = (by_digest, {})
        digest = hashlib.sha256(raw).hexdigest()
        p = by_digest.get(digest)
        if p is None and self.legacy is not None and hmac.compare_digest(digest, self.legacy):
            p = self.LEGACY
        if p is not None and len(known[1]) < 256:  # valid tokens only (an unknown one is hashed every time)
            known[1][raw] = p
        return p
