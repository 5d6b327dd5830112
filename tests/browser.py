"""Opening a ren-inspect report in a real browser for the tests: Debian's headless Chromium
driven by Playwright for Python (skipped, with the reason, when either is missing)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("REN_CHROMIUM", "/usr/bin/chromium")


def sync_api():
    """Playwright's sync API, or skip the calling test module."""
    api = pytest.importorskip("playwright.sync_api",
                              reason="playwright is not installed (pip install -e '.[test]')")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (as .ci/run does)",
                    allow_module_level=True)
    return api


@contextmanager
def open_report(path: Path, width: int = 1440, height: int = 900) -> Iterator:
    """A page showing the report at `path`; ``page.errors`` collects console errors, page
    errors and failed requests (a self-contained report has none)."""
    api = sync_api()
    with api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        pg = browser.new_page(viewport={"width": width, "height": height})
        errors: list[str] = []
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
        pg.goto(path.as_uri())
        pg.wait_for_selector("article.stage:not([hidden]) svg")
        pg.errors = errors
        try:
            yield pg
        finally:
            browser.close()
