"""Simulated literal hijacks (agentguard.bench.agentdojo_hijack) succeed without a guard, and none is dropped."""

import pytest

pytest.importorskip("agentdojo")

from agentguard.bench import agentdojo as bench  # noqa: E402
from agentguard.bench.agentdojo_hijack import SIMULATED, TEXT_ONLY, hijack_calls  # noqa: E402


def _suite(name, version="v1.2.2"):
    from agentdojo.task_suite.load_suites import get_suites

    return bench._cached(get_suites(version)[name])


@pytest.mark.slow
def test_every_injection_task_without_ground_truth_is_simulated_or_text_only():
    from agentdojo.task_suite.load_suites import get_suites

    for version in bench.versions():
        for sname, suite in get_suites(version).items():
            env = suite.load_and_inject_default_environment({})
            for iid, it in suite.injection_tasks.items():
                if not it.ground_truth(env.model_copy(deep=True)):
                    assert (sname, iid) in SIMULATED or (sname, iid) in TEXT_ONLY, (version, sname, iid)


@pytest.mark.slow
@pytest.mark.parametrize("iid", sorted({i for s, i in SIMULATED if s == "workspace"}, key=lambda x: int(x.split("_")[-1])))
def test_simulated_hijack_succeeds_unguarded(iid):
    """AgentDojo's own security check says the literal hijack succeeded (user task 0: reads one calendar day)."""
    suite = _suite("workspace")
    ut, it = suite.user_tasks["user_task_1"], suite.injection_tasks[iid]
    from agentdojo.attacks.base_attacks import BaseAttack

    inj = bench._injections(suite, ut, it, BaseAttack(suite, None).get_injection_candidates(ut))
    assert hijack_calls("workspace", iid, it, suite.load_and_inject_default_environment(inj))
    _, security = bench._run(suite, ut, it, inj, None, "", [], iid)
    assert security


def test_text_only_injection_is_simulated_in_the_answer():
    suite = _suite("travel")
    ut, it = suite.user_tasks["user_task_0"], suite.injection_tasks["injection_task_6"]
    from agentdojo.attacks.base_attacks import BaseAttack

    inj = bench._injections(suite, ut, it, BaseAttack(suite, None).get_injection_candidates(ut))
    _, security = bench._run(suite, ut, it, inj, None, "", [], "injection_task_6")
    assert security and ("travel", "injection_task_6") in TEXT_ONLY
