"""The documentation site (docs/) is consistent without building it: every page is reachable from
the index, links between pages and to headings resolve, every public module has its API page,
the settings page is generated from every switch, the tutorials are executable notebooks, and
the docstring normalizer the API pages use changes only what it must.

The full build (Sphinx, every tutorial executed, warnings as errors) is the `slow` test at the
end; .ci/run builds the site as the docs say and runs that test on its output (DOCS_HTML)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import ren_docs_data as data  # noqa: E402

from ren.settings import SWITCHES  # noqa: E402

SKIP = {"_build", "_ext"}


def _pages() -> dict[str, Path]:
    """docname (path under docs/ without suffix) -> source file, as Sphinx sees them."""
    out = {}
    for path in DOCS.rglob("*"):
        rel = path.relative_to(DOCS)
        if rel.parts[0] in SKIP or path.suffix not in (".md", ".rst", ".ipynb"):
            continue
        out[rel.with_suffix("").as_posix()] = path
    return out


def _toctree(path: Path) -> list[str]:
    """The entries of a page's toctrees (MyST ```{toctree} fences or RST directives), as
    docnames relative to docs/."""
    text = path.read_text()
    bodies = re.findall(r"```\{toctree\}\n(.*?)```", text, re.S)
    bodies += re.findall(r"\.\. toctree::\n((?:[ \t]+.*\n|\n)*)", text)
    base = path.parent.relative_to(DOCS)
    out = []
    for body in bodies:
        for line in body.splitlines():
            entry = line.strip()
            if entry and not entry.startswith(":"):
                out.append((base / entry).as_posix() if base.parts else entry)
    return out


def _reachable() -> set[str]:
    pages, seen, todo = _pages(), set(), ["index"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [e for e in _toctree(pages[name]) if e in pages] if name in pages else []
    return seen


def test_every_page_is_in_a_table_of_contents_and_every_entry_exists():
    pages = _pages()
    entries = [e for p in pages.values() for e in _toctree(p)]
    assert set(entries) - set(pages) == set(), "toctree entries without a page"
    assert set(pages) - _reachable() == set(), "pages no table of contents reaches"
    for part in ("tour", "tutorial-ckks-basics", "tutorial-ckks-program", "tutorial-bootstrapping",
                 "tutorial-distributed", "tutorial-custom-pass", "howto-read-a-report",
                 "howto-golden-snapshots", "howto-choose-parameters", "howto-settings", "cli",
                 "api/index"):
        assert part in pages, part


def _slug(heading: str) -> str:
    """MyST's heading anchor: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.*)$", text, re.M)}


