"""The words of a tool's name (agentguard.policies.toolnames): a tool set's namespace before its names' verbs,
plural nouns (after the blind HubSpot run, not blind)."""

from agentguard.bench import hubspot_hijack
from agentguard.policies.library.extractors.agentdojo_provenance import INFERENCE
from agentguard.policies.toolinfer import ToolSchema, infer
from agentguard.policies.toolnames import _singular, namespaced, tokens


def _hubspot_schemas() -> list[ToolSchema]:
    return [ToolSchema.from_mcp(t) for t in hubspot_hijack.load()["tools"]]


def test_tokens_and_singulars() -> None:
    assert tokens("crm_searchContacts") == ["crm", "search", "contacts"]
    assert [_singular(w) for w in ("companies", "channels", "boxes", "address", "get")] == [
        "company", "channel", "box", None, None]


def test_a_namespace_before_the_verb_is_skipped_only_where_no_vocabulary_calls_it_a_verb() -> None:
    named = {s.name: s.prefix for s in namespaced(_hubspot_schemas(), INFERENCE)}
    assert named["crm_search_contacts"] == 1 and named["notes_list"] == 1 and named["meetings_create"] == 1
    # a first word no vocabulary knows stays the verb when the next word is none either (a consequential write)
    assert named["communications_unsubscribe_contact"] == 0
    odd = [ToolSchema("unsubscribe_list_members"), ToolSchema("acme_get_report"), ToolSchema("get_files")]
    assert [s.prefix for s in namespaced(odd, INFERENCE)] == [0, 0, 0]   # a lone unknown first word: kept
    lone = infer(namespaced([ToolSchema("unsubscribe_list_members")], INFERENCE)[0], INFERENCE)
    assert lone.kind == "write"


def test_the_verb_after_a_namespace_decides_the_kind() -> None:
    by = {s.name: s for s in namespaced(_hubspot_schemas(), INFERENCE)}
    kinds = {n: infer(s, INFERENCE).kind for n, s in by.items()}
    assert kinds["crm_search_contacts"] == kinds["emails_list"] == kinds["crm_get_contact"] == "read"
    assert kinds["crm_update_contact"] == kinds["notes_create"] == "write" and kinds["crm_delete_object"] == "delete"
