"""Arenas faulted in from the moment a function is wrapped (issue 41 §3, stop 57: a plan-cache
hit's first call).  A capture keeps its arena bytes as a hint keyed by the function alone
(`ren.plan_cache.function_hint`, ``<hash>.farena``); wrapping the same function again (a second
process of the program) starts faulting that arena in at once, before any call or trace, and the
function's first capture takes that very array.  Other captures never take it; a hint that does
not fit or does not parse costs memory at most, never a word; nothing is left when the wrapper
goes.  No test here depends on timing: the writer thread is joined, pages are counted by mincore.
"""

from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest
from test_first_call_ahead import spy_arenas
from test_first_run import fresh, keyswitch_like

import ren
from ren import arena_ahead, plan_cache
from ren import settings as ren_settings
from ren.backend import malloc

events: list[str] = []
#: an arena above glibc's largest mmap threshold (`ren.backend.malloc`): a mapping of its own,
#: none of whose pages is resident before it is written
BIG = malloc.MMAP_THRESHOLD_BYTES + (8 << 20)


def traced(a: ren.Poly, b: ren.Poly) -> tuple[ren.Poly, ren.Poly]:
    """keyswitch_like, noting its traces (one function: the hints are keyed by its code)."""
    events.append("trace")
    return keyswitch_like(a, b)


def other(a: ren.Poly, b: ren.Poly) -> tuple[ren.Poly, ren.Poly]:
    return keyswitch_like(b, a)


def _words(polys) -> list[np.ndarray]:
    return [p.numpy() for p in polys]


def _same(xs, ys) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(xs, ys, strict=True))


def resident_pages(array: np.ndarray) -> tuple[int, int]:
    """(pages resident, pages) of the whole pages inside host array `array` (Linux mincore)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    page = 4096
    start = -(-array.ctypes.data // page) * page
    end = (array.ctypes.data + array.nbytes) // page * page
    vec = ctypes.create_string_buffer(max(1, (end - start) // page))
    assert libc.mincore(start, end - start, vec) == 0, ctypes.get_errno()
    return sum(b & 1 for b in vec.raw[:(end - start) // page]), (end - start) // page


@pytest.fixture
def spied(monkeypatch):
    """Early fault-ins for any arena size; every AheadFault made and every arena runs take."""
    made, taken = spy_arenas(monkeypatch, events)
    monkeypatch.setattr(arena_ahead, "EARLY_MIN_BYTES", 0)
    yield made, taken
    for owner in {o for o, _ in arena_ahead._early.values()}:
        arena_ahead.drop_early(owner)


def _captured(a, b) -> tuple[list[np.ndarray], int]:
    """A first process's capture of `traced`: the eager words and the arena bytes it needed."""
    eager = _words(keyswitch_like(a, b))
    f = ren.jit(traced)
    assert _same(_words(f(a, b)), eager)
    return eager, f.plans[0].template.plan.arenas["cpu"]


def test_wrapping_faults_the_last_arena_in_before_any_call_and_the_capture_takes_it(spied):
    made, taken = spied
    a, b = fresh(71, "cpu"), fresh(72, "cpu")
    eager, nbytes = _captured(a, b)
    hint = plan_cache.function_hint(traced)
    assert hint is not None and hint.read_text() == f"cpu {nbytes}\n"
    # (as large as an arena whose memory is a fresh mapping, so that its pages can be counted;
    # the run takes its start)
    hint.write_text(f"cpu {BIG}\n")
    made.clear(), taken.clear(), events.clear()
    g = ren.jit(traced)  # (a second process of the program wraps the function again)
    assert events == [f"ahead {BIG}"]  # started by the wrapping: no call, no trace yet
    assert arena_ahead.early_arenas(g._owner) == {"cpu": BIG}
    (early,) = made
    early._thread.join()  # every page written: resident before the call
    resident, pages = resident_pages(early.array)
    assert pages >= BIG // 4096 - 1 and resident == pages
    assert _same(_words(g(a, b)), eager)
    assert events[:2] == [f"ahead {BIG}", "trace"]  # no second fault-in for the call
    assert len(made) == 1 and taken[0] is not None
    assert np.shares_memory(taken[0], early.array)  # the run's arena is the early array
    assert arena_ahead.early_arenas(g._owner) == {} and arena_ahead._ahead == {}


