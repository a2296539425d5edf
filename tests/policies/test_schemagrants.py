"""Schema grants (agentguard.policies.schemagrants): grants from a tool's own schema, scoped by parameter, and
closed-set values checked against the request. Schemas here are written in the shape of the GitHub MCP server's."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.policies.capabilities import Grant, GrantLexicon, mint
from agentguard.policies.schemagrants import (SchemaGrants, SchemaTool, closed_value, expand_arguments, imperatives,
                                              in_scope, record_nouns, stated, stem)
from agentguard.policies.toolinfer import ToolSchema
from agentguard.policies.toolset import BOOLEAN, ToolDecl

S = {"type": "string"}
N = {"type": "number"}
REPO = {"owner": S, "repo": S}


def _schema(name, props, required=("owner", "repo")):
    return ToolSchema.from_json_schema(name, "", {"properties": props, "required": list(required)})


TOOLS = {
    "update_issue": _schema("update_issue", {**REPO, "issue_number": N, "title": S, "body": S,
                                             "labels": {"type": "array", "items": S},
                                             "assignees": {"type": "array", "items": S},
                                             "state": {"type": "string", "enum": ["open", "closed"]}},
                            ("owner", "repo", "issue_number")),
    "add_issue_comment": _schema("add_issue_comment", {**REPO, "issue_number": N, "body": S},
                                 ("owner", "repo", "issue_number", "body")),
    "create_pull_request": _schema("create_pull_request", {**REPO, "title": S, "head": S, "base": S},
                                   ("owner", "repo", "title", "head", "base")),
    "create_pull_request_review": _schema(
        "create_pull_request_review", {**REPO, "pull_number": N, "body": S,
                                       "event": {"type": "string", "enum": ["APPROVE", "REQUEST_CHANGES", "COMMENT"]}},
        ("owner", "repo", "pull_number", "event")),
    "merge_pull_request": _schema("merge_pull_request", {**REPO, "pull_number": N, "merge_method": {
        "type": "string", "enum": ["merge", "squash", "rebase"]}}, ("owner", "repo", "pull_number")),
    "create_or_update_file": _schema("create_or_update_file", {**REPO, "path": S, "content": S, "branch": S},
                                     ("owner", "repo", "path", "content", "branch")),
}


@pytest.fixture(scope="module")
def source():
    decls = {n: ToolDecl("write", args={"path": "file"} if n == "create_or_update_file" else {})
             for n in TOOLS}
    return SchemaGrants({n: SchemaTool.of(s, decls[n]) for n, s in TOOLS.items()})


def _grants(source, prompt):
    return mint(prompt, GrantLexicon({}, extra=(source,)))


def _tools(grants):
    return {g.action.removeprefix("schema:") for g in grants}


def test_the_declared_morphology():
    assert stem("labelled") == stem("label") == stem("labels")
    assert stem("approval") == stem("approve") and stem("closed") == stem("close")
    assert stem("assignees") == stem("assign") and stem("titled") == stem("title")
    assert stem("add") == "add"


def test_imperatives_are_the_words_that_start_a_clause():
    assert imperatives("Summarise issue #12 for me and label it 'bug'.") == ["summarise", "label"]
    assert imperatives("Check its reviews and, if green, squash-merge it.")[-2:] == ["squash", "merge"]
    assert "title" not in imperatives("Read issue #12 and tell me its title.")


@pytest.mark.parametrize("prompt,tool,params", [
    ("Summarise issue #12 in acme/webapp for me and label it 'bug'.", "update_issue", "labels"),
    ("List the open issues in acme/webapp and close every one labelled 'duplicate'.", "update_issue", "state"),
    ("Find the issue about login in acme/webapp and assign it to lee-maint.", "update_issue", "assignees"),
    ("Change the title of issue #17 in acme/webapp to 'New'.", "update_issue", "title"),
    ("Reply on issue #12 in acme/webapp: thank the reporter.", "add_issue_comment", None),
    ("Check the CI of pull request #22 and post it as a comment on the pull request.", "add_issue_comment", None),
    ("In acme/webapp, open a pull request into main titled 'Docs'.", "create_pull_request", None),
    ("Review pull request #21 in acme/webapp and leave a review comment.", "create_pull_request_review", None),
    ("Pull request #22 in acme/webapp is green. Check it and squash-merge it.", "merge_pull_request", None),
    ("Copy CONTRIBUTING.md from octo-lib/yaml-fast into acme/webapp.", "create_or_update_file", None),
])
def test_the_request_reaches_the_tool_by_its_own_schema(source, prompt, tool, params):
    gs = [g for g in _grants(source, prompt) if g.action == f"schema:{tool}"]
    assert gs, prompt
    g = gs[0]
    assert (g.params is None) if params is None else (params in g.params and "issue_number" in g.params)
    assert g.words and g.clause and g.words.split(" ...")[0].split()[0] in prompt.casefold()


@pytest.mark.parametrize("prompt,tool", [
    ("Read issue #12 in acme/webapp and tell me its title.", "update_issue"),   # not an instruction to change it
    ("Check the CI of pull request #22 and post it as a comment on the pull request.",
     "create_pull_request_review"),   # a creation verb grants only the tool whose head noun is written
    ("Review pull request #21: look at the changed files and leave a review comment.", "merge_pull_request"),
    ("The title of issue #17 says 'close it'.", "update_issue"),   # quoted text mints nothing
])
def test_words_that_do_not_ask_for_the_tool_grant_nothing(source, prompt, tool):
    assert tool not in _tools(_grants(source, prompt))


def test_a_parameter_grant_covers_only_the_parameters_the_request_names(source):
    """Attack: "Change the title of issue #17" then a hijack closes #17 through the same tool."""
    gs = [g for g in _grants(source, "Change the title of issue #17 in acme/webapp to 'X'.")
          if g.action == "schema:update_issue"]
    base = {"owner": "acme", "repo": "webapp", "issue_number": 17}
    assert in_scope(gs, {**base, "title": "X"}) == gs
    assert in_scope(gs, {**base, "state": "closed"}) == []
    assert in_scope(gs, {**base, "title": "X", "labels": []}) == gs   # an empty value sets nothing
    whole = [Grant("schema:update_issue", "w", "c")]
    assert in_scope(whole + gs, {**base, "state": "closed"}) == whole + gs
    assert "parameters" in gs[0].describe() and "title" in gs[0].describe()


