"""agentguard.policies.shell.paths: the spellings a path is checked under."""

from agentguard.policies.shell.paths import path_forms, word_paths
from agentguard.policies.shell.words import literal_word, make_words


def forms(text: str, cwds=("",)) -> list[str]:
    return [f for f, _ in path_forms(text, cwds)]


def test_os_normalisation():
    assert "/etc/shadow" in forms("/tmp/%2e%2e/etc/shadow")
    assert "/etc/shadow" in forms("file:///etc/shadow")
    assert "/etc/shadow" in forms("/proc/self/root/etc/shadow")
    assert "/root/x" in forms("~root/x")


def test_relative_paths_join_every_possible_cwd():
    assert set(forms("x", ["", "/etc"])) >= {"x", "/etc/x"}
    assert "../~/.ssh" in forms("~/.ssh", ["", ".."])  # a quoted "~" is a directory named "~"


def test_words_keep_their_glob_tokens_and_option_values():
    [w] = make_words([("u", c) for c in "/etc/shad*w"])
    (shown, tokens), *aliases = word_paths(w)  # session 19: also through macOS' /private/etc alias
    assert shown == "/etc/shad*w" and tokens is not None
    assert [(s, t is not None) for s, t in aliases] == [("/private/etc/shad*w", True)]
    assert "/etc/shadow" in [f for f, _ in word_paths(literal_word("--file=/etc/shadow"))]


def test_a_glob_that_can_expand_to_dot_dot_is_followed():
    """dash (and bash without globskipdots) expands ``.*`` to ``.`` and ``..`` too (the differential harness)."""
    [w] = make_words([("u", c) for c in "/etc/.*/shadow"])
    assert "/shadow" in [f for f, _ in word_paths(w)]
    [star] = make_words([("u", "*")])
    assert [f for f, _ in word_paths(star)] == ["*"]
