"""Test credentials, one per role (the tokens are fixed so failures are readable; the file stores only
their SHA-256)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentguard.server.credentials import hash_token


@dataclass(frozen=True)
class Cred:
    identity: str
    role: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


AGENT = Cred("agent-1", "agent", "agent-token-0123456789")
APPROVER = Cred("alice@corp", "approver", "alice-token-0123456789")
APPROVER2 = Cred("bob@corp", "approver", "bob-token-0123456789ab")
READER = Cred("auditor", "reader", "reader-token-0123456789")
ADMIN = Cred("ops", "admin", "admin-token-0123456789")
ALL = (AGENT, APPROVER, APPROVER2, READER, ADMIN)


def entry(c: Cred, token: str | None = None) -> str:
    return (f'[[credentials]]\nidentity = "{c.identity}"\nrole = "{c.role}"\n'
            f'token_sha256 = "{hash_token(token or c.token)}"\n')


def credentials_file(folder: Path, creds=ALL) -> Path:
    p = Path(folder) / "credentials.toml"
    p.write_text("\n".join(entry(c) for c in creds))
    return p
