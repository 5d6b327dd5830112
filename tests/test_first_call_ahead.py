"""Arenas faulted in ahead (issue 41 §3, the plan cache's second process): a capture keeps the
arena bytes it needed as a hint next to the plan cache, and the next capture of the same
function and call key starts faulting those arenas in before its trace, on a thread of its own
(`ren.backend.malloc.AheadFault`); the first run takes that very array, after its writes have
stopped.  A hint that does not fit is dropped, never used; the words are those of a capture
without hints."""

from __future__ import annotations

import numpy as np
import pytest
from test_first_run import fresh, keyswitch_like

import ren
from ren import arena_ahead, plan_cache, replay
from ren import settings as ren_settings
from ren.backend import malloc
from ren.plan_cache import LOADED


def _words(polys) -> list[np.ndarray]:
    return [p.numpy() for p in polys]


def _same(xs, ys) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(xs, ys, strict=True))


events: list[str] = []


def traced(a: ren.Poly, b: ren.Poly) -> tuple[ren.Poly, ren.Poly]:
    """keyswitch_like, noting when it is traced (one function: the hint is keyed by its code)."""
    events.append("trace")
    return keyswitch_like(a, b)


def hints() -> list:
    return sorted(plan_cache.plans_dir().glob("*.arena"))


def spy_arenas(monkeypatch, events: list[str]) -> tuple[list, list[np.ndarray]]:
    """Record every AheadFault made (in `events` too) and every arena the runners take (also
    `tests/test_pcache57_early.py`'s)."""
    made: list[malloc.AheadFault] = []
    taken: list[np.ndarray] = []

    class Recorded(malloc.AheadFault):
        def __init__(self, array, touch=None):
            events.append(f"ahead {array.nbytes}")
            super().__init__(array, touch)
            made.append(self)

    take = arena_ahead.take_arena

    def arena(device, nwords):
        got = take(device, nwords)
        taken.append(got)
        return got

    # (an arena the allocator keeps from the eager runs would cover a hint: nothing ahead)
    monkeypatch.setattr(ren.backend.get_device("cpu").allocator, "spare_bytes", lambda: 0,
                        raising=False)
    monkeypatch.setattr(arena_ahead, "AheadFault", Recorded)
    monkeypatch.setattr(replay, "take_arena", arena)
    events.clear()
    return made, taken


@pytest.fixture
def spied(monkeypatch):
    return spy_arenas(monkeypatch, events)


def test_the_next_capture_faults_the_arena_in_before_its_trace_and_its_run_takes_it(spied):
    made, taken = spied
    a, b = fresh(31, "cpu"), fresh(32, "cpu")
    eager = _words(keyswitch_like(a, b))
    first = ren.jit(traced)
    assert _same(_words(first(a, b)), eager)
    nbytes = first.plans[0].template.plan.arenas["cpu"]
    assert made == [] and events == ["trace"]  # no hint yet: nothing ahead
    (hint,) = hints()
    assert hint.read_text() == f"cpu {nbytes}\n"
    events.clear()
    second = ren.jit(traced)  # a new wrapper: a capture, the plan cache's hit
    assert _same(_words(second(a, b)), eager)
    assert second.plans[0].compiled_by == LOADED
    assert events == [f"ahead {max(nbytes, 4) // 4 * 4}", "trace"] and len(made) == 1
    (ahead,) = made
    assert ahead.done and ahead.array.nbytes >= nbytes
    # the run's arena is the array faulted in ahead (a prefix of it)
    assert any(np.shares_memory(t, ahead.array) and t.ctypes.data == ahead.array.ctypes.data
               for t in taken)
    assert arena_ahead._ahead == {}
    assert second(a, b) is not None and _same(_words(second(a, b)), eager)  # replays as usual


def test_a_hint_that_does_not_fit_is_dropped_not_used(spied):
    made, taken = spied
    a, b = fresh(33, "cpu"), fresh(34, "cpu")
    eager = _words(keyswitch_like(a, b))
    ren.jit(traced)(a, b)
    (hint,) = hints()
    device, nbytes = hint.read_text().split()
    hint.write_text(f"{device} {int(nbytes) // 2}\n")  # a smaller arena than the plan's
    taken.clear()
    f = ren.jit(traced)
    assert _same(_words(f(a, b)), eager)
    (ahead,) = made
    assert ahead.done and arena_ahead._ahead == {}  # stopped and dropped after the capture
    assert not any(np.shares_memory(t, ahead.array) for t in taken)
    assert hint.read_text() == f"{device} {nbytes}\n"  # the hint holds the plan's size again


@pytest.mark.parametrize("text", ["", "cpu\n", "cpu x\n", "cpu 12 13\n", "\xff\n"])
def test_a_hint_that_does_not_parse_is_ignored(spied, text):
    made, _ = spied
    a, b = fresh(35, "cpu"), fresh(36, "cpu")
    eager = _words(keyswitch_like(a, b))
    ren.jit(traced)(a, b)
    (hint,) = hints()
    good = hint.read_text()
    hint.write_bytes(text.encode("latin-1"))
    assert _same(_words(ren.jit(traced)(a, b)), eager)
    assert made == [] and hint.read_text() == good


