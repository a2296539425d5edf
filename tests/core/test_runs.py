"""Per-run memory (core.runs): end_run reaches every guard, inside stacks and wrappers."""

from agentguard import BaseGuard, Context, GuardStack, Verdict


def test_end_run_reaches_every_guard_with_per_run_memory_inside_stacks_and_wrappers():
    from agentguard.core import BaseGuard, GuardStack, RunMemory, Verdict
    from agentguard.core.runs import end_run

    class Counting(BaseGuard):
        def __init__(self, name):
            self.name = name
            self.runs = RunMemory(lambda: [0])

        def check(self, context, proposal):
            self.runs.get(context.run_id)[0] += 1
            return Verdict.allow(self.name)

        def end_run(self, run_id):
            self.runs.end_run(run_id)

    class Wrapper(BaseGuard):
        name = "wrapper"

        def __init__(self, guard):
            self.guard = guard

        def check(self, context, proposal):
            return self.guard.check(context, proposal)

    a, b = Counting("a"), Counting("b")
    stack = GuardStack([a, Wrapper(GuardStack([b]))])
    from agentguard.core import Context

    stack.check(Context(run_id="r1"), None)
    stack.check(Context(run_id="r2"), None)
    assert "r1" in a.runs and "r1" in b.runs
    end_run(stack, "r1")
    assert "r1" not in a.runs and "r1" not in b.runs and "r2" in b.runs
    stack.end_run("r2")
    assert len(a.runs) == len(b.runs) == 0
