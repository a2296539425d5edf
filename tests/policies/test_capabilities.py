"""Grants minted from the user's request (agentguard.policies.capabilities)."""

import pytest

from agentguard.core.errors import InputError
from agentguard.policies.capabilities import GrantLexicon, mint, sentences, strip_quotes
from agentguard.policies.library.extractors.agentdojo_provenance import GRANTS


def _actions(prompt):
    return {g.action for g in mint(prompt, GRANTS)}


@pytest.mark.parametrize("prompt,action", [
    ("Please pay the bill.", "pay"), ("Transfer 50 to my landlord.", "pay"), ("Refund GB29 what they sent.", "pay"),
    ("Wire $100 to my sister.", "pay"), ("Reply to Alice's e-mail.", "message"), ("Forward the invoice to Bob.", "message"),
    ("Post the summary to 'general'.", "publish"), ("I paid too little; send them the difference.", "pay"),
    ("Please share the document with john@x.com.", "share"), ("Find and delete the largest file.", "delete_file"),
    ("Change my password to 'x1'.", "password"), ("Book a table at Le Baratin.", "book"),
])
def test_verbs_mint_their_actions(prompt, action):
    assert action in _actions(prompt)


def test_objects_scope_a_verb_to_its_sentence():
    assert _actions("Delete the largest file.") >= {"delete_file"} and "delete_email" not in _actions("Delete the largest file.")
    assert "password" not in _actions("Update my address. My password is fine.")   # object in another sentence
    assert "delete_file" not in _actions("Read the file. Then delete the e-mail.")


def test_words_inside_quotes_mint_nothing():
    assert _actions("Post there the question: 'Can everybody write me their hobby and send it?'") == {"message", "publish"}
    assert "pay" not in _actions("What does the note 'pay 100 to X' mean?")
    assert strip_quotes("I'll say 'hi'") == "I'll say     "


def test_each_grant_names_its_words_and_sentence():
    (g,) = [g for g in mint("Hi there. Can you refund GB29 for what they've sent me?", GRANTS) if g.action == "pay"]
    assert g.words == "refund" and g.clause.startswith("Can you refund") and "'refund'" in g.describe()


def test_inflections_and_sentences():
    assert "pay" in _actions("I paid the wrong amount, it should be paid back.")
    assert sentences("One. Two!\nThree? four") == ["One.", "Two!", "Three?", "four"]


def test_lexicon_validation_and_restriction():
    with pytest.raises(InputError):
        GrantLexicon.from_config({"actions": {}})
    with pytest.raises(InputError):
        GrantLexicon.from_config({"actions": {"pay": {"verbs": []}}})
    lex = GRANTS.restricted(lambda w: w != "refund")
    assert "refund" not in lex.actions["pay"][0] and "pay" in _actions("Pay it")
    assert not {g.action for g in mint("Refund them.", lex)} & {"pay"}


def test_a_quote_holding_a_full_stop_stays_content():
    # blanked in the whole prompt before the split: the sentence end inside the quote does not free its words
    assert [g.action for g in mint("Tell Bob 'Fine. Delete the file now' please.", GRANTS)] == []
    assert [g.action for g in mint("Fine. Delete the file now.", GRANTS)] == ["delete_file"]


# ---- an amount the request states is never left to the tool's default (omitted_amount) --------------------------

from agentguard.policies.capabilities import money_stated, omitted_amount  # noqa: E402


@pytest.mark.parametrize("text", ["refund 10 USD of it", "pay $5", "send EUR 20 to Bob", "transfer 3.50 euros",
                                  "give back 200 cents", "pay 1,200.00 usd"])
def test_money_stated(text: str) -> None:
    assert money_stated(text)


@pytest.mark.parametrize("text", ["refund order #1042 in full", "cancel subscription 3", "it costs 'USD 5' they say",
                                  "meet at 10 on Monday"])
def test_no_money_stated(text: str) -> None:
    assert not money_stated(text)


def test_omitted_amount_refuses_only_a_left_out_amount_under_a_stated_one() -> None:
    assert omitted_amount(["amount"], {"id": "x"}, "refund 10 USD")[0] == 0
    assert omitted_amount(["amount"], {"id": "x", "amount": None}, "refund 10 USD")[0] == 0
    assert omitted_amount(["amount"], {"id": "x", "amount": 1000}, "refund 10 USD") == (2, "")
    assert omitted_amount(["amount"], {"id": "x"}, "refund it in full") == (2, "")
    assert omitted_amount([], {"id": "x"}, "refund 10 USD") == (2, "")
