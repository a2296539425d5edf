"""One configuration file, one guard: the library (``load_stack``), the CLI (``agentguard decide``)
and the service (``tool_guards = ...``, ``POST /v1/check``) give the same decisions on a fixed set of
calls, for every shipped example (issue 12). A tool that no policy covers is denied everywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentguard import Context, ToolCall
from agentguard.config import load_stack

REPO = Path(__file__).resolve().parents[1]
# examples/recipe/deploy.toml points at the model its recipe learns (tests/cli/test_predictive_recipe.py runs it)
EXAMPLES = sorted(p for p in [*(REPO / "src" / "agentguard" / "server" / "examples").glob("*.toml"),
                              *(REPO / "examples").rglob("*.toml")]
                  if p != REPO / "examples" / "recipe" / "deploy.toml")
ADULT = {"user_info": {"age": 30, "domestic": True, "dr_license": True, "vaccine": True, "membership": True}}
MINOR = {"user_info": {"age": 16, "domestic": True, "dr_license": False, "vaccine": True, "membership": False}}
CALLS = [
    ({"name": "delete_file", "arguments": {"path": "/tmp/x"}}, {}),
    ({"name": "read_file", "arguments": {"path": "../../etc/passwd"}}, {}),
    ({"name": "run_shell", "arguments": {"command": "ls"}}, {}),
    ({"name": "send_email", "arguments": {"to": "a@example.com", "body": "hi"}}, {}),
    ({"name": "send_email", "arguments": {"to": "a@evil.com", "body": "hi"}}, {}),
    ({"name": "transfer_funds", "arguments": {"amount": 5}}, {}),
    ({"name": "transfer_funds", "arguments": {"amount": 5000}}, {}),
    ({"name": "rent_car", "arguments": {}}, ADULT),
    ({"name": "rent_car", "arguments": {}}, MINOR),
    ({"name": "book_hotel", "arguments": {}}, MINOR),
    ({"name": "frobnicate", "arguments": {}}, ADULT),
]


def test_there_are_shipped_examples():
    assert len(EXAMPLES) >= 3, EXAMPLES


def _library(path: Path) -> list[str]:
    stack = load_stack(path)
    return [stack.check(Context(run_id="r", metadata=meta), ToolCall.from_dict(call)).decision.name
            for call, meta in CALLS]


def _cli(path: Path, capsys) -> list[str]:
    from agentguard.cli import main

    out = []
    for call, meta in CALLS:
        code = 0
        try:
            main(["decide", str(path), json.dumps(call), "--metadata", json.dumps(meta), "--json"])
        except SystemExit as stop:
            code = stop.code
        printed = capsys.readouterr().out.strip().splitlines()[-1]
        decision = json.loads(printed)["decision"]
        assert (code == 0) == (decision == "ALLOW"), (code, decision)
        out.append(decision)
    return out


def _service(path: Path, tmp_path: Path) -> list[str]:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    fields = ServerSettings.__dataclass_fields__ if hasattr(ServerSettings, "__dataclass_fields__") else {}
    store = "state_dir" if "state_dir" in fields else "data_dir"
    settings = ServerSettings(token="t" * 16, tool_guards=str(path), **{store: str(tmp_path / "svc")})
    out = []
    with TestClient(create_app(settings)) as client:
        for i, (call, meta) in enumerate(CALLS):
            r = client.post("/v1/check", headers={"Authorization": "Bearer " + "t" * 16},
                            json={"run_id": f"r{i}", "tool_call": call, "metadata": meta})
            assert r.status_code == 200, r.text
            out.append(r.json()["decision"])
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_library_cli_and_service_decide_alike(path, capsys, tmp_path):
    lib = _library(path)
    assert _cli(path, capsys) == lib
    assert _service(path, tmp_path) == lib


def test_policy_default_for_an_uncovered_tool_is_deny(tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\ntools = ["rent_car"]\n')
    stack = load_stack(policy)
    verdict = stack.check(Context(metadata=ADULT), ToolCall("frobnicate", {}))
    assert verdict.decision.name == "REJECT", verdict
    assert stack.check(Context(metadata=ADULT), ToolCall("rent_car", {})).decision.name == "ALLOW"


@pytest.mark.parametrize("gtype", sorted(t for t in __import__("agentguard.config", fromlist=["GUARD_TYPES"]).GUARD_TYPES
                                         if t != "python"))
def test_an_unknown_key_names_the_keys_the_guard_type_takes(gtype):
    """A new user's misspelt key gets the list to pick from, for every shipped guard type (tool-rules once said
    only "__init__() got an unexpected keyword argument", provenance only "unknown parameter(s)")."""
    from agentguard.config import build_stack
    from agentguard.core.errors import InputError

    with pytest.raises(InputError) as ei:
        build_stack({"guards": [{"type": gtype, "zzz_key": 1}]})
    msg = str(ei.value)
    assert "zzz_key" in msg and "\n" not in msg
    assert re.search(r"\b(known|expected|allowed)\b", msg) and re.search(r"\bname\b", msg), msg


def test_a_misspelt_tool_rules_key_suggests_the_right_one():
    from agentguard.config import build_stack
    from agentguard.core.errors import InputError

    with pytest.raises(InputError, match=r"did you mean 'allow'\? known keys: allow, allow_commands, "):
        build_stack({"guards": [{"type": "tool-rules", "allw": ["read_*"]}]})


# -- session 21 red team: configuration attacks and typos that were already refused (one line, naming the key) ------

from agentguard.core.errors import InputError  # noqa: E402

DENY_DELETES = '[[guards]]\ntype = "tool-rules"\nname = "no-deletes"\ndeny = ["delete_*"]\n'


ALREADY_REFUSED_TOML = {
    "duplicate key": ('[[guards]]\ntype = "tool-rules"\ndeny = ["delete_*"]\ndeny = []\n', "not valid TOML"),
    "duplicate table": ('[stack]\nname = "a"\n[stack]\nname = "b"\n' + DENY_DELETES, "not valid TOML"),
    "misspelt type": ('[[guards]]\ntype = "tool-rule"\n', "unknown guard type"),
    "missing type": ('[[guards]]\nname = "x"\n', "missing 'type'"),
    "empty type": ('[[guards]]\ntype = ""\n', "missing 'type'"),
    "no guards": ('[stack]\nname = "x"\n', "no guards"),
    "empty guards": ("guards = []\n", "non-empty array"),
    "guards not a list": ('guards = "tool-rules"\n', "non-empty array"),
    "unknown top-level": ("[stak]\n" + DENY_DELETES, "unknown top-level"),
    "unknown stack key": ("[stack]\ntimeout = 1\n" + DENY_DELETES, "unknown key"),
    "on_error allow": ('[stack]\non_error = "allow"\n' + DENY_DELETES, "on_error"),
    "on_error typo": ('[stack]\non_error = "rejct"\n' + DENY_DELETES, "on_error"),
    "mode typo": ('[stack]\nmode = "shadw"\n' + DENY_DELETES, "mode"),
    "guard mode typo": (DENY_DELETES + 'mode = "off"\n', "mode"),
    "short_circuit text": ('[stack]\nshort_circuit = "false"\n' + DENY_DELETES, "short_circuit"),
    "empty name": ('[stack]\nname = ""\n' + DENY_DELETES, "stack.name"),
    "guard name not text": ('[[guards]]\ntype = "tool-rules"\nname = 3\n', "name"),
    "misspelt guard key": ('[[guards]]\ntype = "tool-rules"\ndney = ["delete_*"]\n', "dney"),
    "python without factory": ('[[guards]]\ntype = "python"\n', "factory"),
    "python factory no colon": ('[[guards]]\ntype = "python"\nfactory = "os.system"\n', "factory"),
    "telemetry text": ('[telemetry]\nenabled = "yes"\n' + DENY_DELETES, "telemetry.enabled"),
    "recording unknown": ('[recording]\npth = "x"\n' + DENY_DELETES, "recording"),
    "policy timeout nan": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                           "timeout_s = nan\n", "timeout_s"),
    "policy timeout text": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                            'timeout_s = "0.05"\n', "timeout_s"),
    "policy short digest": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                            'verified_digest = "abc"\n', "prefix"),
    "policy wrong digest": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                            f'verified_digest = "{"0" * 64}"\n', "refusing to run unverified code"),
    "policy unknown key": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                           'verified = true\n', "unknown key"),
    "policy on_error allow": ('[[guards]]\ntype = "policy"\npolicy = "mind2web_sc"\nextractor = "mind2web_sc"\n'
                              'on_error = "allow"\n', "blocking"),
    "duplicate guard names": (DENY_DELETES + DENY_DELETES, "unique"),
}


@pytest.mark.parametrize("name", sorted(ALREADY_REFUSED_TOML))
def test_regression_already_refused(tmp_path, name):
    text, needle = ALREADY_REFUSED_TOML[name]
    f = tmp_path / "agentguard.toml"
    f.write_text(text)
    with pytest.raises(InputError) as info:
        load_stack(f)
    msg = str(info.value)
    assert "\n" not in msg and needle in msg, msg
