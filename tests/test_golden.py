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

from ren import contracts
from ren.corpus import PROGRAMS, build
from ren.dump import dump
from ren.passes import BECOMES_MAP_STAGE, PASS_NAMES, get_pass
from ren.schedule import run_passes

GOLDEN = Path(__file__).parent / "golden"
STAGES = ["00_input", *PASS_NAMES]


@cache
def stages(program: str) -> dict[str, str]:
    outputs = build(program)
    trace = run_passes(*outputs, trace=True)
    texts = {}
    for number, (stage, graph) in enumerate(trace.graphs):
        if number:  # 00_input has no contract
            contracts.check(graph, get_pass(number).CONTRACT, stage, trace.ctx)
        becomes = trace.ctx.becomes_map if stage == BECOMES_MAP_STAGE else None
        texts[stage] = dump(graph, becomes)
    return texts


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_golden(program: str, stage: str, file_regression) -> None:
    file_regression.check(stages(program)[stage], fullpath=GOLDEN / program / f"{stage}.txt")


def test_dump_is_deterministic():
    first = stages.__wrapped__("keyswitch")
    second = stages.__wrapped__("keyswitch")
    assert first == second
