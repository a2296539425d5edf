"""The examples of docs/observability.md run as written (the OpenTelemetry block, the shadow-mode block) and its
TOML stack builds the documented shadowed stack."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from agentguard.config import build_stack
from agentguard.core import telemetry
from agentguard.core.shadow import Shadowed

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "observability.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


@pytest.mark.parametrize("i", range(2))
def test_python_examples_run(i: int) -> None:
    if i == 0:
        pytest.importorskip("opentelemetry.sdk")
    try:
        exec(compile(_blocks("python")[i], "docs/observability.md", "exec"), {})
    finally:
        telemetry.disable()


def test_the_toml_stack_is_shadowed() -> None:
    stack = build_stack(tomllib.loads(_blocks("toml")[0]))
    assert isinstance(stack, Shadowed) and [g.name for g in stack.shadow_guards] == ["candidate"]
