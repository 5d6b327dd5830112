"""`schedule`: turn a lazy polynomial DAG into a list of `ScheduledKernel`s.

    schedule(SINK(out0, out1, ...))  or  schedule(poly0, poly1, ...)

runs the twelve passes of `ren.passes` in order, then lists the kernels of the final graph in
dependency order.  `run_passes` exposes the machinery for inspection: it can stop after any pass
and keep the graph after every pass (``trace=True``), with each pass's provenance: the rules that
fired, the node each replaced and what it returned, and what every rebuilt node became
(`ren.rewrite.Provenance`; recorded only while tracing).

Thread safety: scheduling keeps all its state in its `ScheduleContext` and may run in several
threads at once; pausing the garbage collector is counted, so it resumes when the last
scheduling run ends.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ren import contracts, settings
from ren.device import Buffer
from ren.errors import ParameterError, ScheduleError, check_int
from ren.ir import is_const, storage_buffer
from ren.kernel import ELEMENTWISE, LIGHT_KINDS, VIEW, ScheduledKernel
from ren.memory import peak_live_bytes
from ren.memory_order import memory_order
from ren.node import Node, toposort
from ren.ops import DType, Op
from ren.passes import SHORTCUTS
from ren.passes.pipeline import Pass, Pipeline, current_pipeline
from ren.rewrite import Provenance, Rule, RuleSet, rewrite


@dataclass
class ScheduleContext:
    """State shared by the passes of one scheduling run."""

    outputs: tuple[Node, ...] = ()  # the requested (pre-pass-1) output nodes
    becomes_map: dict[Node, Node] = field(default_factory=dict)
    stats: dict[str, Counter] = field(default_factory=dict)
    kernel_count: int = 0
    check: bool = False  # verify each pass's semantics and contract as it runs (REN_CHECK)
    # pass 4 elides transforms around rescales and mod-ups (REN_NO_ELISION=1 turns it off)
    elide: bool = field(default_factory=lambda: not settings.get("REN_NO_ELISION"))
    provenance: Provenance | None = None  # set while tracing: the rewrite driver records into it
    #: run each row of FUSABLE passes as one walk when nothing watches the graphs between them
    #: (`ren.passes`; False runs every pass on its own, as tracing and REN_CHECK do)
    fuse: bool = True
    #: the passes this run applies (`ren.passes.Pipeline`): by default the one in force where
    #: the context is made (``with ren.pipeline(...)``, REN_PIPELINE, else the twelve)
    pipeline: Pipeline = field(default_factory=current_pipeline)


@dataclass
class ScheduleTrace:
    """The result of `run_passes`: the final graph, and with ``trace`` every intermediate one."""

    sink: Node
    ctx: ScheduleContext
    graphs: list[tuple[str, Node]] = field(default_factory=list)  # ("00_input", g0), ...
    #: with ``trace``: ("01_simplify", what its rewrites did), ... one per pass run
    provenance: list[tuple[str, Provenance]] = field(default_factory=list)

    def __repr__(self) -> str:  # the fields hold whole graphs: far too long to print
        stages = f"{len(self.graphs)} graphs" if self.graphs else "the final graph"
        return f"<ScheduleTrace {stages}, {len(toposort(self.sink))} nodes at the end>"


def as_sink(*outputs: Any) -> Node:
    """A SINK over Polys/Nodes (or an existing SINK, returned as is)."""
    if len(outputs) == 1 and isinstance(outputs[0], Node) and outputs[0].op is Op.SINK:
        return outputs[0]
    nodes: list[Node] = []
    for o in outputs:
        if isinstance(o, list | tuple):
            nodes.extend(x.node if hasattr(x, "node") else x for x in o)
        else:
            nodes.append(o.node if hasattr(o, "node") else o)
    if not nodes or not all(isinstance(n, Node) for n in nodes):
        raise ScheduleError("schedule: give a SINK node, or one or more Polys / Nodes")
    return Node(Op.SINK, DType.VOID, tuple(nodes))


_gc_lock = threading.Lock()
_gc_pauses = 0  # scheduling runs in progress, in all threads
_gc_resume = False  # whether the collector was on when the first of them began


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a block.

    Scheduling allocates many short-lived nodes; each full collection scans every live object, so
    with the collector on, the cost per node grows with the size of the graph (measured: 2x per
    node from 10^3 to 10^4 nodes).  IR graphs are acyclic, so nothing needs the collector here.

    When the last pause ends, what the block allocated and kept (a bootstrapping's capture keeps
    ~140,000 objects: its template, kernels, nodes) moves to the oldest generation at once
    (`age_survivors`), instead of being scanned by the next young collection (44 ms at the end
    of that capture) and by the middle one after it.
    """
    global _gc_pauses, _gc_resume
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_resume:
                age_survivors()
                gc.enable()


