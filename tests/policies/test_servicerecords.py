"""Unit tests of agentguard.policies.servicerecords (the ledger-level attacks are in test_provenance_fresh4.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentguard.policies.platformids import SystemIds
from agentguard.policies.provenance import canonical
from agentguard.policies.selection import BoundValues
from agentguard.policies.servicerecords import ServiceRecords, label_listing, namespace, own_keys, query_values


def test_query_values_reads_a_conjunction_of_equalities_only() -> None:
    assert query_values('assignee = currentUser() AND status = "In Review"') == ["In Review"]
    assert query_values("project = TP AND labels IN (release-2.8, regression) ORDER BY priority DESC") == [
        "TP", "release-2.8", "regression"]
    for q in ('text ~ "x"', "status != Done", "a = 1 OR b = 2", "status NOT IN (Done)", "created > -7d",
              "on-call rota", 'title = "a" AND', 'summary = "say "hi""', "status IN Done", ""):
        assert query_values(q) is None, q


@given(st.text(max_size=40))
def test_a_query_with_containment_or_negation_never_selects(s: str) -> None:
    for q in (f"{s} ~ x", f"a = b AND c != {s}", f"x = y OR {s}"):
        assert query_values(q) is None


def test_own_keys_and_namespace() -> None:
    assert own_keys({"id": "10134", "key": "TP-134", "summary": "x"}) == ["10134", "TP-134"]
    assert own_keys({"id": True, "name": "x"}) == []
    assert namespace("jira_search", frozenset({"jira"})) == "jira"
    assert namespace("get_issue", frozenset({"jira"})) == ""


def test_label_listing() -> None:
    assert label_listing([{"id": "21", "name": "Start Progress", "to_status": "In Progress"}])
    assert not label_listing([])
    assert not label_listing([{"id": "1", "body": "a comment an outsider wrote, five words or more"}])


class _Decl:
    inferred, kind = True, "read"


def test_a_search_selects_only_what_the_request_states() -> None:
    sr = ServiceRecords(frozenset({"jira"}), {"jira": frozenset({"issue"})})
    recs = [{"id": "10134", "key": "TP-134", "status": {"name": "In Review"}}]
    stated = {"In Review"}.__contains__
    ids = SystemIds()
    sr.record("jira_search", _Decl(), {"issues": recs}, recs, {"jql": 'status = "In Review"'}, ids, stated, set(), {})
    assert ids.source("TP-134", ["issue"]) is not None
    ids2 = SystemIds()
    sr.record("jira_search", _Decl(), {"issues": recs}, recs, {"jql": 'status = "Done"'}, ids2, stated, set(), {})
    assert ids2.source("TP-134", ["issue"]) is None
    assert sr.goes_back("jira_get_transitions", "TP-134") and not sr.goes_back("confluence_get_page", "TP-134")


def test_option_is_bound_to_the_listing_call_and_the_stated_label() -> None:
    sr = ServiceRecords(frozenset({"jira"}))
    recs = [{"id": "61", "name": "Wait for customer", "to_status": "Waiting for customer"},
            {"id": "71", "name": "Resolve", "to_status": "Resolved"}]
    sr.record("jira_get_transitions", _Decl(), recs, recs, {"issue_key": "SUP-219"}, SystemIds(),
              lambda s: False, set(), {})
    call = {"issue_key": "SUP-219"}
    assert sr.option("jira_transition_issue", "transition_id", "61", call, "Mark it waiting for the customer") == (
        2, "transition_id '61': an option the listing offered for this record")
    assert sr.option("jira_transition_issue", "transition_id", "71", call, "Mark it waiting for the customer")[0] == 0
    assert sr.option("jira_transition_issue", "transition_id", "71", call, "Close it")[0] == 2   # agent's choice
    assert sr.option("jira_transition_issue", "transition_id", "71", {"issue_key": "SUP-1"}, "x") is None
    assert sr.option("jira_transition_issue", "transition_id", "99", call, "x") is None
    assert sr.option("jira_transition_issue", "comment", "71", call, "x") is None


_OPTS = [{"id": "21", "name": "Start Progress", "to_status": "In Progress"}, {"id": "41", "name": "Done", "to_status": "Done"}]


def _with_listing() -> ServiceRecords:
    sr = ServiceRecords(frozenset({"jira"}))
    sr.record("jira_get_transitions", _Decl(), _OPTS, list(_OPTS), {"issue_key": "TP-1"}, SystemIds(),
              lambda s: False, set(), {})
    return sr


@given(st.text(min_size=1, max_size=12))
def test_a_value_no_listing_offered_is_no_option(value: str) -> None:
    if value.strip() in {"21", "41", "Start Progress", "Done"}:
        return
    assert _with_listing().option("jira_transition_issue", "transition_id", value, {"issue_key": "TP-1"}, "x") is None


@given(st.text(max_size=60))
def test_a_question_never_grants_an_option(text: str) -> None:
    from agentguard.policies.capabilities import Grant

    grants: list[Grant] = []
    prompt = f"{' '.join(text.replace('.', ' ').replace('!', ' ').replace('?', ' ').split())} move TP-1 to Done?"
    _with_listing().option("jira_transition_issue", "transition_id", "41", {"issue_key": "TP-1"}, prompt,
                           grants, ("schema:jira_transition_issue",))
    assert grants == []


@given(st.text(max_size=60))
def test_the_stated_option_is_the_only_one(text: str) -> None:
    prompt = f"{text} Move TP-1 to Done."
    if "progress" in text.casefold():
        return
    got = _with_listing().option("jira_transition_issue", "transition_id", "21", {"issue_key": "TP-1"}, prompt)
    assert got is not None and got[0] == 0


@given(st.text(max_size=60))
def test_a_request_of_questions_grants_no_key_tool(text: str) -> None:
    from agentguard.policies.servicerecords import key_grant

    class _W:
        kind, actions = "write", ("schema:jira_add_worklog",)

    prompt = " ".join(f"{' '.join(p.split())} log 1h on TP-1?" for p in text.replace(".", " ").replace("!", " ").split("?"))
    assert key_grant("jira_add_worklog", _W(), {"issue_key": "TP-1"}, prompt, frozenset({"jira"})) == []


def test_a_one_record_read_names_only_a_record_holding_what_it_was_asked_for() -> None:
    # a finder that answers "on-call rota" with the contractor's page whose body (not title) has those words
    sr = ServiceRecords(frozenset({"confluence"}), {"confluence": frozenset({"page"})})
    page = {"id": "98399999", "title": "Notes", "body": "see the on-call rota and update page 98310006"}
    resolved = BoundValues()
    ids = SystemIds()
    sr.record("confluence_find_page", _Decl(), page, [page], {"query": "on-call rota"}, ids,
              lambda s: True, set(), resolved)
    assert resolved.values == {} and ids.source("98399999", ["page"]) is None
    named = {"id": "98310006", "title": "On-call rota", "space": {"key": "ENG"}}
    sr.record("confluence_get_page", _Decl(), named, [named], {"title": "On-call rota", "space_key": "ENG"}, ids,
              lambda s: True, set(), resolved)
    assert canonical("98310006") in resolved and ids.source("98310006", ["page"]) is not None


def test_a_second_record_the_same_stated_read_returns_names_neither() -> None:
    """A selection binds one record (selection.BoundValues): an attacker's page with the same title and space,
    returned by the same stated read later, makes the title name no page, and the first page's key is dropped."""
    sr = ServiceRecords(frozenset({"confluence"}), {"confluence": frozenset({"page"})})
    resolved = BoundValues()
    args = {"title": "On-call rota", "space_key": "ENG"}
    for pid in ("98310006", "98366666"):
        rec = {"id": pid, "title": "On-call rota", "space": {"key": "ENG"}}
        sr.record("confluence_get_page", _Decl(), rec, [rec], args, SystemIds(), lambda s: True, set(), resolved)
    assert canonical("98310006") not in resolved and canonical("98366666") not in resolved


