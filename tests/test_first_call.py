"""The first call of a jitted function (issue 41 §3: first call ≤ 1.5× the replay, ≤ 1.2× from a
warm plan cache): a plan-cache hit runs while its loaded items are lowered, a cold compile cache
compiles the whole schedule in one batch before the first chunk runs, and the first run's
scratch memory is advised to take transparent huge pages.  Results are bit for bit those of the
eager graph."""

from __future__ import annotations

import collections
import io
import itertools
import pickle
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_first_run import fresh, keyswitch_like

import ren
from ren import plan_cache, replay, runtime
from ren import settings as ren_settings
from ren.backend import elementwise_c, get_device, malloc, render_c
from ren.kernel import LIGHT_KINDS
from ren.plan_cache import LOADED, SCHEDULED


def _words(polys) -> list[np.ndarray]:
    return [p.numpy() for p in polys]


def _same(xs, ys) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(xs, ys, strict=True))


@pytest.fixture
def pipelined(monkeypatch):
    monkeypatch.setattr(replay, "PIPELINE_ITEMS", 1)
    monkeypatch.setattr(replay, "FIRST_CHUNK", 2)


def test_a_plan_cache_hit_runs_while_its_items_are_lowered(monkeypatch, pipelined):
    a, b = fresh(21, "cpu"), fresh(22, "cpu")
    eager = _words(keyswitch_like(a, b))
    ren.jit(keyswitch_like)(a, b)  # scheduled and stored
    workers: list[str] = []
    dev = get_device("cpu")
    make = dev.graph

    def graph(calls, patches):
        runner = make(calls, patches)

        def run(arrays):
            workers.append(threading.current_thread().name)
            return runner(arrays)

        run.kind = runner.kind  # type: ignore[attr-defined]
        return run

    monkeypatch.setattr(dev, "graph", graph)
    fn = ren.jit(keyswitch_like)
    got = _words(fn(a, b))
    assert fn.plans[0].compiled_by == LOADED
    assert _same(got, eager)
    # the loaded template's first run went chunk by chunk on the worker (2, 4, 8 ... items)
    assert workers.count("ren-first-run") >= 3 and set(workers) == {"ren-first-run"}
    c, d = fresh(23, "cpu"), fresh(24, "cpu")
    assert _same(_words(fn(c, d)), _words(keyswitch_like(c, d)))  # the replay


def test_a_loaded_entry_whose_items_fail_to_lower_is_scheduled_again(monkeypatch, pipelined):
    a, b = fresh(25, "cpu"), fresh(26, "cpu")
    ren.jit(keyswitch_like)(a, b)
    real = plan_cache.lower_and_run
    calls = []

    def fail_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("no compiler today")
        return real(*args, **kwargs)

    monkeypatch.setattr(plan_cache, "lower_and_run", fail_once)
    fn = ren.jit(keyswitch_like)
    with pytest.warns(plan_cache.PlanCacheWarning, match="do not lower.*no compiler today"):
        got = fn(a, b)
    assert fn.plans[0].compiled_by == SCHEDULED and len(calls) == 2
    assert _same(_words(got), _words(keyswitch_like(a, b)))


def _record_prepares(monkeypatch, compiled) -> list[int]:
    """Patch the cpu device's prepare to record each batch's item count (the list returned)
    and to report `compiled(number of the batch)` as the kernels it compiled."""
    dev = get_device("cpu")
    real = dev.prepare
    batches: list[int] = []

    def prepare(items):
        items = list(items)
        batches.append(len(items))
        real(items)
        return compiled(len(batches))

    monkeypatch.setattr(dev, "prepare", prepare)
    return batches


def _lacks_says(monkeypatch, answer: bool) -> list[int]:
    """The cpu device's `lacks` answers `answer`; returns the sizes of the item lists asked."""
    asked: list[int] = []

    def lacks(items):
        asked.append(len(list(items)))
        return answer

    monkeypatch.setattr(get_device("cpu"), "lacks", lacks)
    return asked


