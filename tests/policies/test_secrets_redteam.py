"""Red team of the secret detectors (session 10): a key written so that no single decoder reads it.

Each attacker transform is a hypothesis strategy; transforms compose (up to three, in any order), the result
may sit in a value, a key, a JSON string or be split across arguments, and the property is the same: the
scanner finds the token (as a GitHub token or as an AWS key id)."""

from __future__ import annotations

import base64
import codecs
import json
import random
from urllib.parse import quote

import pytest
from hypothesis import assume, given, settings, strategies as st

pytest.importorskip("detect_secrets")

from agentguard.bench.secret_leak import github_token  # noqa: E402
from agentguard.policies.secrets import LeakScanner, views  # noqa: E402

SCANNER = LeakScanner()
TOKEN = github_token(random.Random(7))
AWS = "AKIAIOSFODNN7EXAMPLE"
HOMOGLYPHS = {"A": "\u0410", "K": "\u041a", "I": "\u0406", "O": "\u041e", "p": "\u0440", "o": "\u043e",
              "a": "\u0430", "e": "\u0435", "c": "\u0441", "x": "\u0445", "E": "\u0415", "M": "\u041c",
              "P": "\u0420", "T": "\u0422", "H": "\u041d", "B": "\u0412", "X": "\u0425"}


def _spaced(s: str, every: int) -> str:
    return " ".join(s[i:i + every] for i in range(0, len(s), every))


def _zero_width(s: str) -> str:
    return "\u200b".join(s)


def _homoglyph(s: str) -> str:
    return "".join(HOMOGLYPHS.get(c, c) for c in s)


TRANSFORMS = {
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "hex": lambda s: s.encode().hex(),
    "url": lambda s: quote(s, safe=""),
    "json": lambda s: json.dumps({"v": s}),
    "rot13": lambda s: codecs.encode(s, "rot13"),
    "reversed": lambda s: s[::-1],
    "spaced4": lambda s: _spaced(s, 4),
    "zero_width": _zero_width,
    "homoglyph": _homoglyph,
}
# a receiver undoes transforms in reverse order; the views rot13, reversed and spaced are read one layer deep each
# time a decoding (or the homoglyph skeleton) exposes text, so two of them directly on top of each other (rot13 of
# a reversed key) are out of scope: such chains are skipped, counting a transform that changed nothing as absent
_VIEWS = {"rot13", "reversed", "spaced4"}


def _apply(chain, secret):
    s, effective = secret, []
    for t in chain:
        out = TRANSFORMS[t](s)
        if out != s:
            effective.append(t)
        s = out
    return s, effective


def attacks():
    return st.lists(st.sampled_from(sorted(TRANSFORMS)), min_size=1, max_size=3)


@settings(max_examples=150, deadline=None)
@given(chain=attacks(), secret=st.sampled_from([TOKEN, AWS]),
       where=st.sampled_from(["value", "key", "nested", "list"]))
def test_a_composed_encoding_of_a_key_is_found(chain, secret, where):
    s, effective = _apply(chain, secret)
    effective = [t for t in effective if t not in ("zero_width", "homoglyph")]  # readings of the same text
    assume(not any(a in _VIEWS and b in _VIEWS for a, b in zip(effective, effective[1:])))
    args = {"value": {"body": s}, "key": {s: 1}, "nested": {"a": {"b": [s]}}, "list": {"x": ["hi", s]}}[where]
    found = SCANNER.scan(args)
    assert any(f.kind == "secret" for f in found), (chain, where)


@settings(max_examples=80, deadline=None)
@given(secret=st.sampled_from([TOKEN, AWS]), cuts=st.lists(st.integers(1, 19), min_size=1, max_size=4, unique=True),
       encode=st.sampled_from(["plain", "base64"]))
def test_a_key_split_across_arguments_is_found(secret, cuts, encode):
    s = TRANSFORMS["base64"](secret) if encode == "base64" else secret
    bounds = [0, *sorted(c for c in cuts if c < len(s)), len(s)]
    parts = {f"p{i}": s[a:b] for i, (a, b) in enumerate(zip(bounds, bounds[1:]))}
    assert any(f.kind == "secret" for f in SCANNER.scan(parts)), parts


