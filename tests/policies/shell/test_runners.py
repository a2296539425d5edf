"""``shell.runners``: a runner's options are an allow list and what it runs stays in the project (session 19).

The attack lists, the real-program oracles (make, pytest, npm, cmake, unittest) and the properties are in
``test_analysis_redteam_s19.py``; this file holds the module's own contract, read through :func:`runner_reason`."""

from __future__ import annotations

import pytest

from agentguard.policies.shell.runners import runner_reason
from agentguard.policies.shell.words import literal_word


def reason(cmd: str, moved: tuple[str, ...] = (), start: tuple[str, ...] = ()) -> str | None:
    program, *args = cmd.split()
    return runner_reason(program, [literal_word(a) for a in args], moved, start)


@pytest.mark.parametrize("cmd", ["make -f /tmp/x/Makefile", "make -C /tmp/x", "make -I /tmp/x", "pytest -p evil",
                                 "pytest -c /tmp/x/pytest.ini", "pytest /tmp/x/test_a.py", "python -m pytest -p evil",
                                 "cargo build --manifest-path /tmp/x/Cargo.toml", "go build -modfile=/tmp/x/go.mod"])
def test_code_from_outside_the_project_is_refused(cmd: str) -> None:
    assert reason(cmd) is not None, cmd


@pytest.mark.parametrize("cmd", ["make", "make test", "make -C docs html", "pytest -q tests", "pytest -x -k fast",
                                 "python -m pytest -q", "cargo build --release", "go test ./...", "ls -la"])
def test_everyday_runs_and_other_programs_pass(cmd: str) -> None:
    assert reason(cmd) is None, cmd


def test_a_runner_after_a_cd_out_of_the_project_is_refused() -> None:
    assert reason("make", moved=("/tmp/x",)) is not None
    assert reason("make", moved=("docs",)) is None
