"""Realization: turn lazy Polys into concrete buffers, through one pipeline.

    compile_template(nodes, params)       a graph -> a `ren.replay.Template`:
      -> schedule (run_passes + linearize)    SINK(out0, out1, ...): one root for everything
      -> plan_memory                          requested together
      -> make_exec_units
    template.run(inputs)                  bind the inputs, run the exec units
      -> the becomes_map values           per requested output, its BUFFER (or CONST) node

`realize_nodes` runs it for the frontend (`ren.poly`, which then points every live Poly whose
graph overlapped at the BUFFER nodes, so nothing is recomputed): it swaps the graph's input
buffers for parameters, compiles the template and keeps it by the graph's structure
(`ren.replay.templates`), so the next realization of a graph of the same shape runs it again on
its own inputs without scheduling.  ren.jit compiles the same way from its function's outputs and
replays the template on later calls.

Reading values (`host_residues`) realizes first, then converts storage (Montgomery form) to
standard-form residues on the host.

**Guards.**  ``with recording(r): ...`` makes `r` (a `Recorder`) see every realization in the
block (per thread / context) before it happens (`Recorder.on_realize`), and the frontend consults
it when it creates a random polynomial (`Recorder.on_random`); either may raise to refuse.  ren.jit
refuses both while it traces a function.

Thread safety: realization may be requested from several threads.  One re-entrant lock covers
the whole critical section — reading the requested Polys' nodes, scheduling, running and applying
the becomes_map — so realizations run one at a time, a graph that overlaps one realized by another
thread reuses its buffers instead of computing them again, and no two runs race on the
becomes_map or on buffer storage.  Building graphs and reading realized values take no lock.
`last_timings` describes the last realization in any thread.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ren import settings
from ren.device import Buffer, get_device
from ren.errors import RealizeError
from ren.ir import as_ring, const_node, is_const, is_realized, required_domain, storage_buffer
from ren.kernel import COPY, VIEW, ScheduledKernel
from ren.memory import MemoryPlan, plan_memory
from ren.node import Node, substitute_many
from ren.ops import DType, Op
from ren.passes.pipeline import current_pipeline
from ren.random import RandomSpec
from ren.replay import Template, lower_and_run, structure_key, templates
from ren.ring import Domain, RingSpec, from_mont, get_tables, to_mont
from ren.runtime import make_exec_units
from ren.sampling import side_by_side_here
from ren.schedule import ScheduleContext, as_sink, gc_paused, linearize, run_passes
from ren.spec import need_spec


@dataclass
class RealizeTimings:
    """Seconds spent in each stage of the last realization (for benchmarks and REN_DEBUG)."""

    schedule: float = 0.0
    plan: float = 0.0
    lower: float = 0.0
    run: float = 0.0
    kernels: int = 0
    extra: dict = field(default_factory=dict)


last_timings = RealizeTimings()
#: Held while a realization reads Poly nodes, schedules, runs and applies the becomes_map.
realize_lock = threading.RLock()


class Recorder:
    """Watches the realizations of a `recording` block.  Every hook does nothing by default;
    a hook may raise (a RenError) to refuse what is about to happen."""

    def on_realize(self, nodes: Sequence[Node]) -> None:
        """Before realizing `nodes` (all requested ones, realized or not)."""

    def on_random(self, kind: str) -> None:
        """Before the frontend creates a random polynomial of sampler `kind`."""


_recorder: ContextVar[Recorder | None] = ContextVar("ren_recorder", default=None)


def current_recorder() -> Recorder | None:
    """The recorder of the innermost `recording` block of this context, if any."""
    return _recorder.get()


@contextlib.contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """Let `recorder` watch every realization (and random creation) inside the block."""
    token = _recorder.set(recorder)
    try:
        yield recorder
    finally:
        _recorder.reset(token)


# -- the pipeline ---------------------------------------------------------------------------------
def parameter(buf: Buffer) -> Buffer:
    """A stand-in for input buffer `buf` in a graph to compile: the template's parameter.  It
    shares `buf`'s storage until `compile_template` detaches it."""
    p = Buffer(buf.device, buf.shape, no_opt=buf.no_opt)
    if buf.is_allocated:
        p.attach(buf.array())
    return p