def test_links_between_pages_resolve():
    """{doc} roles and Markdown links to pages, files and headings (Sphinx checks the same with
    -W; this finds them without building)."""
    pages = _pages()
    bad = []
    for name, path in pages.items():
        if path.suffix != ".md":
            continue
        text = re.sub(r"```(?!\{).*?```", "", path.read_text(), flags=re.S)  # not in code blocks
        base = path.parent
        for target in re.findall(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`", text):
            resolved = (base / target).resolve().relative_to(DOCS.resolve()).as_posix()
            if resolved not in pages:
                bad.append(f"{name}: {{doc}}`{target}`")
        for target, anchor in re.findall(r"\]\(([^)#:\s]*)(?:#([^)\s]+))?\)", text):
            file = (base / target) if target else path
            if not file.exists():
                bad.append(f"{name}: ({target})")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                bad.append(f"{name}: ({target}#{anchor})")
    assert bad == []


def test_the_readme_links_to_headings_that_exist():
    text = (ROOT / "README.md").read_text()
    for target, anchor in re.findall(r"\]\((docs/[^)#\s]+\.md)#([^)\s]+)\)", text):
        assert anchor in _anchors(ROOT / target), f"{target}#{anchor}"


# -- the API reference ---------------------------------------------------------------------------
def test_every_public_module_has_an_api_page_in_the_reference():
    index = _toctree(DOCS / "api" / "index.md")
    assert set(data.PUBLIC_MODULES) <= set(data.API_PAGES)
    for module in data.API_PAGES:
        page = DOCS / "api" / f"{module}.rst"
        assert page.is_file(), f"no API page for {module}"
        assert f".. ren-api:: {module}\n" in page.read_text()
        assert f"api/{module}" in index


def test_api_pages_document_each_name_once_and_link_the_rest():
    """A re-exported class is documented on its home page and linked from the others (Sphinx
    refuses two descriptions of one object); a submodule a public module exports has a page."""
    documented: dict[int, str] = {}
    for module in data.API_PAGES:
        members = data.api_members(module)
        names = members.own + [n for n, _ in members.elsewhere + members.submodules]
        assert len(names) == len(set(names)), module
        for name, home in members.elsewhere:
            assert home in data.API_PAGES and name in data.api_members(home).own, (module, name)
        for _, target in members.submodules:
            assert target in data.API_PAGES, f"{module} exports {target}, which has no page"
        mod = __import__(module, fromlist=["_"])
        for name in members.own:
            obj = getattr(mod, name)
            if isinstance(obj, type) or callable(obj):
                assert documented.setdefault(id(obj), module) == module, \
                    f"{module}.{name} is also documented in {documented[id(obj)]}"
    # the case that needs it: ren.ckks re-exports ren.rlwe's keys
    ckks = data.api_members("ren.ckks")
    assert ("SecretKey", "ren.rlwe") in ckks.elsewhere and "Evaluator" in ckks.own
    assert ("debug", "ren.ckks.debug") in ckks.submodules


# -- the settings page ---------------------------------------------------------------------------
def test_the_settings_page_is_generated_from_every_switch():
    page = (DOCS / "howto-settings.md").read_text()
    assert "```{ren-settings}\n```" in page
    rows = data.settings_rows()
    assert [r[0] for r in rows] == list(SWITCHES)
    for name, default, allowed, doc in rows:
        switch = SWITCHES[name]
        assert (default, allowed, doc) == (repr(switch.default), switch.allowed_text(), switch.doc)
    # and nobody keeps a hand-written copy of the table that could go stale
    assert "| `REN_" not in page


# -- the tutorials -------------------------------------------------------------------------------
def test_the_tutorials_are_executable_notebooks():
    for path in sorted(DOCS.glob("tutorial-*.md")) + [DOCS / "howto-choose-parameters.md"]:
        text = path.read_text()
        assert text.startswith("---\nfile_format: mystnb\n"), path.name
        assert "name: python3" in text.split("---")[1], path.name
        assert text.count("```{code-cell} python") >= 3, path.name
    tour = DOCS / "tour.ipynb"
    assert tour.is_symlink() and tour.resolve() == (ROOT / "examples" / "tour.ipynb").resolve()


def test_the_pass_tutorial_includes_the_example_it_explains():
    """literalinclude markers that must exist in examples/custom_pass.py (else the build fails,
    but this says which)."""
    text = (DOCS / "tutorial-custom-pass.md").read_text()
    source = (ROOT / "examples" / "custom_pass.py").read_text()
    for marker in re.findall(r':(?:start-at|end-before): "([^"]+)"', text):
        assert marker in source, marker


# -- the docstring normalizer ----------------------------------------------------------------------
def test_an_indented_example_after_a_sentence_becomes_a_literal_block():
    lines = ["Start with:", "", "    f(*args)   # |x|", "    more", "", "Then |y| and `|z|`."]
    out = data.normalize_docstring(lines)
    assert out == ["Start with:", "", "::", "", "    f(*args)   # |x|", "    more", "",
                   r"Then \|y\| and `|z|`."]


def test_list_continuations_and_marked_literals_stay_as_written():
    item = ["* a list item", "", "  its second paragraph with ``|x|``"]
    assert data.normalize_docstring(item) == item
    marked = ["Example::", "", "    a | b", "", "text"]
    assert data.normalize_docstring(marked) == marked
    nested = ["Para", "", "    code", "", "        deeper", "back"]
    assert data.normalize_docstring(nested)[:6] == ["Para", "", "::", "", "    code", ""]


def test_a_click_no_rewrap_paragraph_becomes_a_literal_block():
    lines = ["Help.", "", "| def f(*args):  -> x", "|   more", "", "After."]
    assert data.click_lines(lines) == ["Help.", "", "::", "", "    def f(*args):  -> x",
                                       "      more", "", "After."]


# -- the full build ------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_docs_build_without_warnings_and_every_tutorial_runs(tmp_path):
    """Sphinx with -W builds the site and executes every tutorial; the pages hold what they are
    generated from.  With DOCS_HTML set (.ci/run), the build that command made is checked."""
    given = os.environ.get("DOCS_HTML")
    if given:
        html = Path(given)
        assert (html / "index.html").is_file(), f"DOCS_HTML={given} holds no build"
    else:
        pytest.importorskip("sphinx", reason="the docs extra: pip install -e '.[docs]'")
        pytest.importorskip("myst_nb", reason="the docs extra: pip install -e '.[docs]'")
        html = tmp_path / "html"
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                              "html", "-d", str(tmp_path / "doctrees"), str(DOCS), str(html)],
                             capture_output=True, text=True, cwd=ROOT, timeout=900)
        assert res.returncode == 0, res.stderr[-4000:]
        print(f"docs built in {time.perf_counter() - t0:.0f} s")
    settings = (html / "howto-settings.html").read_text()
    for name in SWITCHES:
        assert f"<span class=\"pre\">{name}</span>" in settings, name
    for module in data.API_PAGES:  # every public class and function has its description
        page = (html / "api" / f"{module}.html").read_text()
        mod = __import__(module, fromlist=["_"])
        for name in data.api_members(module).own:
            if isinstance(getattr(mod, name), type) or callable(getattr(mod, name)):
                assert f'id="{module}.{name}"' in page, f"{module}.{name}"
    cli = (html / "cli.html").read_text()
    from ren_cli.main import cli as group
    for command in group.commands:
        assert f'id="ren-inspect-{command}"' in cli, command
    for page in ["tour", *(p.stem for p in DOCS.glob("tutorial-*.md"))]:
        text = (html / f"{page}.html").read_text()
        assert text.count('class="cell_output') >= 3, f"{page}: no outputs (not executed?)"
        assert "Traceback (most recent call last)" not in text, page
