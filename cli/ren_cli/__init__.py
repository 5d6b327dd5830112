"""ren-inspect: the command-line face of `ren.viz` (see `ren_cli.main`)."""

from __future__ import annotations

import sys

#: what the CLI imports beyond the engine (the "viz" extra)
VIZ_MODULES = ("click", "rich", "jinja2", "pygraphviz")


def main() -> None:
    """The ``ren-inspect`` console script: the CLI, or one line saying which extra to install
    when the engine was installed without it."""
    try:
        from ren_cli.main import main as cli_main
    except ModuleNotFoundError as e:
        if e.name not in VIZ_MODULES:
            raise
        sys.stderr.write(f"ren-inspect: error: it needs {e.name}, which comes with the viz extra "
                         "of ren: pip install -e '.[viz]' (or '.[test]')\n")
        raise SystemExit(2) from None
    cli_main()
