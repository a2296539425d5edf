"""The binary-to-text runs and the number-run gates found with array operations (session 23;
:mod:`agentguard.policies.secret_runs`): differential properties against the regular expressions they replace."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.policies import secret_views as views
from agentguard.policies.secret_runs import number_needs, runs

_ALPHABETS = ["Aa0=2", "aF9=1 ", "zZ27=8.", "!uv a~", "Ab3==:;", "abcdef0123 ", "A-_+/x=\n", "QUtJ7 {}|"]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_ALPHABETS).flatmap(lambda a: st.text(alphabet=a, max_size=160)))
def test_runs_are_the_expressions_matches(text: str) -> None:
    found = runs(text)
    assert found is not None
    for (layer, rx, group), (name, got) in zip(views._RUN_RXS, found):
        assert name == layer
        assert got == list(views._matches(rx, text, group)), (layer, text)


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet="ab<~ A=\u00e9\u4e00\U0001f600\u200b0", max_size=60))
def test_a_text_runs_does_not_read_is_left_to_the_expressions(text: str) -> None:
    assert (runs(text) is None) == (not text.isascii() or "<~" in text)
    assert runs("<~" + "A" * 30 + "~>") is None


def _number_run(rng: random.Random) -> str:
    vals = [rng.randrange(256) for _ in range(rng.randrange(6, 12))]
    sep = rng.choice([" ", ",", ", ", "-", ":", "", "\n", "  ;", "x"])
    form = rng.choice([str, hex, lambda v: f"U+{v:04X}", lambda v: f"\\{v:03o}", lambda v: f"0o{v:03o}",
                       lambda v: f"{v:08b}", lambda v: f"0b{v:07b}", lambda v: f"\\u{{{v:x}}}"])
    return sep.join(map(form, vals))


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 10 ** 9), around=st.sampled_from(["", "id ", "a", "7", "+", "\\", "é", "\n"]))
def test_number_needs_holds_wherever_a_run_is(seed: int, around: str) -> None:
    """Each notation's run is searched only where :func:`number_needs` says it may be: never False where it matches."""
    rng = random.Random(seed)
    text = around + " ".join(_number_run(rng) for _ in range(rng.randrange(1, 3))) + around
    text = "".join(c for c in text if rng.random() > 0.02)   # a character dropped here and there: near-runs
    needs = number_needs(text)
    for (layer, run_rx, _, _), need in zip(views._NUMBER_RUNS, needs):
        assert need or run_rx.search(text) is None, (layer, text)


def test_number_needs_skips_the_search_on_text_without_such_runs() -> None:
    assert number_needs("request 2024-05-25T12:56:00Z id=f728b4fa42485e3a0a5d2f346baa9455 took 35 ms") == \
        (False, False, False, False)
    assert number_needs("103 104 112 95 65 66 67 68 69")[0]
