"""What the generated parts of the documentation are made of, without Sphinx.

`ren_docs` (the Sphinx extension) renders these; `tests/test_docs.py` checks them on the README's
plain set-up, where Sphinx is not installed.

* `API_PAGES`: every module the API reference documents, one page each (``docs/api/<name>.md``).
  The eight public modules come first; the others are modules a public one exports as a member
  (``ren.errors``, ``ren.ckks.debug``, ...) or that users import directly (``ren.ckks.circuits``,
  ``ren.testing``).
* `api_members(name)`: what that page documents itself, what it only links to (a class or
  function re-exported from the page of its home module: ``ren.ckks.SecretKey`` is
  ``ren.rlwe``'s), and the submodules it exports.
* `settings_rows()`: one row per switch of ``ren.settings.SWITCHES``.
"""

from __future__ import annotations

import importlib
import re
import types
from dataclasses import dataclass, field

#: the public modules (issue 40): the API reference has a page for each
PUBLIC_MODULES = ("ren", "ren.ckks", "ren.bfv", "ren.rlwe", "ren.passes", "ren.passdev",
                  "ren.viz", "ren.distributed")

#: every API page, in the order of the reference's table of contents
API_PAGES = PUBLIC_MODULES + (
    "ren.errors", "ren.jit", "ren.settings", "ren.random",
    "ren.ckks.debug", "ren.ckks.circuits", "ren.bfv.debug",
    "ren.viz.notebook", "ren.testing",
)


@dataclass
class ApiMembers:
    """One API page's members: `own` documented here; `elsewhere` (name, home module) only
    linked; `submodules` (name, module) linked to their own pages."""

    module: str
    own: list[str] = field(default_factory=list)
    elsewhere: list[tuple[str, str]] = field(default_factory=list)
    submodules: list[tuple[str, str]] = field(default_factory=list)


def _exported(module: types.ModuleType) -> list[str]:
    """The module's public names: its ``__all__``, else what it defines without a leading _."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [n for n, v in vars(module).items() if not n.startswith("_")
            and getattr(v, "__module__", None) == module.__name__
            and isinstance(v, (type, types.FunctionType))]


def _definite(obj: object) -> bool:
    """A class or function: identity says where it lives (an int or a str may be shared)."""
    return isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType))


def _home(obj: object, pages: tuple[str, ...]) -> str | None:
    """The API page that documents `obj` itself: the most specific page whose module is (a
    parent of) the module that defines it and exports it."""
    where = getattr(obj, "__module__", None) or ""
    best = None
    for page in pages:
        if where == page or where.startswith(page + "."):
            module = importlib.import_module(page)
            if any(getattr(module, n, None) is obj for n in _exported(module)) and (
                    best is None or len(page) > len(best)):
                best = page
    return best


def api_members(name: str, pages: tuple[str, ...] = API_PAGES) -> ApiMembers:
    """Split module `name`'s public names into the ones its page documents, the re-exports it
    links to their home page, and the submodules it links to theirs."""
    module = importlib.import_module(name)
    out = ApiMembers(name)
    for member in _exported(module):
        obj = getattr(module, member)
        if isinstance(obj, types.ModuleType):
            out.submodules.append((member, obj.__name__))
            continue
        home = _home(obj, pages) if _definite(obj) else None
        if home is not None and home != name:
            out.elsewhere.append((member, home))
        else:
            out.own.append(member)
    return out


def settings_rows() -> list[tuple[str, str, str, str]]:
    """(name, default, allowed values, what it does) for every switch, in registry order."""
    from ren.settings import SWITCHES

    return [(s.name, repr(s.default), s.allowed_text(), s.doc) for s in SWITCHES.values()]


# -- docstrings: plain text with `code`, read as reStructuredText ---------------------------------
#: a paragraph that starts a list item, a field, a directive or a comment: an indented block after
#: it continues it (RST's own rules), it is not an example
_ITEM = re.compile(r"^\s*([*+•-]|\d+[.)]|#\.|:[^:]+:|\.\.)(\s|$)")
#: inline code (``x`` or `x`): RST reads nothing inside it
_CODE = re.compile(r"``.+?``|`[^`]*`")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def normalize_docstring(lines: list[str]) -> list[str]:
    """Ren's docstrings are plain text with `code`; two plain-text habits mean something else to
    reStructuredText, and only those are changed:

    * an indented example after a sentence that does not end in ``::`` (RST: an indented
      quotation, whose ``*args`` or ``|x|`` then fail) becomes a literal block;
    * ``|x|`` (an absolute value; RST: a substitution) outside code is escaped.

    Literal blocks (after ``::`` or made so) and inline code are left as written."""
    out: list[str] = []
    para: list[str] = []       # the paragraph before the current line (its lines)
    literal_at: int | None = None  # inside a literal block: the indentation it must exceed
    blank = True
    for line in lines:
        if not line.strip():
            out.append(line)
            blank = True
            continue
        ind = _indent(line)
        if literal_at is not None:
            if ind > literal_at:
                out.append(line)
                blank = False
                continue
            literal_at = None
        if blank and para and ind > _indent(para[0]):
            if para[-1].rstrip().endswith("::"):
                literal_at = _indent(para[0])
            elif not _ITEM.match(para[0]):
                # an example after a plain sentence: a literal block (a lone "::" shows nothing)
                out[-1:-1] = ["", " " * _indent(para[0]) + "::"]
                literal_at = _indent(para[0])
            if literal_at is not None:
                out.append(line)
                blank = False
                continue
        if blank:
            para = []
        para.append(line)
        out.append(_escape_bars(line))
        blank = False
    return out


def _escape_bars(line: str) -> str:
    """``|`` outside inline code, escaped (``\\|``): never an RST substitution."""
    parts, last = [], 0
    for m in _CODE.finditer(line):
        parts.append(line[last:m.start()].replace("|", r"\|"))
        parts.append(m.group(0))
        last = m.end()
    parts.append(line[last:].replace("|", r"\|"))
    return "".join(parts)


def click_lines(lines: list[str]) -> list[str]:
    """sphinx-click's lines for a command's help: click's ``\\b`` paragraphs (kept as typed) came
    as an RST line block (``| ...``); they become a literal block, then the help is read like a
    docstring (`normalize_docstring`)."""
    out: list[str] = []
    in_block = False
    for line in lines:
        if line.startswith("| ") or line == "|":
            if not in_block:
                if out and out[-1].strip():
                    out.append("")
                out += ["::", ""]
                in_block = True
            out.append("    " + line[2:])
            continue
        if in_block and line.strip():
            out.append("")
        in_block = False
        out.append(line)
    return normalize_docstring(out)