def age_survivors() -> None:
    """Move every object the collector tracks to its oldest generation without scanning them
    (`gc.freeze` then `gc.unfreeze`: two list splices).  Cyclic garbage among them waits for the
    next full collection instead of the next young one.  Skipped when the program has frozen
    objects of its own (a pre-fork server's `gc.freeze`): unfreezing would release them too."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def run_passes(*outputs: Any, upto: int | None = None, start: int = 1,
               ctx: ScheduleContext | None = None, trace: bool = False,
               pipeline: Pipeline | str | None = None) -> ScheduleTrace:
    """Run passes `start`..`upto` (1-based, inclusive; `upto` None: to the end) of the pipeline
    (`pipeline`, else ``ctx.pipeline``, else the one in force) on a SINK (or Polys)."""
    if ctx is None:
        ctx = ScheduleContext()
    if pipeline is not None:
        ctx.pipeline = Pipeline.parse(pipeline)
    last = len(ctx.pipeline)
    upto = last if upto is None else check_int(upto, "run_passes: upto")
    start = check_int(start, "run_passes: start")
    if not 0 <= upto <= last:
        raise ParameterError(f"run_passes: upto must be a pass number in 0..{last} (0 runs no "
                             f"pass), got {upto}")
    if not 1 <= start <= max(last, 1):
        raise ParameterError(f"run_passes: start must be a pass number in 1..{last}, got {start}")
    with gc_paused():
        return _run_passes(*outputs, upto=upto, start=start, ctx=ctx, trace=trace)


def _run_passes(*outputs: Any, upto: int, start: int, ctx: ScheduleContext,
                trace: bool) -> ScheduleTrace:
    sink = as_sink(*outputs)
    if not ctx.outputs:
        ctx.outputs = sink.src
    result = ScheduleTrace(sink, ctx)
    pipe = ctx.pipeline
    last = len(pipe)
    debug = settings.get("REN_DEBUG")
    if trace:
        result.graphs.append((f"{start - 1:02d}_input", sink))
    fuse = ctx.fuse and not trace and not ctx.check and debug < 3
    for group in _rows(pipe, start, upto, fuse):
        num, p = group[-1]
        stage = f"{num:02d}_{p.name}"
        if len(group) > 1:
            sink = _run_fused(sink, ctx, tuple(group))
            if num == last:  # the backends rely on the last contract: always checked
                _check_contract(sink, pipe, num, ctx)
            continue
        before = sink
        if trace:
            ctx.provenance = Provenance()
        try:
            sink = p.run(sink, ctx)
        finally:
            if trace:
                result.provenance.append((stage, ctx.provenance or Provenance()))
                ctx.provenance = None
        if debug >= 3:
            from ren.dump import dump

            print(f"[ren] after pass {stage}:\n{dump(sink)}")
        if trace:
            result.graphs.append((stage, sink))
        if ctx.check:
            from ren.interpret import check_pass

            _check_contract(sink, pipe, num, ctx)
            check_pass(before, sink, ctx, stage)
        elif num == last:  # the backends rely on the last contract: always checked
            _check_contract(sink, pipe, num, ctx)
    result.sink = sink
    return result


def _check_contract(sink: Node, pipe: Pipeline, num: int, ctx: ScheduleContext) -> None:
    """Check pass `num`'s (1-based) contract, as its pipeline makes it concrete."""
    contract = pipe.contract_at(num - 1)
    if contract is not None:
        contracts.check(sink, contract, f"{num:02d}_{pipe.passes[num - 1].name}", ctx)


_Entry = tuple[int, Pass]  # (1-based number in the pipeline, pass)


