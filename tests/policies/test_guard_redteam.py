"""Red team of the verified-policy gate (session 10): verdict type confusion and arguments read the way the tool
reads them. The gate allows only on an exact ``True`` / exact ``0`` of the declared type, computed from
exact-type arguments; everything else is a blocking verdict (REJECT), never an ALLOW and never a crash."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.core import Context, Decision, ToolCall
from agentguard.core.errors import PolicyError
from agentguard.policies import MappingExtractor, PolicyBinding, SpecExtractor, ToolCallGuard, policy_from_source
from agentguard.policies.model import PolicyResult

HEADER = "from nagini_contracts.contracts import *\nfrom typing import List\n\n"
INT_POLICY = policy_from_source(HEADER + """LIMIT = 1000

def check(amount: int, flagged: bool, blocked: List[int], dest: int) -> int:
    Requires(0 <= amount and amount <= 1000000)
    Requires(0 <= dest and dest <= 100)
    Ensures(Implies(amount > LIMIT or flagged or dest in blocked, Result() != 0))
    if amount > LIMIT or flagged or dest in blocked:
        return 1
    return 0
""")
BOOL_POLICY = policy_from_source(HEADER + """def check(amount: int) -> bool:
    Requires(0 <= amount and amount <= 1000000)
    Ensures(Implies(amount > 1000, not Result()))
    return amount <= 1000
