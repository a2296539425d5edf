"""agentguard.policies.shell.model: result types, program names, the walker's reporting."""

from agentguard.policies.shell.model import Analysis, WalkerBase, chain, program_name
from agentguard.policies.shell.words import literal_word


def test_program_names_are_canonical():
    assert program_name("/usr/bin/rm") == "rm" and program_name("python3.12") == "python"
    assert program_name("RM.exe") == "rm"


def test_reporting_is_deduplicated_and_paths_follow_cwds():
    w = WalkerBase()
    w.refuse("x")
    w.refuse("x")
    assert w.out.unresolvable == ["x"] and not w.out.resolved
    w.cwds.append("/etc")
    w.add_paths(literal_word("shadow"))
    assert "/etc/shadow" in [p for p, _ in w.out.paths]
    assert Analysis().resolved and chain("", "sudo") == "sudo" and chain("sudo", "env") == "sudo > env"
