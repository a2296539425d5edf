"""The tamper-evident audit log: a hash chain over every decision record, signed checkpoints, and the
verifier behind ``agentguard audit verify``.

Each ``decisions`` row carries (migration 0005):

- ``seq``: its position in the global chain (1, 2, 3, ... with no gap; unique);
- ``chain_hash`` = SHA-256(``"agentguard-chain-v1" | seq | previous chain_hash | record hash``), where the
  record hash is SHA-256 of the canonical encoding (:func:`.jsonutil.canonical`) of the row's content:
  ``decision_id, ts, run_id, kind, guard, input_digest, decision, reason, numbers, guard_version,
  principal, seq`` (the first record's previous hash is 64 zeros);
- ``run_hash`` = SHA-256(``"agentguard-run-v1" | the run's previous run_hash | record hash``): a chain per
  run, so one run's records can be exported and checked on their own.

Every ``checkpoint_every`` records (the writer signs when a batch reaches a multiple) an
``audit_checkpoints`` row holds ``(seq, chain_hash, ts)`` signed with Ed25519 (the ``cryptography``
package: the maintained binding of OpenSSL's Ed25519; PyNaCl would do as well, ``cryptography`` is
already what ``psycopg`` and ``httpx`` users have). The signature is over
``"agentguard-checkpoint-v1" | seq | chain_hash | ts``; the key never goes in the database.

What :func:`verify` detects (a test per case, each store): an **edited** record (its hashes no longer
match its content), a **deleted** one (a gap in ``seq``, and the next record's hash does not follow), an
**inserted** one (a ``seq`` out of sequence or a hash that does not follow), a **reorder** (swapped
contents or positions break the links), a whole suffix rewritten with fresh hashes (the signed
checkpoint at or after it no longer matches), a removed checkpoint (one expected at every multiple).

What it cannot detect (stated, not hidden): removing the records *after* the last checkpoint together
with nothing else (truncating the unsigned tail); the defence is a short ``checkpoint_every`` and
shipping checkpoints out of the database (``agentguard audit export``, the webhook). Rows written with
the chain off (``audit_chain = false``) or before migration 0005 carry no hashes and are reported as
unchained, not as verified.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import sqlalchemy as sa

from ..core.errors import InputError
from . import schema
from .jsonutil import canonical

__all__ = ["CONTENT", "GENESIS", "Signer", "VerifyReport", "chain_hash", "checkpoint_message", "load_public_key",
           "record_hash", "run_hash", "verify"]

GENESIS = "0" * 64
#: the columns a record hash covers, in this order
CONTENT = ("decision_id", "ts", "run_id", "kind", "guard", "input_digest", "decision", "reason", "numbers",
           "guard_version", "principal", "seq")


def record_hash(row: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical encoding (:func:`.jsonutil.canonical`) of the row's :data:`CONTENT`."""
    return hashlib.sha256(canonical({k: row.get(k) for k in CONTENT})).hexdigest()


def chain_hash(seq: int, prev: str, rec: str) -> str:
    return hashlib.sha256(f"agentguard-chain-v1|{int(seq)}|{prev}|{rec}".encode()).hexdigest()


def run_hash(prev: str, rec: str) -> str:
    return hashlib.sha256(f"agentguard-run-v1|{prev}|{rec}".encode()).hexdigest()


def checkpoint_message(seq: int, chain: str, ts: float) -> bytes:
    return f"agentguard-checkpoint-v1|{int(seq)}|{chain}|{ts!r}".encode()