def _rows(pipe: Pipeline, start: int, upto: int, fuse: bool) -> list[list[_Entry]]:
    """Passes start..upto in order, grouped: with `fuse`, each row of adjacent fusable passes
    (and the records-only passes between or after them) is one group; every other pass is a
    group of its own."""
    groups: list[list[_Entry]] = []
    open_row = False  # the last group is a row that began with a walking pass
    for num, p in enumerate(pipe.passes[start - 1:upto], start):
        kind = p.fusion_kind if fuse else None
        if kind is not None and open_row:
            groups[-1].append((num, p))
        else:
            groups.append([(num, p)])
            open_row = kind == "walk"
    return groups


def _fused_rules(group: tuple[_Entry, ...]) -> tuple[RuleSet, dict[str, list[tuple[str, str]]]]:
    """The rules of a row's walking passes in pass order, with the shortcuts of
    `ren.passes.SHORTCUTS` in place of the rules they stand for, and what each rule's firing
    counts as: (pass name, rule name) pairs, for the stats."""
    return _rules_of_row(tuple((p.name, p.rules) for _, p in group if p.fusion_kind == "walk"))


@functools.lru_cache(maxsize=16)
def _rules_of_row(walks: tuple[tuple[str, RuleSet], ...]
                  ) -> tuple[RuleSet, dict[str, list[tuple[str, str]]]]:
    # (cached by the passes' RuleSet objects: a run schedules in well under a millisecond for a
    # small program, and indexing the rules by op costs a tenth of that)
    counts: dict[str, list[tuple[str, str]]] = {}
    rules: list[Rule] = []
    names = {name for name, _ in walks}
    shortcuts = [s for s in SHORTCUTS if {p for p, _ in s.stands_for} <= names]
    for name, pass_rules in walks:
        for s in shortcuts:
            if s.stands_for[0][0] == name:  # the shortcut goes where its first pass's rules go
                for r in s.rules():
                    rules.append(r)
                    counts[r.name] = list(s.stands_for)
        for r in pass_rules.rules:
            if r.name in counts:  # (the stats could not tell the two apart)
                raise ScheduleError(f"passes {counts[r.name][0][0]} and {name} both have a rule "
                                    f"named {r.name!r}; fused passes need rule names of their own")
            rules.append(r)
            counts[r.name] = [(name, r.name)]
    # (the rules a shortcut stands for stay after it, for what it leaves to them: ring kernels)
    return RuleSet(rules), counts


def _run_fused(sink: Node, ctx: ScheduleContext, group: tuple[_Entry, ...]) -> Node:
    """A row of fusable passes as one walk (`ren.passes`); each firing is counted under the pass
    its rule belongs to, as if the passes had run one by one."""
    rules, counts = _fused_rules(group)
    key = "+".join(p.name for _, p in group)
    sink = rewrite(sink, rules, ctx, name=key)
    fired = ctx.stats.pop(key, Counter())
    for _, p in group:
        if p.fusion_kind == "walk":
            ctx.stats.setdefault(p.name, Counter())
    for rule_name, count in fired.items():
        for pass_name, stands_for in counts[rule_name]:
            ctx.stats[pass_name][stands_for] += count
    for _, p in group:  # what they record is the same on the row's final graph
        if p.fusion_kind == "record" and p.run(sink, ctx) is not sink:
            raise ScheduleError(f"pass {p.name} is RECORDS_ONLY but changed the graph")
    return sink


