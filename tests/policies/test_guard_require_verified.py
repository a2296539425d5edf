"""``require_verified`` (session 22): the switch under which a policy without a pinned, matching ``verified_digest``
refuses to load, whichever way the configuration reaches the policy guard.

Before: an unpinned policy always loaded (by design: ``verified_digest`` is optional), and an operator had no way to
say "nothing unverified runs here". Now ``[stack] require_verified = true``, ``load_stack(path,
require_verified=True)`` (a file cannot switch off what its caller asks), the guard table's own ``require_verified``
and the service's ``require_verified`` setting (also for hot reloads) refuse such a policy with one line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.config import load_stack
from agentguard.core.errors import AgentGuardError, InputError
from agentguard.core.types import Context, Decision, ToolCall
from agentguard.policies import library_path, load_policy

DIGEST = load_policy(library_path("mind2web_sc")).digest
FIELDS = '[guards.fields]\ncategory = { from = "tool", default = 0, map = { rent_car = 1 } }\n' + "".join(
    f'{k} = {{ from = "metadata", key = "user_info.{k}" }}\n'
    for k in ("age", "domestic", "dr_license", "vaccine", "membership"))


def _file(d: Path, *, stack: str = "", digest: object = None, route: str = "policy", own: str = "") -> Path:
    pin = "" if digest is None else f"verified_digest = {digest!r}\n".replace("'", '"')
    if isinstance(digest, (bool, int)):
        pin = f"verified_digest = {str(digest).lower()}\n"
    head = f"[stack]\n{stack}\n" if stack else ""
    kind = 'type = "policy"\n' if route == "policy" else \
        'type = "python"\nfactory = "agentguard.policies:ToolCallGuard"\n'
    f = d / "agentguard.toml"
    f.write_text(f'{head}[[guards]]\n{kind}policy = "mind2web_sc"\nunknown_tool = "allow"\n{pin}{own}{FIELDS}',
                 encoding="utf-8")
    return f


def _refused(f: Path, **kw) -> str:
    with pytest.raises(AgentGuardError) as info:
        load_stack(f, **kw)
    msg = str(info.value)
    assert "\n" not in msg, msg
    return msg


def test_attack_an_unpinned_policy_loads_under_require_verified_no_more(tmp_path):
    f = _file(tmp_path, stack="require_verified = true")
    assert "no verified_digest pinned" in _refused(f)
    assert load_stack(_file(tmp_path)) is not None  # without the switch it still loads (by design)


@pytest.mark.parametrize("route", ["policy", "python"])
def test_every_way_to_the_policy_guard_is_covered(tmp_path, route):
    pinned = "no verified_digest pinned"
    assert pinned in _refused(_file(tmp_path, stack="require_verified = true", route=route))
    assert pinned in _refused(_file(tmp_path, route=route), require_verified=True)
    assert pinned in _refused(_file(tmp_path, route=route, own="require_verified = true\n"))
    # the file cannot switch off what its caller asks
    assert pinned in _refused(_file(tmp_path, stack="require_verified = false", route=route,
                                                own="require_verified = false\n"), require_verified=True)


def test_a_pinned_matching_policy_loads_and_decides(tmp_path):
    stack = load_stack(_file(tmp_path, stack="require_verified = true", digest=DIGEST), require_verified=True)
    ctx = Context(run_id="r", metadata={"user_info": {"age": 30, "domestic": True, "dr_license": True,
                                                      "vaccine": True, "membership": True}})
    assert stack.check(ctx, ToolCall("rent_car", {})).decision is Decision.ALLOW


@pytest.mark.parametrize("value", ['"yes"', "1", '"true"', "[]"])
def test_require_verified_is_a_boolean(tmp_path, value):
    assert "require_verified" in _refused(_file(tmp_path, stack=f"require_verified = {value}"))
    assert "require_verified" in _refused(_file(tmp_path, own=f"require_verified = {value}\n"))


@settings(max_examples=40, deadline=None)
@given(route=st.sampled_from(["policy", "python"]),
       how=st.sampled_from(["stack", "caller", "own"]),
       digest=st.one_of(st.none(), st.sampled_from([DIGEST[:12], DIGEST[:63], DIGEST.upper(), "0" * 64, "", True, 0,
                                                    DIGEST + " ", " " + DIGEST, DIGEST[::-1]])))
def test_property_without_a_pinned_matching_digest_nothing_loads(tmp_path_factory, route, how, digest):
    d = tmp_path_factory.mktemp("rv")
    f = _file(d, stack="require_verified = true" if how == "stack" else "", digest=digest, route=route,
              own="require_verified = true\n" if how == "own" else "")
    _refused(f, require_verified=how == "caller")


def test_the_service_setting_refuses_unpinned_guard_files_and_keeps_its_pinned_default(tmp_path):
    from agentguard.server.guards import load_guards
    from agentguard.server.settings import ServerSettings

    unpinned = _file(tmp_path)
    with pytest.raises(AgentGuardError, match="no verified_digest pinned"):
        load_guards(ServerSettings(tool_guards=str(unpinned), require_verified=True))
    assert load_guards(ServerSettings(tool_guards=str(unpinned))) is not None  # off: loads as before
    assert load_guards(ServerSettings(require_verified=True)) is not None  # the shipped default is pinned
    with pytest.raises(InputError, match="require_verified: expected true or false"):
        ServerSettings(require_verified="yes")  # type: ignore[arg-type]


def test_the_documented_block_loads_and_refuses_without_its_pin(tmp_path):
    import re

    page = (Path(__file__).resolve().parents[2] / "docs" / "policies.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```toml\n(.*?)```", page, re.S) if "require_verified = true" in b)
    f = tmp_path / "agentguard.toml"
    f.write_text(block, encoding="utf-8")
    assert load_stack(f) is not None  # the pin in the docs is the shipped policy's digest
    f.write_text(re.sub(r"verified_digest = .*\n", "", block), encoding="utf-8")
    assert "no verified_digest pinned" in _refused(f)
