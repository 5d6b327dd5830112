"""The HTML report in a real browser: Debian's headless Chromium driven by Playwright for Python.

Checks: no console or page errors, every one of the twelve passes reachable with the keyboard
(→ and ←), every stage's SVG present and non-empty, a node's details shown on click (op, dtype,
arg, ring, domain), and a screenshot saved.  The screenshot goes to a temporary directory, or to
docs/report.png (the README's picture) when REN_UPDATE_SCREENSHOT=1.

Needs ``pip install playwright`` (the test extra) and Chromium at /usr/bin/chromium
(`.ci/run` installs Debian's package when it is absent); skipped with the reason otherwise.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from ren_cli.main import cli

from ren.passes import PASS_NAMES

CHROMIUM = os.environ.get("REN_CHROMIUM", "/usr/bin/chromium")
ROOT = Path(__file__).resolve().parent.parent

sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install -e '.[test]')")
if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
    pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (as .ci/run does)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = CliRunner().invoke(cli, ["report", "ckks_multiply", "-o", str(out), "--golden",
                                      str(ROOT / "tests" / "golden")])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def page(report_file):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        pg = browser.new_page(viewport={"width": 1440, "height": 900})
        errors: list[str] = []
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
        pg.goto(report_file.as_uri())
        pg.wait_for_selector("article.stage:not([hidden]) svg")
        pg.errors = errors
        yield pg
        browser.close()


def visible_stage(pg) -> str:
    return pg.locator("article.stage:not([hidden])").get_attribute("data-name")


#: the stage bar (name and +/~/− counts of every stage) of the report docs/report.png shows,
#: written beside it whenever the picture is retaken
PICTURED = ROOT / "docs" / "report.txt"


def stage_bar(pg) -> str:
    return "\n".join(" ".join(b.split()) for b in pg.locator(".stage-button").all_text_contents())


def test_the_readme_picture_is_fresh(page):
    """docs/report.png showed "04 simplify domains +0 ~0 −0" long after pass 4 changed: the
    picture's stage bar must be today's report's, else retake it (see the README)."""
    if os.environ.get("REN_UPDATE_SCREENSHOT") == "1":
        return  # being retaken by test_clicking_a_node_shows_its_details
    assert PICTURED.exists(), "no docs/report.txt: retake the picture (REN_UPDATE_SCREENSHOT=1)"
    assert PICTURED.read_text() == stage_bar(page), (
        "docs/report.png is stale: the report's stage bar changed; retake it with "
        "REN_UPDATE_SCREENSHOT=1 python -m pytest tests/test_report_browser.py and read the "
        "picture before committing it")


def test_every_pass_is_reachable_with_the_keyboard(page):
    assert page.locator("article.stage:not([hidden])").count() == 1
    assert visible_stage(page) == "00_input"
    for name in PASS_NAMES:
        page.keyboard.press("ArrowRight")
        assert visible_stage(page) == name
    page.keyboard.press("ArrowRight")  # past the end: stays on the last pass
    assert visible_stage(page) == "12_kernelize"
    page.keyboard.press("ArrowLeft")
    assert visible_stage(page) == "11_indexify"
    page.keyboard.press("Home")
    assert visible_stage(page) == "00_input"
    assert page.errors == []


def test_zoom(page):
    svg = page.locator("article.stage:not([hidden]) div.graph > svg")
    width = svg.bounding_box()["width"]
    page.keyboard.press("-")
    assert svg.bounding_box()["width"] < width
    page.keyboard.press("+")
    assert abs(svg.bounding_box()["width"] - width) < 2
    assert page.locator(".zoom-level").text_content() == "100%"


def test_zoom_buttons_across_stage_changes(page):
    """Each shown stage added another set of button listeners with its own scale: two "+" on
    pass 3 gave 156%, then -> and "+" showed 125%, then the "+" key 244%.  One scale now."""
    level = page.locator(".zoom-level")
    page.keyboard.press("Home")
    page.keyboard.press("0")  # fit ...
    page.keyboard.press("0")  # ... and back: 100%
    assert level.text_content() == "100%"
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    plus = page.locator("[data-zoom='in']").first
    plus.click()
    plus.click()
    assert level.text_content() == "156%"
    page.keyboard.press("ArrowRight")
    plus.click()
    assert level.text_content() == "195%"
    page.keyboard.press("+")
    assert level.text_content() == "244%"
    page.locator("[data-zoom='out']").first.click()
    assert level.text_content() == "195%"
    page.keyboard.press("Home")
    for _ in range(3):
        page.locator("[data-zoom='out']").first.click()
    assert level.text_content() == "100%"
    assert page.errors == []


def test_every_stage_has_a_non_empty_svg(page):
    stages = page.locator("article.stage")
    assert stages.count() == 13
    buttons = page.locator(".stage-button")
    for i in range(13):
        buttons.nth(i).click()  # shown: its SVG is laid out on the page
        svg = stages.nth(i).locator("div.graph > svg")
        assert svg.count() == 1
        box = svg.bounding_box()
        assert box is not None and box["width"] > 50 and box["height"] > 50
        assert svg.locator("g.node").count() > 0
    arena = page.locator("#arena svg.arena")
    assert arena.count() >= 1 and arena.first.locator("g.buffer").count() > 0
    assert page.locator("#kernels svg").count() == 1


def test_clicking_a_node_shows_its_details(page, tmp_path):
    page.keyboard.press("Home")
    for _ in range(3):  # 03_inject_domains
        page.keyboard.press("ArrowRight")
    stage = page.locator("article.stage:not([hidden])")
    node = stage.locator("g.node", has_text="AS_RING").first
    label = node.locator("text").first.text_content()
    node.click()
    details = page.locator("#details")
    assert details.locator("dd.f-op").text_content() == "AS_RING"
    assert details.locator("dd.f-node").text_content() == label.split()[0]
    assert details.locator("dd.f-dtype").text_content() == "u32"
    assert details.locator("dd.f-ring").text_content().startswith("r")
    assert details.locator("dd.f-domain").text_content() in ("COEFF", "NTT")
    assert "(r" in details.locator("dd.f-arg").text_content()
    assert "selected" in (node.get_attribute("class") or "")
    added = stage.locator("g.node.added").first  # an NTT/INTT the pass injected
    added.click()
    assert details.locator("dd.f-status").text_content() == "added"
    assert details.locator("dd.f-op").text_content() in ("NTT", "INTT")
    bar = stage_bar(page)
    if os.environ.get("REN_UPDATE_SCREENSHOT") == "1":
        target = ROOT / "docs" / "report.png"
        PICTURED.write_text(bar)
    else:
        target = tmp_path / "report.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1440, "height": 1500})  # tall enough for the whole stage
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(target))
    page.set_viewport_size({"width": 1440, "height": 900})
    assert target.stat().st_size > 10_000
    assert page.errors == []
