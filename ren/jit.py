"""`ren.jit`: capture a function's realization once per input spec, replay it on later calls.

    @ren.jit
    def step(ct):                       # any function of Polys in lists, tuples, dicts and
        return ev.rescale(ev.multiply(ct, ct))      # dataclasses (CKKS Ciphertext, Plaintext)

    out1 = step(ct1)    # miss: capture — trace, schedule, plan, lower, run — and store a JitPlan
    out2 = step(ct2)    # hit: bind ct2's buffers into the plan and run it (no scheduling/lowering)
    step.plans          # the JitPlans: exec units, input table, memory plan, runner, capture time

**Cache key.**  The argument tree's structure, each input Poly's spec (ring, domain, device,
dtype; a constant Poly's value too) and the values of `static_argnames`.  Plans for several keys
live side by side (a CKKS function called at two levels has two plans).

**Frozen scalars.**  Every other non-Poly leaf of the arguments (ints, floats, strings, scales,
parameter objects, an Evaluator passed as an argument, ...) is frozen into the plan: a call that
matches a plan's key but passes another value raises JitError instead of replaying a stale branch.

**Capture (miss).**  The inputs are realized; each is handed to the function as a Poly over a
*parameter* buffer (`ren.realization.parameter`); the function runs while a guard refuses
realizations and random generation; its outputs are compiled by the pipeline every realization
uses (`ren.realization.compile_template`: schedule, plan memory, lower) into a
`ren.replay.Template` whose parameters are the input buffers and whose other leaf buffers (key
material the function closes over, plaintexts encoded inside) are baked constants; outputs that
would alias an input or a constant get copy items; the backend's graph runner is built; and the
first call is the template's first run.  A graph compiled before — in this process or another,
by this version of Ren — is loaded from the plan cache instead of scheduled (`ren.plan_cache`;
``plan.compiled_by`` says which; ``REN_PLAN_CACHE=0`` turns it off).

**Replay (hit).**  The input buffers are bound into the template and it runs; every output is a
new buffer (never an earlier call's output, never an input).

**Failure modes** (JitError, raised before any captured unit runs, naming the argument or call):
a changed frozen scalar; realize() or reading a value inside the body; random generation inside
the body (CKKS encryption: encrypt outside); input specs that match no plan when capture is
disabled; one buffer passed as two inputs; an output leaf that is neither a Poly nor a scalar;
a Python decision on a Poly's value (``bool(p)``).  ``REN_JIT=0`` runs functions eagerly.

**Plans pickle** (`pickle.dumps(fn.plans[0])`): scheduled items (ASTs and parameters, recompiled
when loaded) and baked constants with their data; a loaded plan is called like the function.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ren import settings
from ren.arena_ahead import (
    claim_early,
    drop_ahead,
    drop_early,
    fault_ahead,
    fault_early,
    fault_guess,
    faulting_ahead,
)
from ren.errors import JitError, TruthValueError
from ren.jit_call import JitCall, describe_leaf, freeze, same_value
from ren.node import Node, toposort
from ren.ops import Op
from ren.passes.pipeline import Pipeline, current_pipeline
from ren.passes.pipeline import using as using_pipeline
from ren.plan_cache import (
    arena_hint,
    compile_cached_and_run,
    function_hint,
    hinted_arenas,
    note_arenas,
)
from ren.poly import Poly
from ren.realization import Recorder, recording
from ren.replay import Template
from ren.schedule import gc_paused
from ren.spec import PolySpec
from ren.tree import flatten, is_scalar, leaf_paths, unflatten

__all__ = ["InputSlot", "JitPlan", "Jitted", "jit"]

#: tokens of Jitted wrappers (`ren.arena_ahead.fault_early`'s owners; ids are reused)
_owners = itertools.count(1)
#: True while a jitted function is being captured (a jitted function called inside runs inline)
_tracing: ContextVar[bool] = ContextVar("ren_jit_tracing", default=False)
#: the old private name of `JitCall`, which tests/test_threads_work and tests/test_plan_team import
_Call = JitCall


# -- capture --------------------------------------------------------------------------------------
class _Guard(Recorder):
    """Refuses realizations and random generation while a function is captured."""

    def __init__(self, name: str):
        self.name = name

    def on_realize(self, nodes: Sequence[Node]) -> None:
        raise JitError(
            f"{self.name}: realize() inside a jitted function (or something that reads a "
            "value: numpy(), tolist(), coefficients(), tobytes(), decryption).  Values do not "
            "exist while the function is captured, and a replay repeats only Poly "
            "operations; return the Poly and read it after the call")

    def on_random(self, kind: str) -> None:
        raise JitError(
            f"{self.name}: random polynomial generation ({kind}) inside a jitted function; a "
            "replay would reuse the captured randomness.  CKKS encryption and key generation "
            "draw fresh randomness: encrypt outside the jitted function, or pass the random "
            "polynomials in as arguments")


def _refuse_random(name: str, nodes: Sequence[Node]) -> None:
    """JitError for an unrealized RANDOM node under `nodes` that is not public (a replay would
    reuse its seed: the same noise twice); a public one (a lean key's row, `RandomSpec.public`)
    is regenerated by every replay."""
    for n in toposort(*nodes):
        if n.op is Op.RANDOM and not n.arg.public:
            raise JitError(
                f"{name}: the outputs depend on a random polynomial ({n.arg.kind}) that is not "
                "realized; realize it before calling the jitted function (or pass it in as an "
                "argument)")


@dataclasses.dataclass(frozen=True)
class InputSlot:
    """One row of a plan's input replacement table: slot `slot` of exec unit `unit` takes input
    `input` (an index into `JitPlan.inputs`) — the input itself, or (`offset` not None) a view
    of it at that element offset."""

    unit: int
    slot: int
    input: int
    offset: int | None = None


@dataclasses.dataclass(eq=False)
class JitPlan:
    """A captured plan for one cache key.  Plain data, for inspection and drawing:

    * `inputs` — (path, spec) of every input Poly, in argument order;
    * `scalars` — (path, value) of every frozen scalar;
    * `template` — the compiled `ren.replay.Template` (its parameter i is input
      ``leaf_of_param[i]``); `units` — its exec units in order, output copies last;
    * `input_table` — `InputSlot` rows: which unit slot takes which input;
    * `memory` — the `ren.memory.MemoryPlan` of the units (None without one);
    * `runner` — the graph runner's kind (``"numpy-prebound"``, ``"cpu-compiled"``,
      ``"cuda-graph"``), or ``"exec-units"`` where the device has none;
    * `capture_seconds` — the wall time of the capture; `replays` — replays so far;
    * `compiled_by` — ``"schedule"`` (scheduled, planned and lowered by this capture) or
      ``"plan cache"`` (a template compiled before, loaded by `ren.plan_cache`).

    Calling a plan replays it on new arguments (the same checks as the jitted function).
    """

    name: str
    signature: inspect.Signature
    static_argnames: tuple[str, ...]
    key: tuple
    inputs: list[tuple[str, PolySpec]]
    scalars: list[tuple[str, Any]]
    template: Template
    leaf_of_param: list[int]  # the input leaf bound to each template parameter
    out_structure: Any
    out_scalars: list[Any]
    capture_seconds: float = 0.0
    replays: int = 0
    compiled_by: str = "schedule"  # or "plan cache": loaded, not scheduled (ren.plan_cache)

    @property
    def units(self) -> list:
        return self.template.units

    @property
    def memory(self) -> Any:
        return self.template.plan

    @property
    def runner(self) -> str:
        return self.template.runner_kind

    @property
    def input_table(self) -> list[InputSlot]:
        """Which unit slot takes which input (directly, or as a view at an offset)."""
        leaf = dict(zip(self.template.params, self.leaf_of_param, strict=True))
        rows = []
        for u_i, u in enumerate(self.template.units):
            for slot, b in enumerate(u.bufs):
                if b in leaf:
                    rows.append(InputSlot(u_i, slot, leaf[b]))
                elif b.base in leaf:
                    rows.append(InputSlot(u_i, slot, leaf[b.base], b.offset))
        return rows

    def summary(self) -> str:
        """A few lines: inputs, units by kind, arena, runner, capture time."""
        kinds: dict[str, int] = {}
        for u in self.units:
            kinds[u.kind] = kinds.get(u.kind, 0) + 1
        arena = self.memory.arena_bytes if self.memory is not None else 0
        lines = [f"JitPlan {self.name}: {len(self.units)} units "
                 f"({', '.join(f'{n} {k}' for k, n in kinds.items())}), runner {self.runner}, "
                 f"arena {arena} bytes, captured in {self.capture_seconds * 1e3:.1f} ms, "
                 f"{self.replays} replays"]
        lines += [f"  input {path}: {spec.ring.short()} {spec.domain.name} {spec.device}"
                  for path, spec in self.inputs]
        lines += [f"  frozen {path} = {value!r}" for path, value in self.scalars]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<JitPlan {self.name}: {len(self.inputs)} inputs, {len(self.units)} units, " \
               f"{self.runner}>"

    # -- replay ------------------------------------------------------------------------------
    def check(self, call: JitCall, key_checked: bool = False) -> None:
        """Raise JitError unless `call` matches this plan (key and frozen scalars)."""
        if not key_checked and call.key != self.key:
            raise JitError(_mismatch(self.name, call, [self], capture=False))
        for i, (value, (_, frozen)) in enumerate(zip(call.scalars, self.scalars)):
            if not same_value(frozen, value):
                raise JitError(
                    f"{self.name}: argument `{call.paths()[1][i]}` is a frozen scalar: the plan "
                    f"for these inputs was captured with {frozen!r}, this call passes {value!r}. "
                    "Scalars are baked into a captured plan (a replay would run a stale branch); "
                    "pass the value as a Poly, list the argument in static_argnames (one plan per "
                    "value), or use another jitted function")

    def run(self, call: JitCall) -> Any:
        """Run the template on a checked call whose inputs are realized and distinct; returns
        the function's result (new Polys in the output structure)."""
        return self.result(self.template.run(call.buffers(self.leaf_of_param)))

    def result(self, nodes: list[Node]) -> Any:
        """The function's result from a run's output nodes (`Template.run`)."""
        return unflatten(self.out_structure, iter([Poly(n) for n in nodes]),
                         iter(self.out_scalars))

    def replay(self, call: JitCall) -> Any:
        self.replays += 1
        return self.run(call)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = JitCall(self.name, self.signature, self.static_argnames, args, kwargs)
        self.check(call)
        call.realize_inputs()
        call.check_distinct()
        return self.replay(call)

    def profile(self, *args: Any, **kwargs: Any) -> list[float]:
        """Seconds of each kernel call of one replay on these arguments, timed one by one (the
        raw kernel times; needs a graph runner)."""
        call = JitCall(self.name, self.signature, self.static_argnames, args, kwargs)
        self.check(call)
        call.realize_inputs()
        return self.template.profile(call.buffers(self.leaf_of_param))


