"""``agentguard decide``: unknown keys in the call are an error, never ignored (issue 29)."""

from __future__ import annotations

import json

import pytest

from agentguard.cli import main


@pytest.fixture()
def config(tmp_path):
    p = tmp_path / "g.toml"
    p.write_text('[[guards]]\ntype = "tool-rules"\nallow = ["*"]\n'
                 '[[guards.arguments]]\ntool = "delete_file"\narg = "path"\nforbid = "/etc"\n')
    return str(p)


def test_misspelt_arguments_key_is_an_error_not_an_allow(config, capsys):
    with pytest.raises(SystemExit) as exc:  # with "arguments" it is refused ...
        main(["decide", config, json.dumps({"name": "delete_file", "arguments": {"path": "/etc/passwd"}})])
    assert exc.value.code == 1 and capsys.readouterr().out.startswith("REJECT")
    with pytest.raises(SystemExit) as exc:  # ... and "args" was silently dropped, answering ALLOW
        main(["decide", config, json.dumps({"name": "delete_file", "args": {"path": "/etc/passwd"}})])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: tool call has unknown key(s) 'args'") and err.count("\n") == 1


def test_id_is_the_alias_of_call_id(config, capsys):
    main(["decide", config, json.dumps({"name": "read_file", "arguments": {}, "id": "call_1"}), "--json"])  # exit 0
    assert json.loads(capsys.readouterr().out)["decision"] == "ALLOW"
    with pytest.raises(SystemExit) as exc:
        main(["decide", config, json.dumps({"name": "read_file", "id": "a", "call_id": "b"})])
    assert exc.value.code == 2 and "'id'" in capsys.readouterr().err


@pytest.mark.parametrize("call, needle", [
    ({"name": "x", "arguments": ["path", "/etc"]}, "'arguments' must be an object"),
    ({"name": "x", "type": "function"}, "unknown key(s) 'type'"),
    ({"arguments": {}}, "missing 'name'"),
])
def test_other_malformed_calls_are_one_line_errors(config, capsys, call, needle):
    with pytest.raises(SystemExit) as exc:
        main(["decide", config, json.dumps(call)])
    assert exc.value.code == 2 and needle in capsys.readouterr().err
