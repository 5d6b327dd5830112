"""Golden snapshots: the graph of every corpus program after every pass.

Each snapshot is tests/golden/<program>/<NN>_<pass>.txt in the canonical dump format
(`ren.dump`).  A change to a pass shows up as a readable diff of these files.  Every stage is
also checked against its pass's contract (`ren.contracts`) before it is compared.

Regenerate intentionally, then read the diff before committing:

    python -m pytest tests/test_golden.py --force-regen
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from ren.corpus import PROGRAMS, build
from ren.passes import PASS_NAMES
from ren.testing import stage_texts

GOLDEN = Path(__file__).parent / "golden"
STAGES = ["00_input", *PASS_NAMES]


@cache
def stages(program: str) -> dict[str, str]:
    """Every stage's dump, each checked against its contract (`ren.testing`, the code behind
    the ren_golden fixture that users' own golden tests use)."""
    return stage_texts(build(program))


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_golden(program: str, stage: str, file_regression) -> None:
    file_regression.check(stages(program)[stage], fullpath=GOLDEN / program / f"{stage}.txt")


def test_dump_is_deterministic():
    first = stages.__wrapped__("keyswitch")
    second = stages.__wrapped__("keyswitch")
    assert first == second
