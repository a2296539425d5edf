"""The dashboard in headless Chromium (Debian's, via Playwright): it loads, draws and is screenshotted."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from agentguard.predictive.dtmc import DTMC  # noqa: E402

TOKEN = "dashboard-token-0123"
H = {"Authorization": f"Bearer {TOKEN}"}


def _need_browser():
    in_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    try:
        import playwright.sync_api  # noqa: F401

        from agentguard.server.browser import chromium_path

        chromium_path()
    except Exception as exc:
        if in_ci:
            pytest.fail(f"headless Chromium unavailable in CI: {exc}")
        pytest.skip(f"headless Chromium unavailable: {exc}")


def _model() -> DTMC:
    P = np.array([
        [0.6, 0.3, 0.1, 0.0, 0.0],
        [0.1, 0.5, 0.2, 0.2, 0.0],
        [0.0, 0.1, 0.4, 0.2, 0.3],
        [0.0, 0.0, 0.0, 1.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 1.0],
    ])
    return DTMC(P, 0, labels={"unsafe": [0, 0, 0, 0, 1]}, state_names=["000", "001", "011", "done", "fire"]).validate()


def populate(base: str, headers: dict | None = None) -> str:
    """Feed the service a few runs (checks, steps, signals); returns the run to look at."""
    with httpx.Client(base_url=base, headers=headers or H, timeout=10) as c:
        user = {"age": 16, "domestic": True, "dr_license": False, "vaccine": True, "membership": True}
        for name in ["search_movies", "rent_car", "book_hotel", "book_flight"]:
            assert c.post("/v1/check", json={"run_id": "agent-7", "tool_call": {"name": name},
                                             "metadata": {"user_info": user}}).status_code == 200
        for s in ["000", "000", "001", "001", "011", "001", "011"]:
            assert c.post("/v1/runs/household-42/steps", json={"state": s, "action": "find Pot"}).status_code == 200
        for v in [0.92, 0.88, 0.81, 0.7, 0.62, 0.55, 0.41]:
            assert c.post("/v1/runs/household-42/signals", json={"signals": {"verifier": v}}).status_code == 200
    return "household-42"


def make_app(tmp_path: Path, step_decision: str = "REJECT", credentials_file: Path | None = None, tool=None):
    """The service with Pro2Guard's ProactiveGuard on a 5-state DTMC and a threshold monitor."""
    from agentguard.predictive.guard import ProactiveGuard
    from agentguard.server.app import create_app
    from agentguard.calibration import ThresholdMonitor
    from agentguard.server.guards import default_guards
    from agentguard.server.settings import ServerSettings

    s = (ServerSettings(token=TOKEN, state_dir=str(tmp_path / "data")) if credentials_file is None else
         ServerSettings(credentials_file=str(credentials_file), state_dir=str(tmp_path / "data")))
    g = default_guards(s)
    if tool is not None:  # the /v1/check stack (default: the verified Mind2Web-SC policy)
        g.tool = tool
    m = _model()
    g.step = ProactiveGuard(m, "G !unsafe", threshold=0.5, decision=step_decision)
    g.signal = ThresholdMonitor(0.5, signal="verifier", name="verifier-monitor")
    g.model = m
    lam = np.linspace(0, 1, 21)
    g.calibration = {"false-alarm rate": {"x": lam.tolist(), "y": (lam ** 2).tolist(), "xlabel": "threshold",
                                          "ylabel": "false-alarm rate", "target": 0.1}}
    g.description = "test guards (verified policy; ProactiveGuard on a 5-state DTMC; threshold monitor)"
    return create_app(s, g)


