"""core.strict_yaml (session 21 red team): the guard-stack configuration reads YAML like TOML.

Hole fixed: PyYAML keeps the last of two equal keys, so ``deny: []`` written after ``deny: ["delete_*"]`` (or a second
``guards:``) silently allowed what the first refused; aliases expanded without bound. A deeply nested TOML file
escaped ``tomllib`` as a RecursionError instead of a one-line error.
"""


import pytest
from hypothesis import given, settings, strategies as st

from agentguard import Context, ToolCall
from agentguard.config import load_config, load_stack
from agentguard.core.errors import InputError
from agentguard.core.types import Decision

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


# -- YAML: duplicate keys and aliases refused, as TOML refuses a duplicate key -------------------------------------

DUPLICATED_GUARD = "guards:\n  - type: tool-rules\n    name: no-deletes\n    deny: ['delete_*']\n    deny: []\n"
DUPLICATED_TOP = "guards:\n  - type: tool-rules\n    deny: ['delete_*']\nguards:\n  - type: tool-rules\n    deny: []\n"


@pytest.mark.parametrize("text", [DUPLICATED_GUARD, DUPLICATED_TOP], ids=["guard-key", "top-level"])
def test_attack_yaml_duplicate_key_replaced_the_deny_list(tmp_path, text):
    # before: yaml.safe_load kept the last `deny: []` / `guards:` and delete_file was ALLOWED
    f = tmp_path / "agentguard.yaml"
    f.write_text(text)
    one_line_refusal(f, "duplicate key")
    f.write_text(text.split("    deny: []\n")[0] if text is DUPLICATED_GUARD else text.split("guards:\n")[1].join(
        ["guards:\n", ""]))
    assert load_stack(f).check(CTX, DELETE).decision is not Decision.ALLOW  # the file without its duplicate


KEYS = ["type", "name", "deny", "allow", "mode", "decision"]


@settings(max_examples=40, deadline=None)
@given(key=st.sampled_from(KEYS), first=st.sampled_from(["'x'", "[]", "enforce", "1"]),
       second=st.sampled_from(["'y'", "[]", "shadow", "2"]), indent=st.sampled_from(["", "    "]))
def test_any_duplicate_yaml_key_is_refused_wherever_it_stands(tmp_path_factory, key, first, second, indent):
    if indent:
        text = f"guards:\n  - type: tool-rules\n{indent}{key}: {first}\n{indent}{key}: {second}\n"
    else:
        text = f"{key}: {first}\n{key}: {second}\nguards:\n  - type: tool-rules\n"
    f = tmp_path_factory.mktemp("y") / "agentguard.yml"
    f.write_text(text)
    one_line_refusal(f, "duplicate key")


def test_yaml_aliases_are_refused(tmp_path):
    f = tmp_path / "agentguard.yaml"
    f.write_text("stack: &s {name: a}\nguards:\n  - type: tool-rules\n    deny: *s\n")
    one_line_refusal(f, "aliases")
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    f.write_text(laughs + "guards: *i\n")
    one_line_refusal(f, "aliases")


def test_yaml_tags_that_build_objects_are_refused(tmp_path):
    f = tmp_path / "agentguard.yaml"
    f.write_text("guards:\n  - !!python/object/apply:os.system ['echo pwned > /dev/null']\n")
    one_line_refusal(f, "not valid YAML")


@pytest.mark.parametrize("name, text", [
    ("deep.toml", "x = " + "[" * 100000 + "]" * 100000 + "\n"),        # RecursionError escaped tomllib before
    ("inline.toml", "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n"),
    ("deep.yaml", "x: " + "[" * 100000 + "]" * 100000 + "\n"),
])
def test_attack_a_deeply_nested_file_is_a_one_line_error(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    one_line_refusal(f, "not valid")
