"""Generated tests: boundary values and hypothesis cases catch a wrong policy before Nagini sees it."""

from agentguard.policies import boundary_cases, library_path, load_policy, policy_from_source, run_tests, write_pytest

WRONG = library_path("mind2web_sc").read_text().replace("age < 18:\n        return NEEDS_ADULT",
                                                          "age < 17:\n        return NEEDS_ADULT")


def test_boundary_values_come_from_domain_and_compared_constants():
    p = load_policy(library_path("mind2web_sc"))
    ages = {c["age"] for c in boundary_cases(p)}
    assert {0, 1, 149, 150, 14, 15, 16, 17, 18, 19} <= ages
    cats = {c["category"] for c in boundary_cases(p)}
    assert cats == set(range(7))


def test_correct_policy_passes_and_wrong_policy_fails_at_the_boundary():
    good = run_tests(load_policy(library_path("mind2web_sc")))
    assert good.passed and good.cases > 200
    bad = run_tests(policy_from_source(WRONG))
    assert not bad.passed
    f = bad.failures[0]
    assert f.kind == "boundary" and f.args["category"] == 3 and f.args["age"] == 17
    assert "NEEDS_ADULT" in f.message


def test_property_tests_find_a_bug_boundaries_miss():
    # wrong only where x - y > 20 (and x + y > 150): no boundary case lies there, hypothesis finds it
    src = ("from nagini_contracts.contracts import *\n\n"
           "def check(x: int, y: int) -> bool:\n"
           "    Requires(0 <= x and x <= 100)\n    Requires(0 <= y and y <= 100)\n"
           "    Ensures(Implies(x + y > 150, not Result()))\n"
           "    if x + y > 150 and x - y <= 20:\n        return False\n    return True\n")
    rep = run_tests(policy_from_source(src), examples=300)
    assert not rep.passed
    f = rep.failures[0]
    assert f.args["x"] - f.args["y"] > 20 and f.args["x"] + f.args["y"] > 150


def test_outside_domain_must_be_refused():
    src = ("from nagini_contracts.contracts import *\n\n"
           "def check(x: int) -> bool:\n    Requires(0 <= x and x <= 9)\n    Ensures(Implies(x > 5, not Result()))\n"
           "    return x <= 5\n")
    rep = run_tests(policy_from_source(src))
    assert rep.passed and rep.cases >= 2


def test_write_pytest_emits_a_runnable_module(tmp_path):
    path = library_path("mind2web_sc")
    text = write_pytest(load_policy(path), str(path), examples=20)
    f = tmp_path / "test_generated_m2w.py"
    f.write_text(text)
    ns = {}
    exec(compile(text, str(f), "exec"), ns)
    assert ns["BOUNDARY"] and ns["OUTSIDE"], "the generated module must carry cases to run"
    for args in ns["BOUNDARY"][:50]:
        ns["test_boundary"](args)
    for args in ns["OUTSIDE"]:
        ns["test_outside_domain_refused"](args)
    ns["test_property"]()


def test_a_contract_that_admits_allow_everywhere_is_a_failure():
    """Vacuous contracts are proved of anything, the allow-everything policy included."""
    head = "from nagini_contracts.contracts import *\n\ndef check(age: int) -> int:\n    Requires(0 <= age and age <= 150)\n"
    for ensures in ("Ensures(Result() >= 0)", "Ensures(Implies(False, Result() != 0))",
                    "Ensures(Result() == Result())", "Ensures(Implies(age > 150, Result() != 0))"):
        report = run_tests(policy_from_source(head + f"    {ensures}\n    return 0\n"))
        assert [f.kind for f in report.failures] == ["vacuous"], ensures
    real = run_tests(policy_from_source(head + "    Ensures(Implies(age < 18, Result() != 0))\n"
                                               "    if age < 18:\n        return 1\n    return 0\n"))
    assert real.passed


def test_an_ensures_that_never_names_the_verdict_is_refused_at_load():
    import pytest

    from agentguard.core.errors import PolicyError

    with pytest.raises(PolicyError, match="mentions Result"):
        policy_from_source("from nagini_contracts.contracts import *\n\ndef check(age: int) -> int:\n"
                           "    Requires(0 <= age and age <= 150)\n    Ensures(age >= 0)\n    return 0\n")
