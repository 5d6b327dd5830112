"""Linear transforms on CKKS slots: the diagonal method with baby-step giant-step and hoisted
rotations.

    lt = LinearTransform(params, M)              # an n×n matrix, n | N/2 (x replicated N/2/n times)
    lt = LinearTransform(params, {0: d0, 1: d1, -1: dm1})   # or its nonzero diagonals
    y = ev.linear_transform(ct, lt)               # M·x in every n-slot block, one level used
    lt = LinearTransform(params, M, hoisting="double")  # mod-down by P once per giant step
    lt.rotation_steps                             # the Galois keys it needs
    ys = apply_transforms(ev, ct, [lt1, lt2])     # several of one ct: one decomposition shared

**Diagonals.**  (M·x)_j = Σ_i d_i[j]·x_(j+i) with d_i[j] = M[j][(j+i) mod n]: M·x is Σ_i d_i ⊙
rot_i(x).  A matrix of size n < N/2 acts on each n-slot block of a vector that repeats x (its
diagonals repeat too), so rot_i(x) is x rotated within every block.

**Baby-step giant-step.**  With i = g·n1 + b (0 ≤ b < n1), Σ_i d_i ⊙ rot_i(x) =
Σ_g rot_(g·n1)( Σ_b rot_(−g·n1)(d_i) ⊙ rot_b(x) ): the n1 − 1 baby rotations rot_b(x) are made
once, the plaintext diagonals are pre-rotated when the transform is prepared, and each giant
step g ≥ 1 costs one rotation.  The giant steps rotate in Horner order (`ren.ckks.circuits.bsgs`,
`giant_chains`): v_0 + rot_(n1)(v_1 + rot_(n1)(v_2 + …)), and the same by −n1 for the giant steps
beyond slots/2, so they need one or two Galois keys instead of one each, with the same number of
rotations (`rotation_steps`: 27 keys instead of 39 for the bootstrapping at N = 2^16).

**Memory.**  Single hoisting (the default) multiplies the diagonals on Q only, so they are stored
on Q (`diagonal_polys`, `nbytes`); double hoisting stores them on Q·P (`extended`, the Q
plaintexts their views).  At N = 2^16 the bootstrapping's 316 diagonals take 2.93 GiB on Q
instead of 3.55 GiB on Q·P.

**Diagonals as coefficients** (``diagonals="coeff"``, `ren.ckks.circuits.coeffdiag`).  Each
pre-rotated diagonal is kept as its integer coefficients only, packed in 32-bit words (8 bytes a
coefficient below 2^62), and expanded to limbs (TO_RNS, NTT) in every application's graph: the
same results to the bit, 4·N·W bytes a diagonal instead of 4·N·L (the bootstrapping at
N = 2^16: 158 MiB instead of 2.93 GiB), a TO_RNS and an NTT more per diagonal per application.
The complex diagonals are not kept: `diagonals` and `matrix` decode the words at every read
(the values applied: the given ones to within N/(2·Δ_pt) and float64's rounding).

**Hoisting.**  The baby rotations all rotate the same ciphertext, so they share one key-switching
decomposition (`ren.rlwe.hoisted_automorphisms`): a dense n×n transform makes n2 = n/n1
decompositions (one for the babies, one per giant step g ≥ 1) instead of n1 + n2 − 2.

**Double hoisting** (``hoisting="double"``; Bossuat, Mouchet, Troncoso-Pastoriza and Hubaux,
"Efficient Bootstrapping for Approximate Homomorphic Encryption with Non-Sparse Keys", 2021).
A rotation is (σ(c0) + ⌊u0/P⌉, ⌊u1/P⌉) with (u0, u1) its key's inner product on Q·P.  The
mod-down ⌊·/P⌉ commutes with adding multiples of P, so the baby steps stay on Q·P as
(P·σ_b(c0) + u0, u1) (`ren.rlwe.hoisted_automorphisms_qp`) and are multiplied there by the
diagonals (prepared on Q·P too); only c1 of each giant step's inner sum is divided by P (its own
decomposition needs c1 on Q; the plaintext times c1 for b = 0 is added on Q after that), the
rest is rotated on Q·P and the giant step's inner product added; the sum is divided by P once,
then rescaled.  A dense transform divides 2 + (n2 − 1) polynomials by P instead of
2·(n1 − 1 + n2 − 1) (`mod_downs`), and each baby step costs a permutation and an inner
product only; the rounding of the baby rotations is no longer multiplied by the diagonals, so
the result is as precise or a little more.  The price is the diagonal products on Q·P (K/L
more rows).  On Ren's "cpu" device that price is the larger one (its NTTs are fast, and a sum
of products modulo the 31-bit special primes is reduced more often), so `DEFAULT_HOISTING` is
"single": prepare a transform with ``hoisting="double"``, or pass ``hoisted="double"``.
`apply_transforms` shares the baby steps (and their decomposition) among several transforms of
one ciphertext.  ``hoisted="single"`` divides every rotation by P (the decomposition alone
shared), ``hoisted=False`` shares nothing.

**Planning n1.**  `baby_steps_for` weighs baby steps, giant steps and keys: `LinearTransform`
gives it the `rotation_costs` of its level and hoisting (double-hoisted, a giant step is a
mod-down and a decomposition more than a baby step: about 2 to 3 of them, in rows read) and
`key_cost` baby steps per Galois key (default 1: among near-equal plans, fewer keys).  A dense
n×n matrix gets n1 ≈ √(n·(giant + key)/(baby + key)); a few scattered diagonals get n1 = slots
(all hoisted).

**Scales.**  The diagonals are encoded at the scale that makes the one rescale at the end land
exactly on the output level's default scale (for an input at the scale the transform was
prepared for, by default the level's default scale), so its result adds to any default-scale
ciphertext there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from ren.ckks.ciphertext import Ciphertext, Plaintext, settle_scale
from ren.ckks.circuits.bsgs import (
    HOISTING,
    KEY_COST,
    _check_diagonals,
    baby_steps_for,
    diagonals_of,
    giant_chains,
    horner_order,
    horner_steps,
    rotation_costs,
)
from ren.ckks.circuits.coeffdiag import CoefficientDiagonals
from ren.ckks.circuits.inputs import ready
from ren.ckks.encoder import Encoder
from ren.ckks.errors import OutOfLevelsError, ScaleMismatchError, ScaleOutOfBoundsError
from ren.ckks.evaluator import Evaluator
from ren.ckks.params import CKKSParams, log2_exact, normalize_scale, scale_arg, scale_difference
from ren.errors import (
    ParameterError,
    check_choice,
    check_instance,
    check_int_range,
    check_real_range,
    check_sequence,
)
from ren.node import Node
from ren.poly import Poly, realize_polys
from ren.realization import current_recorder
from ren.ring import galois_element
from ren.rlwe.automorphism import hoisted_automorphisms_qp
from ren.rlwe.keys import GaloisKey
from ren.rlwe.keyswitch import decompose, inner_product, mod_down, times_p

#: a transform's hoisting unless prepared with another (`LinearTransform(hoisting=)`): single,
#: because on Ren's "cpu" device double hoisting's products on Q·P (K/L more rows, and the
#: 31-bit special primes' shorter product sums) cost more than the NTTs of the mod-downs it saves
#: (measured: 128×128 at N = 2^14, 114 -> 161 ms; bootstrapping's CoeffToSlot at N = 4096,
#: 305 -> 313 ms); double hoisting is as precise or more (+0.2 to +0.8 bits) and divides far
#: fewer polynomials by P
DEFAULT_HOISTING = "single"


#: single hoisting with coefficient-form diagonals gives each giant step's inner sum its own
#: buffer (`LinearTransform._single`), so no kernel holds all of a transform's expanded
#: diagonals at once; False only to measure what that saves (tests/test_bootstrap_memory.py)
GIANT_STEP_BUFFERS = True


#: how a transform stores its diagonals (`LinearTransform(diagonals=)`): "rns", encoded
#: plaintexts (limbs × N words each, ready to multiply), or "coeff", their integer coefficients
#: (N·8 bytes each), expanded to limbs at every application (a TO_RNS and an NTT more)
DIAGONAL_FORMS = ("rns", "coeff")


def hoisting_arg(hoisted: Any, who: str) -> Literal[True] | str:
    """`hoisted` checked: True (the transform's own hoisting, `LinearTransform.hoisting`), or
    one of `HOISTING` (False is "none")."""
    if hoisted is True:
        return True
    if hoisted is False:
        return "none"
    if isinstance(hoisted, str) and hoisted in HOISTING:
        return hoisted
    raise ParameterError(f"{who} must be True or False (the transform's hoisting or none), or "
                         f"one of {', '.join(map(repr, HOISTING))}, got "
                         f"{type(hoisted).__name__} {hoisted!r}"[:300])


class LinearTransform:
    """A plaintext linear map on the slots, prepared once: its diagonals pre-rotated for
    baby-step giant-step and encoded at `level` (default: the top) for inputs of scale
    `input_scale` (default: that level's default scale), applied with `hoisting` (`HOISTING`,
    default `DEFAULT_HOISTING`) unless `apply` is told otherwise.  n1 (`baby_steps`) is planned
    by `baby_steps_for` with the `rotation_costs` of the level and hoisting and `key_cost` baby
    steps per Galois key (default `KEY_COST`), unless given.  `diagonals` (`DIAGONAL_FORMS`):
    "rns" (the default) keeps the encoded plaintexts, L limbs × N words each, and the given
    diagonals; "coeff" keeps each one's integer coefficients only (`coefficient_words`, N × 2
    words below 2^62: L/2 times less) and expands them in every application's graph (a TO_RNS
    and an NTT of L limbs per diagonal: more time, the same results to the bit); its
    `diagonals` are decoded from them at each read (`ren.ckks.circuits.coeffdiag`).  See the
    module docstring."""

    def __init__(self, params: CKKSParams, matrix_or_diagonals: Any, level: int | None = None,
                 input_scale: Fraction | float | None = None,
                 baby_steps: int | None = None, key_cost: float | None = None,
                 hoisting: str | None = None, diagonals: str = "rns") -> None:
        if not isinstance(params, CKKSParams):
            raise ParameterError(f"LinearTransform needs CKKSParams, got {type(params).__name__}")
        self.params = params
        slots = params.slots
        self.level = params.depth if level is None else params.check_level(level)
        if self.level == 0:
            raise OutOfLevelsError("LinearTransform: a transform uses one level (its rescale); "
                                   "level 0 has none left")
        self.input_scale = (params.scale(self.level) if input_scale is None
                            else params.check_scale(
                                scale_arg(input_scale, "LinearTransform: input_scale"),
                                self.level, "LinearTransform: input_scale"))
        #: how `apply` rotates by default (`HOISTING`)
        self.hoisting: str = DEFAULT_HOISTING if hoisting is None else check_choice(
            hoisting, "LinearTransform: hoisting", HOISTING)
        #: how the diagonals are stored (`DIAGONAL_FORMS`)
        self.diagonal_form: str = check_choice(diagonals, "LinearTransform: diagonals",
                                               DIAGONAL_FORMS)
        key_cost = KEY_COST if key_cost is None else check_real_range(
            key_cost, "LinearTransform: key_cost", 0.0,
            hint="what one Galois key costs, in baby steps (0: time only)")
        if isinstance(matrix_or_diagonals, Mapping):
            diags = _check_diagonals(matrix_or_diagonals, slots)
        else:
            diags = diagonals_of(matrix_or_diagonals, slots)
            if not diags:
                raise ParameterError("LinearTransform: the matrix is zero")
        indices = sorted(diags)
        if baby_steps is None:
            baby, giant = rotation_costs(params, self.level, self.hoisting)
            n1 = baby_steps_for(indices, slots, baby, giant, key_cost * baby)
        else:
            n1 = check_int_range(baby_steps, "LinearTransform: baby_steps", 1, slots)
        self.baby_steps = n1
        #: the output's scale: exactly the default scale of the level below
        self.output_scale = params.scale(self.level - 1)
        P = math.prod(params.rescale_moduli(self.level))
        self.plaintext_scale = params.check_scale(
            normalize_scale(self.output_scale * P / self.input_scale), self.level,
            "LinearTransform: the diagonals' encoding scale", fix_small=lambda: (
                f"the input scale 2^{log2_exact(self.input_scale):.2f} is more than level "
                f"{self.level}'s primes (2^{log2_exact(Fraction(P)):.2f}) above the output's "
                f"2^{log2_exact(self.output_scale):.2f}; rescale the input first"))
        self._encoder = Encoder(params)
        #: ``diagonals="coeff"``: the stored coefficients (nothing else of the diagonals is kept)
        self._coeff = (CoefficientDiagonals(params, self.level, self.plaintext_scale, n1,
                                            self.hoisting == "double")
                       if self.diagonal_form == "coeff" else None)
        #: "rns": the diagonals as given, {i: d_i} (`diagonals`)
        self._diagonals: dict[int, np.ndarray] = {} if self._coeff is not None else diags
        #: giant step g -> {baby step b: rot_(−g·n1)(d_(g·n1+b)) encoded}: on Q for single
        #: hoisting (it never reads the special primes' rows), views of `extended` for double;
        #: with ``diagonals="coeff"`` a read-only mapping that makes a fresh lazy plaintext
        #: from `coefficient_words` on every read (nothing keeps its limbs)
        self.plaintexts: dict[int, Mapping[int, Plaintext]] = {}
        #: the same integer polynomials on Q·P (where double hoisting multiplies them by the
        #: baby steps' inner products): prepared for a double-hoisted transform only (a single-
        #: hoisted one applied with ``hoisted="double"`` encodes them then, `_qp_diagonal`)
        self.extended: dict[int, dict[int, Poly]] = {}
        #: ``diagonals="coeff"``: giant step g -> {baby step b: the BUFFER node of the diagonal's
        #: integer coefficients, packed in two's-complement u32 words (N × W)}
        self.coefficient_words: dict[int, dict[int, Node]] = (
            self._coeff.words if self._coeff is not None else {})
        encoded: dict[int, dict[int, Plaintext]] = {}
        for i in indices:
            g, b = divmod(i, n1)
            pre, coeffs = self._encoded(i, diags[i])
            if self._coeff is not None:
                self._coeff.store(g, b, coeffs)
                continue
            if self.hoisting == "double":
                qp = self._on(coeffs, params.ring_qp(self.level))
                self.extended.setdefault(g, {})[b] = qp
                poly = qp.to_ring(params.ring(self.level))
            else:
                poly = self._on(coeffs, params.ring(self.level))
            encoded.setdefault(g, {})[b] = Plaintext(
                poly, self.plaintext_scale, self.level, params).keep_values(pre)
        self.plaintexts.update(encoded)
        if self._coeff is not None:
            self.plaintexts.update({g: self._coeff.group(g) for g in self.coefficient_words})
        # prepared once: the encoded diagonals are realized now (on Q·P, the plaintexts reading
        # their limbs of Q, or on Q alone), not in every application; except while a JIT
        # capture or the key planner traces (they must not realize: the diagonals are then part
        # of the traced graph)
        if current_recorder() is None:
            realize_polys(self.diagonal_polys)

    @property
    def diagonals(self) -> Mapping[int, np.ndarray]:
        """{i: d_i}, the transform's nonzero diagonals (N/2 slots each): "rns", the dict of the
        values given (repeated to N/2 slots); "coeff", a read-only mapping that decodes each
        from its stored coefficients at every read: the values the transform applies, the
        given ones to within N/(2·Δ_pt) and float64's rounding (`ren.ckks.circuits.coeffdiag`),
        nothing kept."""
        return self._coeff.diagonals() if self._coeff is not None else self._diagonals

    def _encoded(self, i: int, d: np.ndarray) -> tuple[np.ndarray, Any]:
        """(rot_(−g·n1)(d), its integer coefficients at the plaintext scale) for diagonal
        i = g·n1 + b, or ScaleOutOfBoundsError if they reach Q/2."""
        g = i // self.baby_steps
        pre = np.roll(d, g * self.baby_steps)  # slot j gets slot j − g·n1
        coeffs = self._encoder.coefficients(pre, self.plaintext_scale)
        if 2 * max(abs(c) for c in coeffs) >= self.params.ring(self.level).Q:
            raise ScaleOutOfBoundsError(
                f"LinearTransform: diagonal {i} encoded at 2^"
                f"{log2_exact(self.plaintext_scale):.2f} reaches Q/2 at level "
                f"{self.level}; use smaller entries or prepare the transform for an input "
                "of a larger scale")
        return pre, coeffs

    def _on(self, coeffs: Any, ring: Any) -> Poly:
        return Poly.from_coefficients(coeffs, ring, device=self.params.device).ntt()

    def _qp_diagonal(self, g: int, b: int) -> Poly:
        """The diagonal of giant step g, baby step b on Q·P (double hoisting's operand): the
        prepared one, or for a single-hoisted transform encoded now (kept, realized, when no
        capture traces)."""
        group = self.extended.get(g, {})
        if b in group:
            return group[b]
        if self._coeff is not None:
            return self._coeff.expand(g, b, self.params.ring_qp(self.level))
        i = g * self.baby_steps + b
        qp = self._on(self._encoded(i, self._diagonals[i])[1], self.params.ring_qp(self.level))
        if current_recorder() is None:
            realize_polys([qp])
            self.extended.setdefault(g, {})[b] = qp
        return qp

    @property
    def diagonal_polys(self) -> list[Poly]:
        """The polynomials that hold the prepared diagonals' words: on Q·P (`extended`) for
        double hoisting, on Q (the plaintexts) for single hoisting or none; none with
        ``diagonals="coeff"`` (`coefficient_words` holds them)."""
        if self.diagonal_form == "coeff":
            return []
        if self.hoisting == "double":
            return [qp for group in self.extended.values() for qp in group.values()]
        return [pt.poly for group in self.plaintexts.values() for pt in group.values()]

    @property
    def nbytes(self) -> int:
        """Bytes of the prepared diagonals: 4-byte words, limbs × N each (`diagonal_polys`),
        or with ``diagonals="coeff"`` N × W each (`coefficient_words`; W = 2 below 2^62)."""
        if self._coeff is not None:
            return self._coeff.nbytes
        return sum(4 * p.ring.limbs * p.ring.N for p in self.diagonal_polys)

    @property
    def rotation_steps(self) -> list[int]:
        """The left-rotation steps the transform uses (mod the slot count): its baby steps and
        the giant steps' Horner keys (`giant_chains`)."""
        return sorted(set(self._babies()) | set(self._giant_keys()))

    def _babies(self) -> list[int]:
        return sorted({b for group in self.plaintexts.values() for b in group if b})

    def _chains(self) -> tuple[list[int], list[int]]:
        return giant_chains(self.plaintexts, self.baby_steps, self.params.slots)

    def _key(self, g: int) -> int:
        """Giant step g of `giant_chains` as a key of `plaintexts` (a negative one is
        g + slots/n1)."""
        return g if g >= 0 else g + self.params.slots // self.baby_steps

    def _group(self, g: int) -> Mapping[int, Plaintext]:
        return self.plaintexts[self._key(g)]

    def _giant_keys(self) -> set[int]:
        slots, n1 = self.params.slots, self.baby_steps
        return {step % slots for chain in self._chains() for step in horner_steps(chain, n1)}

    @property
    def decompositions(self) -> int:
        """Key-switching decompositions one (single- or double-) hoisted application makes: one
        shared by the baby steps (if there are any), one per giant step g ≥ 1 (a rotation of
        the Horner chain each)."""
        return int(bool(self._babies())) + sum(1 for g in self.plaintexts if g)

    @property
    def mod_downs(self) -> int:
        """Polynomials one application with the transform's `hoisting` divides by P.  Double
        hoisting: the c1 of each giant rotation whose running sum has a key-switched part (a
        baby rotation, or an earlier giant rotation), and both parts of the result once (if
        anything was rotated at all); single hoisting or none: both parts of every rotation,
        2·(baby steps + giant steps g ≥ 1)."""
        giants = sum(1 for g in self.plaintexts if g)
        if self.hoisting != "double":
            return 2 * (len(self._babies()) + giants)
        count = 0
        for chain in self._chains():
            switched = False  # whether the running sum has a c1 on Q·P
            for g, step in horner_order(chain, 1):
                if step:
                    count += switched
                    switched = True  # (the key's inner product)
                if g is not None:
                    switched = switched or any(self._group(g))  # a baby rotation
        return count + 2 * bool(self.rotation_steps)

    def matrix(self, n: int | None = None) -> np.ndarray:
        """The dense slots×slots matrix (or its top-left n×n block) this transform applies, from
        `diagonals` (with ``diagonals="coeff"`` decoded from the coefficients)."""
        slots = self.params.slots
        n = slots if n is None else check_int_range(n, "LinearTransform.matrix: n", 1, slots)
        if slots % n:
            raise ParameterError(f"LinearTransform.matrix: n must divide the slot count {slots} "
                                 f"(the transform acts on blocks of n slots), got {n}")
        out = np.zeros((n, n), dtype=complex)
        rows = np.arange(n)
        for i, d in self.diagonals.items():
            out[rows, (rows + i) % n] += d[:n]
        return out

    def apply(self, ev: Evaluator, ct: Ciphertext, hoisted: bool | str = True) -> Ciphertext:
        """M·ct, one level below the transform's level, at that level's default scale.
        `hoisted`: True (the default) applies the transform's `hoisting`; "double" shares one
        decomposition among the baby steps and divides by P once per giant step; "single"
        shares the decomposition only; False or "none" rotates the baby steps one by one (a
        decomposition each), for comparison.

        A ciphertext above the transform's level is dropped to it; an auto-mode evaluator
        (`linear_transform`) also brings its scale to the transform's input scale, for
        free, as `Evaluator.add` meets two operands (an integer product and a rescale from one
        level above).  A ciphertext below
        the transform's level, or at its level with another scale, cannot be fitted: prepare
        the transform for it (``level=ct.level, input_scale=ct.scale``)."""
        return linear_transform(ev, ct, self, hoisted)

    def _fit(self, ev: Evaluator, ct: Ciphertext) -> Ciphertext:
        """`ct` dropped to the transform's level, after checking its parameters, level and
        scale."""
        if ct.params != self.params:
            raise ParameterError("LinearTransform: the ciphertext has other parameters than the "
                                 "transform")
        if ct.level < self.level:
            raise OutOfLevelsError(
                f"linear_transform: the transform was prepared for level {self.level}, the "
                f"ciphertext is at level {ct.level}; prepare it with level={ct.level}")
        above = ct.level > self.level
        ct = ev.drop_level(ct, self.level)
        if ct.scale != self.input_scale:
            how = ("use an auto-mode evaluator (it brings the ciphertext, from its higher level, "
                   "to the input scale for free)" if above else
                   "pass a ciphertext from a higher level through an auto-mode evaluator (it "
                   "reaches the input scale there for free)")
            raise ScaleMismatchError(
                f"linear_transform: the ciphertext's scale and the transform's input scale "
                f"differ: {scale_difference(ct.scale, self.input_scale)}; prepare the transform "
                f"with input_scale=ct.scale, or {how}")
        return ct

    # -- the three ways to apply it -------------------------------------------------------------
    def _single(self, ev: Evaluator, ct: Ciphertext, rotated: Mapping[int, Ciphertext]
                ) -> Ciphertext:
        """Baby-step giant-step from the baby rotations `rotated` (b -> rot_b(ct)): each giant
        step a full rotation."""
        n1, slots = self.baby_steps, self.params.slots
        acc: Ciphertext | None = None
        for chain in self._chains():
            run: Ciphertext | None = None
            for g, step in horner_order(chain, n1):
                if step:  # the running sum moved on by one key's step
                    assert run is not None
                    run = ev.rotate(run, step % slots)
                if g is None:
                    continue
                inner: Ciphertext | None = None
                for b, pt in sorted(self._group(g).items()):
                    term = ev.multiply_plain(rotated[b] if b else ct, pt)
                    inner = term if inner is None else ev.add(inner, term)
                assert inner is not None
                if self.diagonal_form == "coeff" and GIANT_STEP_BUFFERS:
                    # one buffer per giant step: coefficient diagonals are values the graph
                    # computes (TO_RNS, NTT), and without this pass 5 fuses every giant step's
                    # c0 products into one kernel that holds all of the transform's diagonals
                    # at once (n16's levels shape: 511 diagonals, ~6 GiB of arena)
                    inner = Ciphertext(tuple(p.contiguous() for p in inner.parts), inner.scale,
                                       inner.level, inner.params)
                run = inner if run is None else ev.add(run, inner)
            if run is not None:
                acc = run if acc is None else ev.add(acc, run)
        assert acc is not None
        return settle_scale(ev.rescale(acc), self.output_scale)

    def _double(self, ev: Evaluator, ct: Ciphertext, c0_p: Poly,
                rotated: Mapping[int, tuple[Poly, Poly]]) -> Ciphertext:
        """Double hoisting from the baby steps on Q·P, b -> (P·σ_b(c0) + u0, u1), and c0_p =
        P·c0 on Q·P (module docstring): each inner sum is a c0 on Q·P, a c1 on Q·P (the baby
        steps) and on Q (the plaintext times c1, for b = 0); a giant step divides its c1 by P
        (its decomposition needs c1 on Q) and adds its key's inner product on Q·P to the rotated
        c0; the sum is divided by P once, then rescaled."""
        p, level, n1, slots = self.params, ct.level, self.baby_steps, self.params.slots
        c1 = ct.c1
        acc: list[Poly | None] = [None] * 3  # c0 on Q·P, c1 on Q·P, c1 on Q
        for chain in self._chains():
            run: list[Poly | None] = [None] * 3
            for g, step in horner_order(chain, n1):
                if step:  # the running sum rotated on Q·P: its c1 divided by P, key-switched
                    step %= slots
                    key = _rotation_key(ev, step)
                    e0, e1, q1 = run
                    assert e0 is not None  # every term has a c0
                    c1_q = _plus(None if e1 is None else mod_down(e1, p, level), q1)
                    assert c1_q is not None
                    k0, k1 = inner_product(decompose(c1_q.rotate(step), p, level), key, level)
                    run = [e0.rotate(step) + k0, k1, None]
                if g is None:
                    continue
                for b, pt in sorted(self._group(g).items()):
                    ext = self._qp_diagonal(self._key(g), b)
                    terms: tuple[Poly | None, ...]
                    if b:
                        v0, v1 = rotated[b]
                        terms = (ext * v0, ext * v1, None)
                    else:
                        terms = (ext * c0_p, None, pt.poly * c1)
                    run = [_plus(x, y) for x, y in zip(run, terms, strict=True)]
            acc = [_plus(x, y) for x, y in zip(acc, run, strict=True)]
        e0, e1, q1 = acc
        assert e0 is not None and (e1 is not None or q1 is not None)
        out0 = mod_down(e0, p, level)
        out1 = _plus(None if e1 is None else mod_down(e1, p, level), q1)
        assert out1 is not None
        scale = p.check_scale(normalize_scale(ct.scale * self.plaintext_scale), level,
                              "linear_transform")
        out = Ciphertext((out0, out1), scale, level, p)
        return settle_scale(ev.rescale(out), self.output_scale)


def _plus(x: Poly | None, y: Poly | None) -> Poly | None:
    return y if x is None else x if y is None else x + y


def _rotation_key(ev: Evaluator, step: int) -> GaloisKey:
    g = galois_element(ev.params.N, step)
    assert ev.rotation_keys is not None  # (`_apply` checked)
    return ev.rotation_keys.for_galois(g, f"rotation step {step} (Galois element {g})")


def _apply(ev: Evaluator, ct: Ciphertext, transforms: Sequence[LinearTransform], mode: str
           ) -> list[Ciphertext]:
    """The transforms of `ct` (explicit evaluator; `ct` fitted to their level and scale), the
    baby rotations shared by all of them (one decomposition) unless `mode` is "none"."""
    babies = sorted({b for lt in transforms for b in lt._babies()})
    rotates = bool(babies) or any(g for lt in transforms for g in lt.plaintexts)
    # Double hoisting key-switches with the evaluator's keys itself; an evaluator without keys
    # (one that records rotations instead: the key planner), or a ciphertext of three parts,
    # takes the single-hoisted path, whose rotations raise or record as the evaluator does.
    # Without any rotation the two are the same arithmetic: the single path, on Q only.
    if mode == "double" and (not rotates or ct.size != 2 or ev.rotation_keys is None):
        mode = "single"
    if mode == "double":
        keys = [_rotation_key(ev, b) for b in babies]
        sigmas = [lambda c, b=b: c.rotate(b) for b in babies]
        on_qp = dict(zip(babies, hoisted_automorphisms_qp(ct.parts, keys, ct.level, sigmas),
                         strict=True))
        c0_p = times_p(ct.c0, ct.params, ct.level)  # (the same node as the babies' own)
        return [lt._double(ev, ct, c0_p, on_qp) for lt in transforms]
    if mode == "single":
        rotated = ev.rotate_hoisted(ct, babies) if babies else {}
        return [lt._single(ev, ct, rotated) for lt in transforms]
    out = []
    for lt in transforms:
        out.append(lt._single(ev, ct, {b: ev.rotate(ct, b) for b in lt._babies()}))
    return out


def linear_transform(ev: Evaluator, ct: Ciphertext, transform: Any,
                     hoisted: bool | str = True) -> Ciphertext:
    """M·ct for a `LinearTransform` (prepared once, reused), a square matrix whose size divides
    N/2, or a dict {i: diagonal i} (prepared here for ct's level and scale); one level, the
    rotation keys of the transform's `rotation_steps`; `hoisted` as in `LinearTransform.apply`.
    `Evaluator.linear_transform` is this function.  An auto-mode evaluator first rescales an
    unrescaled product (relinearizing a three-part ciphertext) and brings a ciphertext from
    above the transform's level to its input scale for free (`Evaluator.align`); the transform
    itself places its rescale on the explicit view.  The result has its level's default
    scale."""
    check_instance(ev, Evaluator, "linear_transform: ev")
    ct = ev.check_ciphertext(ct, op="linear_transform")
    mode = hoisting_arg(hoisted, "linear_transform: hoisted")
    if not isinstance(transform, LinearTransform):
        ct = ready(ev, ct)
        transform = LinearTransform(ev.params, transform, ct.level, ct.scale)
    elif ev.auto and (ct.level != transform.level or ct.scale != transform.input_scale):
        ct = ready(ev, ct)  # then meet the transform's level and input scale
        if ct.scale != transform.input_scale and ct.level > transform.level:
            ct = ev.align(ct, transform.level, transform.input_scale)
    x = ev.explicit()
    return _apply(x, transform._fit(x, ct), [transform],
                  transform.hoisting if mode is True else mode)[0]


def apply_transforms(ev: Evaluator, ct: Ciphertext, transforms: Sequence[LinearTransform],
                     hoisted: bool | str = True) -> list[Ciphertext]:
    """[M·ct for M in transforms], prepared for one level and input scale, with one
    decomposition of ct shared by all of their baby steps (a baby step two transforms share is
    made once): e.g. the real and imaginary halves of a CoeffToSlot.  `hoisted` as in
    `LinearTransform.apply` (True: the first transform's `hoisting`).  An auto-mode evaluator
    first brings ct to their level and input scale (`Evaluator.align`, free) and relinearizes a
    three-part ct."""
    check_instance(ev, Evaluator, "apply_transforms: ev")
    mode = hoisting_arg(hoisted, "apply_transforms: hoisted")
    items = check_sequence(transforms, "apply_transforms: transforms", 1,
                           hint="a list of LinearTransforms prepared for one level and scale")
    lts = [check_instance(lt, LinearTransform, f"apply_transforms: transforms[{i}]")
           for i, lt in enumerate(items)]
    first = lts[0]
    for i, lt in enumerate(lts[1:], start=1):
        if (lt.params, lt.level, lt.input_scale) != (first.params, first.level,
                                                      first.input_scale):
            raise ParameterError(
                f"apply_transforms: transforms[{i}] was prepared for another parameter set, "
                f"level or input scale than transforms[0] (level {lt.level} vs {first.level}); "
                "prepare them alike, or apply them one by one")
    ct = ev.check_ciphertext(ct, op="apply_transforms")
    if ev.auto:  # as linear_transform meets one transform
        if ct.size == 3:
            ct = ev.relinearize(ct)
        if ct.level > first.level:
            ct = ev.align(ct, first.level, first.input_scale)
        ev = ev.explicit()
    return _apply(ev, first._fit(ev, ct), lts, first.hoisting if mode is True else mode)


__all__ = ["DEFAULT_HOISTING", "DIAGONAL_FORMS", "HOISTING", "KEY_COST", "LinearTransform",
           "apply_transforms", "baby_steps_for", "diagonals_of", "giant_chains", "hoisting_arg",
           "horner_steps", "linear_transform", "rotation_costs"]
