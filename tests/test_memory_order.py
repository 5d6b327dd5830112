"""The memory-aware order of a schedule (`ren.memory_order`, kept by `ren.schedule.linearize`
where it lowers the peak-live bytes): lower peaks on graphs built to show it (a hoisted
rotation's two inner products; a CKKS linear transform), the same words, and dependency order
on random schedules (an independent simulation of reads and writes)."""

from __future__ import annotations

import importlib
import itertools
import random
from unittest import mock

import numpy as np
import pytest
from ckks_helpers import context
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ren
from ren import random_programs, realization
from ren.device import Buffer
from ren.kernel import VIEW, ScheduledKernel
from ren.memory import peak_live_bytes, plan_memory
from ren.memory_order import dependencies, memory_order
from ren.replay import TemplateCache

sched = importlib.import_module("ren.schedule")  # (``ren.schedule`` is also a function)

N = 1 << 10


def K(out: Buffer, *ins: Buffer, kind: str = "elementwise") -> ScheduledKernel:
    return ScheduledKernel(kind, f"{kind}_{out.uid}", None, (out, *ins))


def hoisted(baby: int = 6, digits: int = 4) -> tuple[list[ScheduledKernel], Buffer]:
    """A hoisted rotation as toposort lists it: every baby step's rotated digits, each step's
    first inner product (c0), then each step's second one (c1), then their sum."""
    # x is computed from the input through 3 kernels: no leaf chain (those run with their
    # reader and are computed again where read late: left out of the bytes)
    x = Buffer("python", (digits, N)).allocate()
    items = []
    for _ in range(3):
        y = Buffer("python", (digits, N))
        items.append(K(y, x))
        x = y
    dig = []
    for _ in range(digits):
        dig.append(Buffer("python", (8, N)))
        items.append(K(dig[-1], x))
    rot = [[Buffer("python", (8, N)) for _ in range(digits)] for _ in range(baby)]
    c0, c1 = [], []
    for b in range(baby):
        for j in range(digits):
            items.append(K(rot[b][j], dig[j]))
        c0.append(Buffer("python", (8, N)))
        items.append(K(c0[-1], *rot[b]))
    for b in range(baby):
        c1.append(Buffer("python", (8, N)))
        items.append(K(c1[-1], *rot[b]))
    out = Buffer("python", (8, N))
    items.append(K(out, *c0, *c1))
    return items, out


def test_hoisted_rotation_peak_is_lower():
    items, out = hoisted()
    ordered = memory_order(items, {out})
    before, after = peak_live_bytes(items, {out}), peak_live_bytes(ordered, {out})
    step = 8 * N * 4  # one buffer's bytes
    # toposort: at the first c1, the 24 rotated digits, the 6 c0s and that c1; memory order:
    # each step's c1 right after its c0: at the fifth c1, 4 digits, that step's 4 rotated
    # ones, 5 c0s and 5 c1s
    assert before == (6 * 4 + 6 + 1) * step
    assert after == (4 + 4 + 5 + 5) * step
    assert sorted(map(id, ordered)) == sorted(map(id, items))
    plan = plan_memory(ordered, {out})
    assert plan.peak_live_bytes == after and plan.arena_bytes <= before


def test_already_good_order_is_kept():
    """A chain frees as it goes: nothing to gain, the very same list."""
    x = Buffer("python", (2, N)).allocate()
    bufs = [Buffer("python", (2, N)) for _ in range(10)]
    items = [K(bufs[0], x)] + [K(b, a) for a, b in itertools.pairwise(bufs)]
    assert memory_order(items, {bufs[-1]}) == items


def test_views_run_with_their_reader():
    """A view of a live buffer is emitted right before the item that reads it, so a reader
    pulled forward (it frees its input) takes its view along."""
    items, out = hoisted(baby=3, digits=2)
    base = items[3 + 2].bufs[0]  # the first rotated digit of baby step 0
    view = Buffer("python", (4, N), base=base, offset=0)
    vk = ScheduledKernel(VIEW, "view", None, (view, base))
    last = Buffer("python", (4, N))
    reader = K(last, view)
    seq = [*items[:-1], vk, reader, items[-1]]
    outs = {out, last}
    ordered = memory_order(seq, outs)
    pos = {id(it): i for i, it in enumerate(ordered)}
    assert pos[id(vk)] == pos[id(reader)] - 1
    assert peak_live_bytes(ordered, outs) < peak_live_bytes(seq, outs)


# -- dependency order on random schedules: an independent simulation ------------------------
@st.composite
def schedules(draw) -> list[ScheduledKernel]:
    """Random items over a few base buffers, some written several times (whole or through
    views), some read through views; every read comes after a write of its base or reads a
    leaf."""
    leaves = [Buffer("python", (2, 16)).allocate() for _ in range(draw(st.integers(1, 3)))]
    bases = [Buffer("python", (4, 16)) for _ in range(draw(st.integers(2, 8)))]
    written: list[Buffer] = []
    items: list[ScheduledKernel] = []
    for _ in range(draw(st.integers(1, 40))):
        readable = leaves + written
        ins = draw(st.lists(st.sampled_from(readable), min_size=1, max_size=3))
        target = draw(st.sampled_from(bases))
        how = draw(st.sampled_from(["whole", "view_write", "view_read"]))
        if how == "view_read" and written:
            base = draw(st.sampled_from(written))
            view = Buffer("python", (2, 16), base=base, offset=draw(st.sampled_from([0, 32])))
            items.append(ScheduledKernel(VIEW, "v", None, (view, base)))
            ins = [*ins, view]
        if how == "view_write":
            view = Buffer("python", (2, 16), base=target, offset=draw(st.sampled_from([0, 32])))
            items.append(ScheduledKernel(VIEW, "v", None, (view, target)))
            items.append(K(view, *ins))
        else:
            items.append(K(target, *ins))
        if target not in written:
            written.append(target)
    return items