def test_a_cold_compile_cache_compiles_everything_in_one_batch(monkeypatch, pipelined):
    """The device lacks kernels of the first chunk (a cold cache, `CpuDevice.lacks`): one
    prepare gets every compute item at once, the first chunk's included, before the first chunk
    is lowered; and the words are the eager graph's."""
    batches = _record_prepares(monkeypatch, lambda n: 0)
    asked = _lacks_says(monkeypatch, True)  # "the first chunk lacks kernels"
    a, b = fresh(27, "cpu"), fresh(28, "cpu")
    fn = ren.jit(keyswitch_like)
    with ren_settings.override(REN_PLAN_CACHE=0):  # (scheduled: lower_and_run on its items)
        got = _words(fn(a, b))
    items = [u.item for u in fn.plans[0].units if u.kind != "copy"]
    computes = sum(1 for i in items if i.kind not in LIGHT_KINDS)
    first = sum(1 for i in items[:2] if i.kind not in LIGHT_KINDS)
    # the first chunk asked (nothing compiled), then one batch of everything, then lowered
    assert asked == [first] and batches[:2] == [computes, first], (asked, batches)
    assert _same(got, _words(keyswitch_like(a, b)))


def test_a_warm_compile_cache_lowers_chunk_by_chunk(monkeypatch, pipelined):
    batches = _record_prepares(monkeypatch, lambda n: 0)  # nothing compiled: warm
    asked = _lacks_says(monkeypatch, False)  # "the device has every kernel of the first chunk"
    a, b = fresh(29, "cpu"), fresh(30, "cpu")
    fn = ren.jit(keyswitch_like)
    with ren_settings.override(REN_PLAN_CACHE=0):
        fn(a, b)
    items = [u.item for u in fn.plans[0].units if u.kind != "copy"]
    per_chunk, start, size = [], 0, 2
    while start < len(items):  # chunks of 2, 4, 8, ... items, each prepared as it is lowered
        n = sum(1 for i in items[start:start + size] if i.kind not in LIGHT_KINDS)
        per_chunk += [n] if n else []
        start, size = start + size, size * 2
    assert asked == per_chunk[:1] and batches == per_chunk, (asked, batches)  # no batch of all


THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _thp_on() -> bool:
    try:
        text = THP.read_text()
    except OSError:
        return False
    return "[always]" in text or "[madvise]" in text