""")
DENY_ARGS = {"amount": 10**6, "flagged": False, "blocked": [7], "dest": 3}


class LyingInt(int):
    """An int whose comparisons say whatever makes the policy allow."""

    def __gt__(self, other):
        return False

    def __lt__(self, other):
        return True

    def __le__(self, other):
        return True

    def __ge__(self, other):
        return True

    def __eq__(self, other):
        return False

    __hash__ = int.__hash__


class ShiftyList(list):
    """A list whose iteration shows the type check ints and the policy something else."""

    def __iter__(self):
        return iter([])

    def __contains__(self, item):
        return False


class Truthy:
    def __bool__(self):
        return True

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class Exploding:
    def __bool__(self):
        raise RuntimeError("boom")

    def __eq__(self, other):
        raise RuntimeError("boom")

    __hash__ = object.__hash__


def guard(policy, value_of):
    ext = MappingExtractor({k: (lambda c, ctx, k=k: value_of(k)) for k in policy.param_names})
    return ToolCallGuard([PolicyBinding(policy, ext)])


# -- arguments -------------------------------------------------------------------------------------------------

HOSTILE_ARGUMENTS = st.one_of(
    st.builds(LyingInt, st.integers(0, 10**6)), st.just(True), st.just(False), st.floats(allow_nan=True),
    st.just(math.nan), st.just(math.inf), st.integers(min_value=2**64), st.integers(max_value=-(2**64)),
    st.builds(ShiftyList, st.lists(st.integers(0, 100), min_size=1, max_size=3)),
    st.lists(st.booleans(), min_size=1, max_size=3), st.lists(st.builds(LyingInt, st.integers(0, 9)), min_size=1),
    st.text(max_size=5), st.none(), st.builds(Truthy), st.tuples(st.integers()),
    st.just(list(range(10_001))),
)


@settings(max_examples=250, deadline=None)
@given(field=st.sampled_from(["amount", "flagged", "blocked", "dest"]), value=HOSTILE_ARGUMENTS)
def test_an_argument_of_the_wrong_exact_type_never_allows(field, value):
    """Start from a call the policy denies and replace one argument by a value of the wrong *exact* type (an int
    subclass whose ``>`` says False, a bool for an int, NaN, a 2**64 int, a list whose iteration lies): the
    gate refuses (the policy never sees it), it never allows."""
    expected = {"amount": int, "flagged": bool, "blocked": list, "dest": int}[field]
    if type(value) is expected and (expected is not list or all(type(x) is int for x in value)) and (
            expected is not int or abs(value) < 2**64) and not (expected is list and len(value) > 10_000):
        return  # a well-typed value: not this property's business
    args = {**DENY_ARGS, field: value}
    v = guard(INT_POLICY, args.__getitem__).check(Context(), ToolCall("pay", {}))
    assert v.decision is Decision.REJECT
    assert "could not decide" in v.reason


def test_a_lying_int_was_the_bypass():
    """The attack that allowed before: ``LyingInt(10**6) > LIMIT`` is False, so the policy returned 0."""
    assert INT_POLICY.code.function("check")(LyingInt(10**6), False, [], 3) == 0  # what the raw code does
    with pytest.raises(PolicyError, match="must be int"):
        INT_POLICY.evaluate({**DENY_ARGS, "amount": LyingInt(10**6)})
    with pytest.raises(PolicyError, match="must be List"):
        INT_POLICY.evaluate({**DENY_ARGS, "amount": 5, "blocked": ShiftyList([3])})


def test_well_typed_arguments_still_decide():
    assert INT_POLICY.evaluate({**DENY_ARGS, "amount": 5, "blocked": []}).allow is True
    assert INT_POLICY.evaluate(DENY_ARGS).allow is False


# -- answers ------------------------------------------------------------------------------------------------------

ANSWERS = st.one_of(
    st.builds(LyingInt, st.integers(-3, 3)), st.builds(Truthy), st.builds(Exploding), st.none(), st.just(()),
    st.tuples(st.just(True)), st.just([0]), st.just("allowed"), st.just(""), st.floats(), st.just(0.0),
    st.just(1), st.just(0), st.just(True), st.just(False), st.integers(-5, 5),
)


@settings(max_examples=200, deadline=None)
@given(answer=ANSWERS, declared=st.sampled_from(["int", "bool"]))
def test_only_an_exact_allow_of_the_declared_type_allows(answer, declared):
    policy = INT_POLICY if declared == "int" else BOOL_POLICY
    try:
        res = policy._verdict(answer, 0.0)
    except PolicyError as exc:
        assert "returned" in str(exc)
        return
    assert type(res.allow) is bool
    if res.allow:
        assert (declared == "int" and type(answer) is int and answer == 0) or (
            declared == "bool" and answer is True)


class _Stub:
    """A policy object (duck-typed, as a user may bind one) whose evaluate answers something odd."""

    id, version, digest, param_names = "stub", "0", "0" * 12, ()

    def __init__(self, answer):
        self.answer = answer

    def evaluate(self, args):
        return self.answer


@pytest.mark.parametrize("answer", [
    PolicyResult(1, 0, "truthy int"), PolicyResult("yes", 0, "truthy str"), PolicyResult(Truthy(), 0, "object"),
    PolicyResult(Exploding(), 0, "raises in __bool__"), Truthy(), None, (True, 0, "tuple"), True,
    {"allow": True, "code": 0, "reason": "dict"},
])
def test_the_gate_reads_only_an_exact_true(answer):
    g = ToolCallGuard([PolicyBinding(_Stub(answer), MappingExtractor({}))])  # type: ignore[arg-type]
    v = g.check(Context(), ToolCall("pay", {}))
    assert v.decision is Decision.REJECT
    assert g.enforce(Context(), ToolCall("pay", {})).verdict.decision is Decision.REJECT


def test_an_exact_true_result_allows():
    stub = _Stub(PolicyResult(True, 0, "ok"))
    g = ToolCallGuard([PolicyBinding(stub, MappingExtractor({}))])  # type: ignore[arg-type]
    assert g.check(Context(), ToolCall("pay", {})).allowed


# -- tool-call arguments as the tool reads them ---------------------------------------------------------------

class HidingDict(dict):
    """A dict that hides a key from ``in``/``[]``/``get``; ``**kwargs`` and json.dumps still see it."""

    def __contains__(self, key):
        return False

    def __getitem__(self, key):
        return 0

    def get(self, key, default=None):
        return default


def _amount_guard(**rule):
    ext = SpecExtractor({"amount": {"from": "argument", "key": "amount", **rule},
                         "flagged": {"from": "constant", "value": False},
                         "blocked": {"from": "constant", "value": [7]}, "dest": {"from": "constant", "value": 3}})
    return ToolCallGuard([PolicyBinding(INT_POLICY, ext)])


@pytest.mark.parametrize("key,args", [("amount", HidingDict(amount=10**6)),
                                      ("payment.amount", {"payment": HidingDict(amount=10**6)})])
def test_a_dict_subclass_cannot_hide_an_argument_from_the_policy(key, args):
    """With ``default = 0`` a hidden amount read as absent was allowed while the tool paid 10**6."""
    g = ToolCallGuard([PolicyBinding(INT_POLICY, SpecExtractor({
        "amount": {"from": "argument", "key": key, "default": 0}, "flagged": {"from": "constant", "value": False},
        "blocked": {"from": "constant", "value": [7]}, "dest": {"from": "constant", "value": 3}}))])

    def tool(**kwargs):  # the tool reads its arguments through ** (the dict's own storage)
        return kwargs

    seen = tool(**args)
    assert dict.get(seen, "amount", None) == 10**6 or dict.get(seen["payment"], "amount") == 10**6
    assert g.check(Context(), ToolCall("pay", args)).decision is Decision.REJECT


def test_str_subclass_and_bool_values_are_refused_not_coerced():
    class S(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    g = _amount_guard()
    for value in (True, S("5"), "5", 5.0, math.nan):
        assert g.check(Context(), ToolCall("pay", {"amount": value})).decision is Decision.REJECT


SPELLINGS = st.sampled_from([
    "wire", "WIRE", "Wire", " wire ", "wire\u200b", "\u200bwire", "ｗｉｒｅ", "wi\u00adre", "w\u200dire", "wIrE",
])


@settings(max_examples=60, deadline=None)
@given(spelling=SPELLINGS)
def test_a_spelling_variant_of_a_mapped_value_maps_like_the_value(spelling):
    """``map = {wire = 1}, default = 0``: a variant the tool accepts (case, width, zero-width, soft hyphen) must
    not fall through to the permissive default."""
    ext = SpecExtractor({"amount": {"from": "argument", "key": "method", "map": {"wire": 10**6, "card": 5},
                                    "default": 0},
                         "flagged": {"from": "constant", "value": False},
                         "blocked": {"from": "constant", "value": [7]}, "dest": {"from": "constant", "value": 3}})
    g = ToolCallGuard([PolicyBinding(INT_POLICY, ext)])
    assert g.check(Context(), ToolCall("pay", {"method": spelling})).decision is Decision.REJECT


def test_a_map_with_two_spellings_of_one_key_is_refused():
    from agentguard.core.errors import InputError

    with pytest.raises(InputError, match="twice"):
        SpecExtractor({"amount": {"from": "argument", "key": "m", "map": {"wire": 1, "WIRE": 2}}})


# -- pinning the verified source ----------------------------------------------------------------------------------

def test_a_verified_digest_is_the_full_sha256_never_a_prefix(tmp_path):
    """``verified_digest`` pinned 12 hex digits (48 bits): whoever writes both the verified and the swapped-in
    file finds a pair with one prefix in ~2**24 tries each. Here the same thing with 16 bits (4 hex digits)
    shows the search is a loop over comments: a prefix match is no proof of identity."""
    import hashlib

    from agentguard.policies import ToolCallGuard as TG

    good = HEADER + "def check(x: int) -> int:\n    Requires(0 <= x and x <= 10)\n" \
                    "    Ensures(Implies(x > 5, Result() != 0))\n    if x > 5:\n        return 1\n    return 0\n"
    bad = good.replace("if x > 5:", "if x > 50:")
    def prefix(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:4]

    seen = {prefix(f"{good}# {i}\n"): i for i in range(3000)}
    j = next(j for j in range(200_000) if prefix(f"{bad}# {j}\n") in seen)
    swapped = f"{bad}# {j}\n"
    verified = f"{good}# {seen[prefix(swapped)]}\n"
    assert hashlib.sha256(verified.encode()).hexdigest()[:4] == hashlib.sha256(swapped.encode()).hexdigest()[:4]
    path = tmp_path / "p.py"
    path.write_text(swapped)
    table = {"policy": str(path), "arguments": {"x": "x"}}
    full = hashlib.sha256(verified.encode()).hexdigest()
    for pin in (full[:4], full[:12], full[:32]):
        with pytest.raises(PolicyError, match="refusing to run unverified code"):
            TG.from_config({**table, "verified_digest": pin})
    with pytest.raises(PolicyError, match="refusing to run unverified code"):
        TG.from_config({**table, "verified_digest": full})  # the swapped file is not the verified one
    path.write_text(verified)
    assert TG.from_config({**table, "verified_digest": full})


# -- session 11: values of another type than the map's keys, tool names in canonical form -------------------------

def _mapped_guard(source: str, key: str, table: dict) -> ToolCallGuard:
    rule = {"from": source, "map": table, "default": 0}
    if source == "argument":
        rule["key"] = key
    ext = SpecExtractor({"amount": rule, "flagged": {"from": "constant", "value": False},
                         "blocked": {"from": "constant", "value": [7]}, "dest": {"from": "constant", "value": 3}})
    return ToolCallGuard([PolicyBinding(INT_POLICY, ext)])


@settings(max_examples=40, deadline=None)
@given(value=st.sampled_from([3.0, True, "3", ["wire"], {"m": "wire"}, 3 + 0j, b"wire", -0.0]))
def test_a_value_of_another_type_never_takes_the_maps_default(value):
    """``map = {3 = 10**6}, default = 0`` (or ``{wire = ...}``): before, 3.0, True, "3" and ["wire"] were not in the
    map and took the permissive default while a pydantic tool reads "3" and 3.0 as 3."""
    for table in ({3: 10**6, 1: 5}, {"wire": 10**6}):
        g = _mapped_guard("argument", "method", table)
        if isinstance(value, str) and str in {type(k) for k in table}:
            continue  # a string looked up in a string map: the default is the map author's choice
        assert g.check(Context(), ToolCall("pay", {"method": value})).decision is Decision.REJECT, (value, table)
    absent = _mapped_guard("argument", "method", {"wire": 10**6})
    assert absent.check(Context(), ToolCall("pay", {"method": None})).allowed  # null is absent: the default
    assert absent.check(Context(), ToolCall("pay", {})).allowed


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(["wire_pay", "Wire-Pay", "wire pay", "WIRE_PAY ", "wire\u200b-pay",
                             "ｗｉｒｅ＿ｐａｙ", "wire__pay", "wire - pay"]))
def test_a_tool_name_maps_in_the_canonical_form_every_rule_reads(name):
    """``{from = "tool", map = {wire_pay = ...}, default = 0}``: ``Wire-Pay`` is the tool ``wire_pay`` to every
    other rule (canonical_name). ToolCallGuard canonicalised the name before extraction, but the extractor on its
    own (SpecExtractor used by a caller) read it as unknown and took the permissive default."""
    from agentguard.policies.extract import FieldRule

    rule = FieldRule("amount", {"from": "tool", "map": {"wire_pay": 10**6, "search": 0}, "default": 0})
    assert rule.read(ToolCall(name, {}), Context()) == 10**6, name
    g = _mapped_guard("tool", "", {"wire_pay": 10**6, "search": 0})
    assert g.check(Context(), ToolCall(name, {})).decision is Decision.REJECT, name


# -- session 13: namespaced tool names (an MCP proxy's server__tool) -------------------------------------------------

NAMESPACED = ["bank__wire_pay", "bank.wire_pay", "bank/wire_pay", "bank:wire_pay", "mcp__bank__wire_pay",
              "functions.wire_pay", "Bank__Wire-Pay", "bank__wire\u200b_pay"]


@pytest.mark.parametrize("name", NAMESPACED)
def test_a_namespaced_tool_name_does_not_take_the_maps_permissive_default(name):
    """``{from = "tool", map = {wire_pay = ...}, default = 0}``: ``bank__wire_pay`` was canonicalised to
    ``bank_wire_pay`` (the namespace separator lost), not in the map, so it took the permissive default and the
    transfer was allowed; it is the upstream tool ``wire_pay`` an MCP proxy prefixed."""
    g = _mapped_guard("tool", "", {"wire_pay": 10**6, "search": 0})
    assert g.check(Context(), ToolCall(name, {})).decision is Decision.REJECT, name
    from agentguard.policies.extract import FieldRule

    rule = FieldRule("amount", {"from": "tool", "map": {"wire_pay": 10**6, "search": 0}, "default": 0})
    assert rule.read(ToolCall(name, {}), Context()) == 10**6, name


@pytest.mark.parametrize("name", NAMESPACED)
def test_a_binding_for_a_tool_covers_its_namespaced_names(name):
    """A binding for ``wire_pay`` with ``unknown_tool = "allow"``: ``bank__wire_pay`` was a tool no policy
    covered, so it was allowed without the policy ever running."""
    ext = SpecExtractor({"amount": {"from": "argument", "key": "amount"}, "flagged": {"from": "constant", "value": False},
                         "blocked": {"from": "constant", "value": [7]}, "dest": {"from": "constant", "value": 3}})
    g = ToolCallGuard([PolicyBinding(INT_POLICY, ext, ("wire_pay",))], unknown_tool="allow")
    assert g.check(Context(), ToolCall(name, {"amount": 10**6})).decision is Decision.REJECT, name
    assert g.check(Context(), ToolCall(name, {"amount": 5})).allowed, name
    assert g.check(Context(), ToolCall("search", {"q": "x"})).allowed  # an uncovered tool, as configured


def test_namespace_forms_that_map_differently_are_refused():
    from agentguard.policies.extract import FieldRule

    rule = FieldRule("amount", {"from": "tool", "map": {"search.wire_pay": 0, "wire_pay": 10**6}, "default": 0})
    with pytest.raises(PolicyError, match="differently"):
        rule.read(ToolCall("search.wire_pay", {}), Context())  # the whole name and its tail map apart
    g = _mapped_guard("tool", "", {"search.wire_pay": 0, "wire_pay": 10**6})
    assert g.check(Context(), ToolCall("search.wire_pay", {})).decision is Decision.REJECT


@pytest.mark.parametrize("args", [{"amount": 5, "AMOUNT": 10**6}, {"amount": 5, "Amount": 10**6},
                                  {"AMOUNT": 10**6}, {"\uff41mount": 10**6}, {"amount": 5, "amount\u200b": 10**6},
                                  {"amount": 5, " amount ": 10**6}])
def test_an_argument_spelled_another_way_is_read_as_the_tool_may_read_it(args):
    """Go's encoding/json (github-mcp-server and other Go tools) binds JSON keys to fields ignoring case, the last
    one winning: ``{"amount": 5, "AMOUNT": 1000000}`` reached the tool as 1000000 while the gate read 5."""
    assert _amount_guard().check(Context(), ToolCall("pay", args)).decision is Decision.REJECT, args


def test_equal_spellings_of_one_argument_still_decide():
    assert _amount_guard().check(Context(), ToolCall("pay", {"amount": 5, "Amount": 5})).allowed
    assert _amount_guard().check(Context(), ToolCall("pay", {"Amount": 5})).allowed


def test_a_tool_name_too_long_to_read_in_full_is_refused():
    """name_forms reads the first 4096 characters: ``"x" * 5000 + "__wire_pay"`` hid its tail form from every
    rule; both gates refuse a name over 1024 characters unread (MCP allows 128, OpenAI 64)."""
    from agentguard.policies.rules import ToolRuleGuard

    name = "x" * 5000 + "__wire_pay"
    g = ToolCallGuard([PolicyBinding(INT_POLICY, SpecExtractor({
        "amount": {"from": "argument", "key": "amount"}, "flagged": {"from": "constant", "value": False},
        "blocked": {"from": "constant", "value": [7]}, "dest": {"from": "constant", "value": 3}}), ("wire_pay",))],
        unknown_tool="allow")
    assert g.check(Context(), ToolCall(name, {"amount": 10**6})).decision is Decision.REJECT
    assert ToolRuleGuard(deny=["wire_*"]).check(Context(), ToolCall(name, {})).decision is Decision.REJECT
    assert ToolRuleGuard(deny=["wire_*"]).check(Context(), ToolCall("x" * 1000, {})).allowed


@settings(max_examples=100, deadline=None)
@given(prefix=st.lists(st.sampled_from(["bank", "mcp", "srv", "a.b", "x"]), max_size=3),
       sep=st.sampled_from(["__", ".", "/", ":"]))
def test_property_every_namespace_prefix_reads_the_tool_it_prefixes(prefix, sep):
    name = sep.join(prefix + ["wire_pay"])
    g = _mapped_guard("tool", "", {"wire_pay": 10**6, "search": 0})
    assert g.check(Context(), ToolCall(name, {})).decision is Decision.REJECT, name


# -- session 18: a grant names a tool as written ------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(["Wire-Pay", "WIRE_PAY", "wire pay", "wire_pay ", " wire_pay", "wire\u200b_pay",
                             "ｗｉｒｅ＿ｐａｙ", "Bank__Wire_Pay", "bank__wire-pay"]))
def test_a_name_that_only_folds_to_a_bound_tool_is_an_unknown_tool(name):
    """A binding for ``wire_pay`` granted ``Wire-Pay`` and full-width ``ｗｉｒｅ＿ｐａｙ`` under its policy (canonical
    match): to a framework, which runs the tool its exact name finds, those are other tools (a real LangChain agent
    ran a second tool named ``ＲEAD_FILE`` allowed as ``read_file``). With the default ``unknown_tool = "deny"`` they
    are refused as unknown; the names as written (and an MCP proxy's ``bank__wire_pay``) keep the policy."""
    ext = SpecExtractor({"amount": {"from": "argument", "key": "amount"}, "flagged": {"from": "constant", "value": False},
                         "blocked": {"from": "constant", "value": [7]}, "dest": {"from": "constant", "value": 3}})
    g = ToolCallGuard([PolicyBinding(INT_POLICY, ext, ("wire_pay",))])
    assert g.check(Context(), ToolCall(name, {"amount": 5})).decision is Decision.REJECT, name
    for ok in ("wire_pay", "bank__wire_pay", "functions.wire_pay"):
        assert g.check(Context(), ToolCall(ok, {"amount": 5})).allowed, ok
        assert g.check(Context(), ToolCall(ok, {"amount": 10**6})).decision is Decision.REJECT, ok