def test_no_hint_without_the_plan_cache():
    a, b = fresh(37, "cpu"), fresh(38, "cpu")
    with ren_settings.override(REN_PLAN_CACHE=0):
        ren.jit(traced)(a, b)
        assert plan_cache.arena_hint(traced, ()) is None
    assert hints() == []
    plan_cache.clear()


def test_clear_removes_the_hints():
    a, b = fresh(39, "cpu"), fresh(40, "cpu")
    ren.jit(traced)(a, b)
    assert len(hints()) == 1
    plan_cache.clear()
    assert hints() == []


def test_the_writes_touch_one_word_per_page_and_are_over_when_taken():
    words = np.ones(3 * malloc.TOUCH_STEP // 4 + 1000, dtype=np.uint32)
    ahead = malloc.AheadFault(words)
    got = ahead.take()
    assert got is words and ahead.done  # stopped: nothing writes after take
    snapshot = words.copy()
    page = malloc._PAGE // 4
    touched = words[::page]
    assert set(np.unique(touched)) <= {0, 1}  # page starts only: zero if reached
    others = np.delete(words, np.arange(0, words.size, page))
    assert np.all(others == 1)
    assert np.array_equal(words, snapshot)
    full = np.ones(2 * malloc.TOUCH_STEP // 4, dtype=np.uint32)
    ahead = malloc.AheadFault(full)
    while not ahead.done:
        pass
    assert np.all(full[::page] == 0) and ahead.take() is full


def test_fault_ahead_skips_what_a_kept_arena_covers(monkeypatch):
    allocator = ren.backend.get_device("cpu").allocator
    monkeypatch.setattr(allocator, "spare_bytes", lambda: 1 << 30, raising=False)
    assert not arena_ahead.fault_ahead("cpu", 1 << 20)
    assert arena_ahead._ahead == {}
    monkeypatch.setattr(allocator, "spare_bytes", lambda: 0, raising=False)
    assert arena_ahead.fault_ahead("cpu", 1 << 20)
    array = arena_ahead.take_arena("cpu", (1 << 20) // 4)
    assert arena_ahead._ahead == {} and array.size == (1 << 20) // 4


def test_without_a_hint_a_guess_is_faulted_in_after_the_trace_before_the_schedule(
        spied, monkeypatch):
    from ren import realization

    made, taken = spied
    monkeypatch.setattr(arena_ahead, "GUESS_MIN_BYTES", 0)
    schedule = realization.schedule_and_plan

    def scheduled(*args, **kwargs):
        events.append("schedule")
        return schedule(*args, **kwargs)

    monkeypatch.setattr(realization, "schedule_and_plan", scheduled)
    monkeypatch.setattr(plan_cache, "schedule_and_plan", scheduled)
    released: list[int] = []
    release = malloc.release_pages
    monkeypatch.setattr(arena_ahead, "release_pages", lambda a: released.append(a.nbytes) or
                        release(a))
    a, b = fresh(41, "cpu"), fresh(42, "cpu")
    eager = _words(keyswitch_like(a, b))
    with ren_settings.override(REN_PLAN_CACHE=0):  # no hint either: the guess alone
        f = ren.jit(traced)
        assert _same(_words(f(a, b)), eager)
    peak = arena_ahead.peak_live_bytes([p.node for p in keyswitch_like(a, b)])
    arena = f.plans[0].template.plan.arenas["cpu"]
    assert peak > arena * 9 // 8  # the reservation holds the arena (fusion: fewer buffers)
    assert events == ["trace", f"ahead {peak // 4 * 4}", "schedule"]
    (ahead,) = made
    assert ahead.done and ahead.touch == peak // arena_ahead.GUESS_DIVISOR
    assert arena_ahead._ahead == {}
    # the run's arena is the reservation's start; the pages past it were given back
    assert any(t.ctypes.data == ahead.array.ctypes.data for t in taken)
    assert released == [ahead.array.nbytes - arena // 4 * 4]


def test_release_pages_drops_whole_pages_only():
    size = malloc._PAGE
    words = np.ones(8 * size // 4, dtype=np.uint32)
    part = words[size // 8: 5 * size // 4 + 3]  # starts and ends inside pages
    assert malloc.release_pages(part)
    lo, hi = part.ctypes.data, part.ctypes.data + part.nbytes
    start, end = -(-lo // size) * size, hi // size * size  # the whole pages inside
    addresses = words.ctypes.data + 4 * np.arange(words.size)
    inside = (addresses >= start) & (addresses < end)
    assert end - start >= 3 * size
    assert np.all(words[inside] == 0) and np.all(words[~inside] == 1)