def parameterize(nodes: Sequence[Node],
                 inputs: Sequence[Buffer]) -> tuple[list[Node], list[Buffer]]:
    """`nodes` with each of the `inputs` (BUFFER leaves) swapped for a `parameter`, and the
    parameters: what `compile_template` compiles for a realization of `nodes`."""
    params = [parameter(b) for b in inputs]
    if not params:
        return list(nodes), params
    leaf = {b: Node(Op.BUFFER, DType.U32, (), b) for b in (*inputs, *params)}
    return substitute_many(list(nodes), {leaf[b]: leaf[p] for b, p in zip(inputs, params)}), params


def compile_template(nodes: Sequence[Node], params: Sequence[Buffer] = (), *,
                     own_outputs: bool = False, timings: RealizeTimings | None = None) -> Template:
    """Schedule, plan and lower the graph of `nodes` into a Template whose parameters are
    `params` (`parameter` buffers that stand for the inputs in the graph; detached here, so the
    template keeps no input storage).  Every other leaf buffer is baked in as a constant.

    With `own_outputs`, an output that would be an input, a constant or a view gets a copy
    item at the end of the schedule, so no output of a run aliases anything but itself (ren.jit).
    """
    timings = timings if timings is not None else RealizeTimings()
    try:
        items, plan, outputs = schedule_and_plan(nodes, own_outputs, timings)
        t0 = time.perf_counter()
        units = make_exec_units(items)
        timings.lower = time.perf_counter() - t0
    finally:
        for p in params:
            p.release()
    return Template(units, plan, list(params), outputs)


def compile_and_run(nodes: Sequence[Node], params: Sequence[Buffer], inputs: Sequence[Buffer],
                    *, own_outputs: bool = False, timings: RealizeTimings | None = None
                    ) -> tuple[Template, list[Node]]:
    """`compile_template(nodes, params, ...)` with its graph runner, and its first run on
    `inputs` (`Template.run`'s result); a large schedule starts running while it is still
    being lowered (`ren.replay.lower_and_run`).  The first call of a `ren.jit` function."""
    timings = timings if timings is not None else RealizeTimings()
    try:
        items, plan, outputs = schedule_and_plan(nodes, own_outputs, timings)
        t0 = time.perf_counter()
        template, results = lower_and_run(items, plan, list(params), outputs, inputs)
        timings.lower = time.perf_counter() - t0  # (and the run, which it overlaps)
    finally:
        for p in params:
            p.release()
    return template, results


def schedule_and_plan(nodes: Sequence[Node], own_outputs: bool = False,
                      timings: RealizeTimings | None = None
                      ) -> tuple[list[ScheduledKernel], MemoryPlan | None, list[Node]]:
    """The schedule of `nodes` (linearized), its memory plan and the output nodes (with
    `own_outputs`, see `compile_template`): what a template is lowered from."""
    timings = timings if timings is not None else RealizeTimings()
    t0 = time.perf_counter()
    todo = [n for n in dict.fromkeys(nodes) if not is_realized(n)]
    items: list[ScheduledKernel] = []
    becomes = {n: n for n in nodes}
    if todo:
        ctx = ScheduleContext(outputs=tuple(todo), check=bool(settings.get("REN_CHECK")))
        items = linearize(run_passes(as_sink(*todo), ctx=ctx).sink)
        becomes.update(ctx.becomes_map)
    outputs = [becomes[n] for n in nodes]
    if own_outputs:
        outputs = _copy_borrowed_outputs(items, outputs)
    t1 = time.perf_counter()
    plan = None
    if not settings.get("REN_NO_MEMPLAN"):
        plan = plan_memory(items, outputs={storage_buffer(o) for o in outputs
                                           if o.src[0].op is Op.BUFFER})
    timings.schedule, timings.plan = t1 - t0, time.perf_counter() - t1
    return items, plan, outputs


