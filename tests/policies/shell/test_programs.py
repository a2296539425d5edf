"""agentguard.policies.shell.programs: option tables, flags, the sets the analysis decides with."""

from agentguard.policies.shell.programs import INFO_OPTIONS, NO_PATH_OPERANDS, UNSAFE_ENV, WRAPPERS


def test_wrapper_tables_state_real_arity():
    assert "k" in WRAPPERS["timeout"].short_arg and WRAPPERS["timeout"].positional == 1
    assert WRAPPERS["env"].extra["S"] == "split" and WRAPPERS["chroot"].no_command == "shell"


def test_unsafe_environment_and_text_only_programs():
    for name in ("PATH", "BASH_ENV", "LD_PRELOAD", "IFS", "PYTHONPATH"):
        assert UNSAFE_ENV.fullmatch(name)
    assert not UNSAFE_ENV.fullmatch("FOO")
    assert "echo" in NO_PATH_OPERANDS and "cat" not in NO_PATH_OPERANDS and "date" not in NO_PATH_OPERANDS
    assert "-V" in INFO_OPTIONS["python"] and "-v" not in INFO_OPTIONS["python"]  # python -v is verbose
