"""LeakScanner: detect-secrets plugins and the PII checks on every string of a value, decoded like a receiver."""

from __future__ import annotations

import base64
import json
import random
import zlib
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("detect_secrets")

from agentguard.bench.secret_leak import FORMATS, VARIANTS, github_token  # noqa: E402
from agentguard.core.errors import InputError  # noqa: E402
from agentguard.policies.secrets import DEFAULT_PLUGINS, MAX_NESTING, PII_KINDS, LeakScanner, decodings, plugin_names  # noqa: E402

SCANNER = LeakScanner()
ALL_PII = LeakScanner(pii=PII_KINDS)
TOKEN = github_token(random.Random(1))


def types(found):
    return {(f.kind, f.type) for f in found}


def test_the_generated_github_token_has_its_crc32_checksum():
    body, check = TOKEN[4:34], TOKEN[34:]
    n = 0
    for ch in check:
        n = n * 62 + "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".index(ch)
    assert n == zlib.crc32(body.encode()) and len(TOKEN) == 40


def test_default_plugins_exist_in_the_installed_detect_secrets():
    assert set(DEFAULT_PLUGINS) <= set(plugin_names())
    with pytest.raises(InputError, match="unknown detect-secrets plugin"):
        LeakScanner(plugins=["NoSuchDetector"])
    with pytest.raises(InputError, match="unknown PII kind"):
        LeakScanner(pii=["passport"])
    with pytest.raises(InputError, match="bad regular expression"):
        LeakScanner(extra_patterns={"x": "("})


@pytest.mark.parametrize("fmt", [f for f, (_, _, covered) in FORMATS.items() if covered])
def test_every_covered_format_is_found_in_plain_text(fmt):
    kind, gen, _ = FORMATS[fmt]
    value = gen(random.Random(fmt))
    found = ALL_PII.scan({"body": f"see {value} here"})
    assert any(f.kind == kind for f in found), (fmt, value[:20])


def test_formats_without_a_plugin_are_missed_unless_an_extra_pattern_is_given():
    value = "AIza" + "B" * 35
    assert SCANNER.scan(value) == []
    extra = LeakScanner(extra_patterns={"Google API key": r"AIza[0-9A-Za-z_-]{35}"})
    assert types(extra.scan(value)) == {("secret", "Google API key")}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_attacker_variant_of_a_token_is_found(variant):
    found = SCANNER.scan(VARIANTS[variant](TOKEN))
    assert ("secret", "GitHub Token") in types(found), variant
    hit = next(f for f in found if f.type == "GitHub Token")
    assert hit.value == TOKEN  # the whole token, not the plugin's regex group


@pytest.mark.parametrize("value", [
    quote(quote(TOKEN, safe=""), safe=""),                                   # double percent-encoding
    base64.b64encode(quote(TOKEN, safe="").encode()).decode(),               # base64 of URL-encoded
    json.dumps({"a": json.dumps({"b": TOKEN})}),                             # JSON in JSON in a string
    base64.urlsafe_b64encode(json.dumps({"t": TOKEN}).encode()).decode().rstrip("="),  # base64url, no padding
    "data:text/plain;base64," + base64.b64encode(TOKEN.encode()).decode(),
])
def test_layered_encodings_are_read(value):
    assert ("secret", "GitHub Token") in types(SCANNER.scan({"x": value}))


def test_keys_bytes_and_numbers_are_read_too():
    assert types(SCANNER.scan({TOKEN: 1}))
    assert types(SCANNER.scan({"raw": TOKEN.encode()}))
    assert types(ALL_PII.scan({"card": 4111111111111111}))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 39), max_size=6), st.sampled_from(["\u200b", "\u200c", "\u200d", "\ufeff", "\u2060",
                                                                   "\u00ad"]))
def test_invisible_characters_anywhere_do_not_hide_a_token(positions, mark):
    s = TOKEN
    for p in sorted(positions, reverse=True):
        s = s[:p] + mark + s[p:]
    assert ("secret", "GitHub Token") in types(SCANNER.scan({"body": s}))


def test_fullwidth_letters_are_read_as_ascii():
    wide = "".join(chr(ord(c) + 0xFEE0) if c.isalnum() else c for c in TOKEN)
    assert ("secret", "GitHub Token") in types(SCANNER.scan(wide))


def test_pii_checks_validate_not_just_match():
    found = types(ALL_PII.scan("card 4111 1111 1111 1111, ssn 536-90-4399, iban DE89 3704 0044 0532 0130 00, "
                               "tel +41 44 668 18 00, mail ann@example.com"))
    assert found == {("pii", k) for k in ("credit_card", "us_ssn", "iban", "phone", "email")}
    # the same shapes with a wrong check digit, an invalid area, a bad IBAN checksum: nothing
    assert ALL_PII.scan("card 4111 1111 1111 1112, ssn 666-90-4399, iban DE88 3704 0044 0532 0130 00") == []


def test_benign_calls_are_clean_by_default():
    for args in [{"query": "Networking event", "date": "2024-05-26"}, {"recipient": "GB29NWBK60161331926819",
                 "amount": 98.7}, {"url": "www.informations.com"}, {"to": ["ann@example.com"], "body": "hi"},
                 {"uuid": "3fe09613-7313-4a02-b583-13588c18d24a"}, {"sha": "a" * 40}]:
        assert SCANNER.scan(args) == [], args


def test_unreadable_values_are_findings():
    deep: object = TOKEN
    for _ in range(MAX_NESTING + 3):
        deep = [deep]
    assert {f.kind for f in SCANNER.scan({"x": deep})} == {"unreadable"}
    small = LeakScanner(max_chars=100)
    assert {f.kind for f in small.scan("a" * 101)} == {"unreadable"}


def test_redaction_never_shows_the_secret():
    f = next(iter(SCANNER.scan(TOKEN)))
    assert TOKEN not in f.redacted() and f.redacted().startswith("ghp_") and "40 chars" in f.redacted()


def test_decodings_skip_binary_noise():
    noise = random.Random(3).randbytes(256)  # random bytes: no printable run of 12
    assert list(decodings(base64.b64encode(noise).decode())) == []
    # bytes(range(256)) holds the printable ASCII run verbatim: that run is what it carries, and is read
    assert [t for _, t in decodings(base64.b64encode(bytes(range(256))).decode())] == [
        bytes(range(32, 127)).decode()]
    assert ("url", "a b") in list(decodings("a%20b"))


def test_a_json_bomb_inside_a_string_is_unreadable_not_a_crash():
    assert {f.kind for f in SCANNER.scan({"x": "[" * 100_000 + "]" * 100_000})} == {"unreadable"}


def test_an_iban_in_lower_case_is_still_an_iban():
    assert types(ALL_PII.scan("pay de89 3704 0044 0532 0130 00 now")) == {("pii", "iban")}