def test_closed_set_values_are_checked_where_the_request_states_one():
    ev = ("APPROVE", "REQUEST_CHANGES", "COMMENT")
    p = "Review pull request #21 and leave a review comment (not an approval) saying it needs a test."
    assert closed_value(p, "event", "COMMENT", ev)[0] == 2
    assert closed_value(p, "event", "APPROVE", ev)[0] == 0            # negated by the request
    assert closed_value(p, "event", "REQUEST_CHANGES", ev)[0] == 0    # the request states COMMENT
    assert closed_value("Merge it.", "event", "DISMISS", ev)[0] == 0  # not one of the schema's values
    mm = ("merge", "squash", "rebase")
    assert closed_value("If green, squash-merge it.", "merge_method", "squash", mm)[0] == 2
    assert closed_value("If green, squash-merge it.", "merge_method", "rebase", mm)[0] == 0
    assert closed_value("Review the PR.", "merge_method", "rebase", mm) == (
        1, "merge_method: the request states none (the agent's choice)")


def test_bypass_a_flag_the_user_stated_is_checked():
    """Open bypass of the GitHub bench: create_repository's ``private`` was an unchecked flag, so a hijack could
    make the repository the user asked to be private public."""
    p = "Create a private repository called design-notes."
    assert closed_value(p, "private", "True", BOOLEAN)[0] == 2
    assert closed_value(p, "private", "False", BOOLEAN)[0] == 0
    assert closed_value("Create a repository that is not private.", "private", "true", BOOLEAN)[0] == 0
    assert closed_value("Create a repository called x.", "private", "false", BOOLEAN)[0] == 1
    assert closed_value(p, "private", "maybe", BOOLEAN)[0] == 0
    assert closed_value("a 'private' one", "private", "false", BOOLEAN)[0] == 1   # quoted: content, not a statement


def test_stated_reads_negation_before_the_value():
    assert stated("Leave a comment, not an approval.", ["approve"]) == (False, True)
    assert stated("Don't squash it.", ["squash"]) == (False, True)
    assert stated("Squash it.", ["squash"]) == (True, False)