def linearize(sink: Node) -> list[ScheduledKernel]:
    """The kernels and light items of a kernelized graph, in dependency order (short chains
    from leaf buffers, public samples among them, computed again where they are read long
    after: `regenerate_leaf_chains`): toposort's, or with the switch REN_MEMORY_ORDER (on by
    default) the memory-aware one of `ren.memory_order` where its peak-live bytes are lower
    (n16's bootstrapping at N = 2^14: arena 212.6 -> 118.5 MiB, lean 204.1 -> 151.1 MiB; the
    same words)."""
    items, outputs = _linearize(sink), _output_roots(sink)
    plain = regenerate_leaf_chains(items, REGENERATE_AFTER, REGENERATE_DEPTH, REGENERATE_COPIES,
                                   outputs)
    # read here, on the thread that schedules (a realization's or a capture's caller), so a
    # `settings.override(REN_MEMORY_ORDER=0)` around a call holds for its schedule
    if not settings.get("REN_MEMORY_ORDER") or len(items) < 2:
        return plain
    # the memory-aware order (`ren.memory_order`), kept only where it lowers the peak-live
    # bytes the arena is packed to: a graph it cannot help keeps toposort's order, word for word
    outs = outputs or ()
    reordered = memory_order(items, outs)
    if all(a is b for a, b in zip(reordered, items, strict=True)):
        return plain  # (nothing moved: no second regeneration, no peaks to compare)
    ordered = regenerate_leaf_chains(reordered, REGENERATE_AFTER, REGENERATE_DEPTH,
                                     REGENERATE_COPIES, outputs)
    return ordered if peak_live_bytes(ordered, outs) < peak_live_bytes(plain, outs) else plain


def _output_roots(sink: Node) -> set[Buffer] | None:
    """The base buffers of the sink's stored outputs (a constant output has none), or None
    when one of them has no storage to name (nothing unread is dropped then)."""
    roots: set[Buffer] = set()
    for s in sink.src:
        if is_const(s):
            continue
        try:
            roots.add(storage_buffer(s).root)
        except (IndexError, AttributeError, TypeError, ValueError):
            return None
    return roots


def _linearize(sink: Node) -> list[ScheduledKernel]:
    items: list[ScheduledKernel] = []
    for n in toposort(sink):
        if n.op is Op.KERNEL:
            k = n.arg
            items.append(ScheduledKernel(k.kind, k.name, k.ast,
                                         tuple(storage_buffer(s) for s in n.src), k.ring, n,
                                         k.space))
        elif n.op is Op.BUFFER_VIEW:
            view = n.arg
            items.append(ScheduledKernel(VIEW, f"view{len(items)}", None, (view, view.base),
                                         None, n))
    return items


#: a value of a leaf chain (`regenerate_leaf_chains`) read more than this many items after its
#: latest computation is computed again right before the read
REGENERATE_AFTER = 32
#: the longest chain of kernels from leaf buffers that `linearize` computes again rather than
#: keeps: 2 is a coefficient-form diagonal's expansion (TO_RNS, then NTT) or a lean key's row
#: (one RANDOM kernel)
REGENERATE_DEPTH = 2



def leaf_chains(items: list[ScheduledKernel], depth: int = REGENERATE_DEPTH
                ) -> dict[Buffer, int]:
    """The outputs of `items` computed from leaf buffers alone (buffers no item writes: the
    graph's constants and inputs, unchanged while the schedule runs) through at most `depth`
    kernels, each with its depth: a public sample (`RandomSpec.public`, the same words at every
    generation) has depth 1, and so has a kernel that reads only leaves; a kernel that reads
    leaves and outputs of depth < `depth` has one more.  Only a base buffer that one kernel
    writes counts; never a private sample (its words differ at every draw), a copy or a view.
    ``depth=0``: the public samples alone."""
    writers = Counter(it.bufs[0].root for it in items if it.kind != VIEW)
    found: dict[Buffer, int] = {}
    for it in items:
        out = it.bufs[0]
        if it.kind in LIGHT_KINDS or out.base is not None or writers[out] != 1:
            continue
        call = it.ring_call
        if call is not None and call.random is not None:
            if call.random.public:
                found[out] = 1
            continue
        reached = 0
        for b in it.bufs[1:]:
            r = b.root
            if r in writers:  # computed: only a chain's output may be read
                reached = max(reached, found.get(r, depth))
        if reached < depth:
            found[out] = reached + 1
    return found