def test_other_captures_leave_a_functions_early_arena_alone(spied):
    made, taken = spied
    a, b = fresh(73, "cpu"), fresh(74, "cpu")
    eager, nbytes = _captured(a, b)
    made.clear(), taken.clear()
    g = ren.jit(traced)
    (early,) = made
    assert _same(_words(ren.jit(other)(a, b)), _words(keyswitch_like(b, a)))
    assert not any(np.shares_memory(t, early.array) for t in taken)
    assert arena_ahead.early_arenas(g._owner) == {"cpu": nbytes}  # still g's
    taken.clear()
    assert _same(_words(g(a, b)), eager)
    assert np.shares_memory(taken[0], early.array)


@pytest.mark.parametrize("text", ["cpu 64\n", "cpu {big}\n", "cpu twelve\n", "\x00\xff",
                                  "gpu 1\n", "cpu -5\n", f"cpu {1 << 60}\n"])
def test_a_stale_or_broken_function_hint_costs_no_word(spied, text):
    made, taken = spied
    a, b = fresh(75, "cpu"), fresh(76, "cpu")
    eager, nbytes = _captured(a, b)
    hint = plan_cache.function_hint(traced)
    assert hint is not None
    hint.write_bytes(text.format(big=8 * nbytes).encode("latin-1"))
    made.clear(), taken.clear()
    g = ren.jit(traced)
    assert _same(_words(g(a, b)), eager)
    assert _same(_words(g(a, b)), eager)  # (the replay too)
    assert hint.read_text() == f"cpu {nbytes}\n"  # rewritten by the capture
    assert arena_ahead.early_arenas(g._owner) == {} and arena_ahead._ahead == {}
    if text == f"cpu {1 << 60}\n":  # (damaged: more than the machine has) never faulted
        assert all(m.array.nbytes <= nbytes for m in made)  # (the call key's hint only)
    if text == "cpu {big}\n":  # a larger one: the run takes its start, the rest is given back
        assert np.shares_memory(taken[0], made[0].array) and taken[0].nbytes == nbytes


def test_an_unclaimed_early_arena_goes_with_its_wrapper(spied):
    made, _ = spied
    a, b = fresh(77, "cpu"), fresh(78, "cpu")
    _captured(a, b)
    made.clear()
    g = ren.jit(traced)
    owner = g._owner
    assert arena_ahead.early_arenas(owner)
    h = ren.jit(traced)  # a later wrapper of the same device replaces it (one per device)
    assert arena_ahead.early_arenas(owner) == {} and arena_ahead.early_arenas(h._owner)
    assert made[0].done  # the replaced one's writes were stopped
    del g, h
    gc.collect()
    assert arena_ahead._early == {}


def test_no_early_fault_in_without_the_plan_cache_for_small_arenas_or_without_capture(
        spied, monkeypatch):
    made, _ = spied
    a, b = fresh(79, "cpu"), fresh(80, "cpu")
    _captured(a, b)
    made.clear()
    with ren_settings.override(REN_PLAN_CACHE=0):
        assert plan_cache.function_hint(traced) is None
        ren.jit(traced)
    ren.jit(traced, capture=False)
    with ren_settings.override(REN_JIT=0):
        ren.jit(traced)
    monkeypatch.setattr(arena_ahead, "EARLY_MIN_BYTES", 1 << 40)
    ren.jit(traced)
    assert made == [] and arena_ahead._early == {}


def test_clear_removes_function_hints():
    a, b = fresh(81, "cpu"), fresh(82, "cpu")
    ren.jit(traced)(a, b)
    assert len(list(plan_cache.plans_dir().glob("*.farena"))) == 1
    plan_cache.clear()
    assert list(plan_cache.plans_dir().glob("*.farena")) == []


def test_a_hint_above_half_the_machines_memory_is_not_faulted_in(spied, monkeypatch):
    made, _ = spied
    a, b = fresh(83, "cpu"), fresh(84, "cpu")
    eager, _ = _captured(a, b)
    monkeypatch.setattr(arena_ahead, "_physical_bytes", lambda: 2 * BIG)  # (a small machine)
    hint = plan_cache.function_hint(traced)
    assert hint is not None
    hint.write_text(f"cpu {BIG + 4096}\n")  # (only a damaged hint says more than half)
    made.clear()
    g = ren.jit(traced)
    assert made == [] and arena_ahead.early_arenas(g._owner) == {}
    hint.write_text(f"cpu {BIG}\n")
    h = ren.jit(traced)
    assert arena_ahead.early_arenas(h._owner) == {"cpu": BIG}
    assert _same(_words(g(a, b)), eager) and _same(_words(h(a, b)), eager)