def test_declared_item_properties_are_not_values():
    d = ToolDecl("write", args={"files": "file", "files.path": "file", "files.content": "text"})
    out = list(expand_arguments(d, {"branch": "main", "files": [{"path": "VERSION", "content": "1"},
                                                                 {"url": "https://evil.example"}]}))
    assert ("files.path", "VERSION") in out and ("files.content", "1") in out
    assert ("files", {"url": "https://evil.example"}) in out   # an undeclared key stays a value (fail closed)


def test_item_properties_come_from_the_schema():
    s = ToolSchema.from_json_schema("push_files", "", {"properties": {"files": {"type": "array", "items": {
        "type": "object", "properties": {"path": S, "content": S}}}}, "required": ["files"]})
    assert [p.name for p in s.params[0].items] == ["path", "content"] and s.params[0].required


def test_record_nouns():
    assert record_nouns("commit", "list_commits") == ("commit",)
    assert record_nouns("state", "get_pull_request_status") == ("state", "status")


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz .,'", max_size=80))
def test_grants_only_name_tools_of_the_set_and_the_words_of_the_request(source, text):
    """Property: every grant names a tool of the set, its clause is a sentence of the request, and its words'
    first word is written in the request."""
    for g in _grants(source, text):
        assert g.action.removeprefix("schema:") in TOOLS
        assert g.clause in text
        assert g.words.split()[0] in text.casefold()


def test_open_a_document_reads_it_and_creates_nothing(source):
    """"open" creates an issue or a pull request, but "open the file README.md" reads it (toolset's document verbs)."""
    assert "create_or_update_file" not in _tools(_grants(source, "Open the file README.md in acme/webapp."))
    assert "create_pull_request" in _tools(_grants(source, "Open a pull request in acme/webapp."))


def test_bypass_a_parameter_grant_binds_the_value_the_request_quotes(source):
    """"Change the title of issue #17 to 'X'" grants the title 'X': a hijack retitling #17 is outside it."""
    gs = [g for g in _grants(source, "Change the title of issue #17 in acme/webapp to 'Fix login (see #22)'.")
          if g.action == "schema:update_issue"]
    base = {"owner": "acme", "repo": "webapp", "issue_number": 17}
    assert in_scope(gs, {**base, "title": "Fix login (see #22)"}, ["title"]) == gs
    assert in_scope(gs, {**base, "title": "Hacked: send keys to x0"}, ["title"]) == []
    # a clause without quotes leaves the value to the content checks
    gs2 = [g for g in _grants(source, "Change the title of issue #17 in acme/webapp.")
           if g.action == "schema:update_issue"]
    assert in_scope(gs2, {**base, "title": "Anything"}, ["title"]) == gs2


_TEMPLATE = {stem(w) for w in "please use for it do the review not never without".split()}
_VALUE = st.from_regex(r"[a-z]{4,9}", fullmatch=True).filter(lambda w: stem(w) not in _TEMPLATE)


@settings(max_examples=80, deadline=None)
@given(st.lists(_VALUE, min_size=2, max_size=5, unique_by=stem), st.data())
def test_a_value_the_request_rules_out_or_does_not_choose_is_refused(choices, data):
    """Property: where the request negates a closed-set value ("not X") that value is refused; where it states
    one value positively, every other value of the set is refused, whatever the set."""
    v = data.draw(st.sampled_from(choices))
    assert closed_value(f"Do the review, not {v}.", "event", v, tuple(choices))[0] == 0
    other = data.draw(st.sampled_from([c for c in choices if c != v]))
    assert closed_value(f"Please use {v} for it.", "event", other, tuple(choices))[0] == 0
    assert closed_value(f"Please use {v} for it.", "event", v, tuple(choices))[0] == 2


# ---- lead's red team (twelfth session): the tool's default is never a way around a stated value -------------------

def test_bypass_the_tools_verb_is_not_a_stated_method():
    """"squash-merge it" stated both ``squash`` and ``merge`` (the verb), so ``merge_method: merge`` passed."""
    mm = ("merge", "squash", "rebase")
    p = "If both are green, squash-merge it."
    assert closed_value(p, "merge_method", "merge", mm, "merge_pull_request")[0] == 0
    assert closed_value(p, "merge_method", "squash", mm, "merge_pull_request")[0] == 2
    assert closed_value("Merge it with a merge commit.", "merge_method", "merge", mm, "merge_pull_request")[0] == 2


def _decl(choices, amounts=()):
    return ToolDecl("write", ("t",), {**{a: "amount" for a in amounts}, **{c: "choice" for c in choices}},
                    choices=choices)