def _mismatch(name: str, call: JitCall, plans: Sequence[JitPlan], capture: bool) -> str:
    """Why `call` matches none of `plans` (naming the first differing argument)."""
    why = "capture is disabled" if not capture else "the plan was captured for other inputs"
    hint = ("call with inputs of a captured spec, or enable capture (fn.capture = True)"
            if not capture else "call the jitted function instead, which captures a new plan")
    same = [p for p in plans if p.key[0] == call.key[0]]
    if not same:
        shapes = "; ".join(f"({', '.join(path for path, _ in p.inputs)})" for p in plans)
        return (f"{name}: no captured plan takes arguments of this structure and {why} "
                f"(captured: {shapes or 'none'}); {hint}")
    paths = call.paths()[0]
    for p in same:
        for i, (mine, theirs) in enumerate(zip(call.key[1], p.key[1])):
            if mine != theirs:
                return (f"{name}: no captured plan matches and {why}: argument `{paths[i]}` is "
                        f"{describe_leaf(mine)}, the plan expects {describe_leaf(theirs)}; {hint}")
        if call.key[2] != p.key[2]:
            return (f"{name}: no captured plan matches and {why}: static arguments "
                    f"{dict(call.key[2])} were captured as {dict(p.key[2])}; {hint}")
    return f"{name}: no captured plan matches this call and {why}; {hint}"