def simulate(items: list[ScheduledKernel]) -> tuple[dict[int, tuple], dict[Buffer, tuple]]:
    """What each item reads (by identity) and the final contents of every base, each write
    recording which item made it over what it read: equal for any order that keeps every
    read-after-write, write-after-read and write-after-write of the given one."""
    root = {}

    def r(b: Buffer) -> Buffer:
        while b.base is not None:
            b = b.base
        return b

    state: dict[tuple[Buffer, int], tuple] = {}  # (base, region offset or -1: whole) -> value
    seen: dict[int, tuple] = {}

    def value(b: Buffer) -> tuple:
        base = r(b)
        regions = sorted((k, v) for k, v in state.items() if k[0] is base)
        return tuple((k[1], v) for k, v in regions)

    for it in items:
        if it.kind == VIEW:
            continue
        got = tuple(value(b) for b in it.bufs[1:])
        seen[id(it)] = got
        out = it.bufs[0]
        base = r(out)
        if out.base is None:
            for k in [k for k in state if k[0] is base]:
                del state[k]
            state[(base, -1)] = (id(it), got)
        else:
            state[(base, out.offset)] = (id(it), got)
        root[base] = True
    return seen, {b: value(b) for b in root}


@given(schedules())
def test_random_schedules_keep_dependency_order(items):
    ordered = memory_order(items, ())
    assert sorted(map(id, ordered)) == sorted(map(id, items))
    assert simulate(ordered) == simulate(items)
    pos = {id(it): i for i, it in enumerate(ordered)}
    for i, d in enumerate(dependencies(items)):
        assert all(pos[id(items[j])] < pos[id(items[i])] for j in d)


@st.composite
def programs(draw) -> random_programs.Program:
    return random_programs.build(random_programs.DrawChooser(draw))


def shuffled_order(seed: int):
    """A stand-in for `memory_order`: a random order of `dependencies` alone (any ready item
    next), so that every program is reordered, not only where the memory order would move
    something."""
    def order(items, outputs=()):
        rng = random.Random(seed)
        deps = [set(d) for d in dependencies(items)]
        waiters: list[list[int]] = [[] for _ in items]
        for i, d in enumerate(deps):
            for j in d:
                waiters[j].append(i)
        ready = [i for i, d in enumerate(deps) if not d]
        out = []
        while ready:
            i = ready.pop(rng.randrange(len(ready)))
            out.append(items[i])
            for k in waiters[i]:
                deps[k].discard(i)
                if not deps[k]:
                    ready.append(k)
        assert len(out) == len(items)
        return out
    return order


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**32))
def test_any_order_of_the_dependencies_matches_the_oracle(program, seed):
    """Random Poly programs, their schedules put in a random order of `dependencies` (kept by
    `linearize` whatever its peak) and run: every output equals the big-integer oracle, so the
    dependencies hold every constraint a schedule has."""
    first = itertools.cycle((0, 1))  # linearize weighs the new order first, then toposort's
    with mock.patch.object(sched, "memory_order", shuffled_order(seed)), \
            mock.patch.object(sched, "peak_live_bytes", lambda items, outs: next(first)), \
            mock.patch.object(realization, "templates", TemplateCache()):
        random_programs.check(program)


# -- a real graph: hoisted rotations of a CKKS ciphertext, summed (a giant step's shape) ------
@pytest.fixture(scope="module")
def c():
    return context(N=256, depth=3, scale_bits=40, first_bits=55, steps=tuple(range(1, 9)))


def _rotations_summed(c, memory_order_on: bool, monkeypatch) -> tuple[bytes, int]:
    """The words of Σ_k rot_k(ct) (one hoisted decomposition, 8 steps) and the peak-live
    bytes of its schedule, scheduled and run under REN_MEMORY_ORDER=`memory_order_on`."""
    # a fresh template cache: the words come from a schedule made under this order (the eager
    # template cache's key does not name REN_MEMORY_ORDER)
    monkeypatch.setattr(realization, "templates", TemplateCache())
    with ren.settings.override(REN_MEMORY_ORDER=int(memory_order_on)):
        x = np.random.default_rng(4).uniform(-1, 1, c.params.slots)
        with ren.random.seeded(11):
            ct = c.encryptor.encrypt(c.enc.encode(x))
        acc = None
        for r in c.ev.rotate_hoisted(ct, list(range(1, 9))).values():
            acc = r if acc is None else c.ev.add(acc, r)
        assert acc is not None
        _, plan, _ = realization.schedule_and_plan([p.node for p in acc.parts])
        assert plan is not None
        words = b"".join(np.ascontiguousarray(p.numpy()).tobytes() for p in acc.parts)
    return words, plan.peak_live_bytes


def test_hoisted_rotations_lower_peak_same_words(c, monkeypatch):
    plain_words, plain_peak = _rotations_summed(c, False, monkeypatch)
    words, peak = _rotations_summed(c, True, monkeypatch)
    assert words == plain_words
    assert peak < 0.7 * plain_peak  # 274,432 against 437,248 bytes when written
