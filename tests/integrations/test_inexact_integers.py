"""Red team: an integer the guard reads exactly and the tool's reader does not.

Python reads ``9007199254740993`` exactly; a reader that holds JSON numbers as doubles (JavaScript's
``JSON.parse``: a TypeScript MCP server, a JavaScript agent loop behind LiteLLM) reads ``9007199254740992``. A
guard that allowed ``{"user_id": 9007199254740993}`` (an allowed user) let the tool act on user ``...992``.
Checked with the real ``node`` before the fix: the LiteLLM endpoint answered NONE and the MCP proxies' schema check
passed for such a call. Now both refuse an integer beyond 2**53 (I-JSON, RFC 7493) in a call's arguments.

Differential oracle: node's ``JSON.parse`` then ``JSON.stringify`` of what the proxies forward, read back by
Python, against the arguments the guard judged.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.strict_json import SAFE_INTEGER, inexact_integer
from agentguard.integrations.litellm import GuardrailEndpoint
from agentguard.integrations.mcp.decide import call_refusal
from agentguard.policies.rules import ToolRuleGuard

NODE = shutil.which("node")
ATTACKS = [2**53 + 1, -(2**53) - 1, 10**20 + 1, 2**63, {"nested": [1, 2**53 + 3]}]
SCHEMA = {"type": "object", "properties": {"user_id": {}}}


def node_reads(objs: list) -> list:
    """What JavaScript's JSON.parse makes of each object's JSON text (as JSON.stringify writes it back)."""
    script = "const a=JSON.parse(require('fs').readFileSync(0,'utf8'));" \
             "process.stdout.write(JSON.stringify(a.map(t=>JSON.stringify(JSON.parse(t)))))"
    got = subprocess.run([NODE, "-e", script], input=json.dumps([json.dumps(o) for o in objs]), capture_output=True,
                         text=True, timeout=60, check=True)
    return [json.loads(t) for t in json.loads(got.stdout)]


def litellm_answer(args: dict) -> str:
    ep = GuardrailEndpoint(ToolRuleGuard(allow=["lookup_user"]))
    body = {"input_type": "response", "litellm_trace_id": "t", "texts": [], "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup_user", "arguments": json.dumps(args)}}]}
    return ep.handle(body)["action"]


@pytest.mark.parametrize("value", ATTACKS, ids=str)
def test_an_integer_javascript_reads_otherwise_is_refused_by_litellm_and_mcp(value):
    args = {"user_id": value}
    assert inexact_integer(args) is not None
    assert litellm_answer(args) == "BLOCKED"
    why = call_refusal({"lookup_user": SCHEMA}, "lookup_user", args)
    assert why is not None and "2**53" in why


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_attacks_do_read_otherwise_in_javascript():
    """The oracle itself: each attack is read as another value by node (the fix is what keeps them out)."""
    assert all(r != {"user_id": v} for v, r in zip(ATTACKS, node_reads([{"user_id": v} for v in ATTACKS])))


def test_regression_safe_integers_floats_and_strings_still_pass():
    for value in (0, SAFE_INTEGER, -SAFE_INTEGER, 2**53 * 1.0, 1e300, "9007199254740993", True, None):
        args = {"user_id": value}
        assert inexact_integer(args) is None
        assert litellm_answer(args) == "NONE"
        assert call_refusal({"lookup_user": SCHEMA}, "lookup_user", args) is None


_ints = st.one_of(st.integers(-(2**60), 2**60), st.integers(SAFE_INTEGER - 3, SAFE_INTEGER + 3),
                  st.integers(-SAFE_INTEGER - 3, -SAFE_INTEGER + 3))
_json = st.recursive(st.one_of(_ints, st.booleans(), st.none(), st.text(max_size=4),
                               st.floats(allow_nan=False, allow_infinity=False)),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                     max_leaves=8)


@pytest.mark.skipif(NODE is None, reason="node is not installed")
@settings(max_examples=1, deadline=None, database=None)
@given(st.lists(st.dictionaries(st.text(max_size=3), _json, max_size=3), min_size=200, max_size=200))
def test_property_what_passes_reads_the_same_in_javascript(batch):
    """One node process for a batch: every argument object :func:`inexact_integer` lets through reads in
    JavaScript as exactly what Python (the guard) read (the attacks above show the check is what keeps the rest
    out)."""
    for obj, read in zip(batch, node_reads(batch)):
        if inexact_integer(obj) is None:
            assert _same(read, obj), (obj, read)


def _same(a, b) -> bool:
    """Equal as JSON values (node writes 1.0 as 1 and -0.0 as 0: the same number)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b) and (not isinstance(b, int) or a == b)
    return a == b