# -- the jitted function --------------------------------------------------------------------------
class Jitted:
    """A function wrapped by `ren.jit`: captures on a miss, replays on a hit (module doc).

    `plans` lists the captured JitPlans; `capture` (settable) allows new captures; `add_plan`
    installs a plan (e.g. unpickled in a worker process); `clear` forgets every plan."""

    def __init__(self, fn: Callable, *, capture: bool = True,
                 static_argnames: Sequence[str] = (), pipeline: Pipeline | str | None = None):
        if not callable(fn):
            raise JitError(f"ren.jit wraps a function, got {type(fn).__name__}")
        #: the scheduling pipeline its captures use (None: the one in force at each call)
        self.pipeline = None if pipeline is None else Pipeline.parse(pipeline)
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = getattr(fn, "__qualname__", repr(fn))
        try:
            self.signature = inspect.signature(fn)
        except (TypeError, ValueError):
            P = inspect.Parameter
            self.signature = inspect.Signature([P("args", P.VAR_POSITIONAL),
                                                P("kwargs", P.VAR_KEYWORD)])
        static = tuple(static_argnames)
        unknown = [s for s in static if s not in self.signature.parameters]
        if unknown:
            raise JitError(f"ren.jit({self.name}): static_argnames {unknown} are not parameters "
                           f"of the function ({', '.join(self.signature.parameters)})")
        self.static_argnames = static
        self.capture = capture
        self._plans: dict[tuple, JitPlan] = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0
        #: this wrapper's token for the arena its first capture may find faulted in early
        self._owner = next(_owners)
        if capture and settings.get("REN_JIT"):
            self._fault_early()

    def _fault_early(self) -> None:
        """Start faulting in the arenas this function's last capture needed (its hint, found
        by the function alone: `plan_cache.function_hint`), now rather than at its first call:
        while the program makes its keys and inputs, a one-thread program leaves a core idle,
        and a plan-cache hit's first call has only its trace and lookup before its run needs
        the pages (N = 2^16: ~0.3 s for ~1-2 s of fresh-page faults).  Freed when this wrapper
        goes unless a capture claimed them."""
        path = function_hint(self.fn)
        if path is not None and fault_early(self._owner, hinted_arenas(path)):
            weakref.finalize(self, drop_early, self._owner)

    @property
    def plans(self) -> list[JitPlan]:
        return list(self._plans.values())

    def add_plan(self, plan: JitPlan) -> None:
        """Install a captured plan (e.g. unpickled): calls matching its key replay it."""
        if not isinstance(plan, JitPlan):
            raise JitError(f"add_plan expects a JitPlan, got {type(plan).__name__}")
        with self._lock:
            self._plans[plan.key] = plan

    def plan_for(self, *args: Any, **kwargs: Any) -> JitPlan | None:
        """The plan a call with these arguments would replay, or None where it would capture
        (nothing runs, nothing is realized).  A matching plan whose frozen scalars differ from
        the arguments raises JitError, as the call would (`ren.distributed` ships the plan)."""
        call = JitCall(self.name, self.signature, self.static_argnames, args, kwargs,
                       self.pipeline)
        plan = self._plans.get(call.key)
        if plan is not None:
            plan.check(call, key_checked=True)
        return plan

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()
            self.hits = self.misses = 0

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return f"<ren.jit {self.name}: {len(self._plans)} plan(s)>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not settings.get("REN_JIT") or _tracing.get():
            return self.fn(*args, **kwargs)  # eager, or inline inside another capture
        call = JitCall(self.name, self.signature, self.static_argnames, args, kwargs,
                       self.pipeline)
        plan = self._plans.get(call.key)
        if plan is not None:
            plan.check(call, key_checked=True)  # found by its key
            call.realize_inputs()
            call.check_distinct()
            self.hits += 1
            return plan.replay(call)
        if not self.capture:
            raise JitError(_mismatch(self.name, call, self.plans, capture=False))
        call.realize_inputs()
        call.check_distinct()
        self.misses += 1
        plan, result = self._capture(call)
        with self._lock:
            self._plans[call.key] = plan
        return result

    def _capture(self, call: JitCall) -> tuple[JitPlan, Any]:
        """Trace the function on parameters, compile its outputs, run the template once."""
        # the collector paused for the whole capture, not only the passes: the trace, the
        # memory plan, the exec units and the runner allocate per node too, and full
        # collections over a large graph were 9 % of a bootstrapping's first call (N = 2^12)
        with gc_paused(), using_pipeline(self.pipeline or current_pipeline()):
            return self._capture_unpaused(call)

    def _capture_unpaused(self, call: JitCall) -> tuple[JitPlan, Any]:
        t0 = time.perf_counter()
        # the arenas the last capture of this call needed start faulting in now, on a core the
        # trace leaves idle (`plan_cache.arena_hint`); what the run does not take is dropped
        # (those faulted in since the function was wrapped, `_fault_early`, first)
        early = claim_early(self._owner)
        hint = arena_hint(self.fn, call.key)
        if hint is not None:
            for device, nbytes in hinted_arenas(hint).items():
                if early.get(device, 0) < nbytes:  # (a larger early one: its start is used)
                    fault_ahead(device, nbytes)
        try:
            return self._compile(call, hint, t0)
        finally:
            drop_ahead()

    def _compile(self, call: JitCall, hint: Path | None, t0: float) -> tuple[JitPlan, Any]:
        params, leaf_of_param, polys = call.parameters()
        values = unflatten(call.structure, iter(polys), iter(call.scalars))
        bound = call.bound
        for name, v in zip(call.structure[1], values):
            if name not in self.static_argnames:
                bound.arguments[name] = v
        out_polys: list[Poly] = []
        out_scalars: list[Any] = []
        token = _tracing.set(True)
        try:
            with recording(_Guard(self.name)):
                out_structure = flatten(self._trace(bound), out_polys, out_scalars, None,
                                        JitError)
        finally:
            _tracing.reset(token)
        bad = [i for i, s in enumerate(out_scalars) if not is_scalar(s)]
        if bad:
            path = leaf_paths(out_structure, "output")[1][bad[0]]
            raise JitError(
                f"{self.name}: output `{path}` is a {type(out_scalars[bad[0]]).__name__}; the "
                "results of a jitted function are Polys (in lists, tuples, dicts and "
                "dataclasses) and scalars (numbers, strings, parameter objects).  Return the "
                "Polys, and compute anything else outside the function")
        nodes = [p.node for p in out_polys]
        _refuse_random(self.name, nodes)
        if not faulting_ahead() and out_polys:
            # no arena hint for this call: fault in a guess of the arena on the core the
            # schedule leaves idle
            fault_guess(out_polys[0].device, nodes)
        # the first call runs the template like every replay (starting while it is lowered)
        template, compiled_by, first = compile_cached_and_run(nodes, params,
                                                              call.buffers(leaf_of_param))
        if hint is not None:
            note_arenas(hint, template.plan)
            whole = function_hint(self.fn)  # (None only where `hint` is: the cache off)
            if whole is not None:
                note_arenas(whole, template.plan)
        in_paths, scalar_paths = call.paths()
        plan = JitPlan(
            name=self.name, signature=self.signature, static_argnames=self.static_argnames,
            key=call.key, inputs=[(path, p.spec) for path, p in zip(in_paths, call.leaves)],
            scalars=[(path, freeze(v)) for path, v in zip(scalar_paths, call.scalars)],
            template=template, leaf_of_param=leaf_of_param, out_structure=out_structure,
            out_scalars=out_scalars, compiled_by=compiled_by)
        result = plan.result(first)
        plan.capture_seconds = time.perf_counter() - t0
        return plan, result

    def _trace(self, bound: inspect.BoundArguments) -> Any:
        try:
            return self.fn(*bound.args, **bound.kwargs)
        except TruthValueError as e:
            raise JitError(f"{self.name}: a Python decision on a Poly's value inside a jitted "
                           f"function ({e}); a captured plan replays only Poly operations, "
                           "never a branch on a value.  Compute with Poly operations, or decide "
                           "outside the function") from e


