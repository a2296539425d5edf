"""`agentguard report shadow` over a JSONL audit log: every would-be refusal of the shadow guards, by guard and
rule, in a time window; the window's forms; one-line errors. (Over the service's store: tests/server/
test_server_shadow.py.)"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest

from agentguard.cli import main
from agentguard.cli.report import when
from agentguard.config import build_stack
from agentguard.core import JsonlAuditSink, Pipeline, ToolCall


def run(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _log(tmp_path) -> str:
    stack = build_stack({"guards": [
        {"type": "tool-rules", "name": "prod", "deny": ["delete_*"]},
        {"type": "tool-rules", "name": "candidate", "mode": "shadow", "deny": ["send_*"], "escalate": ["pay_*"]}]})
    path = tmp_path / "audit.jsonl"
    sink = JsonlAuditSink(path)
    p = Pipeline(stack, audit=sink)
    for name in ("read_a", "send_mail", "pay_bill", "delete_x", "send_sms"):
        p.decide("run-1", ToolCall(name, {}))
    sink.close()
    return str(path)


def test_the_report_lists_every_would_be_refusal_by_guard_and_rule(tmp_path, capsys) -> None:
    path = _log(tmp_path)
    assert run(["report", "shadow", "--audit", path, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["decisions"] == 5 and rep["would_refuse"] == 3
    assert [(e["tool"], e["would"], e["enforced"]) for e in rep["entries"]] == [
        ("send_mail", "REJECT", "ALLOW"), ("pay_bill", "ESCALATE", "ALLOW"), ("send_sms", "REJECT", "ALLOW")]
    assert {(r["guard"], r["rule"], r["would_refuse"]) for r in rep["by_guard_rule"]} == {
        ("candidate", "tool send_mail is denied", 1), ("candidate", "tool pay_bill needs human approval", 1),
        ("candidate", "tool send_sms is denied", 1)}
    assert run(["report", "shadow", "--audit", path]) == 0
    text = capsys.readouterr().out
    assert text.startswith("5 decisions, 3 would-be refusals") and "candidate would REJECT (enforced ALLOW)" in text


def test_the_time_window(tmp_path, capsys) -> None:
    path = _log(tmp_path)
    assert run(["report", "shadow", "--audit", path, "--until", "1h", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["decisions"] == 0
    assert run(["report", "shadow", "--audit", path, "--since", "", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["decisions"] == 5
    now = 1_700_000_000.0
    assert when("24h", now) == now - 86400 and when("30m", now) == now - 1800 and when("90s", now) == now - 90
    assert when("2023-11-14T22:13:20", now) == now == when("2023-11-14T22:13:20+00:00", now)
    assert when(str(now), 0) == now and when(None, now) is None
    iso = datetime.fromtimestamp(time.time() + 3600, timezone.utc).isoformat()
    assert run(["report", "shadow", "--audit", path, "--since", iso, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["decisions"] == 0


def test_one_line_errors(tmp_path, capsys) -> None:
    assert run(["report", "shadow", "--audit", str(tmp_path / "none.jsonl")]) != 0
    assert "cannot read audit log" in capsys.readouterr().err
    assert run(["report", "shadow", "--audit", _log(tmp_path), "--since", "yesterday"]) != 0
    assert "not a time: 'yesterday'" in capsys.readouterr().err
    assert run(["report", "shadow"]) != 0
    assert "give one of --audit" in capsys.readouterr().err


def test_the_otel_flag_traces_a_cli_decision(tmp_path) -> None:
    """``agentguard --otel decide``: the decision's span is exported (console exporter from OTEL_TRACES_EXPORTER)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("opentelemetry.sdk")
    cfg = tmp_path / "agentguard.toml"
    cfg.write_text('[[guards]]\ntype = "tool-rules"\nname = "no-deletes"\ndeny = ["delete_*"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTGUARD_", "OTEL_"))}
    env.update(OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none")
    out = subprocess.run([sys.executable, "-m", "agentguard", "--otel", "decide", str(cfg),
                          '{"name": "delete_x", "arguments": {}}'], capture_output=True, text=True, env=env)
    assert '"name": "agentguard.decide delete_x"' in out.stdout and '"agentguard.decision": "REJECT"' in out.stdout
    plain = subprocess.run([sys.executable, "-m", "agentguard", "decide", str(cfg),
                            '{"name": "delete_x", "arguments": {}}'], capture_output=True, text=True, env=env)
    assert "agentguard.decide" not in plain.stdout and plain.returncode == out.returncode