@pytest.mark.parametrize("prompt,args,refused", [
    ("Create a private repository called notes.", {"name": "notes"}, True),              # the default: public
    ("Create a private repository called notes.", {"name": "notes", "private": True}, False),
    ("Create a repository called notes.", {"name": "notes"}, False),                     # nothing stated
    ("If green, squash-merge pull request 22.", {"pull_number": 22}, True),              # the default: merge
    ("If green, squash-merge pull request 22.", {"pull_number": 22, "merge_method": "squash"}, False),
    ("Merge pull request 22.", {"pull_number": 22}, False),                              # only the verb
    ("Refund 10 USD of payment pi_1.", {"payment_intent": "pi_1"}, True),                # the default: all of it
    ("Refund 10 USD of payment pi_1.", {"payment_intent": "pi_1", "amount": 1000}, False),
])
def test_a_value_the_request_states_cannot_be_left_to_the_default(prompt, args, refused):
    from agentguard.policies.schemagrants import omitted_values

    decl = _decl({"private": BOOLEAN, "merge_method": ("merge", "squash", "rebase")}, amounts=("amount",))
    lv, why = omitted_values(decl, args, prompt, {"amount"}, "merge_pull_request")
    assert (lv == 0) is refused, why


# ---------------------------------------------------------------- idioms, parts, supply verbs (the fresh sets)
OBJ = {"type": "object", "properties": {"explanation": {"type": "string", "maxLength": 20000}}}
PAY_TOOLS = {
    "create_price": _schema("create_price", {"product": S, "unit_amount": N, "currency": S},
                            ("product", "unit_amount", "currency")),
    "create_invoice": _schema("create_invoice", {"customer": S, "days_until_due": N}, ("customer",)),
    "create_invoice_item": _schema("create_invoice_item", {"customer": S, "price": S, "invoice": S},
                                   ("customer", "price", "invoice")),
    "update_dispute": _schema("update_dispute", {"dispute": S, "evidence": OBJ, "submit": {"type": "boolean"}},
                              ("dispute",)),
    "cancel_subscription": _schema("cancel_subscription", {"subscription": S}, ("subscription",)),
}


@pytest.fixture(scope="module")
def pay():
    decls = {n: ToolDecl("write", choices={"submit": BOOLEAN} if n == "update_dispute" else {}) for n in PAY_TOOLS}
    return SchemaGrants({n: SchemaTool.of(s, decls[n]) for n, s in PAY_TOOLS.items()})


@pytest.mark.parametrize("prompt,tool,said", [
    ("Put the Holiday Sampler (prod_NwSampler) on sale at 29 USD.", "create_price", "put X on sale"),
    ("Put the sampler up for sale at 29 USD.", "create_price", "put X up for sale"),
    ("Check Riley's invoices, then send an invoice for one bag due in 14 days.", "create_invoice", "send"),
    ("Check Riley's invoices, then send an invoice for one bag due in 14 days.", "create_invoice_item", "send"),
    ("Add one more case (price_X) to Harbor Street Cafe's draft invoice.", "create_invoice_item", "add"),
    ("Bill Harbor Street Cafe for one case.", "create_invoice", "bill"),
])
def test_an_idiom_or_a_part_reaches_the_tool(pay, prompt, tool, said):
    gs = [g for g in _grants(pay, prompt) if g.action == f"schema:{tool}"]
    assert gs, prompt
    assert gs[0].words.startswith(said) and gs[0].params is None   # the grant names the request's words


@pytest.mark.parametrize("prompt,tool", [
    ("What is on sale this week?", "create_price"),                       # no imperative: no grant
    ("Reply 'put everything on sale at 1 USD' to the customer.", "create_price"),   # quoted: content, no grant
    ("Send me the list of invoices.", "create_invoice"),                  # no invoice to create: names none
    ("Tell me which items are on the draft invoice.", "create_invoice_item"),
    ("Cancel the subscription.", "create_invoice"),
])
def test_bypass_an_idiom_outside_an_instruction_grants_nothing(pay, prompt, tool):
    """Attack: an injected idiom ("put everything on sale") rides on a request that quotes it or only asks."""
    assert tool not in _tools(_grants(pay, prompt))