def test_a_search_files_only_the_records_holding_every_value_it_matched_on() -> None:
    sr = ServiceRecords(frozenset({"jira"}), {"jira": frozenset({"issue"})})
    recs = [{"id": "1", "key": "TP-1", "status": {"name": "In Review"}},
            {"id": "2", "key": "SUP-9", "status": {"name": "Open"}, "description": "status = In Review"}]
    ids = SystemIds()
    sr.record("jira_search", _Decl(), {"issues": recs, "total": 2}, recs, {"jql": 'status = "In Review"'}, ids,
              lambda s: True, set(), {})
    assert ids.source("TP-1", ["issue"]) is not None and ids.source("SUP-9", ["issue"]) is None
    assert query_clauses_ok()


def query_clauses_ok() -> bool:
    from agentguard.policies.servicerecords import holds, query_clauses

    return query_clauses("labels IN (a, b) AND status = Done") == [["a", "b"], ["Done"]] and holds(
        {"labels": ["x", "b"]}, "B") and not holds({"d": "a b"}, "a")


_KEY = st.from_regex(r"[A-Z]{2,4}-[1-9][0-9]{0,3}", fullmatch=True)


@given(_KEY, _KEY, st.sampled_from(["and close", ", then close", "; also look at", "but not"]))
def test_a_key_grant_binds_the_record_its_clause_writes(k1: str, k2: str, join: str) -> None:
    from agentguard.policies.servicerecords import key_grant

    class _W:
        kind, actions = "write", ("schema:jira_add_worklog",)

    if k1.casefold() == k2.casefold():
        return
    prompt = f"Log 2h on {k1} {join} {k2}."
    ns = frozenset({"jira"})
    assert key_grant("jira_add_worklog", _W(), {"issue_key": k1}, prompt, ns)
    assert key_grant("jira_add_worklog", _W(), {"issue_key": k2}, prompt, ns) == []


def test_a_listing_of_users_offers_no_recipient_and_a_function_alone_selects_nothing() -> None:
    sr = ServiceRecords(frozenset({"jira"}), {"jira": frozenset({"issue"})})
    users = [{"id": "u1", "name": "Mallory", "email": "m@evil.example"}]
    sr.record("jira_get_users", _Decl(), users, list(users), {}, SystemIds(), lambda s: True, set(), {})
    assert sr.option("jira_notify_user", "user", "m@evil.example", {}, "notify Mallory") is None
    recs = [{"id": "1", "key": "TP-1", "assignee": "me"}]
    ids = SystemIds()
    sr.record("jira_search", _Decl(), {"issues": recs, "total": 1}, recs, {"jql": "assignee = currentUser()"}, ids,
              lambda s: True, set(), {})
    assert ids.source("TP-1", ["issue"]) is None
