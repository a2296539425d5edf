"""agentguard.policies.shell.resolve: programs through wrappers, shells' payloads, cd."""

from agentguard.policies.shell import analyse


def test_wrappers_with_their_option_arity():
    for cmd in ("timeout -k 5s 10 rm -rf /", "env -C /tmp rm -rf /", "nice -n 5 rm x", "sudo -u root rm x",
                "doas -u root rm x", "strace -o f rm x", "chroot / rm x", "busybox rm x", "env -S 'rm -rf /'",
                "xargs rm", "timeout --kill=1 2 rm x"):
        a = analyse(cmd)
        assert "rm" in a.programs and not a.unresolvable, cmd


def test_shell_payloads_are_parsed_again():
    assert "rm" in analyse("bash -c 'ls; rm x'").programs
    assert analyse("tcsh -c 'rm x'").unresolvable and analyse("bash -l -c ls").unresolvable
    assert analyse("sh script.sh").unresolvable and analyse("eval ls").unresolvable


def test_unknown_options_and_unsafe_environment_are_unresolvable():
    assert analyse("timeout --bogus 3 rm x").unresolvable
    assert analyse("PATH=. ls").unresolvable and analyse("printf -v PATH x").unresolvable


def test_cd_moves_every_possible_cwd():
    paths = [p for p, _ in analyse("cd ..; cd ..; cat x").paths]
    assert "../../x" in paths and "../x" in paths
