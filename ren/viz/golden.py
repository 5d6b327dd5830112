"""The current output of every pass against golden snapshots (``tests/golden/<program>/
<NN>_<pass>.txt`` or any directory laid out the same way), as unified diffs.

    diffs = golden_diff(trace, "rotations", Path("tests/golden"))
    [d.name for d in diffs if d.changed]
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from ren.errors import InspectError
from ren.viz.trace import PassTrace

#: where the golden snapshots live in a source checkout (relative to its root)
DEFAULT_GOLDEN = Path("tests") / "golden"


def default_golden() -> Path:
    """tests/golden under the current directory if there is one, else the one of the checkout
    this package runs from (an editable install), else the relative path (which then fails
    with a clear message)."""
    if DEFAULT_GOLDEN.is_dir():
        return DEFAULT_GOLDEN
    checkout = Path(__file__).resolve().parents[2] / DEFAULT_GOLDEN
    return checkout if checkout.is_dir() else DEFAULT_GOLDEN


@dataclass
class StageDiff:
    name: str
    expected: str | None  # None: no snapshot file for this stage
    actual: str
    diff: list[str]  # unified diff lines (empty when equal)

    @property
    def changed(self) -> bool:
        return self.expected is None or self.expected != self.actual


def golden_dir_for(program: str, golden: Path) -> Path:
    """The snapshot directory of `program` under `golden`, or InspectError saying what is
    missing."""
    if not golden.is_dir():
        raise InspectError(f"golden directory {golden} does not exist; run from the repository "
                           "root (snapshots are in tests/golden) or pass --golden DIR")
    where = golden / program
    if not where.is_dir():
        have = sorted(p.name for p in golden.iterdir() if p.is_dir())
        raise InspectError(f"no golden snapshots for {program!r} in {golden} (expected "
                           f"{where}/00_input.txt …); snapshots exist for: "
                           + (", ".join(have) if have else "none"))
    return where


def golden_diff(trace: PassTrace, program: str, golden: Path,
                context: int = 3) -> list[StageDiff]:
    """Per stage, the golden text against the current dump."""
    where = golden_dir_for(program, golden)
    out = []
    for stage in trace.stages:
        actual = trace.golden_text(stage)
        path = where / f"{stage.name}.txt"
        expected = path.read_text(encoding="utf-8") if path.is_file() else None
        diff = list(difflib.unified_diff(
            (expected or "").splitlines(), actual.splitlines(),
            fromfile=f"golden/{program}/{stage.name}.txt" if expected is not None else "/dev/null",
            tofile=f"current/{program}/{stage.name}.txt", n=context, lineterm=""))
        out.append(StageDiff(stage.name, expected, actual, diff))
    return out


def diff_text(diffs: list[StageDiff]) -> str:
    """A summary line per stage, then every unified diff."""
    lines = [f"{'differs' if d.changed else 'same   '}  {d.name}"
             + ("  (no snapshot)" if d.expected is None else "") for d in diffs]
    changed = [d for d in diffs if d.changed]
    lines.append(f"{len(changed)} of {len(diffs)} stages differ from the golden snapshots"
                 if changed else "every stage matches its golden snapshot")
    for d in changed:
        lines.append("")
        lines.extend(d.diff)
    return "\n".join(lines) + "\n"


__all__ = ["DEFAULT_GOLDEN", "StageDiff", "default_golden", "diff_text", "golden_diff",
           "golden_dir_for"]
