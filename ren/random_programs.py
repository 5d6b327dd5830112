"""Random Poly programs for differential tests against the big-integer oracle (`ren.reference`).

One generator, three drivers: `tests/test_realize.py` draws programs through hypothesis (which
shrinks a failure to a small program), `tests/fuzz_programs.py` draws thousands from a seeded
`random.Random` (the long runs behind issue 16's acceptance counts), and `ren.passdev.check`
runs a user's pass on seeded ones.  The generator sees only a
`Chooser`, so both drivers build exactly the same kinds of programs.

A program is a pool of Polys grown step by step (inputs, arithmetic, domain and ring changes,
rotations, copies, rescales, constants and constant chains that scheduling folds), then a
*realization plan*: which pool members are requested, and whether they are realized together,
one at a time, or in stages.  The outputs deliberately share work: constants that are also
operands of other outputs, sub-expressions used by several outputs, an output that is the input
of another output — the shapes in which a node is both an output and an operand.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

import ren
from ren.reference import evaluate

RQP = ren.RingSpec.generate(16, 5)
RINGS = (RQP.sub(0, 3), RQP)
STEPS = ("add", "sub", "mul", "neg", "scalar", "addc", "domain", "rotate", "conj", "subset",
         "extend", "rescale", "copy", "times_zero", "self_sub", "const", "const_chain",
         "shared_const", "shared_const", "reuse", "ladder")


class Chooser(Protocol):
    """Where a program's random choices come from."""

    def integer(self, lo: int, hi: int) -> int:
        """An int in [lo, hi]."""

    def choice(self, options: Sequence[Any]) -> Any:
        """One of `options`."""


class RandomChooser:
    """Choices from a seeded `random.Random` (reproducible from the seed alone)."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.rng.randrange(len(options))]


class DrawChooser:
    """Choices drawn by hypothesis (`st.data()` or a composite strategy's `draw`)."""

    def __init__(self, draw):
        from hypothesis import strategies as st

        self._draw, self._st = draw, st

    def integer(self, lo: int, hi: int) -> int:
        return self._draw(self._st.integers(lo, hi))

    def choice(self, options: Sequence[Any]) -> Any:
        return self._draw(self._st.sampled_from(list(options)))


def _input(c: Chooser, ring: ren.RingSpec, device: str) -> ren.Poly:
    kind = c.choice(("coeffs", "residues", "random"))
    domain = c.choice(("COEFF", "NTT"))
    if kind == "coeffs":
        bound = 1 << c.integer(1, 120)
        p = ren.Poly.from_coefficients([c.integer(-bound, bound) for _ in range(ring.N)], ring,
                                       device=device)
        return p.ntt() if domain == "NTT" else p
    if kind == "residues":
        rng = np.random.default_rng(c.integer(0, 2**32))
        res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli])
        return ren.Poly.from_residues(res, ring, domain, device=device)
    with ren.random.seeded(c.integer(0, 1000)):
        if domain == "COEFF":
            return ren.Poly.ternary(ring, device=device)
        return ren.Poly.uniform(ring, device=device, domain="NTT")


def _partner(c: Chooser, pool: list[ren.Poly], a: ren.Poly) -> ren.Poly:
    """A pool member that can be added to `a` (same ring and domain; `a` itself qualifies)."""
    return c.choice([p for p in pool if p.ring == a.ring and p.domain is a.domain])


def _const(c: Chooser, consts: list[ren.Poly], a: ren.Poly) -> ren.Poly:
    """A constant in a's ring and domain: usually one used before (so several expressions
    share it), sometimes a new one."""
    same = [k for k in consts if k.ring == a.ring and k.domain is a.domain]
    if same and c.integer(0, 3):
        return c.choice(same)
    k = ren.Poly.const(c.choice((0, 1, 2, 5, -1, c.integer(-(1 << 70), 1 << 70))), a.ring,
                       a.domain, device=a.device)
    consts.append(k)
    return k


