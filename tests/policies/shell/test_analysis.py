"""agentguard.policies.shell.analysis: the public entry points analyse / analyse_argv."""

from agentguard.policies.shell import MAX_DEPTH, analyse, analyse_argv


def test_analyse_lists_commands_paths_and_reasons():
    a = analyse("cat /etc/shadow | grep root > out")
    assert a.programs == ["cat", "grep"] and a.resolved
    assert {"/etc/shadow", "out"} <= {p for p, _ in a.paths}


def test_argv_lists_are_not_resplit_and_odd_elements_are_refused():
    a = analyse_argv(["rm", "-rf", "/", 0])
    assert a.programs == ["rm"] and a.commands[0].flags == frozenset("rf")
    assert analyse_argv(["ls", {"x": 1}]).unresolvable
    assert analyse_argv(["echo", "a; rm x"]).programs == ["echo"]


def test_nesting_beyond_the_bound_is_refused_never_skipped():
    cmd = "ls"
    for _ in range(MAX_DEPTH + 2):
        cmd = "bash -c " + "'" + cmd.replace("'", "'\\''") + "'"
    # the quoting doubles at each level: the outer word is now too long to read, refused before the depth
    assert any("nesting" in r or "longer than" in r for r in analyse(cmd).unresolvable)
    cmd = "ls"
    for _ in range(MAX_DEPTH + 2):
        cmd = f"echo $({cmd})"
    assert any("nesting" in r for r in analyse(cmd).unresolvable)
    assert analyse("ls\x00rm").unresolvable
