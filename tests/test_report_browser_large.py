"""The report's large-graph view and CKKS overlays in a real browser (see tests/browser.py).

A stage past the drawing limit is collapsed into groups (`ren.viz.groups`): here ckks_multiply
with ``--max-nodes 100`` makes every stage past pass 3 collapsed, cheap enough for a test, with
the same code a bootstrapping's 38,000-node stages use.  Checked: the top level shows one box
per CKKS operation, a click opens a group and the breadcrumb leads back, the search finds nodes
by number and op in collapsed and drawn stages and opens the right group, node details work
inside a group, stepping keeps working, colouring by precision paints the measured nodes, and
the page logs no errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import open_report, sync_api
from click.testing import CliRunner
from ren_cli.main import cli

sync_api()  # skips this module without Playwright or Chromium


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out: Path = tmp_path_factory.mktemp("large") / "large.html"
    result = CliRunner().invoke(cli, ["report", "ckks_multiply", "-o", str(out), "--max-nodes",
                                      "100"])
    assert result.exit_code == 0, result.output
    with open_report(out, 1280, 800) as pg:
        yield pg


def go(pg, index: int) -> None:
    pg.evaluate("document.activeElement && document.activeElement.blur()")
    pg.keyboard.press("Home")
    for _ in range(index):
        pg.keyboard.press("ArrowRight")


def stage(pg):
    return pg.locator("article.stage:not([hidden])")


def test_a_collapsed_stage_shows_operations_and_opens_them(page):
    go(page, 12)
    st = stage(page)
    assert st.locator(".graph.collapsed svg").count() == 1
    assert "Shown collapsed" in st.locator(".collapsed-note").text_content()
    boxes = st.locator("g.group")
    names = [t.split(" · ")[0] for t in boxes.locator("text").all_text_contents()[::2]]
    assert names == ["multiply #0", "rescale #0"]  # numbered per operation
    assert "L2 · 2^40.0" in boxes.nth(1).text_content()  # the rescaled product's level, scale
    boxes.first.click()
    crumbs = st.locator("nav.crumbs button")
    assert crumbs.all_text_contents() == ["all", "multiply #0"]
    inner = st.locator("g.group").all_text_contents()
    assert any(t.startswith("relinearize #") for t in inner)
    kernel = st.locator("g.node", has_text="KERNEL").first  # the group's own nodes: details
    kernel.click()
    details = page.locator("#details")
    assert details.locator("dd.f-op").text_content() == "KERNEL"
    assert details.locator("dd.f-group").text_content().startswith("multiply #0")
    crumbs.first.click()
    assert st.locator("g.group").count() == 2
    assert page.errors == []


def test_search_finds_nodes_in_collapsed_and_drawn_stages(page):
    go(page, 12)
    box = page.locator("#node-search")
    box.fill("kernel")
    count = page.locator(".search-count").text_content()
    kernels = page.evaluate("""() => Object.entries(window.renReport.data).filter(
        ([id, d]) => id.startsWith('s12n') && d.op === 'KERNEL').length""")
    assert count.startswith(f"{kernels} found") and kernels > 0
    result = page.locator(".search-results button", has_text="relinearize").first
    number = result.text_content().split()[0]
    result.click()
    st = stage(page)
    assert "relinearize" in st.locator("nav.crumbs").text_content()  # its group is open
    found = st.locator("g.node.found")
    assert found.count() == 1 and found.locator("text").first.text_content().startswith(number)
    assert page.locator("#details dd.f-node").text_content() == number
    box.fill(number)  # by number
    assert page.locator(".search-count").text_content().startswith("1 found")
    box.fill("multiply")  # a group by name
    page.locator(".search-results button", has_text="group multiply #0").click()
    assert st.locator("nav.crumbs button[aria-current='true']").text_content() == "multiply #0"
    go(page, 0)  # a drawn stage: the same box
    box.fill("NTT")
    drawn = stage(page).locator("g.node", has_text="NTT")
    ntts = [t for t in drawn.locator("text").all_text_contents() if t.split()[-1:] == ["NTT"]]
    assert page.locator(".search-count").text_content().startswith(f"{len(ntts)} found")
    page.locator(".search-results button").first.click()
    assert stage(page).locator("g.node.found").count() == 1
    box.fill("")
    assert page.errors == []


def test_colour_by_precision(page):
    go(page, 0)
    toggle = page.locator("#colour-bits")
    assert toggle.count() == 1
    toggle.check()
    measured = stage(page).locator("g.node.has-bits")
    assert measured.count() >= 2  # the rescaled product's two parts (and the product's)
    fills = set(page.evaluate("""() => Array.from(document.querySelectorAll(
        "article.stage:not([hidden]) g.node.has-bits polygon, "
        + "article.stage:not([hidden]) g.node.has-bits path")).map(e => e.style.fill)"""))
    assert fills and all(f.startswith("rgb(") for f in fills)
    faded = page.evaluate("""() => getComputedStyle(document.querySelector(
        "article.stage:not([hidden]) g.node:not(.has-bits)")).opacity""")
    assert float(faded) < 1
    label = measured.first.locator("text").all_text_contents()
    assert any(" b" in t and t.startswith("L") for t in label)  # level · scale · bits
    toggle.uncheck()
    assert page.evaluate("""() => Array.from(document.querySelectorAll(
        "g.node.has-bits polygon")).every(e => e.style.fill === "")""")
    assert page.errors == []