def _step(c: Chooser, pool: list[ren.Poly], consts: list[ren.Poly]) -> ren.Poly:
    a = c.choice(pool)
    op = c.choice(STEPS)
    if op == "add":
        return a + _partner(c, pool, a)
    if op == "sub":
        return a - _partner(c, pool, a)
    if op == "mul":
        return a * c.choice([p for p in pool if p.ring == a.ring])
    if op == "neg":
        return -a
    if op == "scalar":
        return a * c.integer(-(1 << 70), 1 << 70)
    if op == "addc":
        return c.integer(-5, 5) + a
    if op == "domain":
        return a.intt() if a.domain is ren.Domain.NTT else a.ntt()
    if op == "rotate":
        return a.rotate(c.integer(-9, 9))
    if op == "conj":
        return a.conjugate()
    if op == "subset":
        moduli = list(a.ring.moduli)
        keep = [q for q in moduli if c.integer(0, 1)] or [c.choice(moduli)]
        return a.to_ring(a.ring.select(keep))
    if op == "extend" and a.ring != RQP:
        return a.to_ring(RQP)
    if op == "rescale" and a.ring.limbs > 1:
        return a.rescale(a.ring.moduli[-1])
    if op == "copy":
        return a.to("python:1").to(a.device)
    # constant sub-expressions, which scheduling folds (x*0, x-x, conversions of constants):
    # folding must never change a value, a domain or a ring
    if op == "times_zero":
        return a * 0
    if op == "self_sub":
        return a - a
    if op == "const":
        return _const(c, consts, a)
    if op == "const_chain":
        k = ren.Poly.const(c.integer(-9, 9), a.ring, device=a.device)
        for _ in range(c.integer(0, 4)):
            k = {"ntt_intt": lambda k: k.ntt().intt(), "neg": lambda k: -k,
                 "rot": lambda k: k.rotate(1), "conj": lambda k: k.conjugate(),
                 "mul3": lambda k: k * 3, "plus0": lambda k: k + 0,
                 "same_ring": lambda k: k.to_ring(k.ring)}[
                c.choice(("ntt_intt", "neg", "rot", "conj", "mul3", "plus0", "same_ring"))](k)
        return k.ntt() if a.domain is ren.Domain.NTT else k
    # a constant shared by several expressions, which may itself be requested as an output
    if op == "shared_const":
        k = _const(c, consts, a)
        how = c.choice(("mul", "rmul", "add", "sub", "rsub"))
        return {"mul": a * k, "rmul": k * a, "add": a + k, "sub": a - k, "rsub": k - a}[how]
    # a sub-expression used twice by one expression (shared within a kernel)
    if op == "reuse":
        b = _partner(c, pool, a)
        s = a + b
        return s * s if c.integer(0, 1) else s - (s + s)
    # y = y + f(y): each value read twice, once through an automorphism
    if op == "ladder":
        y = a
        for _ in range(c.integer(1, 4)):
            y = y + c.choice((lambda v: v.rotate(1), lambda v: v.conjugate(), lambda v: -v))(y)
        return y
    return a + a


def _folds_to(c: Chooser, k: ren.Poly) -> ren.Poly:
    """An expression whose value is the constant `k` (scheduling folds it back to k)."""
    for _ in range(c.integer(0, 2)):
        k = c.choice((lambda k: k + 0, lambda k: k * 1, lambda k: k.rotate(2),
                      lambda k: k.conjugate(), lambda k: k.to_ring(k.ring),
                      lambda k: k.automorph(3), lambda k: (k - k) + k,
                      lambda k: k.ntt().intt() if k.domain is ren.Domain.COEFF
                      else k.intt().ntt()))(k)
    return k


@dataclass
class Program:
    """Requested outputs and how to realize them: `stages` lists groups of output indices
    realized one group at a time (every output is in the last group)."""

    outputs: list[ren.Poly]
    stages: list[list[int]]

    def run(self) -> list[ren.Poly]:
        for group in self.stages:
            ren.realize([self.outputs[i] for i in group])
        return self.outputs


def build(c: Chooser, device: str = "python", max_steps: int = 12) -> Program:
    pool = [_input(c, c.choice(RINGS), device) for _ in range(c.integer(1, 3))]
    consts: list[ren.Poly] = []
    for _ in range(c.integer(1, max_steps)):
        pool.append(_step(c, pool, consts))
    candidates = pool + consts  # any member: an operand of a later member can be an output
    outputs = [c.choice(candidates) for _ in range(c.integer(1, 4))]
    if consts and c.integer(0, 1):
        # a constant beside the expressions that use it, requested as itself or as an
        # expression that folds to it (then it is stored, while its users read it as a scalar)
        outputs.append(_folds_to(c, c.choice(consts)))
    n = len(outputs)
    mode = c.choice(("together", "together", "one_by_one", "staged"))
    if mode == "one_by_one":
        stages = [[i] for i in range(n)]
    elif mode == "staged":
        stages = [[i for i in range(n) if c.integer(0, 1)], list(range(n))]
    else:
        stages = [list(range(n))]
    return Program(outputs, [s for s in stages if s])


def check(program: Program) -> None:
    """Realize the program: every output equals the oracle, and no output's ring or domain
    changed because it was realized (raises AssertionError naming the output otherwise)."""
    specs = [(p.ring, p.domain) for p in program.outputs]
    expected = evaluate(*program.outputs)
    program.run()
    for i, (p, e, spec) in enumerate(zip(program.outputs, expected, specs, strict=True)):
        assert (p.ring, p.domain) == spec, f"output {i}: {spec} became {(p.ring, p.domain)}"
        assert np.array_equal(p.numpy(), e), f"output {i}: values differ from the reference"
