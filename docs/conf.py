"""Sphinx configuration of Ren's documentation (``docs/``).

Build it (the docs extra installs Sphinx, MyST-NB, sphinx-click, Furo and what the tutorials
run)::

    pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

Every tutorial (a MyST-NB page, or the notebook tour) is executed by the build; a cell that
raises fails it.  Warnings are errors (``-W``): a broken internal link, a page outside every
table of contents, a docstring that does not parse or a tutorial cell that fails all stop the
build.  The API pages come from the docstrings (autodoc), the ``ren-inspect`` page from click
(sphinx-click) and the settings page from ``ren.settings.SWITCHES`` (``_ext/ren_docs.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

# The tutorials' kernels inherit this environment: the examples are importable (the tour and the
# pass tutorial import examples/custom_pass.py) and `!ren-inspect` is this interpreter's.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "examples"), str(ROOT), str(ROOT / "cli")]
    + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # a kernel's debugger note

project = "Ren"
author = "the Ren authors"
copyright = "the Ren authors, Apache-2.0"

extensions = [
    "myst_nb",               # Markdown pages and executed tutorials (MyST-NB)
    "sphinx.ext.autodoc",    # the API reference from the docstrings
    "sphinx.ext.napoleon",   # Google/NumPy sections where a docstring has them
    "sphinx_click",          # the ren-inspect reference from its click commands
    "ren_docs",              # {ren-api} and {ren-settings} (docs/_ext/ren_docs.py)
]

exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store", "report.txt"]
root_doc = "index"

# -- MyST ---------------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3          # [text](page.md#a-heading) links, checked like any other

# -- MyST-NB: every tutorial runs on every build ---------------------------------------------------
nb_execution_mode = "force"
nb_execution_raise_on_error = True   # a failing cell fails the build, with its traceback
nb_execution_show_tb = True
nb_execution_timeout = 300           # per cell
nb_execution_in_temp = True          # whatever a tutorial writes goes to a temporary folder
nb_merge_streams = True

# -- autodoc ---------------------------------------------------------------------------------------
# Ren's docstrings write `name` for code: render it as code and link it where Sphinx knows it
default_role = "py:obj"
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
autodoc_member_order = "groupwise"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# -- HTML -----------------------------------------------------------------------------------------
html_theme = "furo"
html_title = "Ren"
html_static_path: list[str] = []
