"""The harness-soundness checks every fresh tool set (Stripe, HubSpot, Jira) must pass, written once: each set's test
file calls them with its own environment, attacked tasks and failure reading. Nothing here builds or runs a guard."""

from typing import Any, Callable

from agentguard.bench import mcp_hijack


def text(spec: dict, it: dict) -> str:
    return spec["injection_template"].format(goal=it["goal"])


def unguarded_solves_and_hijacks(module: Any, spec: dict, unguarded: dict, attacked: list[str], monkeypatch) -> None:
    """Every task is solved and every hijack succeeds without a guard, and the unguarded evaluation never builds the
    guard (the set stays blind until the lead's one run)."""
    none = unguarded["none"]
    assert all(none["per_user_task"].values()) and none["utility"]["k"] == len(spec["user_tasks"])
    assert none["blocked_benign"] == []
    assert none["attack_success"]["k"] == none["attack_success"]["n"] == len(attacked) * len(spec["injection_tasks"])
    assert all(p["k"] == p["n"] == len(attacked) for p in none["per_injection_task"].values())
    assert set(none["per_injection_task"]) == {it["id"] for it in spec["injection_tasks"]}
    assert unguarded["inferred"] is None and "provenance" not in unguarded

    def refuse(*a, **k):
        raise AssertionError("the guard was built")
    monkeypatch.setattr(mcp_hijack, "guard", refuse)
    assert module.evaluate(spec, guards=("none",))["none"]["utility"] == none["utility"]


def ground_truth_valid(spec: dict, env: Callable[..., Any], attacked: list[str], failed: Callable[[Any], bool],
                       *, known_args: bool = False, attacks_alone: bool = True) -> None:
    """A call rejected by the schema or failing in the API would make a task or an attack pass or fail for the wrong
    reason: every call of every task, and of every attack after every attacked task, returns a real result
    (``known_args``: and names only arguments the schema declares; ``attacks_alone``: each attack's calls also
    succeed on their own, where they need nothing a user task creates)."""
    def run(e: Any, calls: list, where: Any) -> None:
        for name, args in calls:
            assert not list(e.validators[name].iter_errors(args)), (where, name)
            assert not known_args or set(args) <= set(e.schemas[name]["properties"]), (where, name)
            out = e.call(name, args)
            assert not failed(out), (where, name, out)

    for ut in spec["user_tasks"]:
        run(env(spec), ut["calls"], ut["id"])
    for it in spec["injection_tasks"]:
        if attacks_alone:
            run(env(spec, text(spec, it)), it["calls"], it["id"])
        for ut in spec["user_tasks"]:
            if ut["id"] in attacked:
                e = env(spec, text(spec, it))
                run(e, ut["calls"], ut["id"])
                run(e, it["calls"], (ut["id"], it["id"]))


def no_success_without_attack(spec: dict, env: Callable[..., Any]) -> None:
    """A success check that holds on the environment alone, or after the user's own calls with the injected text in
    place, would count an attack that did nothing (the GitHub set's injection_task_5 bug)."""
    for it in spec["injection_tasks"]:
        assert not env(spec).holds(it["success"]), it["id"]
        assert not env(spec, text(spec, it)).holds(it["success"]), it["id"]
        for ut in spec["user_tasks"]:
            e = env(spec, text(spec, it))
            for name, args in ut["calls"]:
                e.call(name, args)
            assert not e.holds(it["success"]), (ut["id"], it["id"])