def jit(fn: Callable | None = None, *, capture: bool = True,
        static_argnames: Sequence[str] = (), pipeline: Pipeline | str | None = None) -> Any:
    """Wrap `fn` for capture and replay (see the module doc).  ``@ren.jit`` or
    ``@ren.jit(capture=False, static_argnames=("k",))``.

    `capture`: when False, a call whose inputs match no plan raises JitError (plans come from
    `Jitted.add_plan`).  `static_argnames`: arguments whose (hashable) values are part of the
    cache key — one plan per value — instead of frozen scalars.  `pipeline`: the scheduling
    pipeline its captures use (`ren.passes.Pipeline` or its text form); default: the one in
    force at each call (``with ren.pipeline(...)``, REN_PIPELINE).  Plans are keyed by it.
    """
    if fn is None:
        return lambda f: Jitted(f, capture=capture, static_argnames=static_argnames,
                                pipeline=pipeline)
    return Jitted(fn, capture=capture, static_argnames=static_argnames, pipeline=pipeline)


class _CallableModule(types.ModuleType):
    """`ren.jit` is this module and the decorator at once: ``@ren.jit``, ``ren.jit.JitPlan``."""

    def __call__(self, fn: Callable | None = None, **kw: Any) -> Any:
        return jit(fn, **kw)


sys.modules[__name__].__class__ = _CallableModule