def test_dashboard_in_headless_chromium(tmp_path):
    _need_browser()
    from agentguard.server.browser import screenshot_dashboard
    from agentguard.server.testing import serve_in_thread

    app = make_app(tmp_path)
    with serve_in_thread(app) as base:
        run = populate(base)
        shot = tmp_path / "dashboard.png"
        info = screenshot_dashboard(base, TOKEN, shot, run_id=run)
    assert info["page_errors"] == []
    assert info["title"] == "agentguard dashboard" and info["status"].startswith("updated")
    assert set(info["runs"]) == {"agent-7", "household-42"}
    assert info["run"] == run
    assert info["riskPaths"] >= 2 and info["signalPaths"] >= 2  # series + threshold lines
    assert info["dtmcStates"] == 5 and info["dtmcUnsafe"] == 1
    assert info["calibCharts"] == 1
    # the decision table is the selected run's story: its own decisions only, each with its step's action
    assert info["decisions"] and all("find Pot" in row[3] for row in info["decisions"] if row[2] == "step")
    reasons = [row[6] for row in info["decisions"]]
    assert any("staying safe" in r for r in reasons) and not any("driver's license" in r for r in reasons)
    assert shot.exists() and shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("AGENTGUARD_SCREENSHOT"):  # keep a copy for the docs, with how it was made
        import json
        import shutil

        dest = Path(os.environ["AGENTGUARD_SCREENSHOT"])
        shutil.copy(shot, dest)
        dest.with_suffix(".json").write_text(json.dumps({
            "command": f"AGENTGUARD_SCREENSHOT={os.environ['AGENTGUARD_SCREENSHOT']} python -m pytest "
                       "tests/test_server_dashboard.py -k headless",
            "screenshot": dest.name, "page": {k: v for k, v in info.items() if k != "decisions"},
            "decisions_shown": len(info["decisions"])}, indent=2) + "\n")


def test_dashboard_works_with_a_reader_credential(tmp_path):
    """Least privilege: the agent's credential feeds the runs, the dashboard is opened with a reader's,
    which reads everything the page draws and can decide nothing."""
    _need_browser()
    from svc_roles import AGENT, READER, credentials_file

    from agentguard.server.browser import screenshot_dashboard
    from agentguard.server.testing import serve_in_thread

    app = make_app(tmp_path, credentials_file=credentials_file(tmp_path, (AGENT, READER)))
    with serve_in_thread(app) as base:
        run = populate(base, AGENT.headers)
        info = screenshot_dashboard(base, READER.token, tmp_path / "reader.png", run_id=run)
        refused = httpx.post(f"{base}/v1/check", headers=READER.headers, timeout=10,
                             json={"run_id": "r", "tool_call": {"name": "rent_car"}})
        metrics = httpx.get(f"{base}/metrics", headers=READER.headers, timeout=10)
    assert info["page_errors"] == [] and info["status"].startswith("updated")
    assert set(info["runs"]) == {"agent-7", "household-42"} and info["run"] == run
    assert info["riskPaths"] >= 2 and info["dtmcStates"] == 5 and info["decisions"]
    assert refused.status_code == 403 and metrics.status_code == 200


def test_dashboard_asks_for_a_token_without_one(tmp_path):
    _need_browser()
    from playwright.sync_api import expect, sync_playwright

    from agentguard.server.browser import CHROMIUM_FLAGS, chromium_path
    from agentguard.server.testing import serve_in_thread

    with serve_in_thread(make_app(tmp_path)) as base, sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        try:
            page = b.new_page()
            page.goto(f"{base}/dashboard")
            page.wait_for_selector("#tokenform:not([hidden])", timeout=15_000)
            assert page.locator("#status").text_content() == "token needed"
            page.fill("#token", "wrong-token-xyz")
            page.click("#tokenform button")
            expect(page.locator("#status")).to_have_text("token needed")
            page.fill("#token", TOKEN)
            page.click("#tokenform button")
            page.wait_for_selector("body[data-loaded='1']", timeout=15_000)
        finally:
            b.close()