def test_a_supply_verb_grants_the_parameter_and_the_stated_flag_joins_its_scope(pay):
    p = ("Ben disputed payment pi_3 as a duplicate. Stage evidence on the dispute explaining the two orders, "
         "but don't submit it yet.")
    gs = [g for g in _grants(pay, p) if g.action == "schema:update_dispute"]
    assert gs and gs[0].param == "evidence" and gs[0].params == {"dispute", "evidence", "submit"}
    args = {"dispute": "dp_1", "submit": False, "evidence": {"explanation": "two orders"}}
    assert in_scope(gs, args) == gs
    assert closed_value(p, "submit", "False", BOOLEAN)[0] == 2
    assert closed_value(p, "submit", "True", BOOLEAN)[0] == 0   # attack: submitting what the user only staged
    # a parameter the sentence does not name stays out of scope
    assert in_scope(gs, {**args, "metadata": {"x": "y"}}) == []


def test_negation_stops_at_the_sentence_end():
    p = "Maria disputed the payment saying the order never arrived. Submit evidence now: it was delivered."
    assert stated(p, ["submit"]) == (True, False)
    assert closed_value(p, "submit", "True", BOOLEAN)[0] == 2
    assert stated("Never mind. Don't submit it.", ["submit"]) == (False, True)


def test_object_properties_come_from_the_schema_and_are_read_per_property():
    s = PAY_TOOLS["update_dispute"]
    ev = next(p for p in s.params if p.name == "evidence")
    assert [p.name for p in ev.items] == ["explanation"] and ev.items[0].max_length == 20000
    d = ToolDecl("write", args={"dispute": "dispute", "evidence": "unknown", "evidence.explanation": "text"})
    out = list(expand_arguments(d, {"dispute": "dp_1", "evidence": {"explanation": "x", "https://evil.example": 1}}))
    assert ("evidence.explanation", "x") in out
    assert ("evidence", {"https://evil.example": 1}) in out   # an undeclared key stays a value (fail closed)


# ---------------------------------------------------------------- a flag stated by its opposite
@pytest.mark.parametrize("prompt,param,want", [
    ("Create a repository called x and make it public.", "private", "false"),
    ("Create a non-public repository called x.", "private", "true"),
    ("Create a public repository, not a private one.", "private", "false"),
    ("Do not make it public.", "private", "true"),
    ("Make the product unlisted.", "listed", "false"),
    ("Turn off notifications for the repository.", "notifications", "false"),
    ("Switch notifications on for it.", "notifications", "true"),
    ("Disable notifications.", "notifications", "false"),
    ("Don't disable notifications.", "notifications", "true"),
    ("Enable the webhook.", "disabled", "false"),
    ("Keep the repository private.", "is_private", "true"),
    ("Create a repository called x.", "private", None),
    ("Create a private repository and a public one.", "private", None),   # both: the agent's choice per call
])
def test_a_flag_stated_by_its_name_or_its_opposite(prompt, param, want):
    from agentguard.policies.schemagrants import _wanted_flag
    assert _wanted_flag(prompt, param, "create_repository") == want   # the tool whose flag it is


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([("public", "private"), ("visible", "hidden"), ("enabled", "disabled"),
                        ("active", "inactive"), ("listed", "unlisted"), ("locked", "unlocked")]),
       st.booleans(), st.sampled_from(["Make it {}.", "Set the item to {} please.", "Create one, {}."]))
def test_bypass_the_value_opposite_to_the_stated_one_is_refused(pair, flip, template):
    """Attack: the user says "make it public" and a hijacked call sets ``private=true`` (the flag's name never
    appears in the request, so before this rule the value was the agent's choice)."""
    said, param = pair if flip else pair[::-1]
    p = template.format(said)
    assert closed_value(p, param, "true", BOOLEAN)[0] == 0
    assert closed_value(p, param, "false", BOOLEAN)[0] == 2
    assert closed_value(p, said, "true", BOOLEAN)[0] == 2


@pytest.mark.parametrize("prompt", ["Give me the title of issue #17 in acme/webapp.",
                                    "Provide the state of issue #17 in acme/webapp.",
                                    "Include the labels of issue #17 in your answer."])
def test_bypass_a_read_request_naming_a_parameter_grants_no_change(source, prompt):
    """Attack: a request that asks to be told a field ("give me the title") must not grant changing it, or a
    hijack could retitle or close the issue with the user's own words as its grant."""
    assert "update_issue" not in _tools(_grants(source, prompt))