class Signer:
    """An Ed25519 private key (PEM, PKCS#8) that signs checkpoints. ``Signer.load_or_create(path)`` makes a
    new key file (mode 0600) when none exists."""

    def __init__(self, private_key: Any) -> None:
        from cryptography.hazmat.primitives import serialization

        self.key = private_key
        self.public_raw = private_key.public_key().public_bytes(serialization.Encoding.Raw,
                                                                serialization.PublicFormat.Raw)
        self.key_id = hashlib.sha256(self.public_raw).hexdigest()[:16]

    @classmethod
    def load_or_create(cls, path: str | Path) -> "Signer":
        """The key at ``path``, made first when none exists. Several workers starting at once may race
        to make it: the file appears whole or not at all (written aside, then hard-linked into place;
        the loser of the race loads the winner's key)."""
        import os

        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        p = Path(path)
        if not p.exists():
            key = Ed25519PrivateKey.generate()
            p.parent.mkdir(parents=True, exist_ok=True)
            pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
            tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(pem)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, p)  # atomic; fails when another process made the key first
                pub = key.public_key().public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo)
                pub_tmp = tmp.with_suffix(".pub")
                pub_tmp.write_bytes(pub)
                os.replace(pub_tmp, p.with_suffix(".pub.pem"))
                return cls(key)
            except FileExistsError:
                pass
            finally:
                tmp.unlink(missing_ok=True)
        try:
            loaded = serialization.load_pem_private_key(p.read_bytes(), password=None)
        except (ValueError, TypeError) as exc:
            raise InputError(f"audit key {p} is not a PEM private key: {exc}") from None
        if not isinstance(loaded, Ed25519PrivateKey):
            raise InputError(f"audit key {p} is not an Ed25519 key")
        return cls(loaded)

    def sign(self, seq: int, chain: str, ts: float) -> dict[str, Any]:
        sig = self.key.sign(checkpoint_message(seq, chain, ts))
        return {"seq": int(seq), "chain_hash": chain, "ts": ts, "key_id": self.key_id,
                "public_key": self.public_raw.hex(), "signature": sig.hex()}


