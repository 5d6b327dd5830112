"""A pipeline is a value: the ordered passes one scheduling run applies.

    from ren.passes import Pass, default_pipeline
    mine = default_pipeline().insert(my_pass, after="lower_ring_ops").without("buffer_views")
    ren.schedule(out, pipeline=mine)          # or: with ren.pipeline(mine): out.realize()
    str(mine)  # 'default,+mypkg.passes:my_pass@after=lower_ring_ops,-buffer_views'

`default_pipeline()` is the seed's twelve passes.  Editing returns a new `Pipeline`; nothing is
changed in place, so a pipeline can be a cache key and a setting (``REN_PIPELINE``).

A `Pass` is a name, a docstring, a `ren.contracts.Contract` and either ``rules`` (the pattern
DSL of `ren.rewrite`: one walk of them to a fixed point) or ``run(sink, ctx)``.  The twelve
built-in passes are `Pass` values made from their modules (`Pass.from_module`); nothing in the
scheduler, the checks, the report or the caches treats them differently from a user's pass.

**Optional and required.**  A pass is *optional* when the pipeline computes the same values
without it (simplify, simplify_domains, buffer_views, and every user pass unless it says
otherwise) and *required* when it lowers something a later pass expects.  Removing a required
pass raises `PipelineError` naming the later pass that would break and why.

**Text form.**  ``default`` (or ``none`` for an empty start), then comma-separated edits applied
in order: ``-NAME`` removes a pass, ``+MODULE:ATTR@after=NAME`` / ``@before=NAME`` inserts the
`Pass` (or pass module) importable as ``MODULE:ATTR``, ``NAME=MODULE:ATTR`` replaces.  `str`
writes that form and `Pipeline.parse` reads it back (tested as a round trip); a user pass defined
where it cannot be imported from (``__main__``, a test function) has no text form.

**Identity.**  `Pipeline.key` names each pass and, for a pass that is not built in, a digest of
its code (its rules' patterns and functions, or its ``run``): the template cache, the on-disk plan
cache and `ren.jit` plans are keyed by it, so a plan made under one pipeline never replays under
another.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import importlib
import marshal
import types
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from typing import Any

from ren.contracts import Contract
from ren.errors import PipelineError
from ren.node import Node
from ren.ops import OP_INFO
from ren.rewrite import Rule, RuleSet, rewrite

#: the seed's twelve passes, in pipeline order (modules of this package)
BUILTIN_MODULES = (
    "p01_simplify",
    "p02_lower_ring_ops",
    "p03_inject_domains",
    "p04_simplify_domains",
    "p05_materialize",
    "p06_lower_bufferize",
    "p07_becomes_map",
    "p08_lower_automorphisms",
    "p09_lower_constants",
    "p10_buffer_views",
    "p11_indexify",
    "p12_kernelize",
)


class Pass:
    """One scheduling pass: ``name``, ``doc`` (what it rewrites, the invariant after it, the ops
    it may leave), ``contract`` and either ``rules`` (a `RuleSet` or a list of ``(pattern,
    function, rule name)`` tuples, walked to a fixed point by `ren.rewrite.rewrite`) or ``run``
    (``run(sink, ctx) -> sink``).

    ``optional``: the pipeline stays correct without it (default True for a user pass).
    ``fusable``: the pass is one walk of its rules, and each rule looks only at a node, its
    sources and ``orig`` — then the scheduler may run it in one walk with its fusable neighbours
    (`ren.schedule`).  In that walk its rules meet sources that the row's other passes have
    already lowered, so declare it only when its rules decide the same on either form (they
    match ops no later pass of the row rewrites, as pass 8's AUTOMORPH rule does); the tests
    compare the fused and the unfused graph.  ``records_only``: it only records what it finds
    in ``ctx`` (pass 7).
    ``keep_specs``: a rewrite that would change a node's domain is re-tagged (`ren.rewrite`).
    ``contract`` None: the graph after the pass must satisfy what held before it (the contract
    of the built-in pass before it, without its forbidden shapes).
    """

    def __init__(self, name: str, *, rules: RuleSet | Iterable[Rule | tuple] | None = None,
                 run: Callable[[Node, Any], Node] | None = None,
                 contract: Contract | None = None, doc: str | None = None,
                 optional: bool = True, fusable: bool = False, records_only: bool = False,
                 keep_specs: bool = False, origin: str | None = None) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise PipelineError(f"Pass: name must be an identifier-like str (it appears in stage "
                                f"names, reports and the text form), got {name!r}")
        if (rules is None) == (run is None):
            raise PipelineError(f"Pass {name!r}: give exactly one of rules= (pattern rules) and "
                                "run= (a function sink, ctx -> sink)")
        if run is not None and not callable(run):
            raise PipelineError(f"Pass {name!r}: run must be callable, got {type(run).__name__}")
        if contract is not None and not isinstance(contract, Contract):
            raise PipelineError(f"Pass {name!r}: contract must be a ren.contracts.Contract, "
                                f"got {type(contract).__name__}")
        if fusable and rules is None:
            raise PipelineError(f"Pass {name!r}: only a pass made of rules can be fusable")
        self.name = name
        self._rules = None if rules is None else (
            rules if isinstance(rules, RuleSet) else RuleSet(rules))
        self._run = run
        self.contract = contract
        self.doc = (doc or "").strip()
        self.optional, self.fusable, self.records_only = optional, fusable, records_only
        self.keep_specs = keep_specs
        self.origin = origin
        self.module: types.ModuleType | None = None  # set for the built-in passes
        self.number = 0  # the built-in stage number (1..12); 0 for a user pass

    @classmethod
    def from_module(cls, mod: types.ModuleType, optional: bool = False) -> Pass:
        """The `Pass` of a pass module (``NAME``, docstring, ``CONTRACT``, ``run`` and, where it
        is one walk of them, ``rules``; ``FUSABLE`` / ``RECORDS_ONLY``).  Its ``run`` is looked
        up on the module at each call, so a test may replace it."""
        p = cls.__new__(cls)
        p.name, p.module = mod.NAME, mod
        p._rules = None
        p._run, p.contract = None, getattr(mod, "CONTRACT", None)
        p.doc = (mod.__doc__ or "").strip()
        p.optional = getattr(mod, "OPTIONAL", optional)
        p.fusable = bool(getattr(mod, "FUSABLE", False))
        p.records_only = bool(getattr(mod, "RECORDS_ONLY", False))
        p.keep_specs = False
        p.origin = mod.__name__
        p.number = p.contract.stage if isinstance(p.contract, Contract) and p.contract.stage \
            else 0
        return p

    @property
    def rules(self) -> RuleSet | None:
        """The pass's rules (a built-in pass's are looked up on its module, like ``run``)."""
        if self.module is not None:
            return getattr(self.module, "rules", None)
        return self._rules

    # -- running ------------------------------------------------------------------------------
    def run(self, sink: Node, ctx: Any = None) -> Node:
        """Apply the pass to a graph."""
        if self.module is not None:
            return self.module.run(sink, ctx)
        if self._run is not None:
            return self._run(sink, ctx)
        assert self.rules is not None
        return rewrite(sink, self.rules, ctx, name=self.name, keep_specs=self.keep_specs)

    @property
    def fusion_kind(self) -> str | None:
        """"walk" for a fusable pass, "record" for a records-only one, None for the rest — and for
        a built-in pass whose module's ``run`` was replaced (a test's stub): it runs alone."""
        mod = self.module
        if mod is not None and getattr(mod.run, "__module__", None) != mod.__name__:
            return None
        if self.fusable and not self.keep_specs:
            return "walk"
        return "record" if self.records_only else None

    @property
    def builtin(self) -> bool:
        """One of the twelve (a user's pass module is not)."""
        return self.module is not None and self.module.__name__ in _BUILTIN_NAMES

    # -- identity -----------------------------------------------------------------------------
    @cached_property
    def digest(self) -> str:
        """A digest of what the pass does: for a built-in pass its module name (Ren's own source
        is in every cache's key already); for a user pass its name, flags and code."""
        if self.builtin:
            return self.module.__name__  # type: ignore[union-attr]
        h = hashlib.sha256(repr((self.name, self.optional, self.fusable, self.records_only,
                                 self.keep_specs)).encode())
        if self.module is not None:  # a user's pass module: its run and its rules
            h.update(_code_digest(self.module.run))
        if self.rules is not None:
            for r in self.rules.rules:
                h.update(f"{r.name}|{r.pat!r}|".encode())
                h.update(_code_digest(r.fn))
        elif self._run is not None:
            h.update(_code_digest(self._run))
        return h.hexdigest()[:16]

    def describe(self) -> str:
        """One line: name, kind and where it comes from."""
        kind = "optional" if self.optional else "required"
        how = f"{len(self.rules.rules)} rules" if self.rules is not None and self._run is None \
            else "run()"
        return f"{self.name} ({kind}, {how}, from {self.origin or 'an unnamed module'})"

    def __repr__(self) -> str:
        return f"<Pass {self.describe()}>"


def _code_digest(fn: Any, depth: int = 0) -> bytes:
    """Bytes that change when a function's code, constants or closure values change."""
    code = getattr(fn, "__code__", None)
    if code is None:
        call = vars(type(fn)).get("__call__")  # a callable object: its class's method
        code = getattr(call, "__code__", None)
        if code is None:
            return repr(fn).encode()
    h = hashlib.sha256(marshal.dumps(code))
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        h.update(_code_digest(value, depth + 1) if callable(value) and depth < 4
                 else repr(value).encode())
    return h.digest()


class Pipeline:
    """An ordered, immutable sequence of `Pass` values.  Editing returns a new pipeline."""

    def __init__(self, passes: Iterable[Pass]) -> None:
        items = tuple(passes)
        seen: set[str] = set()
        for p in items:
            if not isinstance(p, Pass):
                raise PipelineError(f"Pipeline: every item must be a ren.passes.Pass, got "
                                    f"{type(p).__name__}")
            if p.name in seen:
                raise PipelineError(f"Pipeline: two passes named {p.name!r}; names must be "
                                    "unique (they name stages, rules and cache keys)")
            seen.add(p.name)
        self.passes = items

    # -- reading ------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Pass]:
        return iter(self.passes)

    def __len__(self) -> int:
        return len(self.passes)

    def __getitem__(self, which: int | str) -> Pass:
        return self.passes[self.index(which)]

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.passes]

    @property
    def stage_names(self) -> list[str]:
        """``01_simplify``, … as traces, goldens and reports name the stages."""
        return [f"{i:02d}_{p.name}" for i, p in enumerate(self.passes, 1)]

    def index(self, which: int | str | Pass) -> int:
        """The 0-based position of a pass given by name, stage name (``04_simplify_domains``),
        1-based number or the `Pass` itself."""
        for i, p in enumerate(self.passes):
            if which is p or which in (p.name, f"{i + 1:02d}_{p.name}") or (
                    type(which) is int and which == i + 1):
                return i
        raise PipelineError(f"no pass {which!r} in this pipeline; its passes are "
                            f"{', '.join(self.names) or '(none)'}")

    def contract_at(self, i: int) -> Contract | None:
        """The contract checked after pass i (0-based): its own, made concrete at the built-in
        stage it follows when it names none."""
        p = self.passes[i]
        stage = self.stage_before(i + 1)
        if p.contract is None:
            return Contract(stage) if stage else None
        if p.contract.stage is None:
            return dataclasses.replace(p.contract, stage=stage)
        return p.contract

    def stage_before(self, end: int) -> int:
        """The built-in stage number reached by passes[:end] (0: none yet)."""
        return max((p.number for p in self.passes[:end]), default=0)

    @cached_property
    def key(self) -> tuple[tuple[str, str], ...]:
        """What caches key a plan by: each pass's name and digest."""
        return tuple((p.name, p.digest) for p in self.passes)

    @cached_property
    def is_default(self) -> bool:
        return self.key == default_pipeline().key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pipeline) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    # -- editing ------------------------------------------------------------------------------
    def insert(self, p: Pass | types.ModuleType, *, after: str | None = None,
               before: str | None = None) -> Pipeline:
        """A new pipeline with `p` right after (or before) the named pass."""
        p = as_pass(p)
        if (after is None) == (before is None):
            raise PipelineError(f"insert {p.name!r}: say where, with exactly one of after= and "
                                f"before= (a pass name: {', '.join(self.names)})")
        at = self.index(after) + 1 if after is not None else self.index(before)  # type: ignore
        return Pipeline(self.passes[:at] + (p,) + self.passes[at:])

    def replace(self, which: str, p: Pass | types.ModuleType) -> Pipeline:
        """A new pipeline with the named pass replaced by `p` (a required pass may only be
        replaced by a pass that is required too: one that says it does the same lowering)."""
        p, i = as_pass(p), self.index(which)
        old = self.passes[i]
        if not old.optional and p.optional:
            raise PipelineError(f"replace {old.name!r}: it is a required pass "
                                f"({self._breaks_without(i)}); its replacement must be a Pass "
                                "with optional=False that does its lowering")
        return Pipeline(self.passes[:i] + (p,) + self.passes[i + 1:])

    def without(self, *names: str) -> Pipeline:
        """A new pipeline without the named passes; a required one raises `PipelineError`."""
        out = self
        for name in names:
            i = out.index(name)
            p = out.passes[i]
            if not p.optional:
                raise PipelineError(f"cannot remove {p.name!r}: it is a required pass; "
                                    f"{out._breaks_without(i)}.  Optional passes: "
                                    f"{', '.join(q.name for q in out.passes if q.optional)}")
            out = Pipeline(out.passes[:i] + out.passes[i + 1:])
        return out

    def _breaks_without(self, i: int) -> str:
        """Which later pass needs pass i, and why: what its module says (``REQUIRED_BECAUSE``),
        else the ops it lowers that a later contract allows no more (the op table)."""
        p = self.passes[i]
        need = getattr(p.module, "REQUIRED_BECAUSE", None)
        if need:
            return str(need)
        lowered = {op for op, info in OP_INFO.items() if p.number and info.lowered_by == p.number}
        for q in self.passes[i + 1:]:
            contract = q.contract
            if lowered and contract is not None and contract.stage is not None \
                    and lowered - contract.ops:
                left = ", ".join(sorted(op.name for op in lowered - contract.ops)[:4])
                return (f"pass {q.name}'s contract allows no {left} node after it, and {p.name} "
                        "is the pass that lowers them")
        later = [q.name for q in self.passes[i + 1:]]
        return f"{later[0] if later else 'the backend'} expects the graph {p.name} leaves"

    # -- text form ----------------------------------------------------------------------------
    def __str__(self) -> str:
        base = default_pipeline()
        names = set(self.names)
        parts = ["default"]
        parts += [f"-{p.name}" for p in base if p.name not in names]
        kept = [p.name for p in base if p.name in names]
        if [p.name for p in self.passes if p.builtin] != kept:
            parts = ["none"]  # built-in passes out of their order: list every one
            kept = []
        present: list[str] = []
        for p in self.passes:
            if p.builtin and p.name in kept:
                present.append(p.name)
                continue
            if p.builtin:
                ref = p.name
            else:
                p.origin = p.origin or _find_origin(p)
                if not p.origin:
                    raise PipelineError(f"pass {p.name!r} has no text form: it was not loaded "
                                        "from MODULE:ATTR (define it at the top level of an "
                                        "importable module and load it with Pipeline.parse or "
                                        "load_pass)")
                ref = p.origin
            where = f"@after={present[-1]}" if present else (
                f"@before={kept[0]}" if kept else "")
            parts.append(f"+{ref}{where}")
            present.append(p.name)
        return ",".join(parts)

    def __repr__(self) -> str:
        try:
            text = str(self)
        except PipelineError:
            text = ",".join(self.names)
        return f"Pipeline({text!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        try:  # by its text where it has one: a pickle then names code, not copies it
            return (Pipeline.parse, (str(self),))
        except PipelineError:
            return (Pipeline, (self.passes,))

    @staticmethod
    def parse(spec: str | Pipeline) -> Pipeline:
        """A pipeline from its text form (see the module docstring); a `Pipeline` is returned
        as it is."""
        if isinstance(spec, Pipeline):
            return spec
        if not isinstance(spec, str) or not spec.strip():
            raise PipelineError(f"a pipeline spec must be a non-empty str such as 'default' or "
                                f"'default,-simplify_domains', got {spec!r}")
        items = [s.strip() for s in spec.split(",")]
        head, edits = items[0], items[1:]
        if head == "default":
            out = default_pipeline()
        elif head == "none":
            out = Pipeline(())
        else:
            raise PipelineError(f"pipeline spec {spec!r}: start with 'default' (the twelve "
                                f"passes) or 'none', then edits: -NAME, +MODULE:ATTR@after=NAME, "
                                f"+MODULE:ATTR@before=NAME, NAME=MODULE:ATTR; pass names: "
                                f"{', '.join(default_pipeline().names)}")
        for edit in edits:
            out = _apply_edit(out, edit, spec)
        return out


