"""The secret-leak benchmark's corpora: seeded values have their real structure; benign sources load."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

pytest.importorskip("detect_secrets")
pytest.importorskip("cryptography")

from agentguard.bench import secret_leak  # noqa: E402
from agentguard.bench.secret_leak import FORMATS, VARIANTS, measure, seeded_corpus, seeded_secrets  # noqa: E402
from agentguard.core.types import ToolCall  # noqa: E402
from agentguard.policies import SecretLeakGuard  # noqa: E402


def test_seeded_values_are_valid_by_independent_checks():
    from stdnum import iban, luhn
    from stdnum.us import ssn

    vals = {}
    for fmt, _, v, _ in seeded_secrets(4, seed=3):
        vals.setdefault(fmt, []).append(v)
    assert set(vals) == set(FORMATS)
    assert all(luhn.is_valid(v.replace(" ", "")) for v in vals["credit_card"])
    assert all(iban.is_valid(v) for v in vals["iban"]) and all(ssn.is_valid(v) for v in vals["us_ssn"])
    for tok in vals["jwt_hs256"]:
        head = json.loads(base64.urlsafe_b64decode(tok.split(".")[0] + "=="))
        assert head == {"alg": "HS256", "typ": "JWT"} and len(tok.split(".")) == 3
    assert all("PRIVATE KEY-----" in v for k in vals if k.startswith("private_key") for v in vals[k])
    assert json.loads(vals["gcp_service_account_json"][0])["type"] == "service_account"


def test_the_corpus_is_every_value_in_every_variant():
    corpus = seeded_corpus(1, seed=0)
    assert len(corpus) == len(FORMATS) * len(VARIANTS)
    assert {c["variant"] for c in corpus} == set(VARIANTS)


def test_measure_counts_refusals_and_types():
    g = SecretLeakGuard()
    res = measure(g, [ToolCall("post", {"b": secret_leak.github_token(__import__("random").Random(0))}),
                      ToolCall("post", {"b": "hello"})])
    assert res["n"] == 2 and res["refused"] == 1 and res["by_type"] == {"GitHub Token": 1}
    assert res["latency_us"]["median"] > 0


def test_benign_corpus_reads_examples_and_notes_missing_data(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(secret_leak, "_agentdojo", lambda version: ([ToolCall("a", {})], ["p"]))
    ex = tmp_path / "ex"
    ex.mkdir()
    (ex / "demo.py").write_text('call("send_email", {"to": "ann@example.com", "body": "hi"})\nx = {1: 2}\n')
    out = secret_leak.benign_corpus(tmp_path / "no-data", ex)
    assert "mind2web_sc_calls" not in out
    assert [c.arguments for c in out["project_examples"]] == [{"to": "ann@example.com", "body": "hi"}]


def test_latency_times_every_guard_on_every_call():
    from agentguard.bench.secret_leak import latency
    from agentguard.policies import ToolRuleGuard

    out = latency({"a": ToolRuleGuard(deny=["x"]), "b": SecretLeakGuard()}, [ToolCall("post", {"b": "hi"})] * 3, 2)
    assert set(out) == {"a", "b"} and out["b"]["n"] == 3 and out["b"]["median"] > 0
