"""The plan cache: compiled templates kept on disk, so a capture of a graph compiled before (in
any process, by this version of Ren) loads its schedule instead of scheduling again.

    compile_cached(nodes, params)   ->  (Template, "schedule" | "plan cache")

ren.jit compiles every capture through it.  A bootstrapping graph takes seconds to schedule,
plan and lower, and is the same graph in every process that runs the same program: the first
call of a new process then costs the trace, this cache's look-up, the lowering of the cached
items (rendering and loading kernels, which the compile cache keeps) and one run.

**Key.**  SHA-256 of a canonical form (`canonical`: the same text in every process exactly
when the values are equal; `structure_text` writes a graph's repeated arguments once, then by
back reference) of the traced graph's `ren.replay.structure_key` (the DAG up to
which buffers its leaves hold: every leaf — the jitted function's inputs *and* the key material
or plaintexts it closes over — is a positional slot), the switches that change a schedule
(REN_NO_MEMPLAN, REN_NO_ELISION, `ren.schedule`'s REGENERATE_* constants), the Python
version (the entry is a pickle), and a fingerprint of Ren's own source files (another version
of Ren schedules differently, so it never reads this one's entries).  A schedule never
depends on what a leaf holds (realization's template cache relies on the same fact), so a
hit is exact: the cached template runs the traced graph's leaves, bit for bit what a fresh
schedule would run.

**Entry.**  ``<REN_CACHE_DIR or ~/.cache/ren>/plans/<key>.plan``: the pickled scheduled items,
memory plan, outputs and one detached parameter per leaf — structure only, never a leaf's data
(no key material is written) — followed by a second pickle, the programs the lowering rendered
for its elementwise kernels (C text and constant tables, `ren.backend.render_c`).  A hit hands
those to the renderer, so lowering it renders no C just to find the kernels the compile cache
holds (~0.2-0.3 s of a bootstrapping's loaded first call at N = 2^12); an entry is written once
its template is lowered (while the first run's last chunks still run: `lower_and_run`'s
`lowered`), so a schedule that does not lower is never stored.  On a hit the
constants' parameters are attached to the traced graph's buffers (baked in, as a fresh capture
bakes them) and the inputs' parameters are the template's.  Entries are written atomically; a
file that does not load (truncated, corrupted, another format, leaves or programs that do not
match) gives a `PlanCacheWarning`, is removed and the graph
is scheduled as if it were new: a bad entry costs time, never a wrong answer.  A folder this
process cannot write (another user's, read-only) is still read: a hit loads as usual (its
"use" stamp is best effort) and a miss is scheduled, not stored (a `PlanCacheWarning`).  At most
`MAX_ENTRIES` are kept (the oldest go first).  Loading an entry unpickles it: the folder is
trusted as the compile cache's is (it loads compiled libraries from the same root).

**Arena hints.**  ``plans/<hint>.arena`` holds the arena bytes per device of a jitted
function's last capture with a call key (`arena_hint`: the function's code location and the
call key, both known before the trace); the next capture starts faulting those arenas in before
its trace (`ren.arena_ahead.fault_ahead`), so a hit's first run finds most of its arena resident.
``plans/<hint>.farena`` holds the same for the function's last capture of any call key
(`function_hint`: its code location only, known when ``ren.jit`` wraps it): wrapping the function
starts the fault-in already (`ren.arena_ahead.fault_early`), so a program that wraps its function
before it makes its keys has the arena resident before the first call (issue 41 §3: at
N = 2^16 the trace and the lookup left ~0.3 s for ~1-2 s of fresh-page faults).

``REN_PLAN_CACHE=0`` turns it off; REN_CHECK and REN_DEBUG=3 always schedule (their checks and
dumps run on a fresh schedule).  `stats` counts hits, misses and stores in this process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import io
import os
import pickle
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ren import settings
from ren.backend import zero_rows_devices
from ren.backend.c_host import write_atomically
from ren.backend.cpu_cache import cache_root
from ren.backend.render_c import CKernel, Program, remember, rendered
from ren.canonical_form import NoCanonicalForm, canonical, structure_text
from ren.device import Buffer
from ren.kernel import ELEMENTWISE, ScheduledKernel
from ren.memory import MemoryPlan
from ren.node import Node
from ren.passes.pipeline import current_pipeline
from ren.realization import (
    compile_and_run,
    compile_template,
    parameterize,
    schedule_and_plan,
)
from ren.replay import Template, lower_and_run, structure_key
from ren.runtime import make_exec_units
from ren.structure_key import key_devices

#: bumped when an entry's layout changes (older entries then miss)
FORMAT = 2  # 2: the entry carries its elementwise kernels' rendered programs
#: entries kept in the folder; a store beyond it removes the oldest
MAX_ENTRIES = 256

SCHEDULED, LOADED = "schedule", "plan cache"
#: the old private name of `ren.canonical_form.NoCanonicalForm` (tests/test_plan_cache uses it)
_NoCanonicalForm = NoCanonicalForm


class PlanCacheWarning(UserWarning):
    """A plan cache entry could not be used (it is removed and the graph scheduled again), or
    the folder cannot be written (nothing is stored)."""


@dataclasses.dataclass
class Stats:
    hits: int = 0
    misses: int = 0
    stores: int = 0


stats = Stats()
#: a folder to use instead of the configured one (the test suite gives each test its own)
folder: Path | None = None
_source_fingerprint: str | None = None


def plans_dir() -> Path:
    """The folder of the plan cache: `folder` if set, else ``plans/`` under the cache root
    (REN_CACHE_DIR, else ``$XDG_CACHE_HOME/ren``, else ``~/.cache/ren``)."""
    return folder if folder is not None else Path(cache_root()) / "plans"


def source_fingerprint() -> str:
    """SHA-256 of Ren's source files (every .py and .c of the package), computed once."""
    global _source_fingerprint
    if _source_fingerprint is None:
        _source_fingerprint = tree_fingerprint(Path(__file__).resolve().parent)
    return _source_fingerprint


