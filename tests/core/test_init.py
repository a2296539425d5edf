"""The top-level and core packages' faces (agentguard/__init__, core/__init__): sorted, complete, resolvable."""

import importlib

import agentguard


def test_all_is_sorted_and_complete():
    assert agentguard.__all__ == sorted(agentguard.__all__)
    for name in agentguard.__all__:
        assert hasattr(agentguard, name), name
    core = importlib.import_module("agentguard.core")
    assert core.__all__ == sorted(core.__all__)
    public = {n for n in dir(core) if not n.startswith("_") and n[0].isupper()}
    assert public <= set(core.__all__) | {"Proposal", "Seq"}
