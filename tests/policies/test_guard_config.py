"""ToolCallGuard.from_config: the one builder of a policy guard from configuration (issue 12), the
declarative field rules, and each shipped policy's own extractor (library_extractor)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentguard.config import GuardSpec, build_guard
from agentguard.core import Context, Decision, ToolCall
from agentguard.core.errors import InputError, PolicyError
from agentguard.policies import (FieldRule, PolicyBinding, SpecExtractor, ToolCallGuard, library_extractor,
                                 library_path, load_policy, shipped_policies)

REPO = Path(__file__).resolve().parents[2]
TRANSFER = REPO / "examples" / "integrations" / "policies" / "transfer_limit.py"
ADULT = {"age": 30, "domestic": True, "dr_license": True, "vaccine": True, "membership": True}
M2W_FIELDS = {"category": {"from": "tool", "map": {"rent_car": 1, "book_hotel": 3}, "default": 0},
              **{k: {"from": "metadata", "key": f"user_info.{k}"} for k in ADULT}}


def transfer(**extra):
    return ToolCallGuard.from_config({"policy": str(TRANSFER), "arguments": {"amount": "amount"},
                                      "constants": {"limit": 100}, "tools": ["transfer_funds"], **extra})


def test_arguments_and_constants_become_field_rules():
    g = transfer()
    assert isinstance(g.bindings[0].extractor, SpecExtractor)
    assert g.check(Context(), ToolCall("transfer_funds", {"amount": 40})).decision is Decision.ALLOW
    v = g.check(Context(), ToolCall("transfer_funds", {"amount": 500}))
    assert v.decision is Decision.REJECT and "exceeds the transfer limit" in v.reason
    # a missing argument fails closed
    assert g.check(Context(), ToolCall("transfer_funds", {})).decision is Decision.REJECT


def test_unknown_tools_are_denied_by_default_and_allowed_only_when_asked():
    v = transfer().check(Context(), ToolCall("send_email", {"to": "x"}))
    assert v.decision is Decision.REJECT and "no policy covers tool send_email" in v.reason
    assert transfer(unknown_tool="allow").check(Context(), ToolCall("send_email", {})).decision is Decision.ALLOW
    assert transfer(deny="halt").check(Context(), ToolCall("send_email", {})).decision is Decision.HALT


def test_default_name_strategy_and_explicit_options():
    g = transfer()
    assert g.name == "policy:transfer-limit@1" and g.unknown_tool == "deny"
    assert getattr(g.strategy, "name", "") == "block"
    g2 = transfer(name="limit", strategy="CRP+TEH", on_error="halt")
    assert g2.name == "limit" and g2.on_error is Decision.HALT
    assert g2.check(Context(), ToolCall("transfer_funds", {"amount": "lots"})).decision is Decision.HALT


def test_fields_from_the_request_and_the_shipped_extractor():
    g = ToolCallGuard.from_config({"policy": "mind2web_sc", "fields": M2W_FIELDS})
    ctx = Context(metadata={"user_info": {**ADULT, "age": 16}})
    assert g.check(ctx, ToolCall("book_hotel")).decision is Decision.REJECT
    assert g.check(ctx, ToolCall("rent_car")).decision is Decision.ALLOW
    shipped = ToolCallGuard.from_config({"policy": "mind2web_sc", "extractor": "mind2web_sc"})
    task = Context(metadata={"task": "Book a hotel in Rome", "user_info": {**ADULT, "age": 16}})
    assert shipped.check(task, ToolCall("click")).decision is Decision.REJECT
    by_path = ToolCallGuard.from_config({"policy": "mind2web_sc", "extractor":
                                         "agentguard.policies.library.extractors.mind2web_sc:extractor"})
    assert by_path.check(task, ToolCall("click")).decision is Decision.REJECT


def test_bad_tables_are_clear_errors():
    with pytest.raises(InputError, match="unknown key"):
        ToolCallGuard.from_config({"policy": "mind2web_sc", "extractor": "mind2web_sc", "polcy": 1})
    with pytest.raises(InputError, match="missing 'policy'"):
        ToolCallGuard.from_config({"fields": M2W_FIELDS})
    with pytest.raises(InputError, match="not both"):
        ToolCallGuard.from_config({"policy": "mind2web_sc", "extractor": "mind2web_sc", "fields": M2W_FIELDS})
    with pytest.raises(InputError, match="given twice"):
        transfer(fields={"limit": {"from": "constant", "value": 5}})
    with pytest.raises(InputError, match="missing \\['limit'\\]"):
        ToolCallGuard.from_config({"policy": str(TRANSFER), "arguments": {"amount": "amount"}})
    with pytest.raises(InputError, match="no shipped policy"):
        ToolCallGuard.from_config({"policy": "nope", "extractor": "mind2web_sc"})
    with pytest.raises(InputError, match="unknown_tool"):
        transfer(unknown_tool="maybe")
    with pytest.raises(InputError, match="tools"):
        transfer(tools=[])
    digest = load_policy(TRANSFER).digest
    assert transfer(verified_digest=digest)
    with pytest.raises(PolicyError, match="refusing to run unverified code"):
        transfer(verified_digest="0" * 12)


def test_config_file_and_code_build_the_same_guard():
    """The python-factory path of agentguard.config goes through the same from_config."""
    params = {"policy": "mind2web_sc", "fields": M2W_FIELDS}
    via_config = build_guard(GuardSpec("python", {"factory": "agentguard.policies:ToolCallGuard", **params}))
    direct = ToolCallGuard.from_config(params)
    assert repr(via_config) == repr(direct)
    for tool in ("rent_car", "book_hotel", "send_email"):
        for user in ({}, {"dr_license": False}, {"age": 12}, {"age": "x"}):
            ctx = Context(metadata={"user_info": {**ADULT, **user}})
            a, b = via_config.check(ctx, ToolCall(tool)), direct.check(ctx, ToolCall(tool))
            assert (a.decision, a.reason, a.guard) == (b.decision, b.reason, b.guard)


def test_field_rules():
    call = ToolCall("pay", {"order": {"amount": 7}, "flag": "yes"})
    ctx = Context(metadata={"user": {"tier": "gold"}})
    assert FieldRule("a", {"from": "argument", "key": "order.amount"}).read(call, ctx) == 7
    assert FieldRule("t", {"from": "metadata", "key": "user.tier", "map": {"gold": 2}}).read(call, ctx) == 2
    assert FieldRule("t", {"from": "tool", "map": {"refund": 1}, "default": 0}).read(call, ctx) == 0
    assert FieldRule("c", {"from": "constant", "value": 3}).read(call, ctx) == 3
    with pytest.raises(PolicyError, match="no value in the request"):
        FieldRule("m", {"from": "argument", "key": "missing"}).read(call, ctx)
    with pytest.raises(PolicyError):   # a value outside the map, without default, fails closed
        FieldRule("f", {"from": "argument", "key": "flag", "map": {"no": 0}}).read(call, ctx)
    for bad, msg in (({"from": "eval"}, "'from' must be one of"), ({"from": "argument"}, "needs a 'key'"),
                     ({"from": "constant"}, "needs a 'value'"), ({"from": "tool", "x": 1}, "unknown key"),
                     ({"from": "tool", "map": [1]}, "'map' must be a table")):
        with pytest.raises(InputError, match=msg):
            FieldRule("f", bad)


def test_every_shipped_policy_ships_its_extractor():
    options = {"asb_declared_tools": {"registry": {"sys_monitor": 7, "read_chart": 3}}}
    for path in shipped_policies():
        ex = library_extractor(path.stem, **options.get(path.stem, {}))
        assert callable(getattr(ex, "extract", None)), path.stem
    g = ToolCallGuard([PolicyBinding(load_policy(library_path("asb_declared_tools")),
                                     library_extractor("asb_declared_tools", **options["asb_declared_tools"]))])
    assert g.check(Context(metadata={"declared_ids": [3, 7]}), ToolCall("sys_monitor")).allowed
    assert g.check(Context(metadata={"declared_tools": ["read_chart"]}), ToolCall("read_chart")).allowed
    assert not g.check(Context(metadata={"declared_tools": ["read_chart"]}), ToolCall("sys_monitor")).allowed
    assert not g.check(Context(metadata={"declared_ids": [3]}), ToolCall("exfiltrate")).allowed
    assert not g.check(Context(), ToolCall("read_chart")).allowed   # no declared list: fail closed
    with pytest.raises(InputError, match="no shipped policy"):
        library_extractor("nope")


def test_shipped_guards_keep_the_guard_contract():
    from agentguard.testing import check_guard

    ctx = Context(metadata={"task": "Book a hotel in Rome", "user_info": ADULT})
    check_guard(ToolCallGuard.from_config({"policy": "mind2web_sc", "extractor": "mind2web_sc"}), [ctx],
                [ToolCall("click", {"element": "Book"}), ToolCall("rent_car")])
    check_guard(transfer(), proposals=[ToolCall("transfer_funds", {"amount": 5}), ToolCall("send_email")])
