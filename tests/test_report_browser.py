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
import re
from pathlib import Path

import pytest
from browser import open_report, sync_api
from click.testing import CliRunner
from ren_cli.main import cli

from ren.passes import PASS_NAMES

ROOT = Path(__file__).resolve().parent.parent
sync_api()  # skips this module without Playwright or Chromium


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = CliRunner().invoke(cli, ["report", "ckks_multiply", "-o", str(out), "--golden",
                                      str(ROOT / "tests" / "golden")])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def page(report_file):
    with open_report(report_file) as pg:
        yield pg


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
    pass 3 gave 156%, then -> and "+" showed 125%, then the "+" key 244%.  One scale now, and
    every button and key zooms from the level on view (stepping onto pass 4 may have zoomed out
    to show its change)."""
    level = page.locator(".zoom-level")

    def shown() -> int:
        return int(level.text_content().rstrip("%"))

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
    start = shown()
    assert 60 <= start <= 156
    plus.click()
    assert abs(shown() - start * 1.25) <= 1
    page.keyboard.press("+")
    assert abs(shown() - start * 1.25 ** 2) <= 1
    page.locator("[data-zoom='out']").first.click()
    assert abs(shown() - start * 1.25) <= 1
    mine = level.text_content()
    page.keyboard.press("Home")  # nothing changed on the input: the reader's own scale
    assert level.text_content() == mine
    assert page.errors == []
    page.goto(page.url)  # 100% again for the other tests
    page.wait_for_selector("article.stage:not([hidden]) svg")


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


def _labels(pg) -> dict[str, dict[str, str]]:
    """Per stage: node number -> the first line of its label ("%12 TO_RING"), ghosts included."""
    return pg.evaluate("""() => {
      const out = {};
      document.querySelectorAll("article.stage").forEach(a => {
        const nodes = {};
        a.querySelectorAll("g.node").forEach(g => {
          const m = /^s\\d+[nr](\\d+)$/.exec(g.id);
          const t = g.querySelector("text");
          if (m && t) { (nodes[m[1]] = nodes[m[1]] || []).push(t.textContent.trim()); }
        });
        out[a.getAttribute("data-name")] = nodes;
      });
      return out;
    }""")


def test_a_node_has_the_same_label_on_every_stage(page):
    """A number means one node: within a stage no two drawn nodes (removed ghosts included)
    share it, and across stages the label "%k OP" of node k never changes."""
    seen: dict[str, tuple[str, str]] = {}
    stages = _labels(page)
    assert len(stages) == 13
    for name, nodes in stages.items():
        for k, labels in nodes.items():
            assert len(labels) == 1, (name, k, labels)  # no "%12" removed beside an added "%12"
            assert labels[0].startswith(f"%{k} "), (name, labels[0])
            if k in seen:
                assert seen[k][1] == labels[0], (k, seen[k], name, labels[0])
            seen.setdefault(k, (name, labels[0]))
    # the MUL of the relinearised product is drawn on many stages under one number
    muls = {k for k, (_, lab) in seen.items() if lab.endswith(" MUL")}
    assert muls and any(sum(k in nodes for nodes in stages.values()) >= 5 for k in muls)
    # one ring legend for the report; every ring named in it
    assert page.locator(".ring-legend tr[data-ring]").count() >= 2
    assert page.errors == []


def test_a_rule_highlights_the_nodes_it_produced(page):
    page.keyboard.press("Home")
    for _ in range(3):  # 03_inject_domains: rescale_in_coeff puts INTT/NTT around each RESCALE
        page.keyboard.press("ArrowRight")
    stage = page.locator("article.stage:not([hidden])")
    button = stage.locator("button.rule").first
    rule = button.get_attribute("data-rule")
    button.click()
    assert button.get_attribute("aria-pressed") == "true"
    lit = stage.locator("g.node.hl")
    want = page.evaluate("""rule => Object.entries(window.renReport.data).filter(
        ([id, d]) => id.startsWith('s03n') && d.rule === rule).length""", rule)
    assert lit.count() == want > 0
    ops = {lit.nth(i).locator("text").first.text_content().split()[1] for i in range(lit.count())}
    assert ops <= {"RESCALE", "NTT", "INTT"} and "RESCALE" in ops
    assert stage.locator(".graph.highlighting").count() == 1
    lit.first.click()  # its panel names the rule; a kept node's says none
    details = page.locator("#details")
    assert details.locator("dd.f-rule").text_content() == rule
    assert details.locator("dd.f-status").text_content() in ("rewritten", "added")
    rebuilt = stage.locator("g.node.rebuilt").first  # rebuilt only because a source changed
    rebuilt.click(force=True)
    assert details.locator("dd.f-status").text_content() == "rebuilt"
    assert details.locator("dd.f-rule").text_content() == "—"
    button.click()  # again: off
    assert stage.locator("g.node.hl").count() == 0
    assert stage.locator(".graph.highlighting").count() == 0
    assert page.errors == []


def test_hide_removed_and_before_after(page):
    page.keyboard.press("End")  # 12_kernelize: many removed nodes
    stage = page.locator("article.stage:not([hidden])")
    ghosts = stage.locator("g.node.removed")
    if ghosts.count():
        assert ghosts.first.is_visible()
        page.locator("#hide-removed").check()
        assert not ghosts.first.is_visible()
        page.locator("#hide-removed").uncheck()
        assert ghosts.first.is_visible()
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.locator("#compare").check()
    shown = page.locator("article.stage:not([hidden])")
    assert shown.count() == 2
    assert [shown.nth(i).get_attribute("data-name") for i in range(2)] == [
        "02_lower_ring_ops", "03_inject_domains"]
    kept = page.locator("#stage-03_inject_domains g.node:not(.added):not(.rewritten)").first
    number = kept.get_attribute("id")[3:]  # "n<k>"
    kept.click(force=True)
    twin = page.locator(f"#stage-02_lower_ring_ops g.node[id='s02{number}']")
    assert "twin" in (twin.get_attribute("class") or "")
    page.keyboard.press("ArrowRight")
    assert [shown.nth(i).get_attribute("data-name") for i in range(2)] == [
        "03_inject_domains", "04_simplify_domains"]
    page.locator("#compare").uncheck()
    assert page.locator("article.stage:not([hidden])").count() == 1
    page.keyboard.press("Home")
    assert page.errors == []


def _in_view(pg, selector: str) -> list[bool]:
    """For each element matching `selector` in the shown stage: is it inside both its graph
    box's visible part and the window?"""
    return pg.evaluate("""sel => {
      const a = document.querySelector("article.stage:not([hidden])");
      const box = a.querySelector(".graph").getBoundingClientRect();
      return Array.from(a.querySelectorAll(sel)).map(n => {
        const r = n.getBoundingClientRect();
        return r.width > 0 && r.left >= Math.max(box.left, 0) - 1
          && r.top >= Math.max(box.top, 0) - 1
          && r.right <= Math.min(box.right, innerWidth) + 1
          && r.bottom <= Math.min(box.bottom, innerHeight) + 1;
      });
    }""", selector)


