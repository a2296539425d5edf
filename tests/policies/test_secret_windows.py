"""Session 22: the secret scanner's cost is linear in the text's length (windows, :mod:`agentguard.policies.
secret_windows`; the format gate, :mod:`agentguard.policies.secret_gate`), and a large benign text is decided.

Hole (before): a 100 KB benign text took tens of seconds to scan (every reading of the whole text read again: ~11 s CPU
at 8d42933, 1 MB out of reach), so a guard with a time limit refused benign large tool outputs and a run could be
stalled; the despaced reading of a long benign text joined prose into a Twilio SID (``Rent-A-Car company name ...`` ->
``ACarcompanyname...``) and refused it.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("detect_secrets")

from agentguard.core.types import Context, ToolCall  # noqa: E402
from agentguard.policies import SecretLeakGuard  # noqa: E402
from agentguard.policies.secret_windows import OVERLAP, WINDOW, chunks, windows  # noqa: E402
from agentguard.policies.secrets import LeakScanner  # noqa: E402

SCANNER = LeakScanner()
AWS = "AKIAIOSFODNN7EXAMPLE"
_WORDS = ("the order was shipped to the customer and the invoice is attached please confirm the delivery date for "
          "next week our team reviewed the report and found no issues with the account balance").split()
_CITIES = ("Paris", "Los Angeles", "New York", "Tokyo", "Berlin", "San Francisco", "London")
_COMPANIES = ("SunSet Rent-A-Car", "Speedy Rentals", "LAX Car Rental", "Blue-Sky Air", "Pay-As-You-Go Mobile")


def benign_text(n: int, seed: int = 0, ids: bool = True) -> str:
    """A deterministic benign tool output of ``n`` characters: JSON records (snake_case keys, hyphenated company
    names, dates, amounts, UUIDs, URLs), log lines with hex request ids and prose; ``ids=False``: without the UUIDs
    and hex ids (random runs, the costliest benign content: each is decoded in every reading)."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < n:
        kind = rng.randrange(3)
        if kind == 0:
            rec = {"company_name": rng.sample(_COMPANIES, 2), "departure_city": rng.choice(_CITIES),
                   "arrival_city": rng.choice(_CITIES), "price_usd": round(rng.uniform(20, 900), 2),
                   "booking_id": ("%08x-%04x-%04x-%04x-%012x" % tuple(rng.getrandbits(b) for b in (32, 16, 16, 16, 48))
                                  if ids else rng.randrange(10**6)),
                   "date": f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
                   "url": f"https://www.example.com/bookings/{rng.randrange(10**6)}?page={rng.randrange(9)}"}
            line = json.dumps(rec)
        elif kind == 1:
            line = (f"2024-05-{rng.randrange(1, 29):02d}T12:{rng.randrange(60):02d}:00Z INFO request_id="
                    f"{rng.getrandbits(128) if ids else rng.randrange(10**4):032x} status=200 "
                    f"path=/api/v1/orders/{rng.randrange(10**5)}")
        else:
            line = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(8, 30))).capitalize() + "."
        parts.append(line)
        size += len(line) + 1
    return "\n".join(parts)[:n]


def test_a_1mb_benign_text_is_decided_and_allowed():
    """1 MB of benign tool output through the guard: a decision, and it allows (before: minutes of readings). Without
    random ids for CI's time (the id-heavy text, about twice the cost, is measured by
    ``benchmarks/secret_scan_scaling.py``; the properties below use it)."""
    text = benign_text(1_000_000, ids=False)
    v = SecretLeakGuard().check(Context(), ToolCall("write_file", {"path": "out.txt", "content": text}))
    assert v.allowed, v.reason


def test_despaced_prose_is_no_twilio_sid():
    """Regression (found in the 100 KB benchmark text): prose joined without its blanks is letters, not a key."""
    text = json.dumps({"company_name": ["SunSet Rent-A-Car", "Speedy Rentals", "LAX Car Rental"],
                       "departure_city": "Los Angeles", "arrival_city": "San Francisco"})
    assert SCANNER.scan({"body": text}) == []
    # a SID written with blanks is still read (its body holds digits), and so is one in groups of one width
    sid = "AC" + "".join(random.Random(1).choice("0123456789abcdef") for _ in range(32))
    assert any(f.type == "Twilio API Key" for f in SCANNER.scan({"body": f"sid: {sid[:10]} {sid[10:21]} {sid[21:]}"}))


def test_a_lowercase_hex_id_read_upper_case_is_no_aws_key():
    """Regression (found in the benchmark's 1 MB text; refused at 8d42933 too): ``acca`` + 16 hex digits upper-cased
    matched AWS's ``ACCA[0-9A-Z]{16}``. A real id written in lower case is still read."""
    assert SCANNER.scan({"log": "request_id=acca9ad19dd6b565ab32ff status=200"}) == []
    assert any("AWS" in f.type for f in SCANNER.scan({"log": "key " + AWS.lower()}))


def test_wrapped_base64_glued_to_an_id_is_read():
    """Hole (open at 8d42933): base64 of a key wrapped into lines and glued onto a token of the base64 alphabet (a
    UUID's halves around it) is out of step with its groups of four and behind junk bytes once the line breaks are
    removed; no offset decoded to text, so it was not read. Its printable runs are now read at every offset."""
    wrapped = "\n".join(re.findall(".{1,8}", base64.b64encode(AWS.encode()).decode()))
    body = f'"booking_id": "32d1f81b-dfa7-4d6b-47ac {wrapped} -fa7fb044284a", "date": "2024-03-04"'
    assert any("AWS" in f.type for f in SCANNER.scan({"body": body}))