def _copy_borrowed_outputs(items: list[ScheduledKernel], outputs: list[Node]) -> list[Node]:
    """Append a copy item for each output whose storage the schedule does not write itself (an
    input, a constant, a view); returns the outputs with those copies in their place."""
    written = {i.bufs[0] for i in items if i.kind != VIEW}
    copies: dict[Buffer, Buffer] = {}
    out = []
    for o in outputs:
        src = None if is_const(o) else storage_buffer(o)
        if src is None or (src.base is None and src in written):
            out.append(o)
            continue
        if src not in copies:
            copies[src] = dst = Buffer(src.device, src.shape)
            items.append(ScheduledKernel(COPY, "copy_output", None, (dst, src), None, None,
                                         src.shape))
        out.append(as_ring(Node(Op.BUFFER, DType.U32, (), copies[src]), *o.arg))
    return out


def realize_nodes(nodes: Sequence[Node]) -> dict[Node, Node]:
    """Compute the given output nodes together; returns the becomes_map (each requested node ->
    the buffer-backed node that now holds its value).

    A graph whose structure was realized before runs the template compiled then on its own
    input buffers instead of scheduling again; REN_CHECK and REN_DEBUG=3 always schedule, so
    their checks and dumps happen.
    """
    with realize_lock:
        return _realize_nodes(nodes)


def _realize_nodes(nodes: Sequence[Node]) -> dict[Node, Node]:
    recorder = _recorder.get()
    if recorder is not None:
        recorder.on_realize(nodes)
    todo = [n for n in dict.fromkeys(nodes) if not is_realized(n)]
    if not todo:
        return {}
    requested, samples = todo, {}
    key, inputs = _template_key(todo)
    if key is None and not _must_schedule() and not settings.get("REN_DEVICE_SAMPLING"):
        # random leaves? sample them first, so the graph's template can be replayed
        samples = sample_random_leaves(todo)
        if samples:
            todo = substitute_many(todo, {**samples, **_transformed_samples(todo, samples)})
            key, inputs = _template_key(todo)
    template = templates.get(key) if key is not None else None
    timings = RealizeTimings(extra={"replayed": template is not None})
    if template is None:
        with gc_paused():  # planning and lowering allocate per node too (see ren.jit's capture)
            template = compile_template(*parameterize(todo, inputs), timings=timings)
        if key is not None:
            templates.put(key, template)
    t0 = time.perf_counter()
    becomes_map = dict(zip(requested, template.run(inputs), strict=True))
    timings.run, timings.kernels = time.perf_counter() - t0, len(template.units)
    _record(timings, len(todo))
    return becomes_map


