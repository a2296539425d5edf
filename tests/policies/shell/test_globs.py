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
