"""Debug switches: one registry of documented environment variables.

Each switch is read from the environment the first time it is asked for (once per process) and
can be changed from Python, for a block of code, with `settings.override(NAME=value)`::

    with ren.settings.override(REN_CHECK=1):
        p.realize()      # verify every pass while scheduling this realization

An override holds for the thread (or asyncio task) that entered the block, like
`decimal.localcontext`: other threads keep their own values, and threads started inside the
block do not inherit it (enter an override in the thread itself).

A switch declared ``fresh`` (`Switch.fresh`) is read from the environment every time `get`
asks, so a program may change it between uses: ``REN_DISTRIBUTED_SHM`` and its threshold, which
a client reads at the start of each distributed job.  An `override` still wins over it.

Every switch declares its allowed values as data (`Switch.allowed`): a `range` of ints, a
tuple of words for a choice switch (e.g. REN_CPU_ISA), or None for a path switch (any text;
empty means the default).  A value outside them — from the environment or from `override` — is
a `SettingsError` naming the allowed values, raised where the value is read, before anything
runs with it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ren.errors import SettingsError, check_int


@dataclass(frozen=True)
class Switch:
    """One switch.  `allowed`: the ints it takes (a range), the words it takes (a tuple of
    str: a choice), or None for a path (a str; ``""`` means the default, which the switch's
    reader supplies)."""

    name: str
    default: int | str
    doc: str
    allowed: range | tuple[str, ...] | None = range(0, 2)
    #: with ``allowed`` None: free text read by its user (e.g. a pipeline spec), not a path
    text: bool = False
    #: read from the environment each time `get` asks (a switch a program changes between
    #: uses), not once per process
    fresh: bool = False
    #: for a choice switch: other words the environment may give for an allowed one, as
    #: (word, allowed word) pairs, e.g. ("1", "on")
    aliases: tuple[tuple[str, str], ...] = ()

    @property
    def is_path(self) -> bool:
        return self.allowed is None

    @property
    def is_choice(self) -> bool:
        return isinstance(self.allowed, tuple)

    def allowed_text(self) -> str:
        """The allowed values in words, e.g. ``0..1``, ``1..256``, ``a folder path``,
        ``one of auto|avx512|avx2|scalar``."""
        r = self.allowed
        if r is None:
            return "a text spec (empty: the default)" if self.text else \
                "a folder path (empty: the default)"
        if isinstance(r, tuple):
            return "one of " + "|".join(r)
        return f"{r[0]}..{r[-1]}"

    def check(self, value: Any, where: str) -> int | str:
        """`value` if this switch allows it (a path as str), else SettingsError; `where` says
        where the value came from (for the message)."""
        if self.allowed is None:
            if self.text and not isinstance(value, str):
                raise SettingsError(f"{where}: {self.name} must be a str, got "
                                    f"{type(value).__name__} {value!r}")
            if not isinstance(value, (str, os.PathLike)) or isinstance(value, bytes):
                raise SettingsError(f"{where}: {self.name} must be a folder path (str), got "
                                    f"{type(value).__name__} {value!r}")
            path = os.fspath(value)
            if not isinstance(path, str) or "\0" in path:
                raise SettingsError(f"{where}: {self.name}={path!r} is not a usable path (a "
                                    "str without NUL characters)")
            return path
        if isinstance(self.allowed, tuple):
            if not isinstance(value, str) or value not in self.allowed:
                raise SettingsError(f"{where}: {self.name}={value!r} is not allowed; set "
                                    f"{self.name} to {self.allowed_text()} (default "
                                    f"{self.default})")
            return value
        v = check_int(value, f"{where}: {self.name}", SettingsError,
                      hint=f"it takes {self.allowed_text()}")
        if v not in self.allowed:
            raise SettingsError(f"{where}: {self.name}={v} is outside the allowed range "
                                f"{self.allowed_text()}; set {self.name} to a value in "
                                f"{self.allowed_text()} (default {self.default})")
        return v


SWITCHES = {s.name: s for s in (
    Switch("REN_DEBUG", 0, "1: one line per realize; 2: one line per exec unit; 3: also the graph "
                           "after each pass", range(0, 4)),
    Switch("REN_CHECK", 0, "1: verify that every scheduling pass keeps its contract and preserves "
                           "values (slow; uses the IR interpreter)"),
    Switch("REN_NO_MEMPLAN", 0, "1: give every intermediate buffer its own allocation instead of "
                                "packing them into an arena"),
    Switch("REN_NO_ELISION", 0, "1: pass 4 keeps the NTT/INTT round trips around NTT-domain "
                                "rescales and mod-ups (no transform elision), for comparisons"),
    # read by ren.schedule.linearize on the thread that schedules (a ren.jit capture's caller)
    Switch("REN_MEMORY_ORDER", 1, "1: the scheduler lists the kernels in the memory-aware order "
                                  "of ren.memory_order where it lowers the peak-live bytes the "
                                  "arena is packed to (n16's bootstrapping: arena 880 -> 492 "
                                  "MiB); 0: in toposort's order, for comparisons.  The same "
                                  "words either way; part of the plan cache's key; read when a "
                                  "graph is scheduled"),
    Switch("REN_JIT", 1, "0: run jitted functions eagerly (no capture or replay)"),
    Switch("REN_PY_CORE", 0, "1: the IR's core (the node constructor, the rewrite driver's "
                             "walk) runs in Python even where the compiled one (ren/_*.c) is "
                             "built; read once, when ren.node is imported (the two give the "
                             "same nodes and graphs: for comparisons)"),
    Switch("REN_PLAN_CACHE", 1, "0: every ren.jit capture schedules its graph; 1: a capture of "
                                "a graph compiled before (any process, this version of Ren) "
                                "loads its schedule from the plan cache (REN_CACHE_DIR/plans)"),
    Switch("REN_DEVICE_SAMPLING", 0, "1: random polynomials are sampled by each device's RANDOM "
                                     "kernel (a graph with one is then scheduled every time) "
                                     "instead of on the host before the template is looked up"),
    # above a few hundred threads libgomp aborts or the process runs out of stack mappings;
    # limbs are what is split, and no ring has anywhere near 256 of them
    Switch("REN_CPU_THREADS", 1, "OpenMP threads of the compiled 'cpu' device's kernels (limbs are "
                                 "split between them; 1: single-threaded)", range(1, 257)),
    Switch("REN_CPU_LIBRARIES", 256, "compiled kernel libraries each 'cpu' device keeps loaded "
                                     "for reuse; older ones are unloaded once no JIT plan or "
                                     "replay template uses them", range(1, 65537)),
    # read by ren.compile_batches.split_point on the thread that lowers a first call (its
    # caller).  A proxy of the run's time: n16's bootstrapping at N = 2^16 writes ~21 GiB in a
    # ~7 s run; a run as long as its compiler CPU or shorter would wait on each compiler run
    Switch("REN_COMPILE_SPLIT_BYTES", 12 << 30,
           "a cold first call whose compute kernels write at least this many bytes in all (a "
           "long run) compiles its kernels chunk by chunk, the first chunks' before the run "
           "starts and each next chunk's while the chunks before it run; a shorter one compiles "
           "them all in one batch first.  0: every first call that runs while it is lowered "
           "splits; the largest value: none does.  Only where the device leaves a core to the "
           "compiler (fewer threads than cores); read when a first call is lowered",
           range(0, 1 << 40)),
    Switch("REN_MALLOC_TUNE", 1, "1: the host devices raise glibc's mmap and trim thresholds when "
                                 "they open, so large NumPy buffers are reused instead of "
                                 "page-faulted on every replay (ren.backend.malloc); 0: leave the "
                                 "allocator as it is"),
    Switch("REN_DISTRIBUTED_SHM_MIN_BYTES", 64 * 1024,
           "with REN_DISTRIBUTED_SHM on or auto: records with fewer bytes of frames still travel "
           "in the message (read each time a job starts, on the client)", range(0, 1 << 40),
           fresh=True),
    Switch("REN_INSPECT_DEBUG", 0, "1: ren-inspect shows tracebacks instead of one-line errors "
                                   "(same as its --debug)"),
    Switch("REN_CPU_ISA", "auto", "vector unit of the compiled 'cpu' device's kernels: auto (the "
                              "best this CPU has), avx512, avx2 or scalar; a path the CPU lacks "
                              "is a DeviceError when the device opens",
           ("auto", "avx512", "avx2", "scalar")),
    Switch("REN_PIPELINE", "", "the scheduling pipeline realization uses (`ren.passes.Pipeline`"
                               "'s text form, e.g. 'default,-simplify_domains' or 'default,"
                               "+mypkg.passes:my_pass@after=lower_ring_ops'); empty: the "
                               "default twelve passes; read when a realization starts",
           None, text=True),
    # read at the start of each job by ren.distributed.shm: a client may change it between jobs
    Switch("REN_DISTRIBUTED_SHM", "auto", "ren.distributed's same-host data path: off (records "
                                         "travel in Dask's messages), auto (through /dev/shm "
                                         "segments where client and worker share it) or on "
                                         "(the same, an error where they do not); 1/0 and "
                                         "true/false read as on/off; read each time a job "
                                         "starts, on the client", ("auto", "on", "off"),
           fresh=True, aliases=(("1", "on"), ("true", "on"), ("0", "off"), ("false", "off"))),
    Switch("REN_CACHE_DIR", "", "folder of Ren's caches: the 'cpu' device's compiled "
                                "libraries (in its cpu/ subfolder) and the plan cache (plans/); "
                                "empty: $XDG_CACHE_HOME/ren, else ~/.cache/ren; an "
                                "unusable folder falls back to a private temporary one, with a "
                                "warning", None),
)}

_values: dict[str, int | str] = {}  # read from the environment once per process (not `fresh`)
#: the overrides of the current thread / asyncio task (`override` blocks), innermost last
_overrides: ContextVar[Mapping[str, int | str]] = ContextVar(
    "ren_settings_overrides", default=MappingProxyType({}))


def _switch(name: Any) -> Switch:
    if not isinstance(name, str) or name not in SWITCHES:
        raise SettingsError(f"unknown switch {name!r}; known: {', '.join(SWITCHES)}")
    return SWITCHES[name]


def _read_env(name: str) -> int | str:
    s = SWITCHES[name]
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return s.default
    where = f"{name}={raw!r} (from the environment)"
    if s.is_path:
        return s.check(raw, where)
    if s.is_choice:
        word = raw.strip().lower()
        if not word:
            return s.default
        return s.check(dict(s.aliases).get(word, word), "the environment")
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{where} is not an integer; set {name} to a value in "
                            f"{s.allowed_text()} or unset it (default {s.default})") from None
    return s.check(value, "the environment")


def get(name: str) -> Any:
    """The current value of switch `name` (an int; a str for a path, text or choice switch):
    the innermost `override` of this thread (context), else the environment's value, read
    once per process, or now for a `Switch.fresh` switch."""
    overridden = _overrides.get()
    if type(name) is str and name in overridden:  # (a bad name falls through to the error)
        return overridden[name]
    s = _switch(name)
    if s.fresh:
        return _read_env(s.name)
    if name not in _values:
        _values[name] = _read_env(s.name)
    return _values[name]


def check(name: str, value: Any) -> Any:
    """`value` checked against switch `name`'s allowed values (for code that takes a switch's
    value from its caller, e.g. `CpuDevice.set_threads`); SettingsError when it is outside."""
    return _switch(name).check(value, f"{name} value")


def override(**values: Any) -> contextlib.AbstractContextManager[None]:
    """Set switches for the duration of a block, in this thread (context) only.

    The names and values are checked here, at the call, so a typo or an out-of-range value
    fails on its own line and leaves every switch as it was.
    """
    checked = {}
    for name, value in values.items():
        s = _switch(name)
        get(name)
        checked[name] = s.check(value, "settings.override")
    return _override(checked)


@contextlib.contextmanager
def _override(values: dict[str, int | str]) -> Iterator[None]:
    # a new mapping per block (never mutated), so nested blocks and other contexts keep theirs
    token = _overrides.set({**_overrides.get(), **values})
    try:
        yield
    finally:
        _overrides.reset(token)


def describe() -> str:
    """A table of the switches with their current values and allowed values."""
    return "\n".join(f"{s.name}={get(s.name)!r}  ({s.allowed_text()}"
                     f"{'; read each time' if s.fresh else ''})  {s.doc}"
                     for s in SWITCHES.values())


def retire_constants(module: str, moved: Mapping[str, str]) -> None:
    """Make the module constants `moved` (name -> the switch that replaced it) of `module` a
    clear error where code still uses them: reading one is an AttributeError, assigning one a
    SettingsError, each naming the switch (an assignment would otherwise create an attribute
    nothing reads, and the program would run with the switch's value unawares)."""
    def message(name: str) -> str:
        return (f"{module}.{name} is now the setting {moved[name]}: use "
                f"ren.settings.override({moved[name]}=...) around the code, or the environment "
                f"variable {moved[name]}")

    class Retired(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name in moved:
                raise AttributeError(message(name))
            raise AttributeError(f"module {module!r} has no attribute {name!r}")

        def __setattr__(self, name: str, value: Any) -> None:
            if name in moved:
                raise SettingsError(message(name))
            super().__setattr__(name, value)

    sys.modules[module].__class__ = Retired