def _apply_edit(out: Pipeline, edit: str, spec: str) -> Pipeline:
    builtins = {p.name: p for p in default_pipeline()}
    if edit.startswith("-"):
        return out.without(edit[1:])
    if edit.startswith("+"):
        ref, _, where = edit[1:].partition("@")
        p = builtins[ref] if ref in builtins else load_pass(ref)
        if not where:
            if len(out) == 0:
                return Pipeline((p,))
            return out.insert(p, after=out.names[-1])
        side, _, anchor = where.partition("=")
        if side not in ("after", "before") or not anchor:
            raise PipelineError(f"pipeline spec {spec!r}: {edit!r} must end in @after=NAME or "
                                "@before=NAME")
        return out.insert(p, **{side: anchor})
    if "=" in edit:
        name, _, ref = edit.partition("=")
        return out.replace(name, builtins[ref] if ref in builtins else load_pass(ref))
    raise PipelineError(f"pipeline spec {spec!r}: cannot read {edit!r}; edits are -NAME, "
                        f"+MODULE:ATTR@after=NAME, +MODULE:ATTR@before=NAME, NAME=MODULE:ATTR; "
                        f"pass names: {', '.join(out.names)}")


def _find_origin(p: Pass) -> str | None:
    """``MODULE:ATTR`` of a user pass defined at the top level of a module (found through the
    module of its ``run`` or of its first rule's function), or None."""
    import sys

    fn = p._run if p._run is not None else (p.rules.rules[0].fn if p.rules and p.rules.rules
                                            else None)
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    if module is None or module.__name__ == "__main__":
        return None  # (__main__ means something else in every process)
    for attr, value in vars(module).items():
        if value is p:
            return f"{module.__name__}:{attr}"
    return None