def test_each_view_names_itself_in_the_path():
    found = SCANNER.scan({"body": TOKEN[::-1], "note": codecs.encode(AWS, "rot13")})
    paths = {f.path for f in found}
    assert "body|reversed" in paths and "note|rot13" in paths
    assert dict(views("ab c"))["despaced"] == "abc" and "homoglyph" not in dict(views("ascii"))
    assert dict(views(_homoglyph(AWS)))["homoglyph"] == AWS


@pytest.mark.parametrize("args", [
    {"query": "Networking event", "date": "2024-05-26"}, {"body": "Please review the attached report, thanks!"},
    {"subject": "Привет, как дела? Всё хорошо", "to": "ivan@example.ru"},
    {"a": "reversed text", "b": "kcab"},
    {"title": "Tokyo trip", "days": ["Mon", "Tue"], "notes": "book ryokan near Asakusa"},
    {"uuid": "3fe09613-7313-4a02-b583-13588c18d24a", "sha": "a" * 40},
])
def test_benign_arguments_stay_clean_with_the_views(args):
    assert SCANNER.scan(args) == [], args


# -- across several calls of one run ----------------------------------------------------------------------------

from agentguard.core.runs import end_run  # noqa: E402
from agentguard.core.types import Context, Decision, ToolCall  # noqa: E402
from agentguard.policies import SecretLeakGuard  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(secret=st.sampled_from([TOKEN, AWS]), cuts=st.lists(st.integers(1, 19), min_size=1, max_size=3, unique=True),
       filler=st.sampled_from(["", "ok ", "part: "]))
def test_a_key_sent_in_pieces_over_calls_is_refused_at_the_call_that_completes_it(secret, cuts, filler):
    guard = SecretLeakGuard()
    ctx = Context()
    bounds = [0, *sorted(cuts), len(secret)]
    pieces = [secret[a:b] for a, b in zip(bounds, bounds[1:])]
    verdicts = [guard.check(ctx, ToolCall("post_comment", {"text": filler + p if i == 0 else p}))
                for i, p in enumerate(pieces)]
    assert any(v.decision is Decision.REJECT for v in verdicts), pieces
    assert verdicts[0].decision is Decision.ALLOW or len(pieces) == 1


def test_runs_do_not_mix_and_end_run_forgets():
    guard = SecretLeakGuard()
    a, b = Context(), Context()
    assert guard.check(a, ToolCall("post", {"t": TOKEN[:20]})).allowed
    assert guard.check(b, ToolCall("post", {"t": TOKEN[20:]})).allowed  # another run: not joined
    end_run(guard, a.run_id)
    assert guard.check(a, ToolCall("post", {"t": TOKEN[20:]})).allowed  # the first half was forgotten
    user = SecretLeakGuard(user_tools=["reply_to_user"])
    c = Context()
    assert user.check(c, ToolCall("reply_to_user", {"t": TOKEN[:20]})).allowed
    assert user.check(c, ToolCall("post", {"t": TOKEN[20:]})).allowed  # what went to the user is not a piece
    off = SecretLeakGuard(across_calls=0)
    d = Context()
    assert off.check(d, ToolCall("post", {"t": TOKEN[:20]})).allowed
    assert off.check(d, ToolCall("post", {"t": TOKEN[20:]})).allowed


@pytest.mark.parametrize("secret", [TOKEN, AWS])
@pytest.mark.parametrize("chain", [["spaced4", "json", "reversed"], ["spaced4", "reversed"], ["spaced4", "json"]])
def test_a_key_in_groups_is_read_as_one_run_and_viewed_again(secret, chain):
    """A key written in groups of one width, wrapped and reversed (``}"HXx4 208h ... _phg" :"v"{``), was missed: its
    views (reversed, ROT13) are taken only of key-like runs, and the text without its blanks was not viewed again.
    Groups of one width are a reading of the key (``ungrouped``, viewed again); prose words are of many widths.
    (The property above drew this chain in session 20.)"""
    s, _ = _apply(chain, secret)
    for args in ({"body": s}, {s: 1}, {"a": {"b": [s]}}):
        assert any(f.kind == "secret" for f in SCANNER.scan(args)), (chain, args)
