"""agentguard.policies.shell.words: bash's word expansions as far as they are known statically."""

from agentguard.policies.shell.words import brace_expand, decode_ansi_c, literal_word, make_words


def texts(raw: str) -> list[str]:
    return [w.text for w in make_words([("u", c) for c in raw])]


def test_ansi_c_strings_decode_like_bash():
    assert decode_ansi_c(r"\x72\x6d") == "rm" and decode_ansi_c(r"\162\155") == "rm"
    assert decode_ansi_c(r"\u0072m") == "rm" and decode_ansi_c(r"a\tb") == "a\tb"


def test_braces_expand_to_several_words():
    assert texts("{shadow,x}") == ["shadow", "x"]
    assert texts("a{1..3}") == ["a1", "a2", "a3"]
    assert len(brace_expand([("u", c) for c in "{a,b}{c,d}"])) == 4


def test_tilde_keeps_its_spelling_and_gets_the_home():
    assert texts("~root/x") == ["~root/x", "/root/x"]


def test_quoted_and_unknown_parts():
    assert literal_word("*").literal and not make_words([("u", "*")])[0].literal
    unknown = make_words([("A", "")])[0]
    assert unknown.split and unknown.unknown and not unknown.literal
    quoted = make_words([("q", "x"), ("a", "")])[0]
    assert quoted.unknown and not quoted.split and quoted.text == "x*"