def test_small_or_foreign_arrays_get_no_huge_page_advice():
    assert not malloc.advise_huge_pages(np.zeros(malloc.HUGE_PAGE // 4, dtype=np.uint32))


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _thp_on(),
                    reason="transparent huge pages are off (or not Linux)")
def test_a_large_scratch_array_is_advised_huge_pages_and_keeps_its_words():
    words = 3 * malloc.HUGE_PAGE // 4 + 17
    a = np.arange(words, dtype=np.uint32)
    assert malloc.advise_huge_pages(a)
    assert np.array_equal(a, np.arange(words, dtype=np.uint32))  # advice changes no word
    b = np.full(words, 7, dtype=np.uint32)
    runtime._fault_in(b)  # advised, then one word per page
    assert (b == 0).sum() == -(-words // runtime._WORDS_PER_PAGE)


# -- a hit renders no C: the entry carries its elementwise kernels' rendered programs ----------
def _entry() -> Path:
    (path,) = plan_cache.plans_dir().glob("*.plan")
    return path


def _schedule_part(blob: bytes) -> int:
    """Where the entry's first pickle (the schedule) ends and the programs' pickle begins."""
    stream = io.BytesIO(blob)
    pickle.load(stream)
    return stream.tell()


@pytest.fixture
def renders(monkeypatch):
    """A new process's renderer and cpu kernel cache (none rendered, none compiled in this
    process), counting the elementwise kernels rendered."""
    monkeypatch.setattr(render_c, "_programs", {})
    monkeypatch.setattr(get_device("cpu"), "_cache", collections.OrderedDict())
    real, count = elementwise_c.render_elementwise, []

    def render(item, dialect):
        count.append(item.key)
        return real(item, dialect)

    monkeypatch.setattr(elementwise_c, "render_elementwise", render)
    return count


def test_a_plan_cache_hit_renders_no_c(renders):
    a, b = fresh(31, "cpu"), fresh(32, "cpu")
    eager = _words(keyswitch_like(a, b))
    got = _words(ren.jit(keyswitch_like)(a, b))  # scheduled: renders, then stores the entry
    rendered = len(set(renders))
    assert rendered > 0 and _same(got, eager)
    render_c.forget_programs()
    get_device("cpu").clear_cache()
    renders.clear()
    fn = ren.jit(keyswitch_like)
    got = _words(fn(a, b))
    assert fn.plans[0].compiled_by == LOADED and renders == []
    assert _same(got, eager)
    c, d = fresh(33, "cpu"), fresh(34, "cpu")
    assert _same(_words(fn(c, d)), _words(keyswitch_like(c, d)))  # the replay
    # every distinct elementwise kernel came with the entry
    items = [u.item for u in fn.plans[0].units if u.item is not None]
    assert len({i.key for i in items if i.kind == "elementwise"}) == rendered


def test_an_entry_without_programs_renders_them(renders):
    a, b = fresh(35, "cpu"), fresh(36, "cpu")
    eager = _words(keyswitch_like(a, b))
    ren.jit(keyswitch_like)(a, b)
    path = _entry()
    blob = path.read_bytes()
    path.write_bytes(blob[:_schedule_part(blob)])  # (as an entry stored without programs)
    render_c.forget_programs()
    get_device("cpu").clear_cache()
    renders.clear()
    fn = ren.jit(keyswitch_like)
    got = _words(fn(a, b))
    assert fn.plans[0].compiled_by == LOADED and len(renders) > 0
    assert _same(got, eager)


@pytest.mark.parametrize("programs", [[("not an index", {})], [(0, {"c": "not a program"})],
                                      "not a list"])
def test_malformed_programs_are_a_warning_and_a_fresh_schedule(renders, programs):
    a, b = fresh(37, "cpu"), fresh(38, "cpu")
    eager = _words(keyswitch_like(a, b))
    ren.jit(keyswitch_like)(a, b)
    path = _entry()
    blob = path.read_bytes()
    path.write_bytes(blob[:_schedule_part(blob)] + pickle.dumps(programs))
    render_c.forget_programs()
    fn = ren.jit(keyswitch_like)
    with pytest.warns(plan_cache.PlanCacheWarning, match="programs are not well formed"):
        got = _words(fn(a, b))
    assert fn.plans[0].compiled_by == SCHEDULED and _same(got, eager)
    assert all(  # nothing of the bad entry reached the renderer
        isinstance(p, render_c.Program) for ps in render_c._programs.values()
        for p in ps.values())


def test_an_entry_writes_each_large_table_once():
    """Equal constant tables of several programs are pickled once (shared on load); unequal or
    small ones stay their own, and every program keeps its words."""
    rng = np.random.default_rng(5)
    big = rng.integers(0, 2**31, 4096, dtype=np.int64).astype(np.int32)
    other = big.copy()
    other[7] += 1
    small = np.arange(8, dtype=np.uint32)

    def prog(name: str, **tables: np.ndarray) -> render_c.Program:
        kernel = render_c.CKernel(name, f"/* {name} */", ())
        return render_c.Program(name, (kernel,), (), {k: v.copy() for k, v in tables.items()})

    programs = [prog("a", m=big, s=small), prog("b", m=big, s=small), prog("c", m=other)]
    shared: dict = {}
    stored = [plan_cache._share_tables(p, shared) for p in programs]
    a, b, c = pickle.loads(pickle.dumps(stored))
    assert a.tables["m"] is b.tables["m"] and a.tables["s"] is not b.tables["s"]
    assert c.tables["m"] is not a.tables["m"]
    for got, want in zip((a, b, c), programs, strict=True):
        assert got.name == want.name and got.tables.keys() == want.tables.keys()
        assert all(np.array_equal(got.tables[k], want.tables[k])
                   and got.tables[k].dtype == want.tables[k].dtype for k in want.tables)
    assert len(pickle.dumps(stored)) < 1.5 * big.nbytes * 2  # the first map once, the other


def test_a_schedule_that_fails_to_lower_is_not_stored(monkeypatch):
    """An entry is written once its template is lowered (it carries the rendered programs), so
    a fresh schedule whose lowering fails leaves no entry behind; the next call schedules and
    stores as usual."""
    a, b = fresh(39, "cpu"), fresh(40, "cpu")
    real = plan_cache.lower_and_run

    def fail(*args, **kwargs):
        raise RuntimeError("no compiler today")

    monkeypatch.setattr(plan_cache, "lower_and_run", fail)
    with pytest.raises(RuntimeError, match="no compiler today"):
        ren.jit(keyswitch_like)(a, b)
    assert list(plan_cache.plans_dir().glob("*.plan")) == []
    monkeypatch.setattr(plan_cache, "lower_and_run", real)
    fn = ren.jit(keyswitch_like)
    got = _words(fn(a, b))
    assert fn.plans[0].compiled_by == SCHEDULED and _same(got, _words(keyswitch_like(a, b)))
    assert len(list(plan_cache.plans_dir().glob("*.plan"))) == 1


# -- the first run's scratch is faulted in on a thread of its own, while the lowering goes on ----
def test_scratch_is_faulted_in_on_its_own_thread_before_the_first_chunk(monkeypatch, pipelined):
    monkeypatch.setattr(runtime, "_populate", lambda array: False)  # (zeros written: a wait)
    a, b = fresh(41, "cpu"), fresh(42, "cpu")
    eager = _words(keyswitch_like(a, b))
    monkeypatch.setattr(plan_cache, "enabled", lambda: False)  # (scheduled, then run)
    events: list[tuple[str, str]] = []
    fault = runtime._fault_in

    def recorded(array):
        time.sleep(0.05)  # (slow pages: a first chunk that did not wait would run meanwhile)
        events.append(("fault", threading.current_thread().name))
        fault(array)

    monkeypatch.setattr(runtime, "_fault_in", recorded)
    dev = get_device("cpu")
    make = dev.graph

    def graph(calls, patches):
        runner = make(calls, patches)

        def run(arrays):
            events.append(("run", threading.current_thread().name))
            return runner(arrays)

        run.kind = runner.kind  # type: ignore[attr-defined]
        return run

    monkeypatch.setattr(dev, "graph", graph)
    fn = ren.jit(keyswitch_like)
    assert _same(_words(fn(a, b)), eager)
    faults = [i for i, (what, _) in enumerate(events) if what == "fault"]
    runs = [i for i, (what, who) in enumerate(events) if what == "run" and who == "ren-first-run"]
    assert faults and {events[i][1] for i in faults} == {"ren-fault-in"}
    assert runs and max(faults) < min(runs)  # every page in before the first chunk ran
    c, d = fresh(43, "cpu"), fresh(44, "cpu")
    assert _same(_words(fn(c, d)), _words(keyswitch_like(c, d)))  # the replay


def test_a_failing_fault_in_fails_the_first_call(monkeypatch, pipelined):
    monkeypatch.setattr(runtime, "_populate", lambda array: False)
    a, b = fresh(45, "cpu"), fresh(46, "cpu")
    monkeypatch.setattr(plan_cache, "enabled", lambda: False)

    def no_memory(array):
        raise MemoryError("no pages today")

    monkeypatch.setattr(runtime, "_fault_in", no_memory)
    with pytest.raises(MemoryError, match="no pages today"):
        ren.jit(keyswitch_like)(a, b)


@pytest.mark.parametrize("background", [True, False])
def test_fault_in_background_waits_for_every_array(monkeypatch, background):
    monkeypatch.setattr(runtime, "FAULT_IN_BACKGROUND", background)
    monkeypatch.setattr(runtime, "_populate", lambda array: False)
    arrays = [np.full(3 * runtime._WORDS_PER_PAGE + 5, 9, dtype=np.uint32) for _ in range(3)]
    threads: set[str] = set()
    fault = runtime._fault_in

    def recorded(array):
        threads.add(threading.current_thread().name)
        fault(array)

    monkeypatch.setattr(runtime, "_fault_in", recorded)
    runtime.fault_in_background(arrays)()
    assert all((x == 0).sum() == 4 for x in arrays)  # one word per page, in every array
    assert threads == ({"ren-fault-in"} if background else {threading.main_thread().name})


def _can_populate() -> bool:
    return runtime._populate(np.zeros(8, dtype=np.uint32))


@pytest.mark.skipif(not _can_populate(), reason="no MADV_POPULATE_WRITE (Linux 5.14+)")
def test_populating_pages_changes_no_word():
    words = 5 * runtime._WORDS_PER_PAGE + 3
    a = np.arange(words, dtype=np.uint32)[1:]  # (not page aligned)
    assert runtime._populate(a)
    assert np.array_equal(a, np.arange(1, words, dtype=np.uint32))


@pytest.mark.skipif(not _can_populate(), reason="no MADV_POPULATE_WRITE (Linux 5.14+)")
def test_populated_scratch_lets_the_first_run_start_at_once(monkeypatch, pipelined):
    # pages populated without a write: the first chunk runs while they are faulted in (it
    # does not wait), and every word is the eager graph's
    monkeypatch.setattr(plan_cache, "enabled", lambda: False)
    a, b = fresh(47, "cpu"), fresh(48, "cpu")
    eager = _words(keyswitch_like(a, b))
    populated: list[str] = []
    release = threading.Event()
    populate = runtime._populate

    def slow(array):
        if threading.current_thread().name == "ren-fault-in":
            release.wait(10)  # (held until the first run is over)
            populated.append(threading.current_thread().name)
        return populate(array)

    monkeypatch.setattr(runtime, "_populate", slow)
    monkeypatch.setattr(runtime, "_fault_in", lambda array: pytest.fail("a word was written"))
    fn = ren.jit(keyswitch_like)
    try:
        got = _words(fn(a, b))  # (a waiting first run would wait for the release: 10 s)
        assert not populated
    finally:
        release.set()
    assert _same(got, eager)
    c, d = fresh(49, "cpu"), fresh(50, "cpu")
    assert _same(_words(fn(c, d)), _words(keyswitch_like(c, d)))


def test_a_fresh_schedule_is_stored_while_its_first_run_still_runs(monkeypatch, pipelined):
    """The entry is written once the last chunk is lowered, before the worker has run it (off
    the first call's path); it loads in a new capture and gives the same words."""
    monkeypatch.setattr(runtime, "_populate", lambda array: False)
    a, b = fresh(51, "cpu"), fresh(52, "cpu")
    eager = _words(keyswitch_like(a, b))
    events: list[str] = []
    store = plan_cache._store

    def stored(path, state):
        events.append("store")
        store(path, state)

    monkeypatch.setattr(plan_cache, "_store", stored)
    dev = get_device("cpu")
    make = dev.graph

    def graph(calls, patches):
        runner = make(calls, patches)

        def run(arrays):
            time.sleep(0.02)  # (slow chunks: the store comes before the last ends)
            result = runner(arrays)
            events.append("chunk")
            return result

        run.kind = runner.kind  # type: ignore[attr-defined]
        return run

    monkeypatch.setattr(dev, "graph", graph)
    fn = ren.jit(keyswitch_like)
    assert _same(_words(fn(a, b)), eager) and fn.plans[0].compiled_by == SCHEDULED
    assert events.count("store") == 1 and events[-1] == "chunk", events
    monkeypatch.setattr(dev, "graph", make)
    again = ren.jit(keyswitch_like)
    assert _same(_words(again(a, b)), eager) and again.plans[0].compiled_by == LOADED


@pytest.mark.skipif(not _can_populate(), reason="no MADV_POPULATE_WRITE (Linux 5.14+)")
def test_pages_are_populated_a_step_at_a_time(monkeypatch):
    # one madvise call holds the memory map throughout (the lowering's allocations wait): the
    # range goes in steps that cover it exactly, in order
    monkeypatch.setattr(malloc, "POPULATE_STEP", 2 * malloc._PAGE)
    real = malloc._libc_madvise()
    calls: list[tuple[int, int]] = []

    def recorded(at, size, advice):
        calls.append((at, size))
        return real(at, size, advice)

    monkeypatch.setattr(malloc, "_madvise", recorded)
    a = np.arange(5 * runtime._WORDS_PER_PAGE, dtype=np.uint32)
    assert runtime._populate(a)
    start = a.ctypes.data // malloc._PAGE * malloc._PAGE
    end = -(-(a.ctypes.data + a.nbytes) // malloc._PAGE) * malloc._PAGE
    assert calls[0][0] == start and all(size <= 2 * malloc._PAGE for _, size in calls)
    assert all(at + size == nxt for (at, size), (nxt, _) in itertools.pairwise(calls))
    assert calls[-1][0] + calls[-1][1] == end and len(calls) >= 3
    assert np.array_equal(a, np.arange(5 * runtime._WORDS_PER_PAGE, dtype=np.uint32))