def test_the_change_is_scrolled_into_view(page):
    """At 1280×800 pass 3's new INTT/NTT pairs were below the fold: stepping onto a pass now
    scrolls its graph box (and the page) to the nodes it changed."""
    page.set_viewport_size({"width": 1280, "height": 800})
    try:
        page.evaluate("document.activeElement.blur(); window.scrollTo(0, 0)")  # keys to the page
        page.keyboard.press("Home")
        assert visible_stage(page) == "00_input"
        for _ in range(3):  # 03_inject_domains
            page.keyboard.press("ArrowRight")
        assert visible_stage(page) == "03_inject_domains"
        seen = _in_view(page, "g.node.added")
        assert seen and any(seen), seen
        # the pass 11 graph (thousands of pixels wide): its changes too
        for _ in range(8):
            page.keyboard.press("ArrowRight")
        assert visible_stage(page) == "11_indexify"
        assert any(_in_view(page, "g.node.added, g.node.rewritten, g.node.rebuilt"))
        page.keyboard.press("Home")
    finally:
        page.set_viewport_size({"width": 1440, "height": 900})
    assert page.errors == []


def test_fit_fits_the_whole_graph_and_notes_are_not_clipped(page):
    page.set_viewport_size({"width": 1280, "height": 800})
    try:
        page.evaluate("document.activeElement.blur()")
        page.keyboard.press("Home")
        page.keyboard.press("0")
        assert page.locator(".zoom-level").text_content().startswith("fit")
        buttons = page.locator(".stage-button")
        for i in (3, 11, 12):
            buttons.nth(i).click()
            fits = page.evaluate("""() => {
              const g = document.querySelector("article.stage:not([hidden]) .graph");
              const s = g.querySelector("svg").getBoundingClientRect();
              return [s.width <= g.clientWidth + 1, s.height <= g.clientHeight + 1,
                      g.scrollWidth <= g.clientWidth + 1, g.scrollHeight <= g.clientHeight + 1];
            }""")
            assert fits == [True] * 4, (i, fits)
        page.keyboard.press("0")
        assert page.locator(".zoom-level").text_content() == "100%"
        notes = page.locator("p.ghost-note")
        assert notes.count() >= 1
        for i in range(notes.count()):
            note = notes.nth(i)
            index = int(note.locator("xpath=ancestor::article").get_attribute("data-index"))
            buttons.nth(index).click()
            assert note.is_visible()
            assert note.text_content().endswith("see the text")
            assert note.evaluate("n => n.scrollWidth <= n.clientWidth")
            box = note.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 1280
        page.keyboard.press("Home")
    finally:
        page.set_viewport_size({"width": 1440, "height": 900})
    assert page.errors == []


