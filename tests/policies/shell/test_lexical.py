"""agentguard.policies.shell.lexical: text bash and the parser could read differently (session 10 red team)."""

from agentguard.policies.shell import analyse
from agentguard.policies.shell.grammar import _parser
from agentguard.policies.shell.lexical import glued_continuation, heredoc_mismatch, odd_char


def test_odd_characters_are_found_and_ordinary_text_is_not():
    for ch in ("\u200b", "\ufeff", "\u202e", "\u00a0", "\u2028", "\u3000", "\x0b", "\x0c", "\x1b", "\x7f", "\x85"):
        assert odd_char(f"ls{ch}-la") == ch, repr(ch)
    for ok in ("ls -la\tsrc\n", "echo 'caf\u00e9' \u65e5\u672c \uff07"):
        assert odd_char(ok) is None, ok


def test_a_continuation_that_glues_two_parts_of_a_word():
    assert glued_continuation("cat /etc/sha\\\ndow") and glued_continuation("l\\\ns") and glued_continuation("a\\\\\\\nb")
    for ok in ("ls && \\\nrm x", "ls \\\n  -la", "echo a\\\n b", "echo a\\\\\nb"):
        assert not glued_continuation(ok), ok


def _heredoc(src: bytes):
    def find(n):
        if n.type == "heredoc_redirect":
            return n
        return next((f for f in (find(c) for c in n.children) if f is not None), None)
    return find(_parser().parse(src).root_node)


def test_heredoc_delimiters_are_read_after_quote_removal():
    assert heredoc_mismatch(_heredoc(b'cat <<E"O"F\nx\nEOF\nrm x\nEOF\n'), b'cat <<E"O"F\nx\nEOF\nrm x\nEOF\n')
    for ok in (b"cat <<EOF\nx\nEOF\n", b"cat <<'EOF'\n$x\nEOF\n", b"cat <<-EOF\n\tx\n\tEOF\n", b'cat <<"A"\nB\nA\n'):
        assert heredoc_mismatch(_heredoc(ok), ok) is None, ok
    assert analyse("cat <<E\"O\"F\nx\nEOF\nrm -rf /\nEOF").unresolvable
