"""Shared fixtures: the path to ../shared/data (tests that need it skip with a message when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("AGENTGUARD_DATA", REPO.parent / "shared" / "data")).resolve()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The benchmark data folder; skips the test with a clear message when it is absent."""
    if not DATA.is_dir():
        pytest.skip(f"benchmark data not found at {DATA} (set AGENTGUARD_DATA)")
    return DATA


@pytest.fixture(scope="session")
def gemma():
    """The local gemma-3-270m (model, tokenizer); skips when the llm extra or its weights are absent."""
    pytest.importorskip("transformers")
    try:
        from agentguard.llm.local import load_gemma

        return load_gemma()
    except Exception as exc:  # the llm extra or its cached weights are not installed here
        pytest.skip(f"gemma-3-270m not available: {exc}")


class RecordingTokenizer:
    """A tokenizer proxy that records every input it is given (side-channel tests)."""

    def __init__(self, tok):
        self.tok, self.seen = tok, []
        self.padding_side = getattr(tok, "padding_side", "right")

    def __call__(self, texts, **kw):
        self.seen.append(list(texts))
        return self.tok(texts, **kw)


@pytest.fixture
def recording():
    """The :class:`RecordingTokenizer` class: ``recording(tok)`` wraps a tokenizer."""
    return RecordingTokenizer
