"""A jitted function's first call runs its template while the template is still being lowered
(`ren.replay.lower_and_run`): chunks of exec units run on a worker thread, in order, as graph
runners over the storage the template's own runner keeps.  Same kernels, same order, same
memory: the results are the sequential first run's, bit for bit."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ren
from ren import replay, runtime
from ren.backend import Device, get_device
from ren.errors import RealizeError
from ren.ring import Domain

RQP = ren.RingSpec.generate(64, 5)
RQ = RQP.sub(0, 3)
SPECIAL = RQP.moduli[3:]


def fresh(seed: int, device: str) -> ren.Poly:
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, RQ.N) for q in RQ.moduli])
    return ren.Poly.from_residues(res, RQ, Domain.NTT).to(device).realize()


def keyswitch_like(a: ren.Poly, b: ren.Poly) -> tuple[ren.Poly, ren.Poly]:
    """Products, mod-ups of two digits, inner products with constants and a mod-down: a few
    dozen kernels of several kinds (elementwise, NTT, INTT, basis conversion, rescale)."""
    x = a * b
    acc0 = acc1 = None
    for i, d in enumerate((RQ.sub(0, 2), RQ.sub(2, 3))):
        up = x.to_ring(d).to_ring(RQP)
        k0, k1 = (ren.Poly.from_residues(np.full((RQP.limbs, RQP.N), 3 + 5 * i + j), RQP,
                                         Domain.NTT, device=a.device) for j in range(2))
        acc0 = up * k0 if acc0 is None else acc0 + up * k0
        acc1 = up * k1 if acc1 is None else acc1 + up * k1
    assert acc0 is not None and acc1 is not None
    return acc0.rescale(SPECIAL) + a, acc1.rescale(SPECIAL) * b


@pytest.fixture
def pipelined(monkeypatch):
    """Pipeline every schedule, in chunks of 2, 4, 8, ... items."""
    monkeypatch.setattr(replay, "PIPELINE_ITEMS", 1)
    monkeypatch.setattr(replay, "FIRST_CHUNK", 2)


@pytest.fixture
def runners(monkeypatch):
    """Which threads ran graph runners (a list of thread names), on both host devices."""
    seen: list[str] = []
    for name in ("python", "cpu"):
        dev = get_device(name)
        make = dev.graph

        def graph(calls, patches, _make=make):
            runner = _make(calls, patches)

            def run(arrays, _runner=runner):
                seen.append(threading.current_thread().name)
                return _runner(arrays)

            run.kind = runner.kind  # type: ignore[attr-defined]
            run.profile = runner.profile  # type: ignore[attr-defined]
            return run

        monkeypatch.setattr(dev, "graph", graph)
    return seen


def _words(polys) -> list[np.ndarray]:
    return [p.numpy() for p in polys]


@pytest.mark.parametrize("device", ["python", "cpu"])
def test_the_first_call_runs_while_it_is_lowered_and_gives_the_sequential_words(
        device, pipelined, runners):
    a, b = fresh(1, device), fresh(2, device)
    eager = _words(keyswitch_like(a, b))
    fn = ren.jit(keyswitch_like)
    del runners[:]
    first = fn(a, b)
    chunks = runners.count("ren-first-run")
    assert chunks == len(runners)  # the first call's runs: all on the worker
    first = _words(first)
    assert chunks >= 3  # 2, 4, 8, ... items: several chunks ran on the worker
    assert all(np.array_equal(x, y) for x, y in zip(first, eager, strict=True))
    plan = fn.plans[0]
    assert plan.template.runner is not None and plan.template.runs == 1
    # the replays run the template's own runner, built during the first call
    c, d = fresh(3, device), fresh(4, device)
    del runners[:]
    again = fn(c, d)
    assert runners == [threading.current_thread().name]
    again = _words(again)
    assert all(np.array_equal(x, y)
               for x, y in zip(again, _words(keyswitch_like(c, d)), strict=True))
    assert plan.template.runs == 2 and fn.hits == 1


def test_the_pipelined_and_the_sequential_first_call_agree(monkeypatch):
    """The same function captured twice: lowered then run, and run while lowered."""
    a, b = fresh(5, "cpu"), fresh(6, "cpu")
    monkeypatch.setattr(replay, "PIPELINE_ITEMS", 1 << 30)
    sequential = _words(ren.jit(keyswitch_like)(a, b))
    monkeypatch.setattr(replay, "PIPELINE_ITEMS", 1)
    monkeypatch.setattr(replay, "FIRST_CHUNK", 1)
    pipelined = _words(ren.jit(keyswitch_like)(a, b))
    assert all(np.array_equal(x, y) for x, y in zip(pipelined, sequential, strict=True))


def test_small_schedules_and_devices_without_a_runner_do_not_pipeline(monkeypatch, runners):
    a, b = fresh(7, "cpu"), fresh(8, "cpu")
    ren.jit(keyswitch_like)(a, b)  # far below PIPELINE_ITEMS
    assert "ren-first-run" not in runners
    monkeypatch.setattr(replay, "PIPELINE_ITEMS", 1)
    monkeypatch.setattr(type(get_device("cpu")), "graph", Device.graph)
    monkeypatch.setattr(get_device("cpu"), "graph", Device.graph.__get__(get_device("cpu")))
    words = _words(ren.jit(keyswitch_like)(a, b))  # the exec-units path
    assert "ren-first-run" not in runners
    assert all(np.array_equal(x, y)
               for x, y in zip(words, _words(keyswitch_like(a, b)), strict=True))


def test_a_chunk_that_fails_fails_the_call_and_stops_the_worker(monkeypatch, pipelined):
    dev = get_device("cpu")
    make = dev.graph
    made = []

    def graph(calls, patches):
        runner = make(calls, patches)
        made.append(runner)
        if len(made) == 2:
            def broken(arrays):
                raise RuntimeError("kernel exploded")
            return broken
        return runner

    monkeypatch.setattr(dev, "graph", graph)
    a, b = fresh(9, "cpu"), fresh(10, "cpu")
    fn = ren.jit(keyswitch_like)
    with pytest.raises(RuntimeError, match="kernel exploded"):
        fn(a, b)
    assert not fn.plans  # nothing captured
    assert not any(t.name == "ren-first-run" for t in threading.enumerate())


def test_a_lowering_that_fails_fails_the_call_and_stops_the_worker(monkeypatch, pipelined):
    real = replay.make_exec_units
    lowered = []

    def lower(items):
        lowered.append(len(items))
        if len(lowered) == 3:
            raise RealizeError("no compiler today")
        return real(items)

    monkeypatch.setattr(replay, "make_exec_units", lower)
    a, b = fresh(11, "cpu"), fresh(12, "cpu")
    with pytest.raises(RealizeError, match="no compiler today"):
        ren.jit(keyswitch_like)(a, b)
    assert lowered[:2] == [2, 4]
    assert not any(t.name == "ren-first-run" for t in threading.enumerate())


def test_fault_in_writes_one_word_per_page_of_host_arrays_only():
    a = np.full(3 * runtime._WORDS_PER_PAGE + 5, 7, dtype=np.uint32)
    runtime._fault_in(a)
    assert np.flatnonzero(a == 0).tolist() == [0, 1024, 2048, 3072]
    assert (a != 0).sum() == a.size - 4
    odd = np.full((4, 6), 7, dtype=np.uint32)[:, ::2]  # not contiguous: left alone
    runtime._fault_in(odd)
    assert (odd == 7).all()
    runtime._fault_in([1, 2, 3])  # not a host array: nothing to do
