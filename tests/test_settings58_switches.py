"""Two behaviour switches that were module constants are registry switches (`ren.settings`):
REN_MEMORY_ORDER (was ``ren.schedule.MEMORY_ORDER``: the memory-aware kernel order on/off) and
REN_COMPILE_SPLIT_BYTES (was ``ren.compile_batches.COMPILE_SPLIT_BYTES``: which cold first
calls compile chunk by chunk beside their run).  Their defaults are the old constants'; a bad
value is a SettingsError naming the allowed values; the plan cache keys the order, so a capture
never loads a plan listed in the other order; and both are read on the thread that makes the
call, so an override (which holds for its own thread only) around the call holds for it."""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from test_first_run import fresh, keyswitch_like

import ren
from ren import compile_batches, plan_cache, realization, replay, settings
from ren.backend import backend_override, cpu
from ren.errors import SettingsError
from ren.plan_cache import LOADED, SCHEDULED
from ren.poly import realize_polys

sched = importlib.import_module("ren.schedule")  # (``ren.schedule`` is also a function)

NAMES = ("REN_MEMORY_ORDER", "REN_COMPILE_SPLIT_BYTES")


def test_both_are_registry_switches_with_the_old_constants_defaults():
    order, split = (settings.SWITCHES[n] for n in NAMES)
    assert (order.default, order.allowed) == (1, range(0, 2))
    assert (split.default, split.allowed) == (12 << 30, range(0, 1 << 40))
    assert not order.fresh and not split.fresh  # read once per process, like the others
    # one source of truth: no module constant an assignment would change to no effect
    assert not hasattr(sched, "MEMORY_ORDER")
    assert not hasattr(compile_batches, "COMPILE_SPLIT_BYTES")
    table = settings.describe()
    assert all(f"{n}=" in table for n in NAMES)


@pytest.mark.parametrize("module, name, switch", [
    (sched, "MEMORY_ORDER", "REN_MEMORY_ORDER"),
    (compile_batches, "COMPILE_SPLIT_BYTES", "REN_COMPILE_SPLIT_BYTES")])
def test_the_old_constants_are_a_clear_error_not_a_silent_no_op(module, name, switch):
    """Code written for the module constants fails on its line, naming the switch: an
    assignment would otherwise make an attribute nothing reads."""
    with pytest.raises(AttributeError, match=f"{name} is now the setting {switch}"):
        getattr(module, name)
    with pytest.raises(SettingsError, match=rf"override\({switch}=\.\.\.\)"):
        setattr(module, name, 0)
    assert name not in vars(module)
    with pytest.raises(AttributeError, match="has no attribute 'NO_SUCH_NAME'"):
        module.NO_SUCH_NAME  # noqa: B018 (other names: the usual error)
    module._ren_test_attribute = 1  # other assignments work as before
    assert vars(module).pop("_ren_test_attribute") == 1


@pytest.mark.parametrize("name, raw", [("REN_MEMORY_ORDER", "2"), ("REN_MEMORY_ORDER", "-1"),
                                       ("REN_MEMORY_ORDER", "on"),
                                       ("REN_COMPILE_SPLIT_BYTES", "-1"),
                                       ("REN_COMPILE_SPLIT_BYTES", str(1 << 40)),
                                       ("REN_COMPILE_SPLIT_BYTES", "12G")])
def test_a_bad_environment_value_is_a_settings_error_naming_the_allowed_values(monkeypatch,
                                                                                name, raw):
    allowed = settings.SWITCHES[name].allowed_text()
    outs = keyswitch_like(fresh(61, "python"), fresh(62, "python"))  # (realized inputs: first)
    monkeypatch.setenv(name, raw)
    monkeypatch.setattr(settings, "_values", {})  # as in a new process: read at the first get
    with pytest.raises(SettingsError, match=rf"{name}.*{re.escape(allowed)}"):
        settings.get(name)
    if name == "REN_MEMORY_ORDER":  # raised where it is read: before a schedule is listed
        with pytest.raises(SettingsError, match=re.escape(allowed)):
            realization.schedule_and_plan([p.node for p in outs])


