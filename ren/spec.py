"""Type inference for polynomial-valued nodes: each gets a `PolySpec` (ring, domain, device).

Ring metadata lives on AS_RING nodes (around storage, constants and random leaves) and on the ops
that change it (TO_RNS, TO_RING, RESCALE, NTT/INTT, COPY, CONCAT); everything else inherits it
from its sources.  Specs are computed once per node and cached on it.

Domain rules (the user-facing semantics; pass 3 inserts the conversions that realise them):

* ADD/SUB/NEG keep the domain of their operands (which must agree).
* MUL of two polynomials is computed in the NTT domain and its result is in ``Domain.NTT``;
  MUL by a scalar constant keeps the domain of the other operand (`is_poly_product`: the one
  statement of this rule; the frontend, pass 3, the reference and the rewrite driver's
  `keep_spec` follow it).
* NTT -> NTT, INTT -> COEFF.  TO_RING, RESCALE, ROTATE, CONJUGATE, AUTOMORPH, COPY,
  CONTIGUOUS and CONCAT (whose sources share one domain) keep the domain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ren.node import Node
from ren.ops import GroupOp, Op
from ren.ring import Domain, RingSpec


@dataclass(frozen=True)
class PolySpec:
    """What a polynomial value is: its ring, its domain and the device that holds it."""

    ring: RingSpec
    domain: Domain
    device: str


def is_constant_poly(n: Node) -> bool:
    """A constant polynomial, which acts as a scalar operand: AS_RING(CONST) before pass 9,
    VCONST after.  (`ren.ir.is_const` is the AS_RING(CONST) form only.)"""
    return (n.op is Op.AS_RING and n.src[0].op is Op.CONST) or n.op is Op.VCONST


def is_poly_product(n: Node) -> bool:
    """A MUL of two polynomials (no constant operand): pointwise in the NTT domain, so pass 3
    converts its operands there and its result is NTT (the op table's ``gives_domain``).  A
    product by a constant is a scalar product: either domain, the other operand's."""
    return n.op is Op.MUL and not any(map(is_constant_poly, n.src))


def device_of(n: Node) -> str | None:
    """The device of a storage/leaf node (BUFFER, AFTER, BUFFER_VIEW, CONST, RANDOM …); None
    for a kernel parameter (SLOT), which has none until it is bound, and for other nodes with
    no spec."""
    while True:
        if n.op is Op.BUFFER:
            return n.arg.device
        if n.op is Op.CONST:
            return n.arg[1]
        if n.op is Op.RANDOM:
            return n.arg.device
        if (n.op in GroupOp.STORAGE or n.op is Op.TO_RNS) and n.src:
            n = n.src[0]
            continue
        spec = spec_of(n)
        return spec.device if spec is not None else None


def _same(n: Node) -> PolySpec | None:
    return spec_of(n.src[0])


def _as_ring(n: Node) -> PolySpec | None:
    ring, domain = n.arg
    device = device_of(n.src[0])
    return PolySpec(ring, domain, device) if device is not None else None


def _to_rns(n: Node) -> PolySpec | None:
    device = device_of(n.src[0])
    return PolySpec(n.arg[0], _gives(Op.TO_RNS), device) if device is not None else None


def _gives(op: Op) -> Domain:
    """The domain of the result of `op`, an op whose row in the op table states one."""
    domain = op.info.gives_domain
    if domain is None:
        raise AssertionError(f"{op.name} gives no domain of its own (the op table)")
    return domain


def _first_spec(nodes: tuple[Node, ...]) -> PolySpec | None:
    """The spec of the first operand that has one, preferring non-scalar operands."""
    ordered = [s for s in nodes if not is_constant_poly(s)] + \
        [s for s in nodes if is_constant_poly(s)]
    for s in ordered:
        spec = spec_of(s)
        if spec is not None:
            return spec
    return None


def _arith(n: Node) -> PolySpec | None:
    s = _first_spec(n.src)
    if s is not None and is_poly_product(n):
        return PolySpec(s.ring, _gives(n.op), s.device)
    return s


def _with(n: Node, *, ring: RingSpec | None = None, domain: Domain | None = None,
          device: str | None = None) -> PolySpec | None:
    """The spec of n's first source with the given fields replaced."""
    s = spec_of(n.src[0])
    if s is None:
        return None
    return PolySpec(s.ring if ring is None else ring, s.domain if domain is None else domain,
                    s.device if device is None else device)


def _transform(n: Node) -> PolySpec | None:
    return _with(n, domain=_gives(n.op))


def _rescale(n: Node) -> PolySpec | None:
    s = spec_of(n.src[0])
    return None if s is None else PolySpec(s.ring.drop_last(len(n.arg)), s.domain, s.device)


_RULES: dict[Op, Callable[[Node], PolySpec | None]] = {
    **{op: _arith for op in GroupOp.ARITH},
    Op.AS_RING: _as_ring,
    Op.TO_RNS: _to_rns,
    Op.NTT: _transform,
    Op.INTT: _transform,
    Op.TO_RING: lambda n: _with(n, ring=n.arg),
    Op.RESCALE: _rescale,
    Op.ROTATE: _same,
    Op.CONJUGATE: _same,
    Op.AUTOMORPH: _same,
    Op.COPY: lambda n: _with(n, device=n.arg),
    Op.CONTIGUOUS: _same,
    Op.CONCAT: lambda n: _with(n, ring=n.arg),
    Op.BUFFERIZE: _same,
    Op.REINDEX: _same,
    Op.WHERE: lambda n: _first_spec(n.src[1:]),
}


def ring_of(n: Node) -> RingSpec | None:
    """The ring of a polynomial-valued node, including a lowered VCONST (whose arg holds it)."""
    if n.op is Op.VCONST:
        return n.arg[0]
    s = spec_of(n)
    if s is not None:
        return s.ring
    for src in n.src:
        if src.dtype is n.dtype:
            r = ring_of(src)
            if r is not None:
                return r
    return None


def need_ring(n: Node) -> RingSpec:
    """`ring_of` for a caller that needs a ring: TypeError when `n` has none."""
    ring = ring_of(n)
    if ring is None:
        raise TypeError(f"expected a polynomial-valued node (one with a ring), found {n!r}")
    return ring


def need_spec(n: Node) -> PolySpec:
    """`spec_of` for a caller that needs a spec (the node is polynomial-valued by construction,
    e.g. a source of an arithmetic op): TypeError when `n` has none."""
    s = spec_of(n)
    if s is None:
        raise TypeError(f"expected a polynomial-valued node (one with a ring, a domain and a "
                        f"device), found {n!r}, which has no PolySpec")
    return s


def spec_of(n: Node) -> PolySpec | None:
    """The PolySpec of a polynomial-valued node, or None for other nodes (cached); `need_spec`
    for a caller that needs one."""
    s = n._spec
    if s is None:
        rule = _RULES.get(n.op)
        if rule is None:
            return None
        if any(src._spec is None and src.op in _RULES for src in n.src):
            _fill_sources(n)
        s = rule(n)
        if s is not None:
            object.__setattr__(n, "_spec", s)
    return s


def _fill_sources(root: Node) -> None:
    """The specs of root's sources that have none yet, deepest first and without recursion: a
    graph a pass rebuilt can be thousands of nodes deep (a long Horner chain of giant steps at
    N = 2^16), deeper than Python's recursion limit allows a rule-by-rule descent."""
    stack: list[tuple[Node, bool]] = [(root, False)]
    seen: set[Node] = set()
    while stack:
        node, expanded = stack.pop()
        if expanded:
            if node is not root:
                spec_of(node)  # its sources have theirs: one level of rules
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((src, False) for src in node.src
                     if src._spec is None and src.op in _RULES and src not in seen)