def sample_random_leaves(nodes: Sequence[Node]) -> dict[Node, Node]:
    """Each random polynomial (AS_RING over a RANDOM leaf) under `nodes` -> the same values,
    sampled now on the host into an input buffer on its device.

    A RANDOM leaf carries a new seed every time, so a graph with one has no reusable structure;
    with its samples as input buffers instead, an encryption or a key generation replays the
    template of the previous one.  `ren.sampling` defines a RANDOM node's value and every
    device's RANDOM kernel expands the seed on the host the same way, so the values are the
    kernel's.  The buffer holds the standard-form residues s as they come; read as storage
    (Montgomery form) they are s·2^-32, so the substitute is that times the constant 2^32,
    a product the consumer's kernel fuses: no conversion on the host.  A device whose sampler
    writes storage form itself (``sample_stored``, `_draw`) gives the buffer as it is: no
    product at all (one kernel fewer where a sample is an output or read by two kernels)."""
    leaves: list[Node] = []
    seen: set[Node] = set()
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.op is Op.AS_RING and n.src and n.src[0].op is Op.RANDOM:
            if not n.src[0].arg.public:  # (a lean key's row is sampled in the graph, where
                leaves.append(n)         # it is used, and freed after)
            continue
        stack.extend(n.src)

    def draw(group: list[Node]) -> list[tuple[np.ndarray, bool]]:
        return [_draw(get_device(n.src[0].arg.device), n.src[0].arg, n.arg[0]) for n in group]

    # an encryption's u, e0, e1 are independent streams, and the cpu device's samplers release
    # the GIL: drawn side by side, as many at a time as the devices have threads, each pool
    # thread taking the next leaf left (the dearest first) whenever it is free, not a fixed
    # share: an encryption's three leaves on two threads left one idle for a Gaussian's time
    width = min(SAMPLING_THREADS, len(leaves), max(
        (get_device(n.src[0].arg.device).sampling_threads() for n in leaves), default=1))
    if not _side_by_side_pays(leaves):
        width = 1  # one leaf after another, each on the device's whole team
    if width > 1:
        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in sorted(range(len(leaves)), key=lambda i: -_draw_cost(leaves[i])):
            todo.put(i)
        drawn_at: list[tuple[np.ndarray, bool] | None] = [None] * len(leaves)

        def drain() -> None:
            while True:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                drawn_at[i] = draw([leaves[i]])[0]

        # the caller takes leaves too, marked side by side like the pool's threads: it is
        # running already, while a pool thread must be woken (late on a loaded machine), and
        # it would otherwise only wait
        on_caller = int(DRAW_ON_CALLER)
        futures = [_sampling_pool().submit(drain) for _ in range(width - on_caller)]
        try:
            if on_caller:
                with side_by_side_here():
                    drain()
        finally:
            # once the caller is through, a pool task not started yet would find nothing
            # left: cancelled, it never wakes a thread (without the caller, every task runs)
            for f in futures:
                if not (on_caller and f.cancel()):
                    f.result()  # re-raises a sampler's error
        drawn = [d for d in drawn_at if d is not None]
        assert len(drawn) == len(leaves)  # every leaf was taken (by the caller or the pool)
    else:
        drawn = draw(leaves)
    out: dict[Node, Node] = {}
    for n, (values, stored_form) in zip(leaves, drawn, strict=True):
        ring, domain = n.arg
        device = n.src[0].arg.device
        buf = Buffer(device, (ring.limbs, ring.N))
        # a fresh sample that nothing else holds becomes the storage as it is: no copy on this
        # thread (the copy was ~25 % of key generation's main thread at N = 2^16)
        if buf.allocator.can_adopt(values, buf.shape):
            buf.attach(values)
        else:
            buf.copyin(values)
        stored = as_ring(Node(Op.BUFFER, DType.U32, (), buf), ring, domain)
        out[n] = stored if stored_form else \
            Node(Op.MUL, DType.U32, (stored, const_node(1 << 32, ring, domain, device)))
    return out


def _draw(device: Any, spec: RandomSpec, ring: RingSpec) -> tuple[np.ndarray, bool]:
    """A leaf's sample and whether it is in storage form (r·2^32 mod q_i): a device whose
    sampler writes that form itself (`Device.sample_stored`) saves realization the conversion;
    otherwise `Device.sample`'s standard form."""
    values = device.sample_stored(spec, ring)
    if values is not None:
        return values, True
    return device.sample(spec, ring), False