def tree_fingerprint(root: Path) -> str:
    """SHA-256 of the names and contents of the .py and .c files under `root`."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".c")):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def enabled() -> bool:
    return bool(settings.get("REN_PLAN_CACHE")) and not settings.get("REN_CHECK") \
        and settings.get("REN_DEBUG") < 3


def _linearize_knobs() -> tuple:
    """The module constants that change what `ren.schedule.linearize` computes again, and how
    pass 4 fuses roundings (`ren.passes.elision`): memory for time; a plan scheduled under other
    values (a measurement that changes them) never loads under these.  (The order it lists
    the kernels in is a switch, REN_MEMORY_ORDER, keyed with the others in `entry_key`.)"""
    sched = importlib.import_module("ren.schedule")  # (``ren.schedule`` is also a function)
    from ren.passes import elision  # pass 4's fused roundings (NTT terms gathered: time/memory)
    from ren.passes import p05_materialize as p05  # what a mod-down's RESCALE reads

    return (sched.REGENERATE_AFTER, sched.REGENERATE_DEPTH, sched.REGENERATE_COPIES,
            elision.LOOK_THROUGH, elision.SPLIT_DEPTH, elision.MAX_TERMS, elision.ZERO_ROWS,
            elision.RESCALE_KERNEL_FROM, p05.ZERO_ROWS_INPUT)


def entry_key(key: tuple) -> str | None:
    """The file name (hex digest) of a graph's structure key, or None when an argument of it
    has no canonical form (such a graph is compiled every time)."""
    try:
        # the pipeline in force names its passes and digests its user passes' code: a plan
        # scheduled under one pipeline never loads under another
        # ... and the graph's devices whose backend in force runs a mod-down's RESCALE on y
        # alone (`ren.backend.Device.rescale_zero_rows`, pass 5): such a plan never loads where
        # that device's backend reads every row (another backend_override, no compiler)
        # ... and the switches that change the schedule (read on this thread, the capture's
        # caller, as `ren.schedule.linearize` reads them: an override around the call holds
        # for both): a plan listed in toposort's order never loads where the memory-aware
        # order is on, nor the other way round
        form = canonical((FORMAT, sys.version_info[:2], bool(settings.get("REN_NO_MEMPLAN")),
                          bool(settings.get("REN_NO_ELISION")),
                          bool(settings.get("REN_MEMORY_ORDER")), current_pipeline().key,
                          _linearize_knobs(), zero_rows_devices(key_devices(key))), {})
        text = structure_text(key)
    except NoCanonicalForm:
        return None
    return hashlib.sha256(f"{source_fingerprint()}\0{form!r}\0{text}".encode()).hexdigest()


def compile_cached(nodes: Sequence[Node], params: Sequence[Buffer]) -> tuple[Template, str]:
    """`compile_template(nodes, params, own_outputs=True)` (every other leaf baked in as a
    constant), through the plan cache: (the template, how it was made: `SCHEDULED` or
    `LOADED`).  `params` are `parameter` buffers (leaves of the graph); they are detached."""
    template, how, _ = _compile(nodes, params, None)
    return template, how


def compile_cached_and_run(nodes: Sequence[Node], params: Sequence[Buffer],
                           inputs: Sequence[Buffer]) -> tuple[Template, str, list[Node]]:
    """`compile_cached(nodes, params)` with the template's graph runner, and its first run on
    `inputs` (`Template.run`'s result).  A template scheduled here (no entry yet, or the cache
    off) starts running while it is lowered (`ren.replay.lower_and_run`)."""
    template, how, results = _compile(nodes, params, inputs)
    assert results is not None  # (a run was asked for)
    return template, how, results


def _compile(nodes: Sequence[Node], params: Sequence[Buffer], inputs: Sequence[Buffer] | None
             ) -> tuple[Template, str, list[Node] | None]:
    found = structure_key(nodes) if enabled() else None
    name = entry_key(found[0]) if found is not None else None
    if found is None or name is None:
        if inputs is None:
            return compile_template(nodes, params, own_outputs=True), SCHEDULED, None
        return _scheduled(*compile_and_run(nodes, params, inputs, own_outputs=True))
    leaves = found[1]
    path = plans_dir() / f"{name}.plan"
    try:
        state = _load_state(path, leaves)
        if state is not None:
            ordered = _bind(state["slots"], leaves, params)
            if inputs is None:
                template = _lowered(path, state, ordered)
                if template is not None:
                    stats.hits += 1
                    return template, LOADED, None
            else:
                # the first run starts while the loaded items are lowered, as a fresh
                # schedule's does (`lower_and_run`): rendering and loading the kernels of a
                # bootstrapping hide behind its first chunks
                try:
                    template, results = lower_and_run(state["items"], state["plan"], ordered,
                                                      state["outputs"], inputs)
                except Exception as e:
                    _bad(path, f"its items do not lower ({type(e).__name__}: {e})")
                else:
                    stats.hits += 1
                    _used(path)
                    return template, LOADED, results
        stats.misses += 1
        # every leaf a parameter: the stored entry holds no leaf's data
        slots_nodes, slots = parameterize(nodes, leaves)
        try:
            items, plan, outputs = schedule_and_plan(slots_nodes, own_outputs=True)
        finally:
            for s in slots:  # (detached: what is stored, and what a hit starts from)
                s.release()
        # stored once lowered: the entry carries the programs the lowering rendered.  The
        # slots are pickled now, before `_bind` attaches the constants' storage to them
        stored = _State(items, plan, slots, outputs)
        ordered = _bind(slots, leaves, params)
        if inputs is None:
            template = Template(make_exec_units(items), plan, ordered, outputs)
            _store(path, stored)
            return template, SCHEDULED, None
        # stored while the last chunks of the first run still run
        template, results = lower_and_run(items, plan, ordered, outputs, inputs,
                                          lowered=lambda: _store(path, stored))
        return template, SCHEDULED, results
    finally:
        for p in params:  # the inputs' stand-ins keep no input storage (as compile_template)
            p.release()


def _scheduled(template: Template, results: list[Node]) -> tuple[Template, str, list[Node]]:
    return template, SCHEDULED, results


class _State:
    """What an entry stores of a fresh schedule, in two pickles: the schedule (items, memory
    plan, slots, outputs), pickled when it is made — before the lowering attaches storage to
    any of its buffers, so no leaf's data is written — and, appended when it is stored, the
    elementwise programs the lowering rendered meanwhile (`_programs`)."""

    def __init__(self, items: list[ScheduledKernel], plan: MemoryPlan | None,
                 slots: list[Buffer], outputs: list[Node]):
        self.items = items
        state = {"format": FORMAT, "items": [dataclasses.replace(i, node=None) for i in items],
                 "plan": plan, "slots": slots, "outputs": outputs}
        try:
            self.blob: bytes | None = pickle.dumps(state, protocol=5)
        except Exception:  # an item that does not pickle: this graph is scheduled every time
            self.blob = None


def _bind(slots: Sequence[Buffer], leaves: Sequence[Buffer], params: Sequence[Buffer]
          ) -> list[Buffer]:
    """The template parameters that stand for `params`; every other slot now holds its
    constant's storage (slot i stands for leaf i)."""
    is_param = {id(p): k for k, p in enumerate(params)}
    ordered: list[Buffer | None] = [None] * len(params)
    for slot, leaf in zip(slots, leaves, strict=True):
        k = is_param.get(id(leaf))
        if k is not None:
            ordered[k] = slot
        else:
            slot.attach(leaf.array())  # baked in: shares the constant's storage
    # a parameter the graph never reads still has a slot (the template binds every input)
    return [s if s is not None else Buffer(p.device, p.shape, no_opt=p.no_opt)
            for s, p in zip(ordered, params, strict=True)]