@settings(max_examples=25, deadline=None)
@given(prefix=st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=1, max_size=23),
       width=st.integers(4, 76))
def test_base64_glued_to_any_prefix_is_read(prefix: str, width: int):
    wrapped = "\n".join(re.findall(f".{{1,{width}}}", base64.b64encode(AWS.encode()).decode()))
    assert any("AWS" in f.type for f in SCANNER.scan({"body": f"id: {prefix}{wrapped} done"})), (prefix, width)


def _spaced(key: str) -> str:
    return " ".join(key[i:i + 4] for i in range(0, len(key), 4))


ENCODINGS = {
    "plain": lambda k: k,
    "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "hex": lambda k: k.encode().hex(),
    "reversed": lambda k: k[::-1],
    "groups": _spaced,
    "wrapped base64": lambda k: "\n".join(re.findall(".{1,8}", base64.b64encode(k.encode()).decode())),
}


@settings(max_examples=8, deadline=None)
@given(pos=st.floats(0, 1), enc=st.sampled_from(sorted(ENCODINGS)), seed=st.integers(0, 3))
def test_a_key_anywhere_in_a_long_text_is_found(pos: float, enc: str, seed: int):
    """A key (encoded as a receiver decodes it) at any place of a text of several windows, a window's edge included."""
    text = benign_text(2 * WINDOW + WINDOW // 2, seed)
    cut = int(pos * len(text))
    payload = ENCODINGS[enc](AWS)
    found = SCANNER.scan({"body": text[:cut] + " " + payload + " " + text[cut:]})
    assert any(f.kind == "secret" and "AWS" in f.type for f in found), (enc, cut)


def test_a_key_at_each_window_edge_is_found():
    text = benign_text(2 * WINDOW + WINDOW // 2, 7)
    for start, end in windows(text)[:2]:
        for at in (end - 5, end + 3):
            body = text[:at] + " " + _spaced(AWS) + " " + text[at:]
            assert any("AWS" in f.type for f in SCANNER.scan_text(body)), at


_TEXT_CHARS = st.sampled_from(list(string.ascii_letters + string.digits + "+/=_-") + [" ", "\n", ",", ".", '"', ":"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_TEXT_CHARS, min_size=0, max_size=3000).map("".join), st.integers(64, 600), st.integers(8, 60))
def test_windows_cover_overlap_and_cut_only_at_safe_blanks(text: str, size: int, overlap: int):
    ws = windows(text, size, overlap)
    assert ws[0][0] == 0 and ws[-1][1] == len(text)
    key = re.compile(r"[A-Za-z0-9+/=_\-]")
    for (s0, e0), (s1, e1) in zip(ws, ws[1:]):
        assert s0 < s1 <= e0 < e1   # covered, in order
        assert e0 - s1 >= overlap   # so every stretch of `overlap` characters lies whole in one window
    for s, e in ws:
        for c in (s, e):
            if 0 < c < len(text):   # a cut: a blank with a non-key character on one side, or between two of them
                if text[c].isspace():
                    assert not (key.match(text[c - 1]) and c + 1 < len(text) and key.match(text[c + 1]))
                else:
                    assert not key.match(text[c - 1]) and not text[c - 1].isspace() and not key.match(text[c])
    # every run of the key alphabet, and every such run of runs with single blanks between, lies whole in one window
    for m in re.finditer(r"[A-Za-z0-9+/=_\-]+(?:\s[A-Za-z0-9+/=_\-]+)*", text):
        assert any(s <= m.start() and m.end() <= e for s, e in ws)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 5000), st.integers(64, 600), st.integers(8, 60))
def test_chunks_hold_every_short_stretch(n: int, size: int, overlap: int):
    cs = chunks("x" * n, size, overlap)
    assert cs[0][0] == 0 and cs[-1][1] == n
    for a in range(0, n - overlap + 1, 7):   # every stretch of `overlap` characters is in one chunk
        assert any(s <= a and a + overlap <= e for s, e in cs)


def test_a_key_with_safe_cuts_after_a_long_uncut_run_is_in_one_window():
    """Hole in the first windows of this session (found probing them): after a blob with no safe cut, the next window
    started at the first cut after it, inside a key written with ``, `` between groups (no overlap there)."""
    blob = base64.b64encode(random.Random(0).randbytes(6800)).decode()
    for pre in (0, 500, 3000, 7000, 8000):
        key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
        spaced = ", ".join(key[i:i + 6] for i in range(0, len(key), 6))
        text = "hello, world. " * (pre // 14) + blob + " " + spaced + " end."
        at = text.index(spaced)
        assert any(s <= at and at + len(spaced) <= e for s, e in windows(text)), pre


def test_windows_overlap_by_at_least_overlap_where_the_text_allows():
    text = benign_text(10 * WINDOW, 3)
    ws = windows(text)
    assert len(ws) > 5
    for (s0, e0), (s1, _) in zip(ws, ws[1:]):
        assert e0 - s1 >= OVERLAP
