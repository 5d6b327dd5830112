"""The shared rewrite driver: small declarative rules (pattern -> replacement) run bottom-up to a
fixed point.

A `Pat` describes a node: its op (or a set of ops), optionally its sources (a tuple of Pats,
tried in both orders when ``commutative``), its arg and a predicate; ``name`` binds the matched
node for the replacement function.  A rule is ``(Pat, fn)``; ``fn`` receives the bindings as
keyword arguments (and ``ctx`` when it asks for it) and returns a replacement Node or None.
``fn`` may also ask for ``orig``: the node as the walk met it, before its sources were
rewritten.  Its spec is the node's declared one even where the rules of a later pass, fused into
the same walk (`ren.passes`), have lowered the sources into ops that no longer carry one.

`rewrite(root, rules, ctx, name)` visits every node once, sources first; after a rule fires the
replacement is rewritten again (its new nodes included) until no rule matches.  A node that is
rewritten more than `MAX_REWRITES` times means the rules cycle: the driver stops with a
`ScheduleError` that names the rules involved.  Firings are counted per rule in
``ctx.stats[name]``.

**Specs are invariant.**  A rewrite never changes what a polynomial-valued node is: its ring,
domain and device.  Folding can change what a rebuilt node *infers* (a product of two
polynomials is NTT; once one operand has folded to a constant, the product keeps the other
operand's domain: `ren.spec.is_poly_product`), so the driver compares each rebuilt node and
each rule's result with the node it replaces and restores the declared domain (a constant is
re-tagged, anything else gets an NTT/INTT, which later passes fuse or remove).  A changed ring
or device is a bug in a rule: `ScheduleError`.  Restorations are counted as ``keep_domain``.
The check runs in the passes that rewrite polynomial ops (``keep_specs=True``: passes 1-4,
where folding happens); the later passes only lower, and skip its cost.

**Provenance.**  When ``ctx.provenance`` is a `Provenance` (the scheduler sets one when asked to
trace), the driver records, as plain data, every firing (the rule's name, the node it replaced,
the node it returned; a domain restoration is a firing of ``keep_domain``) and, at the end, what
each replaced or rebuilt node finally became.  A node rebuilt only because a source changed has
an entry in ``became`` and no firing.  Without a `Provenance` nothing is recorded.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ren.errors import ScheduleError
from ren.ir import as_ring, is_const, pnode
from ren.node import Node
from ren.node import _node as _core  # the compiled walk, or None
from ren.ops import DType, Op
from ren.ring import Domain
from ren.spec import spec_of

MAX_REWRITES = 256
_ANY = object()


@dataclass(frozen=True, eq=False)
class Pat:
    """A node pattern."""

    op: Op | frozenset[Op] | None = None
    src: tuple[Pat, ...] | None = None
    name: str | None = None
    arg: Any = _ANY
    where: Callable[[Node], bool] | None = None
    commutative: bool = False
    _ops: frozenset[Op] | None = field(init=False, repr=False, compare=False)
    #: the pattern as plain data for the compiled matcher (ren/_rewrite.c's `match`)
    _c: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # the op set once: `match` runs for every candidate node of every pass
        ops = None if self.op is None else \
            self.op if isinstance(self.op, frozenset) else frozenset({self.op})
        object.__setattr__(self, "_ops", ops)
        has_arg = self.arg is not _ANY
        object.__setattr__(self, "_c", (
            ops, has_arg, self.arg if has_arg else None,
            None if self.src is None else tuple(p._c for p in self.src), self.name, self.where,
            bool(self.commutative)))

    def ops(self) -> frozenset[Op] | None:
        return self._ops

    def match(self, n: Node, env: dict[str, Node]) -> bool:
        """Whether `n` matches; bindings go into `env` (partly filled on a mismatch: the caller
        drops it, and a commutative pattern tries each order in a copy)."""
        ops = self._ops
        if ops is not None and n.op not in ops:
            return False
        if self.arg is not _ANY and n.arg != self.arg:
            return False
        pats = self.src
        if pats is not None:
            src = n.src
            if len(pats) != len(src):
                return False
            if not self.commutative:
                for p, s in zip(pats, src):
                    if not p.match(s, env):
                        return False
            else:
                for order in (src, src[::-1]):
                    if any(p._ops is not None and s.op not in p._ops for p, s in zip(pats, order)):
                        continue  # (an operand of another op: no copy of the bindings to try)
                    trial = dict(env)
                    if all(p.match(s, trial) for p, s in zip(pats, order)):
                        env.update(trial)
                        break
                else:
                    return False
        name = self.name
        if name is not None:
            bound = env.get(name)
            if bound is not None and bound is not n:
                return False  # the same name twice must be the same node
            env[name] = n
        return self.where is None or self.where(n)


def P(op: Op | Iterable[Op] | None = None, *src: Pat, name: str | None = None, arg: Any = _ANY,
      where: Callable[[Node], bool] | None = None, commutative: bool = False) -> Pat:
    """Shorthand: ``P(Op.NTT, P(Op.INTT, X("x")))``."""
    if op is not None and not isinstance(op, Op):
        op = frozenset(op)
    return Pat(op, tuple(src) if src else None, name, arg, where, commutative)


def X(name: str, where: Callable[[Node], bool] | None = None) -> Pat:
    """Any node, bound to `name`."""
    return Pat(None, None, name, _ANY, where)


@dataclass
class Rule:
    pat: Pat
    fn: Callable[..., Node | None]
    name: str
    wants_ctx: bool = field(init=False)
    wants_orig: bool = field(init=False)

    def __post_init__(self) -> None:
        params = inspect.signature(self.fn).parameters
        self.wants_ctx = "ctx" in params
        self.wants_orig = "orig" in params

    def apply(self, n: Node, ctx: Any, orig: Node | None = None) -> Node | None:
        env: dict[str, Any] = {}
        if not self.pat.match(n, env):
            return None
        if self.wants_ctx:
            env["ctx"] = ctx
        if self.wants_orig:
            env["orig"] = n if orig is None else orig
        return self.fn(**env)


def rule(pat: Pat, fn: Callable[..., Node | None], name: str | None = None) -> Rule:
    return Rule(pat, fn, name or str(getattr(fn, "__name__", "rule")))


class RuleSet:
    """Rules indexed by the op they can match, in declaration order."""

    def __init__(self, rules: Iterable[Rule | tuple]):
        self.rules = [r if isinstance(r, Rule) else rule(*r) for r in rules]
        self.by_op: dict[Op, list[Rule]] = {}
        self.any_op: list[Rule] = []
        for r in self.rules:
            ops = r.pat.ops()
            if ops is None:
                self.any_op.append(r)
            else:
                for op in ops:
                    self.by_op.setdefault(op, []).append(r)
        # op -> the rules to try on it, in declaration order; an op missing here has none
        self._candidates: dict[Op, tuple[Rule, ...]] = {
            op: tuple(r for r in self.rules if (ops := r.pat.ops()) is None or op in ops)
            for op in Op}
        self._candidates = {op: rs for op, rs in self._candidates.items() if rs}
        # the same, as plain data for the compiled walk (ren/_rewrite.c's `apply_rules`)
        self._compiled: dict[Op, tuple[tuple, ...]] = {
            op: tuple((r.pat._c, r.fn, r.wants_ctx, r.wants_orig, r) for r in rs)
            for op, rs in self._candidates.items()}

    def has_rules(self, op: Op) -> bool:
        return op in self._candidates

    def candidates(self, op: Op) -> list[Rule]:
        return list(self._candidates.get(op, ()))

    def apply(self, n: Node, ctx: Any, orig: Node | None = None) -> tuple[Node, Rule] | None:
        for r in self._candidates.get(n.op, ()):
            out = r.apply(n, ctx, orig)
            if out is not None and out is not n:
                return out, r
        return None


@dataclass(frozen=True)
class Firing:
    """One rule firing: rule `rule` of the rewrite named `rules` (the `rewrite` call's `name`)
    replaced `replaced` (the node as the walk met it) by `product`."""

    rules: str
    rule: str
    replaced: Node
    product: Node


@dataclass
class Provenance:
    """What the rewrite driver did (see the module docstring): filled only while tracing."""

    firings: list[Firing] = field(default_factory=list)
    #: every node a rewrite replaced or rebuilt -> the node it finally became
    became: dict[Node, Node] = field(default_factory=dict)

    def final(self, n: Node) -> Node:
        """What `n` finally became (itself if nothing replaced it), across rewrite calls."""
        seen = {n}
        while (m := self.became.get(n)) is not None and m not in seen:
            seen.add(m)
            n = m
        return n


def keep_spec(orig: Node, out: Node, why: str = "rewrite") -> Node:
    """`out`, standing in for `orig`, with `orig`'s domain (see the module docstring)."""
    if orig.dtype is not DType.U32 or out is orig:
        return out
    want = spec_of(orig)
    if want is None:
        return out
    got = spec_of(out)
    if got is None or got is want or got == want:
        return out
    if got.ring != want.ring or got.device != want.device:
        raise ScheduleError(
            f"{why}: replacing {orig.op.name} by {out.op.name} changed its ring or device "
            f"({got.ring.short()} on {got.device} instead of {want.ring.short()} on "
            f"{want.device}); a rewrite rule must keep both")
    if is_const(out):
        return as_ring(out.src[0], want.ring, want.domain)
    return pnode(Op.NTT if want.domain is Domain.NTT else Op.INTT, out)


def rewrite(root: Node, rules: RuleSet | Iterable, ctx: Any = None, name: str = "rewrite",
            enter: Callable[[Node], bool] | None = None, keep_specs: bool = False) -> Node:
    """Rewrite the graph under `root` with `rules` to a fixed point (see the module docstring).

    `enter(n)` False makes n a boundary: it is kept as it is and its sources are not visited
    (used to rewrite one kernel body without walking the graph upstream of it).
    `keep_specs` restores a domain a rewrite would change (see the module docstring).

    The walk runs compiled (`ren._node.rewrite_walk`, the same steps as `_walk`) where that is
    built, and in Python (`_walk`) where it is not (or ``REN_PY_CORE=1``) or a `Provenance`
    records the firings.
    """
    rs = rules if isinstance(rules, RuleSet) else RuleSet(rules)
    prov: Provenance | None = getattr(ctx, "provenance", None)
    keep_rebuilt = keep_fired = None
    if keep_specs:
        def keep_rebuilt(n: Node, new: Node) -> Node:
            return keep_spec(n, new, name)

        def keep_fired(new: Node, out: Node, r: Rule) -> Node:
            return keep_spec(new, out, f"{name}: rule {r.name}")

    def on_cycle(n: Node, trail: tuple[str, ...]) -> None:
        cycle = ", ".join(dict.fromkeys(trail[-8:]))
        raise ScheduleError(f"{name}: rewriting did not reach a fixed point after "
                            f"{MAX_REWRITES} steps at a {n.op.name} node; rules cycling: {cycle}")

    stats: dict[str, int] = {}
    if prov is None and _core is not None:
        out = _core.rewrite_walk(root, rs._compiled, ctx, enter, keep_rebuilt, keep_fired,
                                 on_cycle, stats, MAX_REWRITES)
    else:
        done: dict[Node, Node] = {}
        out = _walk(root, rs, ctx, enter, keep_rebuilt, keep_fired, on_cycle, stats, done, prov,
                    name)
        if prov is not None:
            prov.became.update((k, v) for k, v in done.items() if k is not v)
    if ctx is not None and hasattr(ctx, "stats"):
        ctx.stats.setdefault(name, Counter()).update(stats)
    return out


def _walk(root: Node, rs: RuleSet, ctx: Any, enter: Callable[[Node], bool] | None,
          keep_rebuilt: Callable[[Node, Node], Node] | None,
          keep_fired: Callable[[Node, Node, Rule], Node] | None,
          on_cycle: Callable[[Node, tuple[str, ...]], None], stats: dict[str, int],
          done: dict[Node, Node], prov: Provenance | None, name: str) -> Node:
    """`rewrite`'s walk in Python: the reference for ren/_rewrite.c's `rewrite_walk`, which takes
    the same steps (without `prov`), and what runs when that is not built or a `Provenance`
    records the firings.  Fills `done` (every visited node -> what it became) and `stats`."""
    # explicit stack of (node, phase, origin, trail): phase 0 visits sources, 1 rebuilds the node
    # and applies rules, 2 links an original node to the result of its replacement.  `trail`
    # holds the rules fired on the way to this node (replacements inherit it), so a cycle of
    # rules shows up as a trail that keeps growing.
    stack: list[tuple[Node, int, Node | None, tuple[str, ...]]] = [(root, 0, None, ())]
    pop, push, lookup = stack.pop, stack.append, done.__getitem__
    candidates = rs._candidates
    while stack:
        n, phase, origin, trail = pop()
        if phase == 2:
            assert origin is not None  # phase-2 entries always carry their origin
            done[origin] = done[n]
            continue
        if n in done:
            continue
        if enter is not None and not enter(n):
            done[n] = n
            continue
        if phase == 0:
            push((n, 1, None, trail))
            for s in reversed(n.src):
                if s not in done:
                    push((s, 0, None, trail))
            continue
        src = tuple(map(lookup, n.src))
        new = n if src == n.src else Node(n.op, n.dtype, src, n.arg)
        if new is not n:
            fixed = keep_rebuilt(n, new) if keep_rebuilt is not None else new
            if fixed is not new:  # the rebuilt node infers another domain: restore it
                stats["keep_domain"] = stats.get("keep_domain", 0) + 1
                if prov is not None:
                    prov.firings.append(Firing(name, "keep_domain", n, fixed))
                push((fixed, 2, n, trail))
                push((fixed, 0, None, trail))
                continue
            if new in done:  # (its result has new's spec, which is n's)
                done[n] = done[new]
                continue
        hit = rs.apply(new, ctx, n) if new.op in candidates else None
        if hit is None:
            done[n] = new
            done.setdefault(new, new)
            continue
        out, r = hit
        if keep_fired is not None:
            out = keep_fired(new, out, r)
        stats[r.name] = stats.get(r.name, 0) + 1
        if prov is not None:
            prov.firings.append(Firing(name, r.name, n, out))
        trail = (*trail, r.name)
        if len(trail) > MAX_REWRITES:
            on_cycle(n, trail)
        push((out, 2, n, trail))
        push((out, 0, None, trail))
    return done[root]
