"""core.loading.check_factory (session 21 red team): a configuration calls only what declares it builds a guard.

Hole fixed: ``type = "python"``, ``factory = "subprocess:run"``, ``args = ["sh", "-c", "..."]`` ran the command
while ``agentguard.toml`` loaded (the result was refused as "not a Guard" only afterwards); a policy guard's
``extractor = "os:abort"`` ended the process.
"""


import pytest
from hypothesis import given, settings, strategies as st

from agentguard import Context, ToolCall
from agentguard.config import load_config, load_stack
from agentguard.core.errors import InputError
from agentguard.core.guard import GuardStack
from agentguard.core.types import Decision, Verdict

DENY_DELETES = '[[guards]]\ntype = "tool-rules"\nname = "no-deletes"\ndeny = ["delete_*"]\n'
CTX = Context(run_id="r")
DELETE = ToolCall("delete_file", {"path": "/tmp/x"})


def one_line_refusal(path, *needles: str) -> str:
    with pytest.raises(InputError) as info:
        load_config(path)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg, msg
    for n in needles:
        assert n in msg, msg
    return msg


def one_line_refusal_stack(path, *needles: str) -> str:
    with pytest.raises(InputError) as info:
        load_stack(path)
    msg = str(info.value)
    assert "\n" not in msg, msg
    for n in needles:
        assert n in msg, msg
    return msg


# -- a factory named in configuration is called only when it declares that it builds a guard/extractor --------------

DANGEROUS_CALLABLES = ["subprocess:run", "subprocess:Popen", "subprocess:check_output", "os:system", "os:remove",
                       "os:abort", "os:getpid", "shutil:rmtree", "builtins:open", "builtins:exec", "builtins:eval",
                       "builtins:input", "builtins:breakpoint", "pathlib:Path.write_text", "pathlib:Path.touch",
                       "pickle:loads", "importlib:import_module", "functools:partial", "webbrowser:open",
                       "agentguard.core.loading:load_attr"]  # (load_stack is declared: -> GuardStack)


@settings(max_examples=60, deadline=None)
@given(path=st.sampled_from(DANGEROUS_CALLABLES), where=st.sampled_from(["python", "extractor"]))
def test_property_a_callable_not_declared_as_a_factory_is_never_called(tmp_path_factory, path, where):
    d = tmp_path_factory.mktemp("f")
    marker = d / "pwned"
    if where == "python":
        text = (f'[[guards]]\ntype = "python"\nfactory = "{path}"\nargs = ["sh", "-c", "touch {marker}"]\n')
    else:
        text = f'[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "{path}"\n'
    f = d / "agentguard.toml"
    f.write_text(text)
    one_line_refusal_stack(f, "refused before it is")  # called, or (stdlib, s22) imported
    assert not marker.exists()


def test_attack_loading_a_toml_ran_a_shell_command(tmp_path):
    # before: subprocess.run(args=[...]) ran while the file loaded; "factory returned CompletedProcess" came after
    marker = tmp_path / "pwned"
    for factory, kwargs in [("subprocess:run", f'args = ["sh", "-c", "touch {marker}"]'),
                            ("os:system", f'command = "touch {marker}"'),
                            ("pathlib:Path.touch", f'self = "{marker}"')]:
        f = tmp_path / "agentguard.toml"
        f.write_text(f'[[guards]]\ntype = "python"\nfactory = "{factory}"\n{kwargs}\n')
        one_line_refusal_stack(f, "refused before it is")  # called, or (stdlib, s22) imported
        assert not marker.exists(), factory


class _Shaped:
    name = "shaped"

    def __init__(self, name: str = "shaped") -> None:
        self.name = name

    def check(self, context, proposal):
        return Verdict(Decision.REJECT, "shaped", self.name)

    async def acheck(self, context, proposal):
        return self.check(context, proposal)


def make_shaped(name: str = "made") -> _Shaped:
    return _Shaped(name)


def make_either(name: str = "either") -> _Shaped | GuardStack:
    return _Shaped(name)


def make_unannotated(name: str = "bare"):
    return _Shaped(name)


def make_maybe(name: str = "maybe") -> _Shaped | None:
    return _Shaped(name)


@pytest.mark.parametrize("factory, loads", [("_Shaped", True), ("make_shaped", True), ("make_either", True),
                                            ("make_unannotated", False), ("make_maybe", False)])
def test_declared_factories_still_load(tmp_path, factory, loads):
    f = tmp_path / "agentguard.toml"
    f.write_text(f'[[guards]]\ntype = "python"\nfactory = "{__name__}:{factory}"\n')
    if loads:
        assert load_stack(f).check(CTX, DELETE).decision is Decision.REJECT
    else:
        one_line_refusal_stack(f, "not declared to build")