def _transformed_samples(nodes: Sequence[Node], samples: dict[Node, Node]) -> dict[Node, Node]:
    """More substitutes for `sample_random_leaves`' `samples` (leaf -> its buffer × 2^32): each
    NTT of a sampled leaf under `nodes` (a Gaussian's or a ternary's ``.ntt()``), and each ring
    product that reads a coefficient-domain leaf (the ternary v of v·b, which pass
    inject_domains would transform there), read the NTT of the sample's buffer times 2^32
    instead of the NTT of the product.  The NTT is linear, so the words are the same; but the
    NTT is a ring kernel that fuses nothing, so the product before it was a kernel of its own,
    a pass over the leaf (0.6-0.8 ms at N = 2^16 and 22-24 limbs: one per Gaussian row of
    key generation, encryption's ternary), while after it the product fuses into the
    elementwise kernel that reads the transform (e - a·s, v·b)."""
    out: dict[Node, Node] = {}

    def transform(leaf: Node) -> Node:  # the NTT of the sample's buffer
        return Node(Op.NTT, DType.U32, (samples[leaf].src[0],))

    def times_r(n: Node, leaf: Node) -> Node:  # n × 2^32, in the NTT domain of leaf's ring
        (ring, _), device = leaf.arg, leaf.src[0].arg.device
        return Node(Op.MUL, DType.U32, (n, const_node(1 << 32, ring, Domain.NTT, device)))

    def coeff_leaf(n: Node) -> bool:  # (a sample in storage form is its buffer: nothing to move)
        return n in samples and n.arg[1] is Domain.COEFF and samples[n].op is Op.MUL

    seen: set[Node] = set()
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if n in seen or n in samples:
            continue
        seen.add(n)
        if n.op is Op.NTT and coeff_leaf(n.src[0]):
            out[n] = times_r(transform(n.src[0]), n.src[0])
            continue
        if n.op is Op.MUL and len(n.src) == 2 and coeff_leaf(n.src[0]) != coeff_leaf(n.src[1]) \
                and required_domain(n) is Domain.NTT:
            # v·x -> (NTT(v's buffer)·x)·2^32: the product by 2^32 goes after the product
            # with x, into its kernel, also where the transform has other readers (v·b and
            # v·a); the walk does not enter a substitute, so x gets its own samples here
            leaf, x = n.src if coeff_leaf(n.src[0]) else n.src[::-1]
            x = substitute_many([x], samples)[0]
            src = (transform(leaf), x) if leaf is n.src[0] else (x, transform(leaf))
            new = times_r(n.replace(src=src), leaf)
            if need_spec(new) == need_spec(n):  # a product of two polynomials: NTT either way
                out[n] = new
                continue
        stack.extend(n.src)
    return out


def _side_by_side_pays(leaves: Sequence[Node]) -> bool:
    """Whether `sample_random_leaves` draws `leaves` side by side (else one after another on the
    caller, each sampler on the device's whole team): only where one is uniform (SIDE_BY_SIDE
    "uniform"; "all": always, as before).

    A uniform row is compute-bound (a SHAKE-128 stream per limb, ~0.15 ms a limb at N = 2^16),
    so a key generation's pool keeps a second thread busy for milliseconds.  The small kinds
    (a public-key encryption's u, e0, e1) are ~0.5-0.8 ms of squeeze and map, then a residue
    pass per limb that is bound by memory writes (44 rows, 11.5 MB, ~0.45 ms at one thread and
    ~0.40 at two): side by side, three leaves split 2:1 over two threads, two residue passes
    compete for the same bandwidth and the pool thread must wake first.  One after another,
    each leaf's parts and limbs split over the team instead.  N = 2^16, two threads, in-process
    alternated, quiet: encryption's sampling 3.9-4.0 -> 2.5-2.8 ms (medians of 30).  The words
    never depend on it; one thread draws on the caller either way."""
    return SIDE_BY_SIDE == "all" or any(n.src[0].arg.kind == "uniform" for n in leaves)


def _draw_cost(leaf: Node) -> float:
    """A leaf's sampling cost, relative (`sample_random_leaves` draws the dearest first): a
    uniform row is a SHAKE-128 stream per limb; the small kinds one or two serial SHAKE-256
    streams (the Gaussian's twice as long) and a cheap pass per limb (N = 2^16, one thread:
    uniform ~0.15 ms a limb, Gaussian ~4.3 ms + 0.02 a limb, ternary ~2.2 + 0.02)."""
    kind, limbs = leaf.src[0].arg.kind, leaf.arg[0].limbs
    if kind == "uniform":
        return 0.15 * limbs
    return (4.3 if kind == "gaussian" else 2.2) + 0.02 * limbs