def _store(path: Path, stored: _State) -> None:
    if stored.blob is None:
        return
    try:
        blob = stored.blob + pickle.dumps(_programs(stored.items), protocol=5)
    except Exception:  # (a program that does not pickle: the entry without programs)
        blob = stored.blob
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(str(path), blob, str(path.parent))
    except OSError as e:
        warnings.warn(f"the plan cache cannot write {path} ({type(e).__name__}: {e}); captures "
                      "are scheduled every time.  Set REN_CACHE_DIR to a folder you can write, "
                      "or REN_PLAN_CACHE=0", PlanCacheWarning, stacklevel=4)
        return
    stats.stores += 1
    _trim(path.parent)


def _programs(items: list[ScheduledKernel]) -> list[tuple[int, dict[str, Program]]]:
    """The elementwise programs rendered for `items` so far (`ren.backend.render_c.rendered`),
    as (index of the first item of that key, {dialect name: program}): a hit hands them back
    to the renderer (`_remember_programs`), so lowering it renders no C to find the compiled
    kernels."""
    out: list[tuple[int, dict[str, Program]]] = []
    seen: set[Any] = set()
    shared: dict[tuple, np.ndarray] = {}
    for i, item in enumerate(items):
        if item.kind != ELEMENTWISE or item.key in seen:
            continue
        seen.add(item.key)
        programs = rendered(item.key)
        if programs:
            out.append((i, {d: _share_tables(p, shared) for d, p in programs.items()}))
    return out


