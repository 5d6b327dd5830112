"""The README's tour runs as written: its first Python block, then "Looking inside" on the graph
it builds (which showed 3 nodes and an empty schedule when it reused the realized `c`)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _block(after: str) -> str:
    text = README.read_text()
    start = text.index(after)
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)


def test_the_tour_and_looking_inside_run(capsys):
    ns: dict = {}
    exec(compile(_block("## A short tour"), "README tour", "exec"), ns)
    exec(compile(_block("### Looking inside"), "README looking inside", "exec"), ns)
    out = capsys.readouterr().out
    assert "12_kernelize" in out and "MUL" in out and "AUTOMORPH" in out
    assert len(ns["trace"].graphs) == 13
    assert len(ns["ren"].schedule(ns["d"])) > 3  # kernels, not an empty list
