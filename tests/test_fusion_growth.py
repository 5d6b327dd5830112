"""Fusion never duplicates work exponentially (issue 16): a value read at two index maps in one
kernel (y and rot(y) in y + rot(y)) gets a buffer of its own, so ``y = y + f(y)`` repeated d
times schedules O(d) kernels with O(d) generated code, not 2^d inlined copies of y.

Each chain is scheduled at several depths; the number of kernels, the AST size and the C source
the compiled device would build must grow linearly, and the values match the oracle.  Before
the fix a rotation ladder of depth 8 at N=256 fused into one kernel reading the input at 256
index maps (one render-time table of N entries each).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import ren
from ren import Poly, RingSpec
from ren.backend.render_c import C, render_program
from ren.node import toposort
from ren.reference import evaluate
from ren.schedule import schedule

RING = RingSpec.generate(256, 2)


def _x() -> Poly:
    return Poly.from_coefficients([(7 * i) % 23 - 11 for i in range(RING.N)], RING).ntt()


def rotation_sum(d: int) -> Poly:
    y = _x()
    for k in range(d):
        y = y + y.rotate(k % 7 + 1)
    return y


def conjugate_ladder(d: int) -> Poly:
    y = _x()
    for _ in range(d):
        y = y + y.conjugate()
    return y


def negated_rotation_ladder(d: int) -> Poly:
    y = _x()
    for k in range(d):
        y = y + (-y).rotate(2 * k + 1) * 3
    return y


def squaring_sum(d: int) -> Poly:
    x = y = _x()
    s = Poly.const(0, RING, "NTT")
    for _ in range(d):
        s = s + y
        y = y * y + x
    return s


def automorph_product_ladder(d: int) -> Poly:
    y = _x()
    for _ in range(d):
        y = y * y.automorph(5) + y
    return y


def nested_automorph_ladder(d: int) -> Poly:
    """y read at automorph(3) then (after a negation) automorph(5), and at automorph(15): the
    same Galois element, but two different index expressions in the fused kernel."""
    y = _x()
    for _ in range(d):
        y = (-y.automorph(3)).automorph(5) + y.automorph(15)
    return y


CHAINS: dict[str, Callable[[int], Poly]] = {
    f.__name__: f for f in (rotation_sum, conjugate_ladder, negated_rotation_ladder,
                            squaring_sum, automorph_product_ladder,
                            nested_automorph_ladder)}


def _measure(p: Poly) -> tuple[int, int, int]:
    """(kernels, AST nodes, bytes of C source) of p's schedule."""
    items = schedule(p)
    compute = [i for i in items if i.ast is not None]
    ast = sum(len(toposort(i.ast)) for i in compute)
    source = sum(len(k.source) for i in compute for k in render_program(i, C).kernels)
    return len(compute), ast, source


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_kernels_and_code_grow_linearly_with_depth(name):
    build = CHAINS[name]
    (k5, a5, s5), (k10, a10, s10), (k20, a20, s20) = (_measure(build(d)) for d in (5, 10, 20))
    # linear: doubling the depth at most doubles each figure, plus a small constant
    for small, big, what in ((k5, k10, "kernels"), (k10, k20, "kernels"), (a5, a10, "AST"),
                             (a10, a20, "AST"), (s5, s10, "source"), (s10, s20, "source")):
        assert big <= 2.3 * small + 8, f"{name}: {what} grew from {small} to {big}"
    assert k20 <= 4 * 20 + 4, f"{name}: {k20} kernels for a chain of 20 steps"


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_deep_chains_compute_the_reference_values(name):
    y = CHAINS[name](20)
    expected = evaluate(y)[0]
    y.realize()
    assert np.array_equal(y.numpy(), expected)


def test_a_value_read_at_two_index_maps_is_computed_once():
    x = _x()
    y = x + x.rotate(1)  # a computed value, read below at the identity and at an automorphism
    z = y + y.rotate(2)
    items = [i for i in schedule(z) if i.ast is not None]
    # y gets its own kernel; z's kernel reads y's buffer twice instead of recomputing it
    elementwise = [i for i in items if i.kind == "elementwise"]
    assert len(elementwise) == 2
    z.realize()
    assert np.array_equal(z.numpy(), evaluate(x + x.rotate(1) + (x + x.rotate(1)).rotate(2))[0])


def test_storage_read_at_many_index_maps_stays_fused():
    """Rereading a buffer costs loads, not computation: no extra kernel."""
    x = _x().realize()
    s = x
    for k in range(1, 6):
        s = s + x.rotate(k)
    items = [i for i in schedule(s) if i.kind == "elementwise"]
    assert len(items) == 1
    assert ren.Domain.NTT is s.domain


def test_a_lazy_rotate_sum_costs_what_the_step_by_step_one_costs():
    """CKKS rotate_sum over all slots left lazy schedules no more kernels and no more kernel
    code (AST nodes) than realizing it step by step (before: 1.7x the code at 7 steps, doubling
    with every further step, as each fused key switch recomputed the earlier steps)."""
    from ckks_helpers import context

    def cost(ct) -> tuple[int, int]:
        items = [i for i in schedule(ct.c0, ct.c1) if i.ast is not None]
        return len(items), sum(len(toposort(i.ast)) for i in items)

    c = context(N=256, depth=2, steps=tuple(1 << k for k in range(7)))
    x = np.linspace(-1, 1, 128)
    ct = c.encrypt(x)
    ct.c0.realize(ct.c1)
    kernels, code, step, out = 0, 0, 1, ct
    while step < 128:
        out = c.ev.add(out, c.ev.rotate(out, step))
        k, a = cost(out)
        kernels, code = kernels + k, code + a
        out.c0.realize(out.c1)
        step *= 2
    lazy = c.ev.rotate_sum(ct)
    k, a = cost(lazy)
    assert k <= kernels and a <= code, f"lazy {k} kernels / {a} nodes, stepwise {kernels} / {code}"
    lazy.c0.realize(lazy.c1)
    assert np.max(np.abs(c.decrypt(lazy) - x.sum())) < 1e-3
    assert np.allclose(c.decrypt(lazy), c.decrypt(out), atol=1e-3)