def load_public_key(path: str | Path) -> tuple[str, Any]:
    """(key id, Ed25519 public key) from a PEM file (a public key, or a private key whose public half is used)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

    data = Path(path).read_bytes()
    try:
        key: Any = serialization.load_pem_public_key(data)
    except ValueError:
        try:
            priv = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise InputError(f"{path} is not a PEM Ed25519 key: {exc}") from None
        if not isinstance(priv, Ed25519PrivateKey):
            raise InputError(f"{path} is not an Ed25519 key")
        key = priv.public_key()
    if not isinstance(key, Ed25519PublicKey):
        raise InputError(f"{path} is not an Ed25519 public key")
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16], key


@dataclass
class VerifyReport:
    """What :func:`verify` found: ``ok`` only when every chained record and every checkpoint checks out."""

    records: int = 0
    chained: int = 0
    unchained: int = 0
    checkpoints: int = 0
    signatures_checked: int = 0
    last_seq: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "records": self.records, "chained": self.chained, "unchained": self.unchained,
                "checkpoints": self.checkpoints, "signatures_checked": self.signatures_checked,
                "last_seq": self.last_seq, "problems": self.problems[:50], "n_problems": len(self.problems),
                "seconds": round(self.seconds, 6),
                "records_per_s": round(self.records / self.seconds, 1) if self.seconds > 0 else None}


def _rows(conn: sa.Connection, run_id: str | None = None, batch: int = 5000) -> Iterator[dict[str, Any]]:
    d = schema.decisions
    cols = [d.c.id, d.c.chain_hash, d.c.run_hash, *(d.c[k] for k in CONTENT)]
    last = None
    while True:  # keyset pages over seq (chained rows), in chain order
        q = sa.select(*cols).where(d.c.seq.is_not(None))
        if run_id is not None:
            q = q.where(d.c.run_id == run_id)
        if last is not None:
            q = q.where(d.c.seq > last)
        page = [dict(r._mapping) for r in conn.execute(q.order_by(d.c.seq).limit(batch))]
        if not page:
            return
        yield from page
        last = page[-1]["seq"]


def verify(engine: sa.Engine, public_keys: Mapping[str, Any] | None = None, *, checkpoint_every: int | None = None,
           max_problems: int = 1000) -> VerifyReport:
    """Check the whole chain of the audit store behind ``engine`` (see the module docstring).

    ``public_keys``: ``{key_id: Ed25519PublicKey}`` trusted to sign checkpoints; a checkpoint by any other
    key is a problem. None: signatures are checked against the key each checkpoint names (internal
    consistency only: say so). ``checkpoint_every``: the interval the service used (a checkpoint must sit at
    every multiple); None reads it from the checkpoints found (no check of missing ones)."""
    t0 = time.perf_counter()
    rep = VerifyReport()
    d, cp = schema.decisions, schema.audit_checkpoints

    def problem(msg: str) -> None:
        if len(rep.problems) < max_problems:
            rep.problems.append(msg)

    with engine.connect() as conn:
        rep.records = int(conn.execute(sa.select(sa.func.count()).select_from(d)).scalar_one())
        rep.unchained = int(conn.execute(sa.select(sa.func.count()).select_from(d).where(d.c.seq.is_(None)))
                            .scalar_one())
        first_chained = conn.execute(sa.select(sa.func.min(d.c.id)).where(d.c.seq.is_not(None))).scalar()
        if first_chained is not None:
            late = int(conn.execute(sa.select(sa.func.count()).select_from(d)
                                    .where(d.c.seq.is_(None), d.c.id > first_chained)).scalar_one())
            if late:
                problem(f"{late} record(s) without a chain position after the chain began (inserted, or written "
                        "with the chain off)")
        checkpoints = {int(r.seq): dict(r._mapping) for r in conn.execute(sa.select(cp).order_by(cp.c.seq))}
        rep.checkpoints = len(checkpoints)
        prev, expect = GENESIS, 1
        heads: dict[str, str] = {}
        for row in _rows(conn):
            seq = int(row["seq"])
            if seq != expect:
                problem(f"seq {seq} follows seq {expect - 1}: "
                        + ("records missing (deleted)" if seq > expect else "a record out of sequence (inserted or reordered)"))
            rec = record_hash(row)
            want = chain_hash(seq, prev, rec)
            if row["chain_hash"] != want:
                problem(f"seq {seq} (decision {row['decision_id']}): chain hash does not match its content and "
                        "predecessor (edited, inserted, reordered, or a record before it deleted)")
            rwant = run_hash(heads.get(row["run_id"], GENESIS), rec)
            if row["run_hash"] != rwant:
                problem(f"seq {seq} (run {row['run_id']}): run chain broken (a record of the run edited, deleted, "
                        "inserted or reordered)")
            heads[row["run_id"]] = str(row["run_hash"])
            prev = str(row["chain_hash"])
            c = checkpoints.get(seq)
            if c is not None and c["chain_hash"] != row["chain_hash"]:
                problem(f"checkpoint at seq {seq} signs another chain hash than the record's (records rewritten)")
            rep.chained += 1
            rep.last_seq = seq
            expect = seq + 1
    for seq, c in checkpoints.items():
        if seq > rep.last_seq:
            problem(f"checkpoint at seq {seq} is past the last record (seq {rep.last_seq}): records deleted")
        key = None
        if public_keys is not None:
            key = public_keys.get(c["key_id"])
            if key is None:
                problem(f"checkpoint at seq {seq} is signed by key {c['key_id']}, not a trusted key")
                continue
        else:
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

            try:
                key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(c["public_key"]))
            except ValueError:
                problem(f"checkpoint at seq {seq}: unreadable public key")
                continue
        try:
            key.verify(bytes.fromhex(c["signature"]), checkpoint_message(seq, c["chain_hash"], float(c["ts"])))
            rep.signatures_checked += 1
        except Exception:  # cryptography.exceptions.InvalidSignature, bad hex
            problem(f"checkpoint at seq {seq}: bad signature")
    if checkpoint_every:
        for k in range(checkpoint_every, rep.last_seq + 1, checkpoint_every):
            if k not in checkpoints:
                problem(f"checkpoint at seq {k} missing (removed)")
    rep.seconds = time.perf_counter() - t0
    return rep


def export_run(engine: sa.Engine, run_id: str) -> dict[str, Any]:
    """A run's records in order with their hashes (a per-run chain a reader can recompute alone with
    :func:`record_hash` and :func:`run_hash`) and the global chain positions, plus the first signed checkpoint at
    or after the run's last record and the ``proof`` that ties the records to it (:func:`verify_run_export`):
    the chain hash just before the run's first record and the record hash of every other record between it
    and the checkpoint (hashes only: nothing of other runs' content)."""
    d, cp = schema.decisions, schema.audit_checkpoints
    with engine.connect() as conn:
        recs = list(_rows(conn, run_id))
        last = recs[-1]["seq"] if recs else 0
        cps = [dict(r._mapping) for r in conn.execute(sa.select(cp).where(cp.c.seq >= last).order_by(cp.c.seq).limit(1))]
        proof = _proof(conn, recs, cps[0]) if recs and cps else None
    for r in recs:
        r.pop("id", None)
    head = GENESIS
    for r in recs:
        head = run_hash(head, record_hash(r))
    for c in cps:
        c.pop("id", None)
    return {"run_id": run_id, "records": recs, "run_head": head if recs else None, "checkpoints": cps,
            "signed": bool(cps),  # False: the run's last record is after the last checkpoint (not signed yet)
            "proof": proof,
            "hash": {"record": "sha256(canonical({" + ", ".join(CONTENT) + "}))",
                     "run": "sha256('agentguard-run-v1|' + prev_run_hash + '|' + record_hash)",
                     "chain": "sha256('agentguard-chain-v1|' + seq + '|' + prev_chain_hash + '|' + record_hash)"}}


def _proof(conn: sa.Connection, recs: list[dict[str, Any]], checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    d = schema.decisions
    first, upto = int(recs[0]["seq"]), int(checkpoint["seq"])
    prev = GENESIS if first == 1 else conn.execute(sa.select(d.c.chain_hash).where(d.c.seq == first - 1)).scalar()
    mine = {int(r["seq"]) for r in recs}
    others: list[list[Any]] = []
    q = (sa.select(*(d.c[k] for k in CONTENT)).where(d.c.seq >= first, d.c.seq <= upto).order_by(d.c.seq))
    for row in conn.execute(q):
        m = dict(row._mapping)
        if int(m["seq"]) not in mine:
            others.append([int(m["seq"]), record_hash(m)])
    return {"from_seq": first, "prev_chain_hash": prev, "others": others}


def verify_run_export(doc: Mapping[str, Any], public_keys: Mapping[str, Any] | None = None, *,
                      require_signed: bool | None = None) -> list[str]:
    """Problems in an exported run; empty when it checks out.

    Always: the per-run chain is recomputed (an export edited without recomputing its hashes fails: a changed
    field, a removed or reordered record) and every record names the run. With a signed checkpoint and its
    ``proof`` (:func:`export_run`), the global chain is recomputed from the chain hash before the run's first
    record through the run's records (their hashes recomputed from their content) and the other records'
    hashes, position by position, up to the checkpoint: it must end in the chain hash the checkpoint signs, and
    the signature must verify. ``public_keys`` (``{key_id: Ed25519PublicKey}``, :func:`load_public_key`): the
    keys trusted to sign; a checkpoint by another key is a problem. ``require_signed`` (default: when
    ``public_keys`` are given): an export without a signed checkpoint and its proof is a problem.

    Guaranteed with a trusted key: every exported record is, field for field, the record the service chained at
    that position before the signed checkpoint: an edited, re-hashed, inserted, reordered or moved record, or
    a record of another run, fails (changing it and still reaching the signed hash needs a SHA-256 second
    preimage; re-signing needs the private key). A record cut out of the export together with nothing else
    leaves a gap in the positions and fails too.

    Not guaranteed (stated, not hidden): completeness. The chain commits to each record's hash, not to which
    run a position belongs, so an exporter who cuts records of the run and lists their hashes among the other
    records' (or starts the proof after a cut prefix) is not detected from the export; ``agentguard audit
    verify`` on the database is. Without a trusted key the signature is checked against the key the export
    names: internal consistency only. Without a checkpoint (a run whose last record is after the last one),
    only the per-run chain, which anyone can recompute: that proves nothing against a forger."""
    out: list[str] = []
    head = GENESIS
    recs = list(doc.get("records") or [])
    for r in recs:
        head = run_hash(head, record_hash(r))
        if r.get("run_hash") != head:
            out.append(f"record {r.get('decision_id')}: run chain broken")
        if r.get("run_id") != doc.get("run_id"):
            out.append(f"record {r.get('decision_id')}: of run {r.get('run_id')!r}, not {doc.get('run_id')!r}")
    if require_signed is None:
        require_signed = public_keys is not None
    cps, proof = list(doc.get("checkpoints") or []), doc.get("proof")
    if not cps or not isinstance(proof, Mapping) or not recs:
        if require_signed:
            out.append("no signed checkpoint ties the export to the audit chain (its last record is after the last "
                       "checkpoint, or the proof is missing): it proves nothing beyond its own consistency")
        return out
    return out + _check_proof(recs, cps[0], proof, public_keys)


def _check_proof(recs: list[Mapping[str, Any]], cp: Mapping[str, Any], proof: Mapping[str, Any],
                 public_keys: Mapping[str, Any] | None) -> list[str]:
    out: list[str] = []
    try:
        at: dict[int, str] = {}
        for r in recs:
            if int(r["seq"]) in at:
                out.append(f"seq {r['seq']} appears twice")
            at[int(r["seq"])] = record_hash(r)
        for seq, h in proof.get("others") or []:
            if int(seq) in at:
                out.append(f"seq {seq} is both a record of the run and another run's")
            at[int(seq)] = str(h)
        first, upto, prev = int(proof["from_seq"]), int(cp["seq"]), str(proof["prev_chain_hash"])
    except (KeyError, TypeError, ValueError) as exc:
        return out + [f"unreadable proof: {type(exc).__name__}"]
    if first != int(recs[0]["seq"]):
        out.append(f"the proof starts at seq {first}, the run's first record is seq {recs[0]['seq']}")
    if set(at) != set(range(first, upto + 1)):
        missing = sorted(set(range(first, upto + 1)) - set(at))[:5]
        out.append(f"the proof does not cover seq {first}..{upto} exactly (missing {missing}, or extra positions): "
                   "records removed or added")
        return out
    mine = {int(r["seq"]): r for r in recs}
    for seq in range(first, upto + 1):
        prev = chain_hash(seq, prev, at[seq])
        if seq in mine and mine[seq].get("chain_hash") != prev:
            out.append(f"seq {seq} (decision {mine[seq].get('decision_id')}): chain hash does not follow")
    if prev != cp.get("chain_hash"):
        out.append(f"the records do not lead to the chain hash the checkpoint at seq {upto} signs (forged or edited)")
    out += _check_signature(cp, public_keys)
    return out


def _check_signature(cp: Mapping[str, Any], public_keys: Mapping[str, Any] | None) -> list[str]:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        if public_keys is not None:
            key = public_keys.get(str(cp.get("key_id")))
            if key is None:
                return [f"checkpoint at seq {cp.get('seq')} is signed by key {cp.get('key_id')}, not a trusted key"]
        else:
            key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(str(cp["public_key"])))
        key.verify(bytes.fromhex(str(cp["signature"])), checkpoint_message(int(cp["seq"]), str(cp["chain_hash"]),
                                                                           float(cp["ts"])))
    except Exception:  # cryptography.exceptions.InvalidSignature, bad hex, missing fields
        return [f"checkpoint at seq {cp.get('seq')}: bad signature"]
    return []


def iter_problems(rep: VerifyReport) -> Iterable[str]:
    return iter(rep.problems)
