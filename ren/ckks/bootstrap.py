"""CKKS bootstrapping on Poly ops: ModRaise, CoeffToSlot, EvalMod, SlotToCoeff.

    params = bootstrap_params_small()               # N = 256, INSECURE: tests and examples
    bt = Bootstrapper(params)                       # transforms prepared, EvalMod fitted
    keys = bt.keys(keygen)                          # the Galois keys it uses (and conjugation)
    ev = Evaluator(params, keygen.relin_key(), keys)
    fresh = bt.bootstrap(ev, ct)                    # ct at level 0 -> bt.output_level

A ciphertext at level 0 holds m under Q_0.  **ModRaise** reads its parts in the full modulus Q_L
(a basis extension of each part): they now encrypt t = m + Q_0·I for a small integer polynomial
I (|I| ≤ K; K depends on the secret's Hamming weight h, see `bound_K`).  **CoeffToSlot** is the
linear map from slots to coefficients: the slots of the raised ciphertext are z = U·t/Δ_0 (U the
canonical embedding), and t = (Uᴴ z + Uᵀ z̄)/N, so two ciphertexts with slots t_j/Δ_0 (the first
and second halves of the coefficients, real) are two pairs of linear transforms of z and of its
conjugate.  **EvalMod** maps y = t_j/Δ_0 to (K_0/2π)·sin(2π·y/K_0) ≈ m_j/Δ_0 (K_0 = Q_0/Δ_0): a
Chebyshev fit of cos(2π(y/K_0 − 1/4)/2^r) on [−(K+1)·K_0, (K+1)·K_0], then r double-angle steps
cos 2θ = 2cos²θ − 1 (sin = cos shifted by a quarter period).  **SlotToCoeff** puts the
coefficients back: the result's slots are U·m/Δ_0 = the original slots, and the constant
K_0/2π is folded into its matrices (no level).

Levels used: 1 (CoeffToSlot) + 1 + ⌈log2(degree+1)⌉ + r (EvalMod) + 1 (SlotToCoeff).  Every
stage is `Evaluator` code in the explicit mode (linear transforms with hoisted baby steps,
`evaluate_polynomial`), so the whole bootstrapping is one lazy graph through the twelve passes,
on any device, and `ren.jit` can capture it.

Scales.  The input of EvalMod is t/Δ_0 with |t| up to about K·Q_0, and the transform into it
needs its plaintext entries at a precision of ~40 bits, which a chain whose level primes are
about the working scale gives only when that scale is large: bootstrapping parameters use a
60-bit scale (two 30-bit primes per level) and K_0 = 2^15 (first_bits = 75).

**Not yet** (issue 19): CoeffToSlot and SlotToCoeff are *dense* transforms (N/2 diagonals each),
fine up to N = 2^12; the factored special FFT that larger rings need, the N = 2^16 preset, the
arcsine correction and sparse-secret encapsulation are missing.  Messages must stay within
|x| ≤ 1 at the level-0 scale (m/Q_0 small for the sine), and |I| ≤ K holds with overwhelming
probability, not surely: beyond it EvalMod returns garbage, which no check can see without the
secret key.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from ren.ckks.ciphertext import Ciphertext, settle_scale
from ren.ckks.encoder import embed
from ren.ckks.errors import InsecureParametersWarning, OutOfLevelsError, ScaleMismatchError
from ren.ckks.evaluator import Evaluator
from ren.ckks.lintrans import LinearTransform
from ren.ckks.params import CKKSParams
from ren.ckks.polyeval import chebyshev_coefficients, depth_of
from ren.errors import ParameterError
from ren.rlwe.keygen import KeyGenerator
from ren.rlwe.keys import GaloisKeys

#: the largest ring the dense CoeffToSlot / SlotToCoeff transforms are built for
MAX_DENSE_N = 1 << 12


def bootstrap_params_small(device: str = "python") -> CKKSParams:
    """The small bootstrapping preset: N = 256 (128 slots), a 60-bit scale, 14 levels, a sparse
    secret of weight 16.  **INSECURE** (a toy ring): bootstraps in seconds, for tests and
    examples.  A bootstrapping uses 12 levels of it: 2 are left after each."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return CKKSParams(N=256, depth=14, scale_bits=60, first_bits=75,
                          secret=("sparse", 16), insecure=True, device=device)