def _share_tables(program: Program, shared: dict[tuple, np.ndarray]) -> Program:
    """`program` with each large table that an earlier program of the entry holds too taken
    from that one, so the pickle writes it once (a bootstrapping's 110 coefficient maps are 42
    distinct ones: 1.8 -> 0.7 MB at N = 2^12)."""
    tables = {}
    for name, a in program.tables.items():
        if isinstance(a, np.ndarray) and a.nbytes >= 1024:
            a = shared.setdefault((a.dtype.str, a.shape, hashlib.sha256(a.tobytes()).digest()),
                                  a)
        tables[name] = a
    return dataclasses.replace(program, tables=tables)


def _remember_programs(items: list[ScheduledKernel], programs: Any) -> bool:
    """Hand a loaded entry's programs to the renderer; False (nothing handed) when they are not
    well formed."""
    if not isinstance(programs, list):
        return False
    checked: list[tuple[Any, str, Program]] = []
    for entry in programs:
        if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], int)
                and 0 <= entry[0] < len(items) and items[entry[0]].kind == ELEMENTWISE
                and isinstance(entry[1], dict)):
            return False
        for dialect, program in entry[1].items():
            if not (isinstance(dialect, str) and isinstance(program, Program)
                    and program.kernels and all(isinstance(k, CKernel) for k in program.kernels)):
                return False
            checked.append((items[entry[0]].key, dialect, program))
    for key, dialect, program in checked:
        remember(key, dialect, program)
    return True


def _load_state(path: Path, leaves: Sequence[Buffer]) -> dict | None:
    """The unpickled entry at `path` whose slots match `leaves`, or None (no entry; an unusable
    one is removed with a warning).  Its items are checked for type, not lowered."""
    try:
        blob = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        _bad(path, f"it cannot be read ({e})")
        return None
    stream = io.BytesIO(blob)
    try:
        state = pickle.load(stream)
        # the programs' pickle follows the schedule's (none: an entry stored without them)
        programs = pickle.load(stream) if stream.tell() < len(blob) else []
    except Exception as e:
        _bad(path, f"it does not unpickle ({type(e).__name__}: {e})")
        return None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        _bad(path, "it is not a plan cache entry of this format")
        return None
    slots = state.get("slots")
    if not isinstance(slots, list) or len(slots) != len(leaves) or any(
            not isinstance(s, Buffer) or s.shape != b.shape or s.device != b.device
            or s.is_allocated for s, b in zip(slots, leaves)):
        _bad(path, "its parameters do not match the graph's leaves")
        return None
    items = state.get("items")
    if not isinstance(items, list) or not all(isinstance(i, ScheduledKernel) for i in items):
        _bad(path, "its items do not lower (they are not scheduled kernels)")
        return None
    if not _remember_programs(items, programs):
        _bad(path, "its rendered programs are not well formed")
        return None
    return state