#: random leaves one realization draws at the same time (`sample_random_leaves`)
SAMPLING_THREADS = 4
#: whether the realizing thread draws leaves beside the pool's (`sample_random_leaves`)
DRAW_ON_CALLER = True
#: which leaf sets `sample_random_leaves` draws side by side: "uniform" (those with a uniform
#: leaf, `_side_by_side_pays`) or "all"
SIDE_BY_SIDE = "uniform"
_pool: tuple[int, ThreadPoolExecutor] | None = None  # (the pid that made it, the pool)
_pool_lock = threading.Lock()


def _sampling_pool() -> ThreadPoolExecutor:
    """The process's pool for `sample_random_leaves`, made once per process (every encryption
    draws its leaves through it: a pool per realization would start threads each time; a
    forked child has none of its parent's threads, so it makes its own)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(),
                     ThreadPoolExecutor(SAMPLING_THREADS, thread_name_prefix="ren-sampling"))
        return _pool[1]


def _must_schedule() -> bool:
    """REN_CHECK and REN_DEBUG=3 check and dump the schedule of every realization as it is."""
    return bool(settings.get("REN_CHECK")) or settings.get("REN_DEBUG") >= 3


def _template_key(todo: list[Node]) -> tuple[tuple | None, list[Buffer]]:
    """The cache key of `todo`'s template and the graph's input buffers, or (None, []) when it
    is not cached (not replayable, or REN_CHECK / REN_DEBUG=3, which must schedule)."""
    if _must_schedule():
        return None, []
    found = structure_key(todo)
    if found is None:
        return None, []
    # the switches that change the schedule, and the pipeline, are part of the key (read here,
    # on the realizing thread, as the schedule reads them: an override holds for both)
    return (found[0], bool(settings.get("REN_NO_MEMPLAN")),
            bool(settings.get("REN_NO_ELISION")), bool(settings.get("REN_MEMORY_ORDER")),
            current_pipeline().key), found[1]


def _record(timings: RealizeTimings, outputs: int) -> None:
    global last_timings
    last_timings = timings
    if settings.get("REN_DEBUG") >= 1:
        how = "replayed" if timings.extra.get("replayed") else (
            f"schedule {timings.schedule * 1e3:.2f} ms, plan {timings.plan * 1e3:.2f} ms, "
            f"lower {timings.lower * 1e3:.2f} ms")
        print(f"[ren] realize {outputs} output(s): {timings.kernels} units, {how}, run "
              f"{timings.run * 1e3:.2f} ms")


def host_residues(n: Node, montgomery: bool = False) -> np.ndarray:
    """Standard-form residues (limbs × N, u32) of a realized node, copied to the host; with
    ``montgomery=True`` the words as every device stores them (r·2^32 mod q_i), unconverted."""
    if not is_realized(n):
        raise RealizeError("host_residues: the node is not realized; call realize() first")
    ring, domain = n.arg
    leaf = n.src[0]
    if leaf.op is Op.CONST:
        c = np.array([leaf.arg[0] % q for q in ring.moduli], dtype=np.uint32).reshape(-1, 1)
        if domain is Domain.NTT:
            out = np.repeat(c, ring.N, axis=1)
        else:
            out = np.zeros((ring.limbs, ring.N), dtype=np.uint32)
            out[:, :1] = c
        return to_mont(out, get_tables(ring)) if montgomery else out
    words = storage_buffer(leaf).copyout()
    return words if montgomery else from_mont(words, get_tables(ring))


__all__ = ["Recorder", "compile_and_run", "compile_template", "current_recorder", "host_residues",
           "is_realized", "parameter", "parameterize", "realize_nodes", "recording",
           "sample_random_leaves", "schedule_and_plan"]
