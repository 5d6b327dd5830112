"""The one compiled part of the package: `ren._node`, the IR's core in C (Node's hash-consing
constructor, the rewrite driver's walk).

Everything else is in pyproject.toml.  The extension is optional: when it cannot be built (no C
compiler, no Python headers) the install goes on and the same core runs in Python, which gives
the same nodes and graphs (`ren.node.C_CORE` says which one runs).  The build records the
SHA-256 of its sources, so an editable install whose ren/_*.c or ren/_*.h changed since it was
built is noticed (`ren.node` then warns and uses the Python core until `pip install -e .`).
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup

# the extension's files: ren/_*.c and ren/_*.h, hashed in name order (ren.node checks the same)
FILES = sorted(p.name for p in (Path(__file__).parent / "ren").glob("_*.[ch]"))
digest = hashlib.sha256()
for name in FILES:
    digest.update((Path(__file__).parent / "ren" / name).read_bytes())

setup(ext_modules=[Extension("ren._node", [f"ren/{n}" for n in FILES if n.endswith(".c")],
                             depends=[f"ren/{n}" for n in FILES if n.endswith(".h")],
                             optional=True,
                             define_macros=[("REN_NODE_SOURCE", f'"{digest.hexdigest()}"')])])
