"""Headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright) for dashboard checks.

Never downloads a browser: Playwright is pointed at the system executable.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..core.errors import DependencyError, require

__all__ = ["CHROMIUM_FLAGS", "chromium_path", "screenshot_dashboard"]

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"]


def chromium_path() -> str:
    """The system Chromium (``AGENTGUARD_CHROMIUM`` overrides), or DependencyError."""
    for cand in (os.environ.get("AGENTGUARD_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if cand and Path(cand).exists():
            return cand
    raise DependencyError("Chromium not found: apt-get install chromium (scripts/setup_chromium.sh)")


def screenshot_dashboard(base_url: str, token: str, path: str | os.PathLike[str], *, run_id: str | None = None,
                         width: int = 1400, height: int = 1500, timeout_ms: int = 30_000) -> dict[str, Any]:
    """Open the dashboard, wait until it has loaded its data (and ``run_id``'s charts), save a
    full-page PNG at ``path``; return what the page shows (for assertions)."""
    sync_api = require("playwright.sync_api", "server")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            # one run by its URL (/dashboard?run=ID), as a link to it opens it
            query = f"?run={quote(run_id, safe='')}" if run_id is not None else ""
            page.goto(f"{base_url}/dashboard{query}#token={token}", wait_until="load", timeout=timeout_ms)
            page.wait_for_selector("body[data-loaded='1']", timeout=timeout_ms)
            if run_id is not None:
                page.wait_for_function(f"document.querySelector('#run-title').textContent === {run_id!r}",
                                       timeout=timeout_ms)
                page.wait_for_timeout(300)
            info = page.evaluate("""() => ({
                title: document.title,
                status: document.querySelector('#status').textContent,
                runs: [...document.querySelectorAll('#runs tbody tr td:first-child')].map(e => e.textContent),
                run: document.querySelector('#run-title').textContent,
                riskPaths: document.querySelectorAll('#risk-chart path').length,
                signalPaths: document.querySelectorAll('#signal-chart path').length,
                dtmcStates: document.querySelectorAll('#dtmc-graph circle').length,
                dtmcUnsafe: [...document.querySelectorAll('#dtmc-graph circle')].filter(
                    c => c.getAttribute('fill') === '#c62828').length,
                calibCharts: document.querySelectorAll('#calib-charts svg').length,
                decisions: [...document.querySelectorAll('#decisions tbody tr')].map(
                    r => [...r.children].map(c => c.textContent)),
                visibleDecisions: [...document.querySelectorAll('#decisions tbody tr')].map(
                    r => [...r.children].map(c => c.innerText)),
                storyAboveModel: (() => {
                    const a = document.querySelector('#decisions'), b = document.querySelector('#dtmc-table');
                    return !b || a.getBoundingClientRect().top < b.getBoundingClientRect().top; })(),
                url: location.pathname + location.search,
            })""")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(path), full_page=True)
            info["page_errors"] = errors
            return info
        finally:
            browser.close()