@pytest.mark.parametrize("name, value", [("REN_MEMORY_ORDER", 2), ("REN_MEMORY_ORDER", -1),
                                         ("REN_MEMORY_ORDER", False), ("REN_MEMORY_ORDER", "0"),
                                         ("REN_COMPILE_SPLIT_BYTES", -1),
                                         ("REN_COMPILE_SPLIT_BYTES", 1 << 40),
                                         ("REN_COMPILE_SPLIT_BYTES", 1.5e9)])
def test_a_bad_override_is_a_settings_error_naming_the_allowed_values(name, value):
    before = settings.get(name)
    allowed = settings.SWITCHES[name].allowed_text()
    with pytest.raises(SettingsError, match=rf"settings.override: {name}.*{re.escape(allowed)}"):
        settings.override(**{name: value})
    assert settings.get(name) == before


def test_the_ends_of_the_split_range_are_accepted(monkeypatch):
    for raw, want in (("0", 0), (str((1 << 40) - 1), (1 << 40) - 1), ("", 12 << 30)):
        monkeypatch.setenv("REN_COMPILE_SPLIT_BYTES", raw)
        assert settings._read_env("REN_COMPILE_SPLIT_BYTES") == want


# -- the plan cache keys the order ----------------------------------------------------------------
def _capture(order: int) -> tuple[str, int, list[bytes]]:
    """A new ren.jit wrapper's first call of `keyswitch_like` under REN_MEMORY_ORDER=`order`:
    how its plan was made, its peak-live bytes (the memory-aware order lowers them: 5120 against
    6400 bytes when written) and the words."""
    a, b = fresh(63, "python"), fresh(64, "python")
    with settings.override(REN_MEMORY_ORDER=order):
        f = ren.jit(keyswitch_like)
        words = [np.ascontiguousarray(p.numpy()).tobytes() for p in f(a, b)]
    (plan,) = f.plans
    assert plan.memory is not None
    return plan.compiled_by, plan.memory.peak_live_bytes, words


def test_a_capture_never_loads_a_plan_cached_under_the_other_order():
    stored = plan_cache.stats.stores
    how_on, peak_on, words = _capture(1)
    assert how_on == SCHEDULED and plan_cache.stats.stores == stored + 1
    # the same graph under REN_MEMORY_ORDER=0: scheduled again (toposort's order, a higher
    # peak), not the plan cached under 1
    how_off, peak_off, words_off = _capture(0)
    assert how_off == SCHEDULED and plan_cache.stats.stores == stored + 2
    assert peak_off > peak_on
    assert words_off == words
    # each order loads its own plan
    assert _capture(0) == (LOADED, peak_off, words)
    assert _capture(1) == (LOADED, peak_on, words)
    assert len(list(plan_cache.plans_dir().glob("*.plan"))) == 2


def test_the_order_is_part_of_the_entry_key():
    a, b = fresh(65, "python"), fresh(66, "python")
    found = replay.structure_key([p.node for p in keyswitch_like(a, b)])
    assert found is not None
    names = []
    for order in (1, 0):
        with settings.override(REN_MEMORY_ORDER=order):
            names.append(plan_cache.entry_key(found[0]))
    assert None not in names and names[0] != names[1]



def test_an_eager_realization_does_not_reuse_a_template_of_the_other_order():
    """The eager template cache (`ren.replay.templates`) keys the order as the plan cache does: a
    graph realized under REN_MEMORY_ORDER=1 is scheduled again under 0 (toposort's order, its
    own template), and each order then reuses its own."""
    a, b = fresh(67, "python"), fresh(68, "python")
    words: dict[int, list[bytes]] = {}
    for order in (1, 0, 1, 0):
        before = replay.templates.misses
        with settings.override(REN_MEMORY_ORDER=order):
            out = keyswitch_like(a, b)
            realize_polys(out)
            got = [np.ascontiguousarray(p.numpy()).tobytes() for p in out]
        first = order not in words
        assert replay.templates.misses == before + (1 if first else 0), order
        assert words.setdefault(order, got) == got
    assert words[0] == words[1]