def bound_K(params: CKKSParams) -> int:
    """A bound on |I| in t = m + Q_0·I after ModRaise.  Each coefficient of c_1·s is a sum of h
    terms ±c_1,k with c_1,k uniform in [0, 2Q_0) (the basis extension of [0, Q_0) adds up to one
    Q_0): its standard deviation is about Q_0·√(h/3); 7 of those plus 2 for c_0 (and rounding)
    fail with probability far below 2^-40 per coefficient."""
    h = params.hamming_weight if params.hamming_weight is not None else 2 * params.N // 3
    return math.ceil(2 + 7 * math.sqrt(h / 3))


class Bootstrapper:
    """Bootstrapping for one parameter set (see the module docstring): the prepared transforms,
    the fitted EvalMod polynomial, the levels it uses and the keys it needs."""

    def __init__(self, params: CKKSParams, degree: int = 31, double_angles: int = 4,
                 K: int | None = None) -> None:
        if not isinstance(params, CKKSParams):
            raise ParameterError(f"Bootstrapper needs CKKSParams, got {type(params).__name__}")
        if params.N > MAX_DENSE_N:
            raise ParameterError(
                f"Bootstrapper: N = {params.N} is above {MAX_DENSE_N}, the largest ring the dense "
                "CoeffToSlot/SlotToCoeff transforms are built for (the factored special FFT for "
                "larger rings is not implemented yet); use bootstrap_params_small()")
        self.params, self.degree, self.double_angles = params, degree, double_angles
        self.K = bound_K(params) if K is None else K
        self.evalmod_levels = 1 + depth_of(degree) + double_angles
        self.levels_used = 1 + self.evalmod_levels + 1
        if params.depth < self.levels_used:
            raise OutOfLevelsError(
                f"Bootstrapper: bootstrapping uses {self.levels_used} levels (CoeffToSlot 1, "
                f"EvalMod {self.evalmod_levels}, SlotToCoeff 1), the parameters have "
                f"{params.depth}; use more depth (bootstrap_params_small() has 14)")
        self.output_level = params.depth - self.levels_used
        N, slots = params.N, params.slots
        self.Q0 = params.ring(0).Q
        self.K0 = float(Fraction(self.Q0) / params.scale(0))
        U = np.stack([embed(np.eye(N)[k], N) for k in range(N)], axis=1)  # slots × N
        A, B = U.conj().T / N, U.T / N  # t = A·z + B·conj(z)
        self._cts_mats = (A[:slots], B[:slots], A[slots:], B[slots:])
        self._cts: dict[Fraction, tuple[LinearTransform, ...]] = {}
        half = (self.K + 1) * self.K0
        self.interval = (-half, half)
        r, K0 = double_angles, self.K0
        self.coeffs = chebyshev_coefficients(
            lambda y: np.cos(2 * np.pi * (y / K0 - 0.25) / 2 ** r), degree, self.interval)
        stc_level = params.depth - 1 - self.evalmod_levels
        c = K0 / (2 * np.pi)
        self._stc = tuple(LinearTransform(params, M * c, stc_level, params.scale(stc_level))
                          for M in (U[:, :slots], U[:, slots:]))
        self._cts_for(params.scale(0))

    def _cts_for(self, scale: Fraction) -> tuple[LinearTransform, ...]:
        """The CoeffToSlot transforms for inputs of `scale` (the level-0 ciphertext's)."""
        if scale not in self._cts:
            self._cts[scale] = tuple(LinearTransform(self.params, M, self.params.depth, scale)
                                     for M in self._cts_mats)
        return self._cts[scale]

    @property
    def rotation_steps(self) -> list[int]:
        """The rotation steps every bootstrapping uses (conjugation too)."""
        steps: set[int] = set()
        for lt in (*self._cts_for(self.params.scale(0)), *self._stc):
            steps.update(lt.rotation_steps)
        return sorted(steps)

    def keys(self, keygen: KeyGenerator, progress: bool = False) -> GaloisKeys:
        """The Galois keys of `rotation_steps` and conjugation."""
        if keygen.params != self.params:
            raise ParameterError("Bootstrapper.keys: the key generator has other parameters")
        return keygen.rotation_keys(self.rotation_steps, conjugate=True,
                                    progress=progress)

    # -- the four stages --------------------------------------------------------------------------
    def mod_raise(self, ct: Ciphertext) -> Ciphertext:
        """The level-0 ciphertext read modulo the whole chain: it encrypts m + Q_0·I."""
        if ct.level != 0:
            raise OutOfLevelsError(f"mod_raise: expects a level-0 ciphertext, got level "
                                   f"{ct.level} (drop it to level 0 first)")
        top = self.params.ring(self.params.depth)
        parts = tuple(c.intt().to_ring(top).ntt() for c in ct.parts)
        return Ciphertext(parts, ct.scale, self.params.depth, self.params)

    def coeff_to_slot(self, ev: Evaluator, raised: Ciphertext) -> tuple[Ciphertext, Ciphertext]:
        """Two ciphertexts whose slots are the raised plaintext's coefficients t_j/Δ_0, the
        first N/2 and the last N/2 (real values)."""
        ev = ev.explicit()
        a_r, b_r, a_s, b_s = self._cts_for(raised.scale)
        conj = ev.conjugate(raised)
        first = ev.add(ev.linear_transform(raised, a_r), ev.linear_transform(conj, b_r))
        second = ev.add(ev.linear_transform(raised, a_s), ev.linear_transform(conj, b_s))
        return first, second

    def eval_mod(self, ev: Evaluator, ct: Ciphertext) -> Ciphertext:
        """Slots y -> sin(2π·y/K_0) (the factor K_0/2π is SlotToCoeff's)."""
        ev = ev.explicit()
        v = ev.evaluate_polynomial(ct, list(self.coeffs), basis="chebyshev",
                                   interval=self.interval)
        for _ in range(self.double_angles):  # cos 2θ = 2cos²θ − 1
            v = ev.add_scalar(ev.multiply_int(ev.rescale(ev.square(v)), 2), -1)
        return v

    def slot_to_coeff(self, ev: Evaluator, first: Ciphertext, second: Ciphertext) -> Ciphertext:
        """The ciphertext whose coefficients are the slot values of (first, second), times K_0/2π:
        its slots are the message's again."""
        ev = ev.explicit()
        u1, u2 = self._stc
        out = ev.add(ev.linear_transform(first, u1), ev.linear_transform(second, u2))
        return settle_scale(out, self.params.scale(out.level))

    def bootstrap(self, ev: Evaluator, ct: Ciphertext) -> Ciphertext:
        """`ct` refreshed to `output_level`.  EvalMod's period is K_0 = Q_0/Δ_0 for Δ_0 the
        level-0 default scale, so the input must reach level 0 at exactly that scale: from a
        higher level it gets there for free (an integer product and a rescale from level 1);
        a level-0 ciphertext at another scale raises ScaleMismatchError."""
        if not isinstance(ev, Evaluator) or ev.params != self.params:
            raise ParameterError("bootstrap: needs an Evaluator of the bootstrapper's parameters")
        ct = ev._ct(ct)
        if ct.size != 2:
            ct = ev.relinearize(ct)
        x = ev.explicit()
        target = self.params.scale(0)
        while x._is_product(ct):  # an unrescaled product
            ct = x.rescale(ct)
        if ct.level > 0:
            ct = x._reach(ct, 0, target)
        if ct.scale != target:
            raise ScaleMismatchError(
                f"bootstrap: the level-0 ciphertext has scale 2^{ct.log2_scale:.4f}, EvalMod is "
                f"fitted to 2^{math.log2(target):.4f} (params.scale(0)); bootstrap it from a "
                "higher level (it is brought to that scale for free) or encode at scale(0)")
        raised = self.mod_raise(ct)
        first, second = self.coeff_to_slot(ev, raised)
        return self.slot_to_coeff(ev, self.eval_mod(ev, first), self.eval_mod(ev, second))

    def plaintext_eval_mod(self) -> Callable[[np.ndarray], np.ndarray]:
        """EvalMod's plaintext counterpart: the exact centred reduction of y·Δ_0 mod Q_0, in slot
        units (y ↦ y − K_0·round(y/K_0)), for tests."""
        K0 = self.K0
        return lambda y: y - K0 * np.round(y / K0)


__all__ = ["MAX_DENSE_N", "Bootstrapper", "bootstrap_params_small", "bound_K"]
