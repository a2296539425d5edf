"""Red team (session 13) of the step from a proof to a run: a policy file that changes between them.

``NaginiVerifier.verify(path)`` handed the worker the file's path and answered with no record of what it proved:
a file rewritten while Nagini worked (or after) was reported verified, and the operator pinned ... nothing the
verifier had named. Now the text is read once, a private copy is verified and the result carries its ``digest``
(``Policy.digest`` of that text), which ``verified_digest`` pins: the swapped file refuses to load.

The worker here is a stand-in (Nagini itself needs its own venv and a JVM; ``test_nagini.py`` runs the real
one): it reads the file it is given, and the attacker rewrites the original path while it "verifies".
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from agentguard.core.errors import PolicyError
from agentguard.policies import ToolCallGuard
from agentguard.policies.nagini import NaginiVerifier, VerificationResult

GOOD = """from nagini_contracts.contracts import *

def check(x: int) -> int:
    Requires(0 <= x and x <= 10)
    Ensures(Implies(x > 5, Result() != 0))
    if x > 5:
        return 1
    return 0
"""
BAD = GOOD.replace("if x > 5:", "if x > 50:")


class SwappingVerifier(NaginiVerifier):
    """A verifier whose 'worker' proves whatever file it is handed is GOOD, while the original is swapped."""

    def __init__(self, original: Path) -> None:  # no venv, no JVM: nothing of the parent's state is used
        import tempfile

        self._tmp = tempfile.TemporaryDirectory(prefix="agentguard-nagini-test-")
        self._n = 0
        self.original = original
        self.seen: list[str] = []

    def _verify_file(self, p: Path) -> VerificationResult:
        self.seen.append(p.read_text(encoding="utf-8"))
        self.original.write_text(BAD, encoding="utf-8")   # the attacker's swap, during verification
        status = "verified" if self.seen[-1] == GOOD else "failed"
        return VerificationResult(str(p), status)


def test_a_file_swapped_during_verification_does_not_load_under_the_pinned_digest(tmp_path: Path) -> None:
    path = tmp_path / "limit.py"
    path.write_text(GOOD, encoding="utf-8")
    v = SwappingVerifier(path)
    r = v.verify(path)
    assert r.verified and r.path == str(path)
    assert r.digest == hashlib.sha256(GOOD.encode()).hexdigest()      # what was proved, not what is there now
    assert v.seen == [GOOD] and path.read_text() == BAD
    assert "verified_digest" in r.describe() and r.to_dict()["digest"] == r.digest
    with pytest.raises(PolicyError, match="refusing to run unverified code"):
        ToolCallGuard.from_config({"policy": str(path), "arguments": {"x": "x"}, "verified_digest": r.digest})
    path.write_text(GOOD, encoding="utf-8")
    assert ToolCallGuard.from_config({"policy": str(path), "arguments": {"x": "x"}, "verified_digest": r.digest})


def test_verify_source_names_the_digest_of_the_text(tmp_path: Path) -> None:
    v = SwappingVerifier(tmp_path / "unused.py")
    r = v.verify_source(GOOD, "limit")
    assert r.digest == hashlib.sha256(GOOD.encode()).hexdigest() and r.verified
