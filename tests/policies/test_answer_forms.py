"""The folded reading the answer check compares values by (agentguard.policies.answer_forms): what it reads away,
what it keeps, and a property: whatever separators, case and invisible characters a name is written with, its key
is found exactly where it was written."""

from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.policies.answer_forms import Folded, key, phone_numbers, respell, tail


def test_keys_run_from_a_word_start_to_a_word_end_and_never_across_a_hard_break() -> None:
    f = Folded("I love venice and good\nnight")
    assert not f.states(key("Nice")) and f.states(key("Good Night")) and f.states(key("VENICE"))
    assert not Folded("good\nnight", hard="\n").states(key("Good Night"))


def test_what_the_fold_reads_away() -> None:
    for text in ("Rivеrsidе", "Ｒｉｖｅｒｓｉｄｅ", "River\u200bside", "River\u00adside", "Rive\u0301rside", "&#82;iverside",
                 "%52iverside", "River<b></b>side", "[River](https://x.example)side", "River<!-- c -->side"):
        assert Folded(f"visit {text} now").find(key("Riverside")), text
    assert Folded("R1vers1de").find(key("Riverside"), leet=True) and not Folded("R1vers1de").states(key("Riverside"))


def test_respell_and_phone_numbers() -> None:
    assert respell("a [at] b [dot] org") == "a@b.org" and respell("bob at evil dot com") == "bob@evil.com"
    assert "www.evil.com" in respell("www . evil . com")
    assert phone_numbers("+49 (0)30 1234-5678") == {"4903012345678"} and phone_numbers("030 123 4567") == {
        "0301234567"}
    assert phone_numbers("on 2024-05-15, 15/05/2024 and 2024.05.15; 42 guests, 4.2 stars") == set()


def test_tail_counts_letters_and_compacts_separators() -> None:
    assert tail("Hello there. Visit Zeph" + "<b></b>" * 100, 10) == "e. Visit Zeph, "
    assert tail("abc, def\n\n\nghi", 100) == "abc, def\nghi"
    assert tail("x" * 500, 200) == "x" * 200


_SEP = st.sampled_from([" ", "\n", "-", "", "**", "<i></i>", "\u200b", ". ", " / ", "&nbsp;"])


@settings(max_examples=150, deadline=None)
@given(words=st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8), min_size=1,
                      max_size=4), seps=st.lists(_SEP, min_size=4, max_size=4), upper=st.booleans(),
       prefix=st.sampled_from(["", "Visit ", "1. ", "> "]), suffix=st.sampled_from(["", ".", " now", "!"]))
def test_property_a_name_is_found_where_it_was_written_whatever_separates_its_words(words, seps, upper, prefix,
                                                                                      suffix) -> None:
    name = "".join((w.upper() if upper else w) + (seps[i] if i < len(words) - 1 else "") for i, w in enumerate(words))
    text = prefix + name + suffix
    spans = Folded(text).find(key(" ".join(words)))
    assert (len(prefix), len(prefix) + len(name)) in spans, (text, spans)
