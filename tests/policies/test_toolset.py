"""Tool declarations per tool set (agentguard.policies.toolset): declared, never trusted by field name."""

import json

import pytest

from agentguard.core.errors import InputError
from agentguard.policies.library.extractors.agentdojo_provenance import AGENTDOJO_TOOLS, TOOLS_FILE
from agentguard.policies.toolset import ToolSet


def test_every_declared_result_field_names_a_role_and_no_field_is_trusted_by_name_everywhere():
    data = json.loads(TOOLS_FILE.read_text())
    roles = set().union(*data["roles"].values())
    for name, d in AGENTDOJO_TOOLS.tools.items():
        assert set(d.results.values()) <= roles | {"filename", "size"}, name
        assert set(d.args.values()) <= roles, name
    # the fields the issue names as third-party are trusted in no tool
    for d in AGENTDOJO_TOOLS.tools.values():
        assert not {"sender", "participants", "owner", "shared_with", "body", "content", "subject"} & set(d.results)


@pytest.mark.parametrize("tool,args,kind", [
    ("get_url", ["url"], "fetch"), ("fetch_json", ["url"], "fetch"), ("get_weather", ["city"], "read"),
    ("delete_everything", [], "delete"), ("send_fax", ["to", "body"], "send"), ("frobnicate", ["x"], "write"),
])
def test_generic_declaration_fails_closed(tool, args, kind):
    d = AGENTDOJO_TOOLS.decl(tool, args)
    assert d.kind == kind and not d.declared and not d.results and not d.whole
    assert d.role("to") == "unknown" if "to" in args else True
    assert d.role("body") == "text" if "body" in args else True


def test_generic_actions_come_from_the_lexicon():
    assert "pay" in AGENTDOJO_TOOLS.decl("pay_invoice", ["iban"]).actions
    assert AGENTDOJO_TOOLS.decl("frobnicate", []).actions == ()


def test_bad_kind_is_refused_and_restriction_drops_declarations():
    with pytest.raises(InputError):
        ToolSet.from_config({"tools": {"x": {"kind": "maybe"}}})
    r = AGENTDOJO_TOOLS.restricted({"send_money"})
    assert r.decl("send_money").declared and not r.decl("send_email", ["recipients"]).declared


# Found by the lead's review of the generic rule: a read verb made a free read whatever its arguments chose
# (get(method="POST", endpoint="/transfer"), query(sql="DROP TABLE users")) or moved (load_funds(amount=100)),
# and "open"/"load" were read verbs (open_door).
@pytest.mark.parametrize("tool,args", [
    ("get", ["method", "endpoint"]), ("get_resource", ["HTTP-Method", "path"]), ("query", ["sql"]),
    ("query_db", ["sqlQuery"]), ("run_query", ["statement"]), ("check_host", ["command"]),
    ("fetch_data", ["operation", "id"]), ("get_payment", ["amount"]), ("open_door", []), ("load_funds", ["amount"]),
    ("open_account", ["name"]), ("load_balance_card", ["card"]),
])
def test_a_read_that_chooses_its_effect_is_not_a_read(tool: str, args: list[str]) -> None:
    ts = ToolSet.load(TOOLS_FILE)
    assert ts.generic(tool, args).kind != "read", (tool, args)


@pytest.mark.parametrize("tool,args", [("get_weather", ["city", "zip_code"]), ("search_files", ["query"]),
                                       ("list_channels", []), ("get_method_docs", ["topic"]),
                                       ("open_file", ["path"]), ("load_page", ["page_id"])])
def test_a_plain_read_stays_a_read(tool: str, args: list[str]) -> None:
    assert ToolSet.load(TOOLS_FILE).generic(tool, args).kind == "read"