def test_linked_highlighting_and_one_name_per_buffer(page):
    """One name per buffer (the stage-12 dump's) in the arena, JIT and kernels sections; a
    hovered buffer, unit or kernel is marked in the others; a KERNEL node shows its body."""
    dump = page.locator("#stage-12_kernelize details.text pre").text_content()
    in_dump = set(re.findall(r"\bbuf\d+\b", dump))
    for section in ("#arena", "#jit", "#kernels"):
        names = set(page.evaluate(f"""() => Array.from(document.querySelectorAll(
            "{section} [data-buf]")).map(e => e.getAttribute("data-buf"))"""))
        assert names and names <= in_dump, (section, names - in_dump)
    page.locator("#arena").scroll_into_view_if_needed()
    rect = page.locator("#arena svg.arena g.buffer").first
    name = rect.get_attribute("data-buf")
    rect.hover()
    assert "linked" in (rect.get_attribute("class") or "")
    assert page.locator(f"#jit [data-buf='{name}'].linked").count() >= 1
    assert page.locator(f"#kernels [data-buf='{name}'].linked").count() >= 1
    assert page.locator("#stage-12_kernelize g.node.linked").count() >= 1
    unit = page.locator("#jit tr[data-unit]").nth(3)
    unit.locator("td").first.hover()
    assert "linked" in (unit.get_attribute("class") or "")
    kernel = page.locator("#kernels details.kernel.linked")
    assert kernel.count() == 1
    writes = unit.locator("td").nth(4).text_content().strip()  # its buffers, and its nodes
    assert page.locator(f"#kernels details.kernel.linked [data-buf='{writes}']").count() >= 1
    node = page.locator("#stage-12_kernelize g.node.linked", has_text="KERNEL")
    assert node.count() == 1
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("End")
    node = page.locator("#stage-12_kernelize g.node", has_text="KERNEL").first
    node.click()
    body = page.locator("#details dd.f-body").text_content()
    assert "STORE" in body
    kernel_index = page.evaluate(f"""() => JSON.parse(document.getElementById("links")
        .textContent).nodes["{node.get_attribute('id')}"].item""")
    assert "linked" in (page.locator(f"details.kernel[data-item='{kernel_index}']")
                        .get_attribute("class") or "")
    page.keyboard.press("Home")
    assert page.errors == []
