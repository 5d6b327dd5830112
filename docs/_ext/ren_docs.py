"""Sphinx extension for Ren's documentation: the generated parts.

``{ren-api} MODULE``
    The API page of MODULE: autodoc over the names the page documents itself, then links to the
    re-exported names' home pages and to the submodules' pages (`ren_docs_data.api_members`).

``{ren-settings}``
    The table of every debug switch, built from ``ren.settings.SWITCHES`` when the docs build:
    a new switch appears without anyone copying it.

Docstrings and ``ren-inspect``'s help are plain text with `code`; the two plain-text habits that
reStructuredText reads otherwise (an indented example after a plain sentence, ``|x|``) are
normalized as they are read (`ren_docs_data.normalize_docstring`), so ``-W`` fails only on real
mistakes.
"""

from __future__ import annotations

from docutils import nodes
from ren_docs_data import api_members, click_lines, normalize_docstring, settings_rows
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.typing import ExtensionMetadata


class ApiDirective(SphinxDirective):
    """``{ren-api} ren.ckks``: autodoc for the page's own members, links for the rest."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        members = api_members(self.arguments[0])
        name = members.module
        # every public name (``__all__``) but the ones documented on another page; an explicit
        # :members: list would also filter each class's own members
        lines = [f".. automodule:: {name}", "   :members:"]
        skip = [member for member, _ in members.elsewhere + members.submodules]
        if skip:
            lines.append(f"   :exclude-members: {', '.join(skip)}")
        lines.append("")
        if members.submodules:
            lines += ["**Submodules** exported by this module, each on its own page: "
                      + ", ".join(f":py:mod:`{member} <{target}>`"
                                  for member, target in members.submodules) + ".", ""]
        if members.elsewhere:
            lines += [f"**Also exported** by ``{name}``, documented with their home module: "
                      + ", ".join(f":py:obj:`{member} <{home}.{member}>` (``{home}``)"
                                  for member, home in members.elsewhere) + ".", ""]
        return self.parse_text_to_nodes("\n".join(lines))


class SettingsDirective(SphinxDirective):
    """``{ren-settings}``: a table of ``ren.settings.SWITCHES``."""

    def run(self) -> list[nodes.Node]:
        head = ("variable", "default", "allowed", "effect")
        rows = settings_rows()
        table = nodes.table(classes=["ren-settings"])
        group = nodes.tgroup(cols=len(head))
        table += group
        for width in (22, 10, 18, 50):
            group += nodes.colspec(colwidth=width)
        thead, tbody = nodes.thead(), nodes.tbody()
        group += thead
        group += tbody
        thead += self._row(head, code=())
        for row in rows:
            tbody += self._row(row, code=(0, 1))
        return [table]

    @staticmethod
    def _row(cells: tuple[str, ...], code: tuple[int, ...]) -> nodes.row:
        row = nodes.row()
        for i, text in enumerate(cells):
            entry = nodes.entry()
            para = nodes.paragraph()
            if i in code:
                para += nodes.literal(text, text)
            else:  # `name` in a switch's text is code, as in a docstring
                for k, part in enumerate(text.split("`")):
                    if part:
                        para += nodes.literal(part, part) if k % 2 else nodes.Text(part)
            entry += para
            row += entry
        return row


def _docstring(app: Sphinx, what: str, name: str, obj: object, options: object,
               lines: list[str]) -> None:
    lines[:] = normalize_docstring(lines)


def _click_help(app: Sphinx, ctx: object, lines: list[str]) -> None:
    lines[:] = click_lines(lines)


def setup(app: Sphinx) -> ExtensionMetadata:
    # code cells are IPython (the tour's `!ren-inspect ...` lines): its lexer reads plain Python
    # the same and shell escapes and magics without a highlighting failure
    from IPython.lib.lexers import IPython3Lexer

    app.add_lexer("python", IPython3Lexer)
    app.connect("autodoc-process-docstring", _docstring)
    app.connect("sphinx-click-process-description", _click_help)
    app.add_directive("ren-api", ApiDirective)
    app.add_directive("ren-settings", SettingsDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