def as_pass(p: Any) -> Pass:
    """A `Pass`, or the `Pass` of a pass module."""
    if isinstance(p, Pass):
        return p
    if isinstance(p, types.ModuleType) and hasattr(p, "NAME") and hasattr(p, "run"):
        return Pass.from_module(p, optional=True)
    raise PipelineError(f"expected a ren.passes.Pass (or a pass module with NAME and run), got "
                        f"{type(p).__name__} {p!r}"[:200])


def load_pass(ref: str) -> Pass:
    """The `Pass` at ``MODULE:ATTR`` (or the pass module ``MODULE``)."""
    module, _, attr = ref.partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise PipelineError(f"cannot import {module!r} for pass {ref!r}: {e}") from None
    obj = getattr(mod, attr, None) if attr else mod
    if obj is None:
        raise PipelineError(f"module {module!r} has no {attr!r} (pass {ref!r})")
    p = as_pass(obj)
    if not p.builtin:
        p.origin = ref
    return p


_DEFAULT: Pipeline | None = None
_BUILTIN_NAMES = frozenset(f"ren.passes.{m}" for m in BUILTIN_MODULES)


def default_pipeline() -> Pipeline:
    """The seed's twelve passes."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Pipeline(Pass.from_module(importlib.import_module(f"ren.passes.{m}"))
                            for m in BUILTIN_MODULES)
    return _DEFAULT


_current: contextvars.ContextVar[Pipeline | None] = contextvars.ContextVar("ren_pipeline",
                                                                           default=None)


def current_pipeline() -> Pipeline:
    """The pipeline realization uses here: the innermost ``with ren.pipeline(...)``, else the
    ``REN_PIPELINE`` setting, else the default."""
    p = _current.get()
    if p is not None:
        return p
    from ren import settings  # (settings imports nothing from the passes)

    spec = settings.get("REN_PIPELINE")
    return default_pipeline() if spec in ("", "default") else _parsed(spec)


_parsed_cache: dict[str, Pipeline] = {}


def _parsed(spec: str) -> Pipeline:
    found = _parsed_cache.get(spec)
    if found is None:
        found = _parsed_cache[spec] = Pipeline.parse(spec)
    return found


@contextlib.contextmanager
def using(p: Pipeline | str) -> Iterator[Pipeline]:
    """Realize with pipeline `p` inside the block (``ren.pipeline(p)``)."""
    pipe = Pipeline.parse(p)
    token = _current.set(pipe)
    try:
        yield pipe
    finally:
        _current.reset(token)


__all__ = ["BUILTIN_MODULES", "Pass", "Pipeline", "as_pass", "current_pipeline",
           "default_pipeline", "load_pass", "using"]
