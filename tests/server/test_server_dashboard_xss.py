"""The dashboard shows what the agent sent as text, never as HTML (session 18 red team; headless Chromium).

The attack: with only the agent's credential, put markup in everything the dashboard draws for a reader (tool
name, argument names and values, call id, the metadata, a step's state, action, observation and output, signal
names, and the guards' reasons, which quote the call), then have a reader open the run. Already safe (kept as a
regression test): the page builds every cell with ``textContent`` and its Content-Security-Policy allows no
inline script; the test checks both that nothing ran and that no element came from the payload (so an HTML sink
would be caught even where the CSP stopped the script).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svc_roles import AGENT, READER, credentials_file  # noqa: E402
from test_server_dashboard import _need_browser  # noqa: E402

MARK = "window.__pwned=(window.__pwned||0)+1"
PAYLOADS = [f'<img src=x onerror="{MARK}">', f"<svg/onload={MARK}>", f'"><script>{MARK}</script>',
            f"</td><td><iframe srcdoc='<script>parent.{MARK}</script>'>", f"javascript:{MARK}"]


def test_agent_markup_is_drawn_as_text(tmp_path):
    _need_browser()
    from playwright.sync_api import sync_playwright

    from agentguard.server.app import create_app
    from agentguard.server.browser import CHROMIUM_FLAGS, chromium_path
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    tools = tmp_path / "tools.toml"
    tools.write_text('[[guards]]\ntype = "tool-rules"\nname = "rules"\nallow = ["*"]\ndeny = ["*onerror*"]\n')
    app = create_app(ServerSettings(state_dir=str(tmp_path / "d"), tool_guards=str(tools),
                                    credentials_file=str(credentials_file(tmp_path, (AGENT, READER)))))
    run = "xss-run"
    with serve_in_thread(app) as base:
        with httpx.Client(base_url=base, headers=AGENT.headers, timeout=10) as c:
            for i, p in enumerate(PAYLOADS):
                r = c.post("/v1/check", json={"run_id": run, "metadata": {p: p}, "tool_call": {
                    "name": p[:256], "arguments": {p: p, "n": [p, {p: p}]}, "call_id": p[:256]}})
                assert r.status_code == 200, r.text
                r = c.post(f"/v1/runs/{run}/steps", json={"state": p, "action": p, "observation": {p: p}, "output": p})
                assert r.status_code == 200, r.text
                assert c.post(f"/v1/runs/{run}/signals", json={"signals": {p[:40]: 0.9}}).status_code == 200
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
            try:
                page = browser.new_page()
                dialogs: list[str] = []
                page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
                page.goto(f"{base}/dashboard?run={run}#token={READER.token}", wait_until="load")
                page.wait_for_selector("body[data-loaded='1']", timeout=30_000)
                page.wait_for_function(f"document.querySelector('#run-title').textContent === {run!r}", timeout=30_000)
                page.wait_for_timeout(300)
                got = page.evaluate("""() => ({
                    pwned: window.__pwned || 0,
                    injected: document.querySelectorAll(
                        'img[onerror], [onload], iframe, script:not([src]), [href^="javascript:"]').length,
                    text: document.body.innerText,
                })""")
            finally:
                browser.close()
    assert got["pwned"] == 0 and dialogs == [] and got["injected"] == 0, got
    assert "<img src=x onerror=" in got["text"] and "<svg/onload=" in got["text"]  # shown, as text