def regenerate_leaf_chains(items: list[ScheduledKernel], after: int = REGENERATE_AFTER,
                           depth: int = REGENERATE_DEPTH, copies: bool | str | None = None,
                           outputs: set[Buffer] | None = None) -> list[ScheduledKernel]:
    """`items` with every value of a leaf chain (`leaf_chains`: a public sample, a lean key's
    row; a coefficient-form diagonal's TO_RNS and NTT) computed again, into a fresh buffer,
    before a read that comes more than `after` items after its latest computation (its
    sources, when they are chain values read as long after, computed again too), and that read
    (and its views of the value) pointed at the new buffer.  Memory for time: such a value
    would otherwise live from its first read to its last.  At N = 2^16 that was every row of
    the lean keys at once (~3 GiB of arena), and in a Meta-BTS plan every expanded diagonal
    from the first bootstrapping to the second (the two share them): 4.47 GiB of arena against
    1.46 GiB for one bootstrapping.  Leaves are not written while the schedule runs and the
    kernels are deterministic, so the words are the same, and so are the results.

    With `copies` (default `REGENERATE_COPIES`: ``"lean"``, in a plan that reads a lean key;
    `wants_copies`), so is a *copy*: an elementwise kernel of one input (a permutation, a
    scaling: a hoisted rotation's digit σ_b(d)) read that long after, when its input is still
    read at or after that point anyway (so computing it again there keeps nothing alive
    longer), or when several copies read that input (it is kept instead of them: one digit
    instead of its n1 rotations).  A hoisted rotation's two inner products (c0
    and c1) read every baby step's rotated digits, and the schedule may place them hundreds of
    items apart: at N = 2^13 in n16's ``levels`` shape, 105 such digits were most of the
    arena."""
    copies = wants_copies(items, copies)
    chains = leaf_chains(items, depth)
    copy_of = _copies(items, chains) if copies else {}
    if not chains and not copy_of:
        return items
    written = {it.bufs[0].root for it in items if it.kind != VIEW}
    last: dict[Buffer, int] = {}  # a base buffer -> the last item that reads it, as scheduled
    for j, it in enumerate(items):
        for b in it.bufs[1:]:
            last[b.root] = j
    out: list[ScheduledKernel] = []
    root: dict[Buffer, Buffer] = {}  # a chain value's buffer, or a view of it -> that buffer
    maker: dict[Buffer, ScheduledKernel] = {}  # a chain value's buffer -> its item, as scheduled
    viewer: dict[Buffer, ScheduledKernel] = {}  # a view of a chain value -> its VIEW item
    latest: dict[Buffer, tuple[int, dict[Buffer, Buffer]]] = {}  # where and as what it is now

    # a buffer several copies read (a digit, rotated for every baby step): kept instead of them
    shared = Counter(it.bufs[1].root for it in items if it.bufs[0] in copy_of)

    def available(x: Buffer, j: int) -> bool:
        """Whether reading `x` at item `j` (as scheduled) keeps nothing alive longer, or only
        one buffer instead of several copies of it."""
        r = x.root
        return r not in written or r in chains or last.get(r, -1) >= j or shared[r] > 1

    def read(b: Buffer, j: int) -> Buffer:
        """The buffer that holds `b` for item `j`'s read appended now (computed again when
        stale)."""
        r = root.get(b)
        if r is None:
            return b
        at, now = latest[r]
        src = maker[r]
        if len(out) - at > after and (r in chains or all(available(x, j)
                                                          for x in src.bufs[1:])):
            fresh = r.fresh_like()  # compute the value again right here
            fresh.again_of = r
            ins = tuple(read(x, j) for x in src.bufs[1:])
            out.append(replace(src, bufs=(fresh, *ins)))
            at, now = latest[r] = (len(out) - 1, {r: fresh})
        return current(b, now)

    def current(b: Buffer, now: dict[Buffer, Buffer]) -> Buffer:
        """`b` (the value or a view of it) in the generation `now`, its views made here."""
        if b not in now:  # a view of a computed-again value, made for this generation
            base = current(viewer[b].bufs[1], now)
            now[b] = Buffer(b.device, b.shape, base=base, offset=b.offset, no_opt=b.no_opt)
            now[b].again_of = b
            out.append(replace(viewer[b], bufs=(now[b], base)))
        return now[b]

    for j, it in enumerate(items):
        if it.kind == VIEW and it.bufs[1] in root:
            view, base = it.bufs
            root[view], viewer[view] = root[base], it
            now = latest[root[base]][1]
            if now.get(base) is base:  # still the first generation: the view as scheduled
                now[view] = view
                out.append(it)
            continue  # (a later generation's view is made where it is read)
        ins = tuple(read(b, j) for b in it.bufs[1:])
        if it.bufs[0] in chains or it.bufs[0] in copy_of:
            b = it.bufs[0]
            root[b], maker[b] = b, it
            latest[b] = (len(out), {b: b})
        out.append(it if ins == it.bufs[1:] else replace(it, bufs=(it.bufs[0], *ins)))
    return out if outputs is None else _drop_unread(out, chains.keys() | copy_of, outputs)