def test_dashboard_tells_the_story_of_a_run(tmp_path):
    """Pick a run, see its steps in order with the proposed action, each guard's verdict and reason;
    filter by decision and guard; the run's DTMC state is marked, states have meanings; the guard stack
    is described in words; a halted run is shown as halted. Screenshots saved."""
    _need_browser()
    from playwright.sync_api import expect, sync_playwright

    from agentguard.server.browser import CHROMIUM_FLAGS, chromium_path
    from agentguard.server.testing import serve_in_thread

    shots = Path(os.environ.get("AGENTGUARD_SCREENSHOT_DIR") or tmp_path)
    with serve_in_thread(make_app(tmp_path, step_decision="HALT")) as base, sync_playwright() as p:
        populate(base)
        with httpx.Client(base_url=base, headers=H, timeout=10) as c:  # a run the proactive guard halts
            for s in ["000", "011", "011", "011"]:
                c.post("/v1/runs/halting-run/steps", json={"state": s, "action": {"name": "light_fire", "arguments": {}}})
            story = c.get("/v1/runs/halting-run/story").json()
        b = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        try:
            page = b.new_page(viewport={"width": 1400, "height": 1600})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{base}/dashboard#token={TOKEN}")
            page.wait_for_selector("body[data-loaded='1']", timeout=30_000)
            page.locator("#runs tbody tr", has_text="household-42").first.click()
            expect(page.locator("#run-title")).to_have_text("household-42")
            expect(page.locator("#decisions tbody tr").first).to_be_attached()
            page.wait_for_timeout(300)
            rows = page.eval_on_selector_all("#decisions tbody tr", "rs => rs.map(r => [...r.children].map(c => c.textContent))")
            steps = [r for r in rows if r[2] == "step"]
            assert [int(r[0]) for r in rows] == sorted(int(r[0]) for r in rows)  # in order
            assert steps and all(r[3] == "find Pot" and r[4].startswith("[state") for r in steps)
            assert page.locator("#dtmc-current").count() == 1  # the run's current state is ringed
            legend = page.locator("#dtmc-legend").text_content()
            assert "fire: unsafe" in legend and "this run is in state" in legend
            words = page.locator("#stack-words").text_content()
            assert "verified policy" in words and "unsafe state" in words and "falls below" in words
            page.screenshot(path=str(shots / "dashboard-story.png"), full_page=True)
            # filters: by decision, then by guard
            decisions = page.eval_on_selector_all("#f-decision option", "os => os.map(o => o.value)")
            pick = next(d for d in decisions if d and d != "ALLOW") if len(decisions) > 2 else decisions[-1]
            page.select_option("#f-decision", pick)
            shown = page.eval_on_selector_all("#decisions tbody tr td:nth-child(6)", "cs => cs.map(c => c.textContent)")
            assert shown and set(shown) == {pick} and len(shown) < len(rows)
            page.select_option("#f-decision", "")
            guards = [g for g in page.eval_on_selector_all("#f-guard option", "os => os.map(o => o.value)") if g]
            page.select_option("#f-guard", guards[0])
            shown = page.eval_on_selector_all("#decisions tbody tr td:nth-child(7)", "cs => cs.map(c => c.textContent)")
            assert shown and all(guards[0] + ": " in c for c in shown)  # the deciding guard's verdict is shown
            # the halted run: labelled halted in the list and in its header, with the reason
            assert story["halted"]
            if story["halted"]:
                assert page.locator("#runs tbody tr", has_text="halting-run").locator("td").nth(4).text_content() == "halted"
                page.locator("#runs tbody tr", has_text="halting-run").first.click()
                expect(page.locator("#run-state")).to_have_text("halted")
                assert page.locator("#halt-reason").text_content().startswith("Halted: ")
                page.screenshot(path=str(shots / "dashboard-halted.png"), full_page=True)
            assert errors == []
        finally:
            b.close()
    assert (shots / "dashboard-story.png").stat().st_size > 10_000
    assert [e["action"]["name"] for e in story["events"]] == ["light_fire"] * len(story["events"])


