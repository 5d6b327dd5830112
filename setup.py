"""The one compiled part of the package: `ren._node`, the IR's core in C (Node's hash-consing
constructor, the rewrite driver's walk).

Everything else is in pyproject.toml.  The extension is optional: when it cannot be built (no C
compiler, no Python headers) the install goes on and the same core runs in Python, which gives
the same nodes and graphs (`ren.node.C_CORE` says which one runs).  The build records the
SHA-256 of its source, so an editable install whose ren/_node.c changed since it was built is
noticed (`ren.node` then warns and uses the Python core until `pip install -e .`).
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "ren/_node.c"
digest = hashlib.sha256((Path(__file__).parent / SOURCE).read_bytes()).hexdigest()

setup(ext_modules=[Extension("ren._node", [SOURCE], optional=True,
                             define_macros=[("REN_NODE_SOURCE", f'"{digest}"')])])