# -- read on the calling thread -------------------------------------------------------------------
def _reads(monkeypatch) -> list[tuple[str, int]]:
    """(switch, thread id) of every read of the two switches from now on."""
    seen: list[tuple[str, int]] = []
    get = settings.get

    def spy(name):
        if name in NAMES:
            seen.append((name, threading.get_ident()))
        return get(name)

    monkeypatch.setattr(settings, "get", spy)
    return seen


@pytest.mark.parametrize("where", ["this thread", "another thread"])
def test_a_first_call_reads_both_switches_on_its_own_thread(tmp_path, monkeypatch, where):
    """A cold first call through the plan cache on the compiled "cpu" device, run while it is
    lowered: the plan cache's key and the schedule read REN_MEMORY_ORDER, the compile split
    REN_COMPILE_SPLIT_BYTES, all on the calling thread (never on the first run's worker or the
    fault-in threads), so the caller's override holds for each; one entered on another thread
    leaves this thread's values alone."""
    monkeypatch.setattr(replay, "PIPELINE_ITEMS", 1)  # run while lowered, in chunks of 2, 4 ...
    monkeypatch.setattr(replay, "FIRST_CHUNK", 2)
    split = compile_batches.split_point
    splits: list[tuple[int, int]] = []  # (items compiled before the run, items)

    def one_thread_split(items, first, device):  # (as on a device that leaves a core free)
        class _OneThread:
            def host_threads(self) -> int:
                return 1

        splits.append((split(items, first, _OneThread()), len(items)))
        return splits[-1][0]

    monkeypatch.setattr(compile_batches, "split_point", one_thread_split)
    a, b = fresh(67, "cpu"), fresh(68, "cpu")
    want = [p.numpy() for p in keyswitch_like(a, b)]
    dev = cpu.CpuDevice("cpu:settings58")
    before = settings.get("REN_MEMORY_ORDER")
    reads = _reads(monkeypatch)
    result: dict[str, Any] = {}

    def call() -> None:
        with settings.override(REN_CACHE_DIR=str(tmp_path), REN_MEMORY_ORDER=0,
                               REN_COMPILE_SPLIT_BYTES=0), \
                backend_override("cpu", lambda _: dev):
            f = ren.jit(keyswitch_like)
            result["got"] = [p.numpy() for p in f(a, b)]
            result["ident"] = threading.get_ident()
            result["plan"] = f.plans[0]

    run_on(call, where)
    caller = result["ident"]
    assert {n for n, _ in reads} == set(NAMES)
    assert {t for _, t in reads} == {caller}
    # the overrides held: toposort's order (its peak, 6400 bytes here) and a split compile
    assert result["plan"].compiled_by == SCHEDULED
    with settings.override(REN_MEMORY_ORDER=0):
        _, toposort_plan, _ = realization.schedule_and_plan(
            [p.node for p in keyswitch_like(a, b)])
    assert toposort_plan is not None
    peak = result["plan"].memory.peak_live_bytes
    assert peak == toposort_plan.peak_live_bytes
    ((k, n),) = splits
    assert 0 < k < n
    assert all(np.array_equal(u, v) for u, v in zip(result["got"], want, strict=True))
    assert settings.get("REN_MEMORY_ORDER") == before  # (this thread's value, untouched)


def run_on(fn: Callable[[], None], where: str) -> None:
    """`fn()` here, or on a thread of its own (its exception re-raised here)."""
    if where == "this thread":
        fn()
        return
    failed: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as e:
            failed.append(e)

    t = threading.Thread(target=target, name="settings58-caller")
    t.start()
    t.join()
    if failed:
        raise failed[0]
