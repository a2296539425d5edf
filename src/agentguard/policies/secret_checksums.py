"""Key formats whose checksum identifies them without their prefix separator (session 22): a reading of the secret
scanner's format detection (:mod:`agentguard.policies.secrets`).

GitHub's token format (GitHub blog, "Behind GitHub's new authentication token formats", 2021-04-05) is a type prefix
(``ghp``, ``gho``, ``ghu``, ``ghs``, ``ghr``), ``_``, 30 random base-62 characters, and a 32-bit checksum in the last
six characters. detect-secrets' pattern requires the ``_``, so ``ghpXXXX`` (the separator dropped) or ``ghp.XXXX`` was
not read (a strict xfail since session 20). With the checksum a 40-character run ``gh[pousr]`` + 36 base-62
characters, with or without one separator character, is a token only when the checksum holds, so the separator need
not be trusted: a benign run passes the check with probability 2**-32.

**Guaranteed**: :func:`github_tokens` returns each such run whose last six characters are the CRC-32 (zlib's) of the 30
before them, written in base 62 (digits, then upper case, then lower case), zero-padded to six: the encoding
GitHub's published tokens have (as :func:`agentguard.bench.secret_leak.github_token` writes them). The exact encoding
is that of public analyses of real tokens, not a GitHub specification; a token whose checksum is written otherwise is
not read here (the ``ghp_`` form stays with detect-secrets). **Not read**: a body that is not checksummed (a made-up
token), a token split by more than one character between prefix and body.
"""

from __future__ import annotations

import re
import zlib

__all__ = ["github_checksum", "github_tokens"]

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_GITHUB = re.compile(r"(?<![A-Za-z0-9])(gh[pousr])([^A-Za-z0-9\s]?)([A-Za-z0-9]{30})([A-Za-z0-9]{6})(?![A-Za-z0-9])")


def _b62(n: int, width: int) -> str:
    out = ""
    while n:
        n, d = divmod(n, 62)
        out = _B62[d] + out
    return out.rjust(width, "0")


def github_checksum(body: str) -> str:
    """The six characters a GitHub token ends with: the CRC-32 of its 30-character body in base 62."""
    return _b62(zlib.crc32(body.encode()), 6)


def github_tokens(text: str) -> list[str]:
    """The GitHub tokens in ``text`` whose checksum holds, with or without their prefix separator, each written as
    the token (``ghp_`` + body)."""
    if "gh" not in text:
        return []
    return [f"{m.group(1)}_{m.group(3)}{m.group(4)}" for m in _GITHUB.finditer(text)
            if github_checksum(m.group(3)) == m.group(4)]
