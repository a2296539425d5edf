"""agentguard.policies.shell.grammar: the tree-sitter-bash walk, and text the parser skips."""

from agentguard.policies.shell import analyse
from agentguard.policies.shell.grammar import _parser, skipped_text


def test_text_the_tree_does_not_cover_is_found():
    src = b"rm - 2>x"
    assert skipped_text(_parser().parse(src).root_node, src) is not None
    for ok in (b"ls -la", b"echo \"a $(date) b\"", b"cat <<EOF\nhi $x\nEOF\n", b"ls \\\n -l # c"):
        assert skipped_text(_parser().parse(ok).root_node, ok) is None, ok
    assert analyse("rm - 2>x").unresolvable and analyse('echo "$(rm - 2>x)"').unresolvable


def test_every_construct_is_walked():
    a = analyse("ls\nrm -rf /; (cat a) | { grep b; } && echo \"$(id)\" <(date) > out")
    assert set(a.programs) >= {"ls", "rm", "cat", "grep", "echo", "id", "date"}
    assert "out" in [p for p, _ in a.paths]
    assert analyse("cat <<EOF\n$(rm x)\nEOF").programs.count("rm") == 1


def test_parse_errors_and_definitions_are_unresolvable():
    assert analyse("echo 'unterminated").unresolvable
    assert analyse("f(){ ls; }; f").unresolvable
    assert analyse("((x=1)); ls $x").unresolvable
    assert analyse("$(printf rm) -rf /").unresolvable
