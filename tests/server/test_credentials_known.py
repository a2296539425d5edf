"""server/credentials.py ``CredentialStore.identify``: a token identified once is answered from memory only while
the credentials it was identified against are in force (a reload that drops or changes it is seen at once), and
only valid tokens are remembered."""

from __future__ import annotations

import os
import time
from pathlib import Path

from agentguard.server.credentials import CredentialStore, hash_token


def _write(path: Path, entries: list[tuple[str, str, str]]) -> None:
    path.write_text("".join(f'[[credentials]]\nidentity = "{i}"\nroles = ["{r}"]\ntoken_sha256 = "{hash_token(t)}"\n'
                            for i, t, r in entries))
    later = time.time_ns() + 10**9 * (1 + len(path.read_text()) % 7)
    os.utime(path, ns=(later, later))  # a new stamp even within the file system's time resolution


def test_a_reload_replaces_what_was_identified(tmp_path: Path) -> None:
    path = tmp_path / "credentials.toml"
    _write(path, [("a@corp", "token-a-" + "x" * 24, "agent"), ("b@corp", "token-b-" + "x" * 24, "reader")])
    store = CredentialStore(path, check_every_s=0)
    for _ in range(2):  # the second answer from memory
        p = store.identify(b"token-a-" + b"x" * 24)
        assert p is not None and p.identity == "a@corp" and p.roles == frozenset({"agent"})
    _write(path, [("a@corp", "token-a-" + "x" * 24, "reader")])  # its roles changed
    p = store.identify(b"token-a-" + b"x" * 24)
    assert p is not None and p.roles == frozenset({"reader"})
    _write(path, [("b@corp", "token-b-" + "x" * 24, "reader")])  # dropped
    assert store.identify(b"token-a-" + b"x" * 24) is None
    assert store.identify("token-b-" + "x" * 24) is not None  # str or bytes alike


def test_only_valid_tokens_are_remembered_and_the_legacy_token(tmp_path: Path) -> None:
    store = CredentialStore(None, "legacy-token-0123456789")
    for i in range(300):
        assert store.identify(f"wrong-{i}".encode()) is None
    assert len(store._known[1]) == 0
    assert store.identify(b"legacy-token-0123456789") is CredentialStore.LEGACY
    assert store.identify(b"legacy-token-0123456789") is CredentialStore.LEGACY
    assert list(store._known[1]) == [b"legacy-token-0123456789"]


def test_the_credential_of_an_identity(tmp_path):
    """CredentialStore.principal: the one credential in force of an identity (the legacy token's for ``token``);
    None for none, or for two that differ in roles or facts (which one asked is unknown)."""
    from agentguard.server.credentials import CredentialStore, hash_token

    def cred(ident: str, tok: str, extra: str = "") -> str:
        return f'[[credentials]]\nidentity = "{ident}"\nrole = "agent"\ntoken_sha256 = "{hash_token(tok)}"\n{extra}\n'

    f = tmp_path / "c.toml"
    f.write_text(cred("a", "t1") + cred("a", "t2") + cred("b", "t3", "facts = { x = 1 }") + cred("b", "t4"))
    store = CredentialStore(f, "legacy-token")
    assert store.principal("a") is not None and store.principal("a").identity == "a"  # a rotation: alike
    assert store.principal("b") is None and store.principal("nobody") is None  # ambiguous; unknown
    assert store.principal("token") is CredentialStore.LEGACY
    assert CredentialStore(f).principal("token") is None
