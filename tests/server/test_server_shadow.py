"""Shadow mode in the service: ``shadow = true`` (every guard observes) and ``mode = "shadow"`` guards in a
stack file. The answer is what the enforcing guards alone give (ALLOW with every guard in shadow), the
would-be verdicts are stored (``decisions.shadow``, migration 0009), and ``agentguard report shadow --db``
lists every refusal the same stack, enforced, gives on the same calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from starlette.testclient import TestClient  # noqa: E402

from agentguard.cli import main  # noqa: E402
from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.audit import AuditStore  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

TOKEN = "shadow-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CALLS = ["read_note", "delete_note", "format_disk", "read_mail", "delete_all", "pay_bill"]
STACK = ('[[guards]]\ntype = "tool-rules"\nname = "no-deletes"\ndeny = ["delete_*"]\n\n'
         '[[guards]]\ntype = "tool-rules"\nname = "no-format"\n{mode}halt = ["format_*"]\n\n'
         '[[guards]]\ntype = "tool-rules"\nname = "ask-pay"\n{mode}escalate = ["pay_*"]\n')


def _answers(tmp_path: Path, name: str, stack: str, **settings: Any) -> tuple[list[dict[str, Any]], str]:
    (tmp_path / f"{name}.toml").write_text(stack)
    state = tmp_path / name
    s = ServerSettings(token=TOKEN, state_dir=str(state), tool_guards=str(tmp_path / f"{name}.toml"), reload_s=0,
                       **settings)
    out = []
    with TestClient(create_app(s)) as c:
        for i, tool in enumerate(CALLS):  # one run per call: a latched HALT hides no later refusal
            r = c.post("/v1/check", json={"run_id": f"r{i}", "tool_call": {"name": tool, "arguments": {}}},
                       headers=AUTH)
            assert r.status_code == 200, r.text
            out.append(r.json())
        story = c.get("/v1/runs/r1/story", headers=AUTH).json()  # what the dashboard draws for a run
        out[1]["story_shadow"] = [(w["guard"], w["decision"]) for e in story["events"] for w in e["shadow"]]
    return out, s.database_url


def _report(url: str, capsys: Any) -> dict[str, Any]:
    try:
        main(["report", "shadow", "--db", url, "--since", "", "--json"])
    except SystemExit as exc:
        assert not exc.code
    return json.loads(capsys.readouterr().out)


def test_a_shadow_service_allows_and_reports_every_refusal_of_the_enforced_one(tmp_path: Path, capsys: Any) -> None:
    enforced, _ = _answers(tmp_path, "enforced", STACK.format(mode=""))
    shadow, url = _answers(tmp_path, "shadow", STACK.format(mode=""), shadow=True)
    assert all(a["decision"] == "ALLOW" for a in shadow)
    assert shadow[1]["story_shadow"] == [("no-deletes", "REJECT")] and enforced[1]["story_shadow"] == []
    refused = {(CALLS[i], a["guard"], a["decision"]) for i, a in enumerate(enforced) if a["decision"] != "ALLOW"}
    assert refused == {("delete_note", "no-deletes", "REJECT"), ("format_disk", "no-format", "HALT"),
                       ("delete_all", "no-deletes", "REJECT"), ("pay_bill", "ask-pay", "ESCALATE")}
    rep = _report(url, capsys)
    assert {(e["tool"], e["guard"], e["would"]) for e in rep["entries"]} == refused
    assert rep["decisions"] == len(CALLS) and all(e["enforced"] == "ALLOW" for e in rep["entries"])
    store = AuditStore(url)
    try:
        rows = store.decisions(limit=100)
    finally:
        store.close()
    assert [bool(r["shadow"]) for r in rows] == [False, True, True, False, True, True]


def test_shadow_guards_in_a_stack_file_leave_the_enforced_answers_as_they_were(tmp_path: Path, capsys: Any) -> None:
    alone, _ = _answers(tmp_path, "alone", STACK.split("\n\n")[0] + "\n")
    mixed, url = _answers(tmp_path, "mixed", STACK.format(mode='mode = "shadow"\n'))
    assert [(a["decision"], a["guard"], a["reason"]) for a in mixed] == \
        [(a["decision"], a["guard"], a["reason"]) for a in alone]
    rep = _report(url, capsys)
    assert {(e["tool"], e["guard"], e["would"], e["enforced"]) for e in rep["entries"]} == {
        ("format_disk", "no-format", "HALT", "ALLOW"), ("pay_bill", "ask-pay", "ESCALATE", "ALLOW")}
