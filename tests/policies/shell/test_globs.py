"""agentguard.policies.shell.globs: pattern intersection, fnmatch rule globs, the leading-dot rule."""

from agentguard.policies.shell.globs import NO_DOT, NOT_SLASH, fnmatch_tokens, intersects, literal_tokens
from agentguard.policies.shell.words import literal_word, make_words


def word(text: str):
    [w] = make_words([("u", c) for c in text])
    return w.tokens


def test_a_shell_glob_meets_a_rule_glob_it_could_match():
    assert intersects(word("/etc/shad*w"), fnmatch_tokens("/etc/shadow*"))
    assert intersects(word("/etc/[s]hadow"), fnmatch_tokens("/etc/shadow"))
    assert intersects(word("/etc/sha?ow"), fnmatch_tokens("/etc/shadow"))
    assert not intersects(word("/tmp/*.txt"), fnmatch_tokens("/etc/*"))


def test_a_shell_star_never_crosses_a_slash_but_a_rule_star_does():
    assert not intersects(word("/etc/*"), literal_tokens("/etc/ssh/x"))
    assert intersects(literal_tokens("/etc/ssh/x"), fnmatch_tokens("/etc/*"))


def test_a_glob_never_matches_a_leading_dot():
    assert word("*")[0] == NO_DOT and word("src/*")[4] == NO_DOT
    assert not intersects(word("*"), fnmatch_tokens(".env"))
    assert not intersects(word("*"), fnmatch_tokens(".."))
    assert not intersects(word("~/*"), fnmatch_tokens("~/.ssh"))
    assert not intersects(word("?ssh"), literal_tokens(".ssh"))
    assert intersects(word(".*"), fnmatch_tokens(".env"))          # an explicit dot does
    assert intersects(word("a*"), literal_tokens("a.env"))          # not at the start of a name
    assert intersects(word("*"), literal_tokens("README.md"))


def test_unknown_parts_match_anything():
    w = make_words([("a", "")])[0]
    assert intersects(w.tokens, literal_tokens("/etc/shadow")) and intersects(w.tokens, literal_tokens(".env"))
    assert intersects(literal_word("x").tokens, [("*", NOT_SLASH)])


# Session 25: the regular expressions of token lists and the fixed-ends first look, against the product automaton.
import re  # noqa: E402

from hypothesis import given, settings, strategies as st  # noqa: E402

from agentguard.policies.shell.globs import (ANY_CHAR, _ends_disjoint, _search, fold_case, fold_text,  # noqa: E402
                                             prefix_regex, token_regex)

_GLOB = st.lists(st.sampled_from(["a", "b", ".", "/", "~", "*", "?", "[ab]", "[!a]", "[.]", "A", "\\", "]", "-"]),
                 max_size=8).map("".join)
_TEXT = st.lists(st.sampled_from(["a", "b", ".", "/", "~", "A", "\\", "]", "-", "É"]), max_size=8).map("".join)


def _slow(tokens, *, below: bool = False):  # the product automaton's answer (no first look)
    return lambda text: _search(fold_case(literal_tokens(text)) + ([("c", (False, frozenset("/"))),
                                                                       ("*", ANY_CHAR)] if below else []), tokens)


@settings(max_examples=200, deadline=None)
@given(_GLOB, _TEXT)
def test_token_regex_is_intersects_with_a_literal(glob: str, text: str) -> None:
    tokens = fold_case(fnmatch_tokens(glob))
    fast = re.fullmatch(token_regex(tokens), fold_text(text), re.S) is not None
    assert fast == _slow(tokens)(text), (glob, text)


@settings(max_examples=200, deadline=None)
@given(_GLOB, _TEXT)
def test_prefix_regex_is_intersects_with_a_literal_tree(glob: str, text: str) -> None:
    tokens = fold_case(fnmatch_tokens(glob))
    fast = re.fullmatch(prefix_regex(tokens), fold_text(text) + "/", re.S) is not None
    assert fast == _slow(tokens, below=True)(text), (glob, text)


@settings(max_examples=200, deadline=None)
@given(_GLOB, _GLOB)
def test_the_fixed_ends_first_look_never_says_no_to_a_meeting(a: str, b: str) -> None:
    ta, tb = fnmatch_tokens(a), fnmatch_tokens(b)
    if _ends_disjoint(ta, tb):
        assert not _search(ta, tb), (a, b)
    assert intersects(ta, tb) == _search(ta, tb)


@settings(max_examples=150, deadline=None)
@given(_GLOB, _GLOB)
def test_the_first_look_with_a_shell_words_leading_dot_rule(a: str, b: str) -> None:
    ta, tb = word(a.replace("\\", "")) if a.replace("\\", "") else [], fnmatch_tokens(b)
    assert intersects(ta, tb) == _search(ta, tb), (a, b)
