"""``require_verified`` reaches every way a policy is loaded (session 23): the pin is checked by the one loader,
:func:`agentguard.policies.model.policy_from_source` (under :func:`~agentguard.policies.model.load_policy`).

Before: the switch was read by the policy guard's configuration table only. A ``type = "python"`` factory that called
``load_policy`` itself, and the provenance guard's shipped policy (``type = "provenance"``, loaded by
``ProvenanceGuard.agentdojo``), loaded an unpinned policy under ``[stack] require_verified = true``. Now a source
without a pinned, matching digest refuses while the configuration being built requires it, whoever asks for it, and
the shipped policies a guard loads itself are pinned to the digests CI's Nagini run proves
(:data:`agentguard.policies.library.VERIFIED`)."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.config import load_stack
from agentguard.core.errors import AgentGuardError, PolicyError
from agentguard.core.loading import requiring_verified
from agentguard.policies import library, library_path, load_policy, shipped_policies
from agentguard.policies.model import policy_from_source

SOURCE = library_path("mind2web_sc").read_text(encoding="utf-8")
DIGEST = hashlib.sha256(SOURCE.encode()).hexdigest()


def test_the_pinned_digests_are_the_shipped_sources():
    assert set(library.VERIFIED) == {p.stem for p in shipped_policies()}
    for p in shipped_policies():
        assert load_policy(p).digest == library.VERIFIED[p.stem], p.stem


def _factory_module(d: Path, digest: str | None) -> str:
    pin = "" if digest is None else f", verified_digest={digest!r}"
    (d / "own_loader_factory.py").write_text(textwrap.dedent(f"""
        from agentguard.policies import PolicyBinding, ToolCallGuard, library_extractor, library_path, load_policy

        def make() -> ToolCallGuard:
            policy = load_policy(library_path("mind2web_sc"){pin})
            return ToolCallGuard([PolicyBinding(policy, library_extractor("mind2web_sc"))])
        """), encoding="utf-8")
    return "own_loader_factory:make"


@pytest.mark.parametrize("digest,loads", [(None, False), (DIGEST[:12], False), ("0" * 64, False), (DIGEST, True)])
def test_attack_a_python_factory_that_loads_its_own_policy_is_under_require_verified(tmp_path, monkeypatch, digest,
                                                                                      loads):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "own_loader_factory", raising=False)
    f = tmp_path / "agentguard.toml"
    f.write_text(f'[stack]\nrequire_verified = true\n[[guards]]\ntype = "python"\n'
                 f'factory = "{_factory_module(tmp_path, digest)}"\n', encoding="utf-8")
    if loads:
        assert load_stack(f) is not None
    else:
        with pytest.raises(AgentGuardError, match="verified_digest|refusing to run unverified"):
            load_stack(f)
    if digest is None:  # without the switch the factory's policy loads as before
        f.write_text(f.read_text().replace("require_verified = true", "require_verified = false"))
        assert load_stack(f) is not None


def test_the_provenance_guards_shipped_policy_is_pinned_and_checked(tmp_path, monkeypatch):
    f = tmp_path / "agentguard.toml"
    f.write_text('[stack]\nrequire_verified = true\n[[guards]]\ntype = "provenance"\n', encoding="utf-8")
    assert load_stack(f) is not None  # pinned: it loads under require_verified
    monkeypatch.setitem(library.VERIFIED, "agentdojo_provenance", "0" * 64)  # the file is not the source proved
    with pytest.raises(AgentGuardError, match="refusing to run unverified code"):
        load_stack(f)
    monkeypatch.delitem(library.VERIFIED, "agentdojo_provenance")
    with pytest.raises(AgentGuardError, match="no verified_digest pinned"):
        load_stack(f)


@settings(max_examples=30, deadline=None)
@given(required=st.booleans(),
       digest=st.one_of(st.none(), st.just(DIGEST), st.sampled_from([DIGEST[:12], DIGEST[:63], DIGEST.upper(), "0" * 64,
                                                                      "", DIGEST + " ", DIGEST[::-1]])))
def test_property_the_one_loader_loads_only_a_matching_pin_or_no_pin_when_not_required(required, digest):
    with requiring_verified(required):
        if digest == DIGEST or (digest is None and not required):
            assert policy_from_source(SOURCE, path="p.py", verified_digest=digest).digest == DIGEST
        else:
            with pytest.raises(PolicyError):
                policy_from_source(SOURCE, path="p.py", verified_digest=digest)
