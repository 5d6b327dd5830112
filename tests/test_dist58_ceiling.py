"""The benchmark's ceiling beside the client's memory work (stop 58, `bench_distributed.ceiling`
with ``copies``): a third plain process copies, checksums and range-checks one input's and
one result's worth of words for every replay the plain processes finish, the last ones too;
without ``copies`` nothing else runs.  No timing is asserted (seconds are only positive)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="ren.distributed needs dask[distributed]")


@pytest.fixture
def bench(monkeypatch):
    # importable by name: its ceiling runs functions of it in spawned processes
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    module = importlib.import_module("bench_distributed")
    monkeypatch.setattr(module, "CEILING_TIMEOUT", 300)  # an error, not a hang, if one dies
    return module


@pytest.mark.parametrize("processes", [1, 2])
def test_the_client_copies_once_per_replay(bench, processes):
    ring = 1 << 10
    seconds = bench.ceiling(10, "cpu", processes, 5, (3 * 8 * ring + 8, 2 * 8 * ring, ring))
    assert seconds > 0
    assert bench.ceiling.client_done == processes * 5
    assert bench.ceiling.client_cpu > 0


def test_without_copies_only_the_replays_run(bench, monkeypatch):
    monkeypatch.delattr(bench.ceiling, "client_done", raising=False)
    assert bench.ceiling(10, "cpu", 1, 2) > 0
    assert not hasattr(bench.ceiling, "client_done")