def _drop_unread(items: list[ScheduledKernel], values: set[Buffer], outputs: set[Buffer]
                 ) -> list[ScheduledKernel]:
    """`items` without the computations of `values` (first generations of chain values and
    copies) that no item reads and that are not `outputs`, nor their views; a computation
    only such a one read goes too (the list is walked backwards)."""
    reads = Counter(b.root for it in items if it.kind != VIEW for b in it.bufs[1:])
    dropped: set[Buffer] = set()
    keep: list[ScheduledKernel] = []
    for it in reversed(items):
        r = it.bufs[0].root
        if it.kind == VIEW:
            if r not in dropped:
                keep.append(it)
            continue
        if r in values and not reads[r] and r not in outputs:
            dropped.add(r)
            for b in it.bufs[1:]:
                reads[b.root] -= 1
            continue
        keep.append(it)
    return items if not dropped else keep[::-1]


#: whether `linearize` computes copies again too (`regenerate_leaf_chains`): True, False, or
#: ``"lean"`` (the default): only in a plan that draws public samples, i.e. one that reads a
#: lean key (`ren.rlwe.keys.SwitchingKey.lean`), whose rows it regenerates anyway.  That is the
#: lean mode, where the arena is a large part of the process (n16 bootstrapping: ~1.4 GiB beside
#: 3.1 GiB of lean keys and coefficient diagonals) and the copies made again shrink it by about a
#: quarter.  A plan over stored keys (the fast mode: 5.95 GiB of keys and 2.93 GiB of RNS
#: diagonals at n16 beside a ~0.9 GiB arena) keeps its copies instead: making them again cost it
#: ~2-3 % of the replay at N = 2^13 and 2^14.
REGENERATE_COPIES: bool | str = "lean"
#: the values `REGENERATE_COPIES` (and `regenerate_leaf_chains`'s `copies`) takes
COPIES_CHOICES = (True, False, "lean")


def wants_copies(items: list[ScheduledKernel], copies: bool | str | None = None) -> bool:
    """Whether `regenerate_leaf_chains` computes copies again in `items` under `copies`
    (default `REGENERATE_COPIES`): True or False as given; ``"lean"``: when an item draws a
    public sample (a lean key's row).  Another value is a ParameterError."""
    copies = REGENERATE_COPIES if copies is None else copies
    if not any(copies is c or (isinstance(c, str) and copies == c) for c in COPIES_CHOICES):
        raise ParameterError(f"regenerate copies: expected one of True, False or 'lean', got "
                             f"{copies!r} (ren.schedule.REGENERATE_COPIES)")
    if copies != "lean":
        return bool(copies)
    return any(it.ring_call is not None and it.ring_call.random is not None
               and it.ring_call.random.public for it in items)


def _copies(items: list[ScheduledKernel], chains: dict[Buffer, int]) -> set[Buffer]:
    """The outputs of elementwise kernels of one input (not leaf chains): base buffers one
    kernel writes."""
    writers = Counter(it.bufs[0].root for it in items if it.kind != VIEW)
    return {it.bufs[0] for it in items
            if it.kind == ELEMENTWISE and len(it.bufs) == 2 and it.bufs[0].base is None
            and writers[it.bufs[0]] == 1 and it.bufs[0] not in chains}


def schedule(*outputs: Any, ctx: ScheduleContext | None = None,
             pipeline: Pipeline | str | None = None) -> list[ScheduledKernel]:
    """Schedule the outputs (a SINK, or Polys/Nodes) with `pipeline` (default: the one in force,
    `ren.passes.current_pipeline`): the list of kernels to run, in order."""
    return linearize(run_passes(*outputs, ctx=ctx, pipeline=pipeline).sink)


settings.retire_constants(__name__, {"MEMORY_ORDER": "REN_MEMORY_ORDER"})
