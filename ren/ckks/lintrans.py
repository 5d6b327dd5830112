"""Linear transforms on CKKS slots: the diagonal method with baby-step giant-step and hoisted
rotations.

    lt = LinearTransform(params, M)              # an n×n matrix, n | N/2 (x replicated N/2/n times)
    lt = LinearTransform(params, {0: d0, 1: d1, -1: dm1})   # or its nonzero diagonals
    y = ev.linear_transform(ct, lt)               # M·x in every n-slot block, one level used
    lt.rotation_steps                             # the Galois keys it needs

**Diagonals.**  (M·x)_j = Σ_i d_i[j]·x_(j+i) with d_i[j] = M[j][(j+i) mod n]: M·x is Σ_i d_i ⊙
rot_i(x).  A matrix of size n < N/2 acts on each n-slot block of a vector that repeats x (its
diagonals repeat too), so rot_i(x) is x rotated within every block.

**Baby-step giant-step.**  With i = g·n1 + b (0 ≤ b < n1), Σ_i d_i ⊙ rot_i(x) =
Σ_g rot_(g·n1)( Σ_b rot_(−g·n1)(d_i) ⊙ rot_b(x) ): the n1 − 1 baby rotations rot_b(x) are made
once, the plaintext diagonals are pre-rotated when the transform is prepared, and each giant
step g ≥ 1 costs one rotation.  n1 is chosen by a cost count (`baby_steps_for`): about √n for a
dense n×n matrix, all of them for a few scattered diagonals.

**Hoisting.**  The baby rotations all rotate the same ciphertext, so they share one key-switching
decomposition (`Evaluator.rotate_hoisted`): a dense n×n transform makes n2 = n/n1 decompositions
(one for the babies, one per giant step g ≥ 1) instead of n1 + n2 − 2.

**Scales.**  The diagonals are encoded at the scale that makes the one rescale at the end land
exactly on the output level's default scale (for an input at the scale the transform was
prepared for, by default the level's default scale), so its result adds to any default-scale
ciphertext there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from ren.ckks.ciphertext import Ciphertext, Plaintext, settle_scale
from ren.ckks.encoder import Encoder
from ren.ckks.errors import OutOfLevelsError, ScaleMismatchError
from ren.ckks.params import CKKSParams, log2_exact, normalize_scale, scale_arg, scale_difference
from ren.errors import (
    ParameterError,
    check_bool,
    check_instance,
    check_int_range,
    check_sequence,
)
from ren.poly import realize_polys
from ren.realization import current_recorder
from ren.ring.ringspec import MAX_LOG_N

if TYPE_CHECKING:  # the evaluator imports this module
    from ren.ckks.evaluator import Evaluator

#: The most slots a transform acts on (N/2 at Ren's largest ring).
MAX_SLOTS = 1 << (MAX_LOG_N - 1)


def diagonals_of(matrix: Any, slots: int) -> dict[int, np.ndarray]:
    """The nonzero generalized diagonals of a square matrix (size n dividing `slots`), each
    repeated to `slots` entries: {i: d_i} with d_i[j] = M[j mod n][(j + i) mod n]."""
    slots = check_int_range(slots, "diagonals_of: slots", 1, MAX_SLOTS)
    m = _numbers(matrix, "LinearTransform: the matrix")
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ParameterError(f"LinearTransform: a matrix must be square, got shape {m.shape}")
    n = m.shape[0]
    if n == 0 or slots % n:
        raise ParameterError(f"LinearTransform: the matrix size {n} must divide the slot count "
                             f"{slots} (pad the matrix to a power of two, and replicate x)")
    if not np.all(np.isfinite(m)):
        raise ParameterError("LinearTransform: the matrix holds a non-finite value (NaN or "
                             "infinity)")
    rows = np.arange(n)
    out = {}
    for i in range(n):
        d = m[rows, (rows + i) % n].astype(complex)
        if np.any(d != 0):
            out[i] = np.tile(d, slots // n)
    return out


def _numbers(values: Any, what: str) -> np.ndarray:
    """`values` as a NumPy array of numbers (ints, floats, complex; never bools, strings or
    objects: one rule with `ren.errors.check_number`), or a ParameterError naming `what`."""
    if isinstance(values, str | bytes):
        raise ParameterError(f"{what} must hold numbers, got {type(values).__name__} "
                             f"{values[:20]!r}")
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as e:  # ragged nesting, odd objects
        raise ParameterError(f"{what} must be an array of numbers, got {type(values).__name__} "
                             f"({e})") from None
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
        raise ParameterError(f"{what} must hold numbers (int, float or complex), got "
                             f"{arr.dtype}" + (" (flags, not numbers)" if arr.dtype == np.bool_
                                               else ""))
    return arr


def _check_diagonals(diagonals: Mapping[Any, Any], slots: int) -> dict[int, np.ndarray]:
    out: dict[int, np.ndarray] = {}
    if len(diagonals) > slots:
        raise ParameterError(f"LinearTransform: {len(diagonals)} diagonals, but {slots} slots "
                             f"have only {slots} distinct ones (indices mod {slots})")
    for i, d in diagonals.items():
        if isinstance(i, bool) or not isinstance(i, int | np.integer):
            raise ParameterError(f"LinearTransform: diagonal indices must be ints, got {i!r}")
        v = _numbers(d, f"LinearTransform: diagonal {i}").astype(complex).ravel()
        if len(v) == 0 or slots % len(v):
            raise ParameterError(f"LinearTransform: diagonal {i} has {len(v)} entries; give "
                                 f"{slots} (or a divisor of {slots}, repeated)")
        if not np.all(np.isfinite(v)):
            raise ParameterError(f"LinearTransform: diagonal {i} holds a non-finite value")
        k = int(i) % slots
        if k in out:
            raise ParameterError(f"LinearTransform: diagonals {i} and another index ≡ {k} "
                                 f"(mod {slots}) are the same diagonal")
        if np.any(v != 0):
            out[k] = np.tile(v, slots // len(v))
    if not out:
        raise ParameterError("LinearTransform: every diagonal is zero")
    return out


def baby_steps_for(indices: list[int], slots: int) -> int:
    """n1, the power of two that makes the transform cheapest: a baby step is a hoisted
    rotation (a permutation, an inner product with its key and a mod-down), a giant step adds
    its own decomposition, about as much again; among equal costs, fewer keys, then larger n1.
    A dense n×n matrix gets n1 ≈ √n; a few scattered diagonals get n1 = slots (all hoisted)."""
    slots = check_int_range(slots, "baby_steps_for: slots", 1, MAX_SLOTS)
    indices = [check_int_range(i, "baby_steps_for: a diagonal index", 0, slots - 1)
               for i in check_sequence(indices, "baby_steps_for: indices", 1, slots)]
    best: tuple[int, int, int] | None = None
    for e in range(slots.bit_length()):
        n1 = 1 << e
        babies = len({i % n1 for i in indices} - {0})
        giants = len({i // n1 for i in indices} - {0})
        key = (babies + 2 * giants, babies + giants, -n1)
        if best is None or key < best:
            best = key
    assert best is not None
    return -best[2]


class LinearTransform:
    """A plaintext linear map on the slots, prepared once: its diagonals pre-rotated for
    baby-step giant-step and encoded at `level` (default: the top) for inputs of scale
    `input_scale` (default: that level's default scale).  See the module docstring."""

    def __init__(self, params: CKKSParams, matrix_or_diagonals: Any, level: int | None = None,
                 input_scale: Fraction | float | None = None,
                 baby_steps: int | None = None) -> None:
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
        if isinstance(matrix_or_diagonals, Mapping):
            diags = _check_diagonals(matrix_or_diagonals, slots)
        else:
            diags = diagonals_of(matrix_or_diagonals, slots)
            if not diags:
                raise ParameterError("LinearTransform: the matrix is zero")
        indices = sorted(diags)
        n1 = (baby_steps_for(indices, slots) if baby_steps is None
              else check_int_range(baby_steps, "LinearTransform: baby_steps", 1, slots))
        self.baby_steps = n1
        self.diagonals = diags
        #: the output's scale: exactly the default scale of the level below
        self.output_scale = params.scale(self.level - 1)
        P = math.prod(params.rescale_moduli(self.level))
        self.plaintext_scale = params.check_scale(
            normalize_scale(self.output_scale * P / self.input_scale), self.level,
            "LinearTransform: the diagonals' encoding scale", fix_small=lambda: (
                f"the input scale 2^{log2_exact(self.input_scale):.2f} is more than level "
                f"{self.level}'s primes (2^{log2_exact(Fraction(P)):.2f}) above the output's "
                f"2^{log2_exact(self.output_scale):.2f}; rescale the input first"))
        enc = Encoder(params)
        #: giant step g -> {baby step b: rot_(−g·n1)(d_(g·n1+b)) encoded}
        self.plaintexts: dict[int, dict[int, Plaintext]] = {}
        for i in indices:
            g, b = divmod(i, n1)
            pre = np.roll(diags[i], g * n1)  # rot_(−g·n1): slot j gets slot j − g·n1
            self.plaintexts.setdefault(g, {})[b] = enc.encode(pre, self.level,
                                                              self.plaintext_scale)
        # prepared once: the encoded diagonals are realized now, not in every application;
        # except while a JIT capture or the key planner traces (they must not realize: the
        # diagonals are then part of the traced graph)
        if current_recorder() is None:
            realize_polys([pt.poly for group in self.plaintexts.values()
                           for pt in group.values()])

    @property
    def rotation_steps(self) -> list[int]:
        """The left-rotation steps the transform uses: its baby and giant steps."""
        babies = {b for group in self.plaintexts.values() for b in group if b}
        giants = {g * self.baby_steps for g in self.plaintexts if g}
        return sorted(babies | giants)

    @property
    def decompositions(self) -> int:
        """Key-switching decompositions one application makes: one shared by the baby steps
        (if there are any), one per giant step g ≥ 1."""
        babies = any(b for group in self.plaintexts.values() for b in group)
        return int(babies) + sum(1 for g in self.plaintexts if g)

    def matrix(self, n: int | None = None) -> np.ndarray:
        """The dense slots×slots matrix (or its top-left n×n block) this transform applies."""
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

    def apply(self, ev: Evaluator, ct: Ciphertext, hoisted: bool = True) -> Ciphertext:
        """M·ct, one level below the transform's level, at that level's default scale.
        ``hoisted=False`` rotates the baby steps one by one (a decomposition each), for
        comparison.

        A ciphertext above the transform's level is dropped to it; an auto-mode evaluator
        (`Evaluator.linear_transform`) also brings its scale to the transform's input scale, for
        free, as `Evaluator.add` meets two operands (an integer product and a rescale from one
        level above).  A ciphertext below
        the transform's level, or at its level with another scale, cannot be fitted: prepare
        the transform for it (``level=ct.level, input_scale=ct.scale``)."""
        from ren.ckks.evaluator import Evaluator  # (the evaluator imports this module)

        check_instance(ev, Evaluator, "linear_transform: ev")
        hoisted = check_bool(hoisted, "linear_transform: hoisted")
        if ev.auto:  # meets the transform's level and input scale, then applies it explicitly
            return ev.linear_transform(ct, self, hoisted)
        ct = ev._ct(ct)
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
        n1 = self.baby_steps
        babies = sorted({b for group in self.plaintexts.values() for b in group})
        rotated = (ev.rotate_hoisted(ct, babies) if hoisted
                   else {b: ev.rotate(ct, b) for b in babies})
        acc: Ciphertext | None = None
        for g, group in sorted(self.plaintexts.items()):
            inner: Ciphertext | None = None
            for b, pt in sorted(group.items()):
                term = ev.multiply_plain(rotated[b], pt)
                inner = term if inner is None else ev.add(inner, term)
            assert inner is not None
            if g:
                inner = ev.rotate(inner, g * n1)
            acc = inner if acc is None else ev.add(acc, inner)
        assert acc is not None
        return settle_scale(ev.rescale(acc), self.output_scale)


__all__ = ["LinearTransform", "baby_steps_for", "diagonals_of"]