def _lowered(path: Path, state: dict, ordered: list[Buffer]) -> Template | None:
    """The template of a loaded entry (`_load_state`), its parameters `ordered`; None (the entry
    removed with a warning) when its items do not lower."""
    try:
        units = make_exec_units(state["items"])
    except Exception as e:
        _bad(path, f"its items do not lower ({type(e).__name__}: {e})")
        return None
    _used(path)
    return Template(units, state["plan"], ordered, state["outputs"])


def _used(path: Path) -> None:
    """Stamp a use: the entry is among the newest when the folder is trimmed.  Best effort: a
    cache another user owns, or a read-only one, is still read (only its trimming order is
    off)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def _bad(path: Path, why: str) -> None:
    warnings.warn(f"plan cache entry {path} is unusable: {why}; it is removed and the graph "
                  "scheduled again", PlanCacheWarning, stacklevel=5)
    with contextlib.suppress(OSError):
        path.unlink()


def _trim(folder: Path, pattern: str = "*.plan") -> None:
    try:
        entries = sorted(folder.glob(pattern), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for old in entries[:max(0, len(entries) - MAX_ENTRIES)]:
        with contextlib.suppress(OSError):
            old.unlink()


def _hint_path(fn: Callable, suffix: str, *key: Any) -> Path | None:
    """A hint file of jitted function `fn` keyed by its code location, the format, Python's
    version and `key` (None: the cache off, a function without code, a key without a canonical
    form)."""
    code = getattr(fn, "__code__", None)
    if code is None or not enabled():
        return None
    try:
        form = canonical((FORMAT, sys.version_info[:2], getattr(fn, "__module__", None),
                          getattr(fn, "__qualname__", None), code.co_filename,
                          code.co_firstlineno, *key), {})
    except NoCanonicalForm:
        return None
    return plans_dir() / f"{hashlib.sha256(repr(form).encode()).hexdigest()}{suffix}"


def function_hint(fn: Callable) -> Path | None:
    """The file of jitted function `fn`'s arena hint for its last capture of any call key: known
    when ``ren.jit`` wraps it, before any call (`ren.jit` starts faulting those arenas in then:
    `ren.arena_ahead.fault_early`).  Read and written as `arena_hint`'s; None as it is."""
    return _hint_path(fn, ".farena", "any call")


def arena_hint(fn: Callable, call_key: tuple) -> Path | None:
    """The file of jitted function `fn`'s arena hint for a call of key `call_key` (`ren.jit`'s):
    the arena bytes per device its last capture needed (`hinted_arenas` reads them, `note_arenas`
    writes them), or None when there is none to keep (the cache off, a function without code, a
    key without a canonical form).  Keyed by what is known before the trace: the function's code
    location, the call key, the format and Python's version (no source fingerprint: a hint is
    only a size, and one that does not fit is dropped, never used)."""
    return _hint_path(fn, ".arena", call_key)


def hinted_arenas(path: Path) -> dict[str, int]:
    """A hint's arena bytes per device ({} for none, or for a file that does not parse)."""
    try:
        pairs = [line.split() for line in path.read_text().splitlines()]
        return {d: int(n) for d, n in pairs}
    except (OSError, ValueError, UnicodeDecodeError):
        return {}


def note_arenas(path: Path, plan: MemoryPlan | None) -> None:
    """Keep a capture's arena bytes per device as hint `path` (`arena_hint`), when they changed.
    Best effort: a folder that cannot be written keeps no hint."""
    arenas = {d: int(n) for d, n in plan.arenas.items()} if plan is not None else {}
    if hinted_arenas(path) == arenas:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(str(path), "".join(f"{d} {n}\n" for d, n in arenas.items()).encode(),
                         str(path.parent))
    except OSError:
        return
    _trim(path.parent, f"*{path.suffix}")


def clear() -> int:
    """Remove every entry (and arena hint) of the plan cache folder; returns how many entries
    were removed."""
    for p in [*plans_dir().glob("*.arena"), *plans_dir().glob("*.farena")]:
        with contextlib.suppress(OSError):
            p.unlink()
    removed = 0
    for p in plans_dir().glob("*.plan"):
        try:
            p.unlink()
            removed += 1
        except OSError:
            pass
    return removed


__all__ = ["LOADED", "MAX_ENTRIES", "SCHEDULED", "PlanCacheWarning", "arena_hint", "clear",
           "compile_cached", "compile_cached_and_run", "enabled", "entry_key", "function_hint",
           "hinted_arenas", "note_arenas", "plans_dir", "source_fingerprint", "stats",
           "structure_text"]