def test_one_run_by_url_shows_each_tool_call_its_arguments_verdicts_and_approver(tmp_path):
    """Issue 29: a run of /v1/check decisions (an allowed call, a refused one, an escalation a human approves),
    opened by its URL: the story comes first (above the transition table) and every decision shows its tool call,
    its arguments, the guards' verdicts and, for the approval, who approved. Screenshot saved."""
    _need_browser()
    from svc_roles import AGENT, APPROVER, READER, credentials_file

    from agentguard.server.browser import screenshot_dashboard
    from agentguard.server.testing import serve_in_thread

    from agentguard.config import load_stack

    tools = tmp_path / "tools.toml"
    tools.write_text('[[guards]]\ntype = "tool-rules"\nname = "rules"\nallow = ["read_*", "send_*", "delete_*"]\n'
                     'escalate = ["delete_*"]\n[[guards]]\ntype = "tool-rules"\nname = "internal-mail"\n'
                     '[[guards.arguments]]\ntool = "send_email"\narg = "to"\nmatch = \'.+@example\\\\.com\'\n')
    app = make_app(tmp_path, credentials_file=credentials_file(tmp_path, (AGENT, APPROVER, READER)),
                   tool=load_stack(tools))
    calls = [{"name": "read_file", "arguments": {"path": "notes/q3.txt"}, "call_id": "c1"},
             {"name": "send_email", "arguments": {"to": "eve@evil.org", "body": "q3 numbers"}, "call_id": "c2"},
             {"name": "delete_file", "arguments": {"path": "/tmp/old-report.pdf"}, "call_id": "c3"}]
    shot = Path(os.environ.get("AGENTGUARD_SCREENSHOT_DIR") or tmp_path) / "dashboard-run-tool-calls.png"
    with serve_in_thread(app) as base:
        with httpx.Client(base_url=base, headers=AGENT.headers, timeout=10) as c:
            out = [c.post("/v1/check", json={"run_id": "support-bot-9", "tool_call": t}).json() for t in calls]
        assert [o["decision"] for o in out] == ["ALLOW", "REJECT", "ESCALATE"]
        ok = httpx.post(f"{base}/v1/approvals", headers=APPROVER.headers, timeout=10, json={
            "decision_id": out[2]["decision_id"], "run_id": "support-bot-9", "tool_call": calls[2], "approved": True})
        assert ok.json()["decision"] == "ALLOW"
        info = screenshot_dashboard(base, READER.token, shot, run_id="support-bot-9")
    assert info["page_errors"] == [] and info["run"] == "support-bot-9" and info["url"] == "/dashboard?run=support-bot-9"
    assert info["storyAboveModel"]
    rows = info["visibleDecisions"]  # innerText: what is rendered on screen
    assert len(rows) == 4
    for row, call in zip(rows, calls + [calls[2]]):
        assert row[3] == call["name"]
        for k, v in call["arguments"].items():
            assert k in row[4] and v in row[4]
    assert [r[5] for r in rows] == ["ALLOW", "REJECT", "ESCALATE", "ALLOW"]
    assert "internal-mail: REJECT" in rows[1][6] and "eve@evil.org" in rows[1][6]
    assert "rules: ESCALATE" in rows[2][6] and "internal-mail: ALLOW" in rows[2][6]  # every guard's verdict
    assert rows[2][7].startswith("alice@corp (approved)") and rows[3][7] == "alice@corp"
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_story_api_gives_each_check_decision_its_tool_call_verdicts_and_approver(tmp_path):
    """Without a browser: ``GET /v1/runs/{id}/story`` of /v1/check decisions (was ``action: null``)."""
    from fastapi.testclient import TestClient
    from svc_roles import AGENT, APPROVER, READER, credentials_file

    from agentguard.policies.rules import ToolRuleGuard

    app = make_app(tmp_path, credentials_file=credentials_file(tmp_path, (AGENT, APPROVER, READER)),
                   tool=ToolRuleGuard(allow=["read_*", "delete_*"], escalate=["delete_*"], name="rules"))
    call = {"name": "delete_file", "arguments": {"path": "/tmp/x"}, "call_id": "c2"}
    with TestClient(app) as c:
        c.post("/v1/check", headers=AGENT.headers, json={"run_id": "r", "tool_call": {
            "name": "read_file", "arguments": {"path": "a.txt"}}})
        esc = c.post("/v1/check", headers=AGENT.headers, json={"run_id": "r", "tool_call": call}).json()
        c.post("/v1/approvals", headers=APPROVER.headers, json={"decision_id": esc["decision_id"], "run_id": "r",
                                                                "tool_call": call, "approved": False})
        story = c.get("/v1/runs/r/story", headers=READER.headers).json()
    ev = story["events"]
    assert [(e["kind"], e["decision"]) for e in ev] == [("check", "ALLOW"), ("check", "ESCALATE"), ("approval", "REJECT")]
    assert ev[0]["action"] == {"name": "read_file", "arguments": {"path": "a.txt"}, "call_id": ""}
    assert ev[1]["action"]["arguments"] == {"path": "/tmp/x"} and ev[2]["action"] == ev[1]["action"]
    assert ev[1]["verdicts"][0]["guard"] == "rules" and ev[1]["verdicts"][0]["decision"] == "ESCALATE"
    assert ev[2]["approver"] == "alice@corp" and ev[1]["approver"] == "alice@corp (refused)"
    assert ev[2]["answers"] == esc["decision_id"]
