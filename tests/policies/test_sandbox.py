"""The sandbox refuses malicious policy code before it runs, and stops runaway code at run time."""

import hashlib
import time

import pytest

from agentguard.core.errors import GuardTimeout, PolicyError
from agentguard.policies import PreconditionViolation, load_policy, policy_from_source, shipped_policies, validate

HEADER = "from nagini_contracts.contracts import *\n\n"


def make(body: str, params: str = "x: int", ret: str = "int") -> str:
    return HEADER + f"def check({params}) -> {ret}:\n    Ensures(Result() >= 0)\n" + body


@pytest.mark.parametrize("source,needle", [
    ("import os\n", "import os is not allowed"),
    ("from os import system\n", "import from 'os'"),
    ("from nagini_contracts.contracts import Requires as R\n", "aliases"),
    (make("    y = open('/etc/passwd')\n    return 0\n"), "call of 'open' is not allowed"),
    (make("    eval('1')\n    return 0\n"), "'eval' is not allowed"),
    (make("    exec('import os')\n    return 0\n"), "'exec' is not allowed"),
    (make("    return x.__class__\n"), "attribute access (.__class__)"),
    (make("    y = ().__class__.__bases__\n    return 0\n"), "attribute access"),
    (make("    return __import__('os')\n"), "call of '__import__' is not allowed"),
    (make("    __x = 1\n    return 0\n"), "may not start with '_'"),
    (make("    f = lambda: 0\n    return 0\n"), "Lambda is not allowed"),
    (make("    return [i for i in range(3)][0]\n"), "ListComp is not allowed"),
    (make("    return 2 ** 10000000\n"), "operator Pow"),
    (make("    global y\n    return 0\n"), "Global is not allowed"),
    (make("    try:\n        return 0\n    except Exception:\n        return 1\n"), "Try is not allowed"),
    (make("    with x:\n        return 0\n"), "With is not allowed"),
    (HEADER + "class C:\n    pass\n", "ClassDef is not allowed"),
    (HEADER + "X = open('f')\n", "literal constants"),
    (make("    return getattr(x, 'y')\n"), "'getattr' is not allowed"),
    (make("    return 0\n").replace("def check", "@staticmethod\ndef check"), "only the @Pure decorator"),
    ("def check(:\n", "syntax error"),
    (make("    y = [0] * 1000000000\n    return 0\n"), "multiplication needs an int literal"),
    (make("    y = x * x\n    return 0\n"), "multiplication needs an int literal"),
    (make("    return max(range(1000000000))\n"), "range() is allowed only"),
])
def test_malicious_code_is_refused(source, needle):
    with pytest.raises(PolicyError) as ei:
        policy_from_source(source)
    msg = str(ei.value)
    assert needle in msg
    assert "\n" not in msg  # one clear line


def test_refusal_happens_before_any_execution(tmp_path):
    marker = tmp_path / "pwned"
    src = make(f"    open({str(marker)!r}, 'w').write('x')\n    return 0\n")
    with pytest.raises(PolicyError):
        policy_from_source(src)
    assert not marker.exists()


def test_while_and_recursion_are_refused_at_load():
    # the bounded language has no while and no recursion (issue 13): refused before anything runs
    with pytest.raises(PolicyError, match="While is not allowed"):
        policy_from_source(make("    while True:\n        x = x + 1\n    return 0\n"), timeout_s=0.02)
    src = HEADER + ("def loop(x: int) -> int:\n    return loop(x + 1)\n\n"
                    "def check(x: int) -> int:\n    Ensures(Result() >= 0)\n    return loop(x)\n")
    with pytest.raises(PolicyError, match="recursion is not allowed"):
        policy_from_source(src, timeout_s=0.05)


def test_no_builtins_leak_even_if_name_is_built_at_runtime():
    # names are resolved in a namespace whose __builtins__ holds only the whitelist
    p = policy_from_source(make("    return len([x])\n"))
    assert p.code.namespace["__builtins__"].keys() == {"len", "min", "max", "abs", "range", "bool", "int"}
    assert p.evaluate({"x": 3}).code == 1


def test_precondition_is_enforced_at_run_time():
    src = HEADER + "def check(x: int) -> bool:\n    Requires(0 <= x and x <= 10)\n    Ensures(Result())\n    return True\n"
    p = policy_from_source(src)
    assert p.params[0].domain() == (0, 10)
    assert p.evaluate({"x": 10}).allow
    with pytest.raises(PreconditionViolation):
        p.evaluate({"x": 11})


def test_schema_and_type_errors():
    with pytest.raises(PolicyError, match="must be annotated"):
        policy_from_source(HEADER + "def check(x: str) -> int:\n    Ensures(Result() == 0)\n    return 0\n")
    with pytest.raises(PolicyError, match="no Ensures"):
        policy_from_source(HEADER + "def check(x: int) -> int:\n    return 0\n")
    with pytest.raises(PolicyError, match="no entry function"):
        policy_from_source(HEADER + "X = 1\n")
    p = policy_from_source(make("    return 0\n"))
    with pytest.raises(PolicyError, match="missing argument"):
        p.evaluate({})
    with pytest.raises(PolicyError, match="must be int"):
        p.evaluate({"x": "1"})


def test_shipped_policies_pass_the_sandbox():
    for path in shipped_policies():
        validate(path.read_text(), str(path))
        pol = load_policy(path)
        assert pol.id and pol.version and pol.digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_long_for_loop_is_stopped_by_the_time_limit():
    src = make("    for i in range(x):\n        x = x + 1\n    return 0\n")
    p = policy_from_source(src, timeout_s=0.02)
    t0 = time.perf_counter()
    with pytest.raises(GuardTimeout):
        p.evaluate({"x": 10**9})
    assert time.perf_counter() - t0 < 2.0
