"""`Template`: one realization's exec units over buffers of its own, runnable on new inputs.

`ren.realization.compile_template` makes a template of a graph whose input buffers were swapped
for *parameters* (stand-in buffers) before scheduling, so the schedule, the memory plan and the
exec units are all over the template's own buffers.  Running it binds them:

    role     the buffer ...                                   a run binds it to
    param    stands for input i (a BUFFER leaf of the graph)   the caller's buffer i
    const    a leaf that is no parameter (key material a       itself (baked in)
             jitted function closes over)
    arena    an intermediate with an offset in the memory plan  its slot of this run's arena
    temp     an intermediate with storage of its own            a new buffer
    output   holds a requested output                          a new buffer: two runs' outputs
                                                                never alias
    view     a view of a param, temp or output                 the same view of its base's binding

Every realization runs a template: eager realization (`realize_nodes` keeps one per graph shape
in `templates`, so a graph of a shape seen before skips scheduling), and ren.jit's capture and
replay.  A template with a backend graph runner (`build_runner`: `Device.graph`) keeps the
storage of its const, arena and temp buffers between runs, and a run binds only parameters,
outputs and their views.

`structure_key` (ren.structure_key) is the cache key: the graph's structure up to which buffers
its leaves hold.  Graphs with RANDOM leaves (a new seed every time) or BUFFER_VIEW leaves are not
cached.  The cache is small (``MAX_TEMPLATES``, oldest out first).
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ren import compile_batches
from ren.arena_ahead import take_arena
from ren.backend import Device, GraphRunner, check_backends, get_device, on_backend_change
from ren.device import Buffer, in_host_memory
from ren.errors import RealizeError
from ren.ir import as_ring, is_const, storage_buffer
from ren.kernel import LIGHT_KINDS, VIEW, ScheduledKernel
from ren.memory import MemoryPlan
from ren.node import Node
from ren.ops import DType, Op
from ren.runtime import (
    ExecUnit,
    _check_view,
    fault_in_background,
    make_exec_units,
    note_units,
    run_exec_units,
)
from ren.structure_key import _structure_key as _structure_key  # re-exported (tests)
from ren.structure_key import structure_key as structure_key  # re-exported: the cache key

PARAM, CONST, ARENA, TEMP, OUTPUT = "param", "const", "arena", "temp", "output"  # and VIEW


class Template:
    """Exec units over the template's own buffers; `run(params)` runs them on new inputs.

    `units` (in order; their `item`s are the schedule), `plan` (the memory plan of those units,
    None under REN_NO_MEMPLAN), `params` (the parameters, in input order) and `outputs` (per
    requested output: a CONST node, or AS_RING over one of the template's buffers) say what it
    computes; `roles` (bases before their views) how a run binds each buffer (module doc).
    """

    def __init__(self, units: list[ExecUnit], plan: MemoryPlan | None, params: list[Buffer],
                 outputs: list[Node], roles: dict[Buffer, str] | None = None):
        self.units, self.plan, self.params, self.outputs = units, plan, params, outputs
        self.roles = roles if roles is not None else _roles(units, plan, params, outputs)
        self.lock = threading.Lock()  # runs share the arena, and the runner's storage
        self.runner: GraphRunner | None = None
        self._dynamic: list[Buffer] = []  # with a runner: what each run binds, in array order
        self._out_bufs = [None if is_const(o) else storage_buffer(o) for o in outputs]
        self.runs = 0
        # the eager cache's (TemplateCache): the hit count at its last hit, and the run count
        # from which a hit asks for a graph runner (-1: never)
        self.used, self.runner_after = 0, 2

    @property
    def runner_kind(self) -> str:
        """The graph runner's kind (e.g. ``"numpy-prebound"``), or ``"exec-units"``."""
        return self.runner.kind if self.runner is not None else "exec-units"

    def run(self, params: Sequence[Buffer]) -> list[Node]:
        """Run on `params` (the input buffers, in order); returns each output's node over this
        run's buffers — the becomes_map values of the requested outputs.  Inside
        `outputs_into` the outputs are written into the storage its provider gives."""
        provide = _take_provider()
        with self.lock:
            self.runs += 1
            if self.runner is None:
                bound = self._bind(params, self.roles)
                if provide is not None:
                    self._attach_outputs(bound, provide)
                run_exec_units([ExecUnit(u.kind, u.name, tuple(bound[b] for b in u.bufs), u.fn,
                                         u.item) for u in self.units], self.plan)
            else:
                bound = self._bind(params, self._dynamic)
                if provide is not None:
                    self._attach_outputs(bound, provide)
                self.runner([bound[b].allocate().array() for b in self._dynamic])
                note_units(self.units)
        return self._results(bound)

    def _attach_outputs(self, bound: dict[Buffer, Buffer], provide: OutputProvider) -> None:
        """Give this run's new output buffers (each output's own, in output order, once each;
        not an output that is a view, a parameter or a constant) the storage `provide` hands
        out for their shapes, when it hands out any (`outputs_into`)."""
        outs = list(dict.fromkeys(b for b in self._out_bufs if b is not None
                                  and self.roles.get(b) is OUTPUT and b.base is None))
        fresh = [bound[b] for b in outs]
        if not fresh or any(not in_host_memory(b.device) for b in fresh):
            return
        arrays = provide([b.shape for b in fresh])
        if arrays is None:
            return
        if len(arrays) != len(fresh):
            raise RealizeError(f"an output provider gave {len(arrays)} arrays for "
                               f"{len(fresh)} outputs")
        _check_apart(arrays, [bound[p] for p in self.params])
        for b, arr in zip(fresh, arrays, strict=True):
            b.attach(arr)

    def _results(self, bound: dict[Buffer, Buffer]) -> list[Node]:
        """Each output's node over a run's buffers (`bound`: template buffer -> the run's)."""
        return [o if b is None else as_ring(Node(Op.BUFFER, DType.U32, (), bound.get(b, b)),
                                            *o.arg)  # const outputs are not rebound
                for o, b in zip(self.outputs, self._out_bufs)]

    def _bind(self, params: Sequence[Buffer], buffers: Iterable[Buffer]) -> dict[Buffer, Buffer]:
        """The buffer each of `buffers` (bases before views) stands for in a run on `params`."""
        return _bind(self.params, self.roles, params, buffers)

    # -- the backend graph runner ----------------------------------------------------------------
    def build_runner(self) -> GraphRunner | None:
        """Give the template its device's graph runner (`ren.backend.Device.graph`), if the
        device has one: the arena, the temps and the consts get storage kept by the runner, and
        each later run binds only parameters, new outputs and their views.  Returns the runner
        (None: runs keep going through `run_exec_units`)."""
        with self.lock:
            if self.runner is None:
                self.runner, self._dynamic = self._graph()
            return self.runner

    def _graph(self) -> tuple[GraphRunner | None, list[Buffer]]:
        storage = _runner_storage(self.units, self.plan, self.roles)
        if storage is None:
            return None, []
        dynamic = storage.dynamic
        calls, patches = _calls(self.units, storage.kept, {b: i for i, b in enumerate(dynamic)},
                                fresh_arrays(dynamic, self.roles))
        return get_device(storage.device).graph(calls, patches), dynamic

    def retained_bytes(self) -> int:
        """Bytes a graph runner keeps allocated between runs: the arenas and the temps."""
        arena = self.plan.arena_bytes if self.plan is not None else 0
        return arena + sum(b.nbytes for b, role in self.roles.items() if role is TEMP)

    def profile(self, params: Sequence[Buffer]) -> list[float]:
        """Seconds of each call of the graph runner (one run on `params`, each kernel timed on
        its own: the raw kernel times, without binding and dispatch)."""
        if self.runner is None:
            raise RealizeError("Template.profile needs a graph runner; call build_runner() first")
        with self.lock:
            bound = self._bind(params, self._dynamic)
            return self.runner.profile([bound[b].allocate().array() for b in self._dynamic])

    # -- pickling: compiled kernels are closures, so a template pickles its scheduled items
    # (ASTs and buffers; consts with their data) and compiles them again when loaded
    def __getstate__(self) -> dict:
        return {"items": [replace(u.item, node=None) for u in self.units], "plan": self.plan,
                "params": self.params, "outputs": self.outputs, "runner": self.runner is not None}

    def __setstate__(self, state: dict) -> None:
        check_backends(state["items"])
        Template.__init__(self, make_exec_units(state["items"]), state["plan"], state["params"],
                          state["outputs"])
        if state["runner"]:
            self.build_runner()

    def __repr__(self) -> str:
        return f"<Template {len(self.params)} params, {len(self.units)} units, {self.runner_kind}>"


# -- the first run, while the schedule is lowered --------------------------------------------------
#: a schedule of at least this many items has its first run overlapped with its lowering
#: (`lower_and_run`); smaller ones lower first, then run
PIPELINE_ITEMS = 1024
#: the first chunk lowered and run; each next chunk is twice as large
FIRST_CHUNK = 32


def lower_and_run(items: list[ScheduledKernel], plan: MemoryPlan | None, params: list[Buffer],
                  outputs: list[Node], inputs: Sequence[Buffer],
                  lowered: Callable[[], None] | None = None) -> tuple[Template, list[Node]]:
    """The template of a schedule with its graph runner (`Template.build_runner`), and its first
    run on `inputs` (`Template.run`'s result), as ``Template(make_exec_units(items), ...)``
    followed by ``build_runner()`` and ``run(inputs)`` would give them.

    For a large schedule on a device with a graph runner, the run starts before the lowering
    ends: the items are lowered in chunks (32, 64, 128, ... items), and each chunk, once
    lowered, runs as a graph runner of its own on a worker thread, in order, over the same kept
    storage as the template's runner (built last), while this thread lowers the next chunk.
    Compiled kernels run without the GIL, so on a machine with a second core the lowering
    (rendering, compiling, tables: ~0.2 s of a bootstrapping at N = 2^12) hides behind the
    kernels.  The same kernels run in the same order on the same memory: the results are the
    sequential run's, bit for bit.

    `lowered`, if given, is called once every item is lowered, while the last chunks still run
    (the plan cache stores its entry then, off the first call's path)."""
    roles = _roles(items, plan, params, outputs)
    storage = _pipeline_storage(items, plan, roles)
    if storage is None:
        template = Template(make_exec_units(items), plan, params, outputs, roles)
        template.build_runner()
        if lowered is not None:
            lowered()
        return template, template.run(inputs)
    device_name, kept, dynamic = storage.device, storage.kept, storage.dynamic
    device = get_device(device_name)
    index = {b: i for i, b in enumerate(dynamic)}
    bound = _bind(params, roles, inputs, dynamic)
    arrays = [bound[b].allocate().array() for b in dynamic]
    # a first run faults its new pages in; the first kernels that did it themselves ran 3-7x
    # slower (a bootstrapping at N = 2^12: 0.37 s instead of 0.14 s).  So the pages are faulted
    # in before the first chunk runs: on a thread of their own (`fault_in_background`), while
    # this thread lowers the first chunks, since the fault-in is the kernel's work (zeroing,
    # and compacting memory into huge pages: 0.02-0.9 s for the 217 MiB arena at N = 2^14 on
    # this VM, seconds for N = 2^16's) and the lowering is Python's
    faulting = fault_in_background([*storage.scratch, *(arrays[i] for i, b in enumerate(dynamic)
                                                        if roles[b] is OUTPUT)])
    chunks: queue.SimpleQueue[GraphRunner | None] = queue.SimpleQueue()
    failed: list[BaseException] = []

    def run_chunks() -> None:
        try:
            faulting()  # (the pages in before the first chunk runs)
        except BaseException as e:  # (re-raised by the lowering thread)
            failed.append(e)
        while (runner := chunks.get()) is not None:
            if not failed:  # after a failure the rest is only drained
                try:
                    runner(arrays)
                except BaseException as e:  # (re-raised by the lowering thread)
                    failed.append(e)

    worker = threading.Thread(target=run_chunks, name="ren-first-run", daemon=True)
    worker.start()
    units: list[ExecUnit] = []
    compiled = len(items)  # the items whose missing kernels were compiled in one batch
    try:
        start, size = 0, FIRST_CHUNK
        while start < len(items) and not failed:
            if start == 0 and compile_batches.lacks(items[:size]):
                # the compile cache lacks kernels of the first chunk: a cold cache.  Compile
                # every chunk's missing kernels in one compiler run now (split across the
                # cores), the first chunk's with them, rather than one smaller run per chunk (a
                # cold bootstrapping at N = 2^8: 8 runs, mostly serial) or a run of the first
                # chunk's first (its kernels run in ~1 ms; that run cost ~0.3 s of wall) --
                # or, for a long run, the first chunks' kernels now and each next chunk's
                # while the chunks before it run (`compile_batches.split_point`)
                compiled = compile_batches.split_point(items, FIRST_CHUNK, device)
                compile_batches.prepare(items[:compiled])
            elif start + size > compiled < len(items):
                # every earlier chunk is queued: this one's kernels compile while they run
                compile_batches.prepare(items[compiled:start + size])
                compiled = start + size
            runner = _chunk_runner(device, device_name, items[start:start + size], kept, index,
                                   units)
            if runner is not None:
                chunks.put(runner)
            start, size = start + size, size * 2
        if not failed:  # the template's own runner, built while the last chunks run
            template = Template(units, plan, params, outputs, roles)
            calls, patches = _calls(units, kept, index, fresh_arrays(dynamic, roles))
            template.runner, template._dynamic = device.graph(calls, patches), dynamic
            if lowered is not None:
                lowered()
    except BaseException:
        failed.append(RealizeError("the lowering failed"))  # (stops the worker's next chunks)
        raise
    finally:
        chunks.put(None)
        worker.join()
    if failed:
        raise failed[0]
    template.runs = 1
    note_units(units)
    return template, template._results(bound)


def _chunk_runner(device: Device, device_name: str, items: Sequence[ScheduledKernel],
                  kept: dict[Buffer, Any], index: dict[Buffer, int], units: list[ExecUnit]
                  ) -> GraphRunner | None:
    """Lower `items` (appended to `units`) and give the graph runner of their calls (None
    when they make no calls)."""
    chunk = make_exec_units(list(items))
    units += chunk
    calls, patches = _calls(chunk, kept, index)
    if not calls:
        return None
    runner = device.graph(calls, patches)
    if runner is None:
        raise RealizeError(f"device {device_name} gave no graph runner for a part of a "
                           "schedule after giving one for all of it")
    return runner


def _pipeline_storage(items: list[ScheduledKernel], plan: MemoryPlan | None,
                      roles: dict[Buffer, str]
                      ) -> _RunnerStorage | None:
    """The runner storage of a schedule worth running while it is lowered (`lower_and_run`), or
    None: a small one, or one whose device has no graph runner."""
    if len(items) < PIPELINE_ITEMS:
        return None
    storage = _runner_storage(items, plan, roles)
    if storage is None or type(get_device(storage.device)).graph is Device.graph:
        return None  # (the base class's `graph`: no runner)
    return storage


def _bind(template_params: Sequence[Buffer], roles: dict[Buffer, str], params: Sequence[Buffer],
          buffers: Iterable[Buffer]) -> dict[Buffer, Buffer]:
    """The buffer each of `buffers` (bases before views) stands for in a run on `params`."""
    bound = dict(zip(template_params, params, strict=True))
    for b in buffers:
        role = roles[b]
        if role is OUTPUT or role is TEMP:
            bound[b] = b.fresh_like()
        elif role is VIEW:
            assert b.base is not None  # a view has a base
            bound[b] = Buffer(b.device, b.shape, base=bound[b.base], offset=b.offset)
        elif role is not PARAM:  # const; arena: run_exec_units places it
            bound[b] = b
    return bound


@dataclass
class _RunnerStorage:
    """What a graph runner keeps (module doc)."""

    device: str  # the device whose runner runs the calls
    kept: dict[Buffer, Any]  # template buffer -> the array it is in every run
    dynamic: list[Buffer]  # the buffers each run binds, in the order of its arrays
    scratch: list[Any]  # the arenas and the temps (what `kept` views of them live in)


def _runner_storage(units: Sequence[ExecUnit | ScheduledKernel], plan: MemoryPlan | None,
                    roles: dict[Buffer, str]) -> _RunnerStorage | None:
    """What a graph runner over `units` keeps, or None when no one runner can run them.
    Allocates the arenas and the temps."""
    devices = {b.device for b in roles}
    backends = [get_device(d) for d in devices]
    if not units or (len({type(d) for d in backends}) != 1
                     and len({id(d.allocator) for d in backends}) != 1):
        return None  # a graph spans one backend, or devices of one memory
    # devices of one memory ("python" words reduced on the host, then copied to "cpu"):
    # the runner of the device that runs the most kernels runs the others' calls too
    work = Counter(u.bufs[0].device for u in units if u.kind not in LIGHT_KINDS)  # computes
    runner_device = max(sorted(devices), key=lambda d: work[d])
    arenas = {dev: take_arena(dev, max(n, 4) // 4)
              for dev, n in plan.arenas.items()} if plan is not None else {}
    kept: dict[Buffer, Any] = {}  # arrays that are the same in every run
    dynamic: list[Buffer] = []
    scratch: list[Any] = list(arenas.values())
    for b, role in roles.items():
        if role is VIEW:
            _check_view(b)  # once here: views are rebuilt without a view unit
        if role is ARENA:
            assert plan is not None  # only a memory plan places buffers in an arena
            kept[b] = b.allocator.view(arenas[b.device], plan.offset(b) // 4, b.shape)
        elif role is TEMP:
            kept[b] = b.allocator.alloc(b.shape)
            scratch.append(kept[b])
        elif role is CONST:
            kept[b] = b.array()
        elif role is VIEW and b.base in kept:
            kept[b] = b.allocator.view(kept[b.base], b.offset, b.shape)
        else:  # param, output, a view of one
            dynamic.append(b)
    return _RunnerStorage(runner_device, kept, dynamic, scratch)


class Patches(list):
    """The patches of `Device.graph` (a list of ``(call, slot, array index)``) and, in `fresh`,
    what a runner may know of the run's arrays besides: array index -> the index of its base
    for each new output and each view of one (`fresh_arrays`).  A new output is storage of
    its run alone (a fresh buffer, or pages an `outputs_into` provider hands out): it aliases
    no parameter and no other output, only its own base and that base's views.  Every other
    run array (a parameter, a view of one) may alias any other but those."""

    fresh: dict[int, int]

    def __init__(self, items: Iterable[tuple[int, int, int]] = (),
                 fresh: dict[int, int] | None = None):
        super().__init__(items)
        self.fresh = dict(fresh or {})


def fresh_arrays(dynamic: Sequence[Buffer], roles: dict[Buffer, str]) -> dict[int, int]:
    """Per run array (`dynamic`, in order) that is a new output or a view of one: the index
    of its base output (module doc: outputs are new buffers in every run)."""
    where = {b: i for i, b in enumerate(dynamic)}
    fresh: dict[int, int] = {}
    for i, b in enumerate(dynamic):
        base = b
        while base.base is not None:
            base = base.base
        if roles.get(base) is OUTPUT and base in where:
            fresh[i] = where[base]
    return fresh


def _calls(units: Sequence[ExecUnit], kept: dict[Buffer, Any], index: dict[Buffer, int],
           fresh: dict[int, int] | None = None) -> tuple[list[tuple[Any, list]], Patches]:
    """The (kernel, slot arrays) calls of `units` for `Device.graph`, with the patches that put
    each run's arrays (`index`: buffer -> its place in them) into the slots; `fresh` (see
    `Patches`) rides along with them."""
    calls: list[tuple[Any, list]] = []
    patches = Patches(fresh=fresh)
    for u in units:
        if u.kind != VIEW:
            patches += [(len(calls), slot, index[b]) for slot, b in enumerate(u.bufs)
                        if b in index]
            calls.append((u.fn, [kept.get(b) for b in u.bufs]))
    return calls, patches


def _roles(units: Sequence[ExecUnit | ScheduledKernel], plan: MemoryPlan | None,
           params: list[Buffer], outputs: list[Node]) -> dict[Buffer, str]:
    """The role of every buffer of a template (module doc), bases before their views."""
    planned = set(plan.planned) if plan is not None else set()
    written = {u.bufs[0] for u in units if u.kind != VIEW}
    outs: set[Buffer] = set()
    for o in outputs:
        if not is_const(o):
            b = storage_buffer(o)
            outs.add(b)
            if b.base is not None:  # an output view's base is new in every run too
                outs.add(b.base)
    roles = dict.fromkeys(params, PARAM)
    for b in [*(b for u in units for b in u.bufs), *outs]:
        views = []
        while b not in roles and b.base is not None:
            views.append(b)
            b = b.base
        if b not in roles:  # a base buffer
            if b in planned:
                roles[b] = ARENA
            elif b in written:
                roles[b] = OUTPUT if b in outs else TEMP
            else:  # a leaf that is no parameter
                roles[b] = CONST
        role = roles[b]
        for v in reversed(views):
            role = roles[v] = CONST if role is CONST else VIEW
    return roles


# -- outputs into storage the caller gives ------------------------------------------------------
#: given the (rows, cols) shapes of a run's new outputs, the u32 host arrays (C-contiguous, of
#: those shapes, every word writable; the kernels write all of them) to write them into, or
#: None to let the run allocate as usual
OutputProvider = Callable[[list[tuple[int, int]]], "list[np.ndarray] | None"]
_provider = threading.local()


@contextmanager
def outputs_into(provide: OutputProvider) -> Iterator[None]:
    """The next `Template.run` on this thread (a jitted replay, ``plan(*args)``) writes its new
    outputs into the arrays `provide` gives for their shapes instead of fresh buffers: a
    ``ren.distributed`` worker hands it the pages of the shared-memory slot its result goes
    out in, so sending the result copies nothing.  One run only (the first that starts inside
    the block takes the provider); the words are the same as in fresh buffers, and a run
    outside the block is unchanged.  The arrays must overlap neither one another nor the run's
    inputs (checked: RealizeError).  The caller owns the arrays: a Poly over them is only as
    good as their storage."""
    previous = getattr(_provider, "provide", None)
    _provider.provide = provide
    try:
        yield
    finally:
        _provider.provide = previous


def _check_apart(arrays: Sequence[np.ndarray], params: Sequence[Buffer]) -> None:
    """RealizeError unless the arrays an output provider gave overlap neither one another nor
    the run's (allocated, host) parameters: a compiled runner takes new outputs for storage of
    their own (`Patches`) and may write one before it reads a parameter's last row."""
    inputs = [b.array() for b in params if in_host_memory(b.device) and b.is_allocated]
    for k, a in enumerate(arrays):
        if any(np.may_share_memory(a, x) for x in [*arrays[:k], *inputs]):
            raise RealizeError("an output provider gave an array that overlaps another output "
                               "or an input of the run")


def _take_provider() -> OutputProvider | None:
    provide = getattr(_provider, "provide", None)
    if provide is not None:
        _provider.provide = None
    return provide


# -- the eager cache ------------------------------------------------------------------------------
MAX_TEMPLATES = 256
#: an eager template gets a graph runner (which keeps its arena and temps allocated between
#: runs) at its third run when it retains at most this many bytes.  Without a runner each of its
#: kernels forks its own thread team from Python (N = 2^16, 20 levels: an encryption or a
#: multiply retains 65-81 MiB, and two threads gave 1.45-1.49x / 1.65-1.78x instead of 1.72x /
#: 1.82-1.86x; bench_ckks's degree-7 polynomial retains 181 MiB, its 64x64 linear transform
#: 353 MiB, 264 and 289 kernels) ...
GRAPH_BYTES_PER_TEMPLATE = 384 << 20
#: ... and all templates' runners together retain at most this many: a template that asks for
#: more than is left takes the runners of the templates run longest ago (least recently used;
#: each gets one again after two more runs); a template's share also returns when it is dropped
#: from the cache and collected.  (First come, first served kept bench_ckks's polynomial and
#: linear transform without one behind the key generation's, encryption's, ... 347 MiB.)
GRAPH_BYTES_TOTAL = 384 << 20
_retained = [0]
# reentrant: a finalizer (`_release`) may run in a collection inside a section that holds it
_retained_lock = threading.RLock()
#: the eager templates that hold a share of the budget now, with their shares' finalizers
_holders: weakref.WeakKeyDictionary[Template, weakref.finalize] = weakref.WeakKeyDictionary()
_clock = [0]  # eager cache hits so far: a template's `used` is the hit count at its last hit


def _release(nbytes: int) -> None:
    with _retained_lock:
        _retained[0] -= nbytes


def _evict(need: int, keep: Template | None) -> None:
    """Take graph runners from the least recently used templates (not `keep`, not one running
    now) until `need` more bytes fit the budget.  Call with `_retained_lock` held."""
    for t in sorted(list(_holders.keys()), key=lambda t: t.used):
        if _retained[0] + need <= GRAPH_BYTES_TOTAL:
            return
        if t is keep or not t.lock.acquire(blocking=False):
            continue
        try:
            share = _holders.pop(t, None)
            t.runner, t._dynamic = None, []  # its storage goes with the runner
            t.runner_after = t.runs + 2
        finally:
            t.lock.release()
        info = share.detach() if share is not None else None
        if info is not None:  # (None: the finalizer ran already and gave the bytes back)
            _retained[0] -= info[2][0]


def _give_runner(template: Template) -> None:
    """A graph runner for `template` if its retained bytes fit the budget, after taking the
    runners of the least recently used templates if need be; they return to the budget when
    the template is collected or its runner is taken."""
    n = template.retained_bytes()
    with _retained_lock:
        if template in _holders:  # another thread's hit gave it one meanwhile
            return
        if n > GRAPH_BYTES_PER_TEMPLATE or n > GRAPH_BYTES_TOTAL:
            template.runner_after = -1  # never: it cannot fit
            return
        if _retained[0] + n > GRAPH_BYTES_TOTAL:
            _evict(n, template)
            if _retained[0] + n > GRAPH_BYTES_TOTAL:
                template.runner_after = template.runs + 1  # the others are running: next time
                return
        _retained[0] += n
        share = weakref.finalize(template, _release, n)
        _holders[template] = share
    if template.build_runner() is None:
        with _retained_lock:
            _holders.pop(template, None)
        share()  # no runner after all: nothing is retained
        template.runner_after = -1


def retained_graph_bytes() -> int:
    """Bytes the eager templates' graph runners hold now (for tests and diagnostics)."""
    return _retained[0]


class TemplateCache:
    """A small thread-safe cache of templates by structure key; when full, the oldest entry
    goes (first in, first out: a hit costs one hash of the key and no reordering).  At its third
    run a template gets a graph runner, within the budget above: an eager realize then costs
    little more than its kernels, with no arena to allocate and fault in."""

    def __init__(self, size: int = MAX_TEMPLATES):
        self.size = size
        self._items: dict[tuple, Template] = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: tuple) -> Template | None:
        t = self._items.get(key)  # a dict lookup is atomic under the GIL
        if t is None:
            self.misses += 1
            return None
        self.hits += 1
        _clock[0] += 1
        t.used = _clock[0]
        if t.runner is None and 0 <= t.runner_after <= t.runs:
            _give_runner(t)
        return t

    def put(self, key: tuple, template: Template) -> None:
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = template
            while len(self._items) > self.size:
                del self._items[next(iter(self._items))]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)


templates = TemplateCache()
on_backend_change(templates.clear)  # their units hold the kernels of the backend they ran on
