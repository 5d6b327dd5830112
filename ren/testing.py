"""Golden snapshots of every pipeline stage, for a researcher's own passes: a pytest plugin.

Installed with Ren (the ``pytest11`` entry point ``ren``), it gives every test the fixture
``ren_golden``::

    def test_my_pass(ren_golden):
        outputs = my_program()                              # Polys (or a built-in example name)
        ren_golden.check(outputs, pipeline="default,+mypkg.passes:my_pass@after=lower_ring_ops",
                         name="my_program")

which writes or compares ``golden/<name>/<NN>_<pass>.txt`` beside the test file: the graph after
every stage in Ren's canonical dump (`ren.dump`, the format of Ren's own ``tests/golden``), each
stage first checked against its pass's contract.  A difference fails the test with a unified
diff of every stage that changed; ``pytest --force-regen`` rewrites the snapshots (read the diff
of the files before committing them).  A missing snapshot is written and the test fails once, so
new snapshots are never accepted silently.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ren import contracts
from ren.dump import dump
from ren.errors import ParameterError
from ren.passes.pipeline import Pipeline, default_pipeline
from ren.schedule import run_passes

#: the stage whose dump carries the becomes_map (pass 7's name, wherever it sits)
_BECOMES_MAP = "becomes_map"


def stage_texts(outputs: Any, pipeline: Pipeline | str | None = None) -> dict[str, str]:
    """Stage name (``00_input``, ``01_simplify``, …) -> the canonical dump of the graph after it,
    each stage checked against its pass's contract (`ContractError` otherwise)."""
    pipe = Pipeline.parse(pipeline) if pipeline is not None else default_pipeline()
    items = outputs if isinstance(outputs, list | tuple) else (outputs,)
    trace = run_passes(*items, trace=True, pipeline=pipe)
    texts = {}
    for number, (stage, graph) in enumerate(trace.graphs):
        if number:  # the input has no contract
            contract = pipe.contract_at(number - 1)
            if contract is not None:
                contracts.check(graph, contract, stage, trace.ctx)
        becomes = trace.ctx.becomes_map if stage[3:] == _BECOMES_MAP else None
        texts[stage] = dump(graph, becomes)
    return texts


class Golden:
    """The ``ren_golden`` fixture: `check` snapshots a program's stages into ``folder``."""

    def __init__(self, folder: Path, regen: bool) -> None:
        self.folder, self.regen = folder, regen

    def check(self, outputs: Any, *, name: str, pipeline: Pipeline | str | None = None,
              build: Callable[[], Any] | None = None) -> dict[str, str]:
        """Compare (or write) every stage of `outputs` under `pipeline` with
        ``<folder>/<name>/<stage>.txt``; returns the stage texts."""
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise ParameterError(f"ren_golden.check: name must be a plain folder name, got "
                                 f"{name!r}")
        texts = stage_texts(build() if build is not None else outputs, pipeline)
        where = self.folder / name
        diffs, written = [], []
        for stage, text in texts.items():
            path = where / f"{stage}.txt"
            old = path.read_text() if path.is_file() else None
            if old == text:
                continue
            if old is None or self.regen:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
                written.append(path.name)
                continue
            diffs.append("".join(difflib.unified_diff(
                old.splitlines(True), text.splitlines(True), f"{path} (snapshot)",
                f"{path} (now)")))
        stale = sorted(p.name for p in where.glob("*.txt")
                       if p.stem not in texts) if where.is_dir() else []
        if stale and self.regen:
            for s in stale:
                (where / s).unlink()
            written += [f"-{s}" for s in stale]
            stale = []
        if diffs or stale:
            more = f"\nsnapshots of stages this pipeline no longer has: {stale}" if stale else ""
            pytest.fail(f"ren_golden {name}: {len(diffs)} stage(s) differ from {where} (run "
                        f"pytest --force-regen to accept, then read the diff){more}\n"
                        + "\n".join(diffs), pytrace=False)
        if written:
            pytest.fail(f"ren_golden {name}: wrote {len(written)} snapshot(s) in {where} "
                        f"({', '.join(written[:4])}{', …' if len(written) > 4 else ''}); "
                        "read them, commit them, and run again", pytrace=False)
        return texts


def pytest_addoption(parser: pytest.Parser) -> None:
    # pytest-regressions defines the same flag; define it only where it is missing
    try:
        import pytest_regressions  # noqa: F401
    except ImportError:
        parser.addoption("--force-regen", action="store_true", default=False,
                         help="rewrite ren_golden snapshots that differ")


@pytest.fixture
def ren_golden(request: pytest.FixtureRequest) -> Golden:
    """Golden snapshots of every pipeline stage, beside the test file (see `ren.testing`)."""
    folder = Path(str(request.node.fspath)).parent / "golden"
    return Golden(folder, bool(request.config.getoption("force_regen", False)))


__all__ = ["Golden", "ren_golden", "stage_texts"]
