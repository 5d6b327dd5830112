"""CKKS bootstrapping on Poly ops: ModRaise, CoeffToSlot, EvalMod, SlotToCoeff.

    params = bootstrap_params_small()               # N = 256, INSECURE: tests and examples
    bt = Bootstrapper(params)                       # transforms prepared, EvalMod fitted
    keys = bt.keys(keygen)                          # the Galois keys it uses (and conjugation)
    ev = Evaluator(params, keygen.relin_key(), keys)
    fresh = bt.bootstrap(ev, ct)                    # ct at level >= 1 (or 0 at bt.input_scale)

**The input.**  A ciphertext reaches level 0 at the scale Δ_in = Q_0/K_0 (`input_scale`,
K_0 = 2^message_ratio_bits), far below the levels' scale Δ: `bootstrap` takes a ciphertext at
level 1 or above there for free (an integer product and a rescale).  **ModRaise** reads its parts
in the full modulus Q_L (a basis extension of each part): they now encrypt t = m + Q_0·I for a
small integer polynomial I (|I| ≤ K; K depends on the secret's Hamming weight h, see `bound_K`).

**CoeffToSlot** applies U⁻¹, the inverse special FFT (`ren.ckks.special_fft`), factored into
`cts_levels` sparse linear transforms (baby-step giant-step, hoisted rotations), to the slots
z = U·(t_lo + i·t_hi)/Δ_in: the result w holds the coefficients (in bit-reversed order, which
the slot-wise EvalMod does not mind), and w ± conj(w) (one conjugation; −i· by the free
monomial X^(N/2)) split it into two ciphertexts of real slots t_lo and t_hi, divided by EvalMod's
range (K + 1)·K_0 so that they lie in [−1, 1].  That factor sits in the first transform, whose
input scale Δ_in is small, so its plaintexts keep their precision.

**EvalMod** maps u = y/((K + 1)·K_0) (y = t_j/Δ_in) to sin(2π·y/K_0) ≈ (2π/K_0)·m_j/Δ_in: a
Chebyshev fit on [−1, 1] of cos(2π(y/K_0 − 1/4)/2^r), then r double-angle steps
cos 2θ = 2cos²θ − 1 (sin = cos shifted by a quarter period).  The sine is within (2π·y/K_0)²/6
of the identity relative to y, and y is a *coefficient*: slots uniform in [−1, 1] give
coefficients of about √(2/N), so K_0 can be small (`default_message_ratio_bits`: 2^12 at
N = 256, 2^6 at N = 2^16), and every bit less of K_0 is a bit more precision (below).
**SlotToCoeff** puts the coefficients back: v_lo + i·v_hi through U (again factored, into
`stc_levels` transforms, with the constant K_0/2π folded in): the slots are the message's.

**Parts.**  The Bootstrapper composes three parameter objects, each documenting its levels and
precision: `ren.ckks.circuits.dft.CoeffToSlotParams` and `SlotToCoeffParams` (the transforms'
levels) and `ren.ckks.circuits.evalmod.EvalModParams` (the approximation); pass your own with
``cts=``, ``stc=``, ``eval_mod=`` (another EvalMod is a subclass that overrides `fit`: the
evalmod module's docstring shows a plain sine in four lines).

**Sparse slots.**  ``Bootstrapper(params, slots=n)`` bootstraps n = 2^k < N/2 slots (a
message encoded with ``Encoder.encode(z, slots=n)``): a sub-sum after ModRaise, n×n transforms,
and for n ≤ N/4 one EvalMod instead of two (`ren.ckks.circuits.dft`); fewer Galois keys and
key switches, the same levels.

Levels used: cts_levels + ⌈log2(degree+1)⌉ + r + stc_levels.  Every stage is `Evaluator` code
in the explicit mode, so the whole bootstrapping is one lazy graph through the twelve passes, on
any device, and `ren.jit` can capture it.

**Precision.**  An error δ in u becomes (K + 1)·K_0·δ in y: CoeffToSlot is exact to about
2^-47 (float64 encoding is the floor, ~2^-50; a small Δ_in keeps its first plaintexts precise),
and SlotToCoeff adds log2 √(N/2) bits of error growth.  Measured (slots uniform in [−1, 1]):
28.4 bits at N = 256 (h = 16, K_0 = 2^12); at N = 4096 with the n16 preset's shape (h = 192,
58-bit scale, 3 + 3 transform levels) 18.9 bits with K_0 = 2^15, 24.5 with 2^9; at N = 2^16
(`bootstrap_params_n16`, K_0 = 2^6, a dense secret with encapsulation) 21.3 bits, 23.2 with
a sparse h = 192 secret, in 20–29 s on one core (by machine; 0.13–0.15× DESILO's time in the
same run: benchmarks/README.md).

**Range.**  The small default K_0 assumes spread-out slots: a message whose coefficients are
large (a constant vector x has coefficient 0 equal to x) loses (2π·|y|/K_0)²/6 relatively, 9
bits for |y| = 1 at K_0 = 2^6; pass ``message_ratio_bits=15`` for such data (2^-27).  Messages
must stay within |x| ≤ 1 at Δ_in (m/Q_0 small for the sine), and |I| ≤ K
holds with overwhelming probability, not surely: beyond it EvalMod returns garbage, which no
check can see without the secret key.  **Not yet** (issue 19): the arcsine correction.
**More bits**: `ren.ckks.circuits.metabts.MetaBootstrapper` bootstraps the error once more
(Meta-BTS: 28 → 50.7 bits at the small preset, 21.1 → 41–43 with n16's shape at N = 2^13;
twice the time, one level or none with ``keep_level=True``).

**Secrets.**  ModRaise's |I| grows with the secret's Hamming weight: a dense ternary secret (the
HE standard's assumption, `bootstrap_params_n16`'s) is switched to an ephemeral sparse one just
for ModRaise (sparse-secret encapsulation, `ren.ckks.encapsulation`, on by default for a dense
secret: `bootstrap` then needs `encapsulation_keys(keygen)`); a sparse secret is used as it is.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ren.ckks.ciphertext import Ciphertext, settle_scale
from ren.ckks.circuits.dft import CoeffToSlotParams, SlotToCoeffParams
from ren.ckks.circuits.evalmod import EvalModParams, SymmetricEvalModParams
from ren.ckks.circuits.inputs import ready
from ren.ckks.circuits.lintrans import LinearTransform
from ren.ckks.encapsulation import DEFAULT_WEIGHT, Encapsulation, EncapsulationKeys
from ren.ckks.errors import (
    InsecureParametersWarning,
    MissingKeyError,
    OutOfLevelsError,
    ParamsMismatchError,
    ScaleMismatchError,
)
from ren.ckks.evaluator import Evaluator
from ren.ckks.operations import operation
from ren.ckks.params import CKKSParams, scale_difference
from ren.errors import ParameterError, check_bool, check_instance, check_int_range, is_int
from ren.poly import Domain, Poly
from ren.ring.ringspec import MAX_LOG_N, RingSpec
from ren.rlwe.keygen import KeyGenerator
from ren.rlwe.keys import GaloisKeys


def bootstrap_params_small(device: str = "python", N: int = 256,
                           secret: str | tuple[str, int] = ("sparse", 16)) -> CKKSParams:
    """The small bootstrapping preset: N = 256 (128 slots; `N` up to 4096), a 60-bit scale,
    14 levels, a sparse secret of weight 16.  **INSECURE** (a toy ring): bootstraps in seconds,
    for tests and examples.  A bootstrapping uses 12 levels of it: 2 are left after each.
    ``secret="ternary"`` makes the secret dense, as at N = 2^16: `Bootstrapper` then
    encapsulates (`ren.ckks.encapsulation`) and uses 13 levels, so the preset has 15 and
    leaves 2 again."""
    if not is_int(N) or int(N) not in SMALL_RING_DEGREES:
        raise ParameterError(f"bootstrap_params_small: N must be one of {SMALL_RING_DEGREES}, "
                             f"got {N!r}; bootstrap_params_n16() is the N = 2^16 preset")
    dense = isinstance(secret, str) and secret == "ternary"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return CKKSParams(N=int(N), depth=15 if dense else 14, scale_bits=60,
                          first_bits=62, secret=secret, insecure=True, device=device)


#: the ring degrees `bootstrap_params_small` takes
SMALL_RING_DEGREES = (256, 512, 1024, 2048, 4096)


def bootstrap_params_n16(device: str = "python",
                         secret: str | tuple[str, int] = "ternary") -> CKKSParams:
    """The N = 2^16 bootstrapping preset (2^15 slots): a 58-bit scale, 25 levels, 8 special
    primes: log2(QP) ≤ 1772, the HE-standard bound for 128-bit security with a uniform ternary
    secret, which is what the preset draws.  `Bootstrapper(params, cts_levels=3,
    stc_levels=3)` then encapsulates (an ephemeral sparse secret of weight 32, only inside
    bootstrapping and only modulo Q_0·P': `ren.ckks.encapsulation`), uses 15 levels and leaves
    10 to the user; measured 21.3 bits for slots uniform in [−1, 1].

    ``secret=("sparse", 192)`` is the older choice: no encapsulation, 16 levels used and 9
    left, 23.2 bits (the sparse secret's smaller rounding noise), but h = 192 is below the
    standard's assumption: sparse secrets are open to hybrid attacks, and the lattice
    estimator puts h = 192 at N = 2^16 with this modulus somewhat below 128 bits (Lattigo's
    sparse defaults use a smaller log2(QP) for this reason)."""
    return CKKSParams(N=1 << 16, depth=25, scale_bits=58, first_bits=62, special_primes=8,
                      secret=secret, device=device)


def default_message_ratio_bits(N: int) -> int:
    """log2 K_0 for slots in [−1, 1] at ring degree N: 16 − ⌊log2(N)/2⌋ up to N = 2^12, then
    one less per doubling, down to 6 at N = 2^16.  The sine's error grows as (y/K_0)² with
    coefficients y ~ √(2/N); the errors before EvalMod grow as K_0 (CoeffToSlot's, and the
    rescales' rounding noise at its input): this follows the measured optima, 2^12 at N = 256
    and 2^10 at N = 2^12 (the small preset: 27.7 bits, 26.1 at 2^9), 2^5–2^6 at N = 2^16 (a
    sparse h = 192 secret: 21.6 bits at 2^8, 23.2 at 2^6; a dense one with encapsulation:
    19.4 at 2^8, 21.3 at 2^6 and 2^5); 2^13..2^15 in between, not measured."""
    N = check_int_range(N, "default_message_ratio_bits: N", 4, 1 << MAX_LOG_N)
    if N & (N - 1):
        raise ParameterError(f"default_message_ratio_bits: N must be a power of two, got {N}")
    log_n = N.bit_length() - 1
    return 16 - log_n // 2 if log_n <= 12 else 22 - log_n


def bound_K(params: CKKSParams, weight: int | None = None) -> int:
    """A bound on |I| in t = m + Q_0·I after ModRaise, for a secret of Hamming weight
    `weight` (default: the parameters' secret's; 2N/3 for a dense ternary one).  The parts are
    lifted to their centred representatives, so each coefficient of c_1·s is a sum of h terms
    ±c_1,k with c_1,k about uniform in [−Q_0/2, Q_0/2): mean 0, standard deviation Q_0·√(h/12).
    Seven of those plus one for c_0 and the rounding fail with probability about 2^-38 per
    coefficient (a normal tail).
    (Without the centring, the fast basis extension's lift to [0, 2Q_0) gives a mean of
    (Σ s_k)·Q_0 and twice the deviation: measured |I| = 39 at h = 64, N = 1024.)"""
    check_instance(params, CKKSParams, "bound_K: params")
    if weight is not None:
        check_int_range(weight, "bound_K: weight", 0, params.N,
                        hint="0 or None: the parameters' own secret's")
    h = weight if weight else params.hamming_weight
    h = h if h is not None else 2 * params.N // 3
    return math.ceil(1 + 7 * math.sqrt(h / 12))


def centred_lift(x: Poly, ring: RingSpec) -> Poly:
    """`x` (COEFF domain, a ring whose moduli are all in `ring`) in `ring` with every
    coefficient its centred representative in [−⌊Q/2⌋, Q − ⌊Q/2⌋), exactly.  TO_RING alone uses
    the fast basis extension, whose lift is off by a multiple of Q below the number of limbs;
    a lift from one modulus is exact, so this goes limb by limb (Garner's mixed radix:
    x = v_1 + q_1·(v_2 + q_2·(…)), each digit v_i an exact lift from q_i), after adding ⌊Q/2⌋
    to every coefficient (and taking it off again in `ring`)."""
    check_instance(x, Poly, "centred_lift: x")
    check_instance(ring, RingSpec, "centred_lift: ring")
    if x.domain is not Domain.COEFF:
        raise ParameterError("centred_lift: x must be in the COEFF domain (lift x.intt())")
    src = x.ring
    if src.N != ring.N:
        raise ParameterError(f"centred_lift: the target ring has N={ring.N}, x has N={src.N}")
    if not set(src.moduli) <= set(ring.moduli):
        raise ParameterError("centred_lift: the target ring must contain the source's moduli")
    half = [src.Q // 2] * src.N
    shifted = x + Poly.from_coefficients(half, src, device=x.device)
    acc: Poly | None = None
    prefix = 1
    for q in src.moduli:
        limb = RingSpec(src.N, (q,))
        digit = shifted.to_ring(limb) if acc is None else shifted.to_ring(limb) - acc.to_ring(limb)
        if prefix != 1:
            digit = digit * pow(prefix, -1, q)
        term = digit.to_ring(ring) if prefix == 1 else digit.to_ring(ring) * prefix
        acc = term if acc is None else acc + term
        prefix *= q
    assert acc is not None
    # ⌊Q/2⌋ made in `ring` itself: its TO_RING would not be exact either
    return acc - Poly.from_coefficients(half, ring, device=x.device)


class Bootstrapper:
    """Bootstrapping for one parameter set (see the module docstring), composed of three
    parameter objects a researcher can swap: `EvalModParams` (the approximation of the modular
    reduction: ``eval_mod=``), `CoeffToSlotParams` and `SlotToCoeffParams` (the transforms'
    levels: ``cts=``, ``stc=``); each states its levels and precision.  The keyword shortcuts
    (degree, double_angles, cts_levels, stc_levels) make the default ones.

    Args:
        cts_levels / stc_levels: levels (sparse linear transforms) of CoeffToSlot and
            SlotToCoeff: more levels, fewer rotations (or ``cts=``/``stc=`` objects).
        degree: the Chebyshev degree of the cosine fit (depth ⌈log2(degree + 1)⌉).  None (the
            default): `default_eval_mod`, degree 31 up to N = 2^12 and above it the symmetric
            form of degree 30 (`SymmetricEvalModParams`: the same levels, 9 products instead
            of 13 per EvalMod); a degree given makes the plain cosine of that degree.
        double_angles: r, the double-angle steps after it (one level each); default: the
            fewest that bring the cosine's argument within ±9 radians, where a degree-31 fit
            is exact to about 2^-45 (r = 3 for K = 10, 5 for K = 29); for the symmetric form
            the fewest whose fit is within 2^-40 (the same r at degree 30).
        K: the bound on |I| EvalMod covers (default `bound_K`).
        message_ratio_bits: log2 of K_0 = Q_0/Δ_in, Δ_in the scale the input must have at
            level 0 (`input_scale`); default `default_message_ratio_bits(N)`.
        ephemeral_weight: the Hamming weight of the ephemeral sparse secret of sparse-secret
            encapsulation (`ren.ckks.encapsulation`; 0: none).  Default: 32 when the
            parameters' secret is dense (ternary), 0 when it is sparse already.  With it,
            `bootstrap` needs the keys of `encapsulation_keys`.
        eval_mod: an `EvalModParams` (or a subclass: another approximation) instead of
            degree/double_angles.
        cts / stc: a `CoeffToSlotParams` / `SlotToCoeffParams` instead of cts_levels /
            stc_levels.
        slots: n, the slots bootstrapped (a power of two, default N/2).  With n < N/2 the
            message must be replicated N/(2n) times (``Encoder.encode(z, slots=n)``: a
            polynomial in X^(N/2n)); CoeffToSlot first sums the raised ciphertext over the
            replicas (log2(N/2n) rotations), then both transforms work on n×n matrices
            (log2(n) butterfly stages, rotations within n): fewer keys and key switches.
            A message that is not replicated comes back as the average of its N/(2n) blocks.
        diagonals: how the transforms store their plaintext diagonals (or the ``diagonals``
            field of ``cts=``/``stc=``): "rns" (default), encoded on each transform's level's
            moduli, ready to multiply; "coeff", integer coefficients (N·8 bytes each, 10 to 25
            times less at N = 2^16: 158 MiB instead of 2.93 GiB) expanded in the graph at every
            bootstrapping (a TO_RNS and an NTT per diagonal, the expanded limbs in the arena
            only while used): the lean mode's memory for some time, bit-identical results.
        cts_split: which CoeffToSlot transforms take a butterfly stage more when its levels do
            not divide the stages (`ren.ckks.circuits.dft.SPLITS`): "first" merges the stages
            SlotToCoeff's transforms merge, so the two share their rotations and Galois keys
            (the ``levels`` preset).
        key_cost: baby steps charged per Galois key when the transforms choose their baby
            steps, counting the Horner giant steps' few keys (`dft.planned_baby_steps`);
            None: `LinearTransform`'s planner.  A large one trades giant steps (time) for keys
            (memory).
    """

    def __init__(self, params: CKKSParams, degree: int | None = None,
                 double_angles: int | None = None, K: int | None = None,
                 cts_levels: int = 2, stc_levels: int = 2,
                 message_ratio_bits: int | None = None, ephemeral_weight: int | None = None,
                 *, eval_mod: EvalModParams | None = None, cts: CoeffToSlotParams | None = None,
                 stc: SlotToCoeffParams | None = None, slots: int | None = None,
                 diagonals: str = "rns", cts_split: str = "last",
                 key_cost: float | None = None) -> None:
        if not isinstance(params, CKKSParams):
            raise ParameterError(f"Bootstrapper needs CKKSParams, got {type(params).__name__}")
        # every argument is checked before any work (the fit, the transforms' encodings)
        self.params = params
        #: the slots bootstrapped: N/2, or n < N/2 for a message replicated N/(2n) times
        self.slots = _slots(params, slots)
        self.ephemeral_weight = _ephemeral_weight(params, ephemeral_weight)
        cts = _part(cts, CoeffToSlotParams, "cts", cts_levels=cts_levels, diagonals=diagonals,
                    cts_split=cts_split, key_cost=key_cost)
        stc = _part(stc, SlotToCoeffParams, "stc", stc_levels=stc_levels, diagonals=diagonals,
                    key_cost=key_cost)
        self.cts_params = cts.checked(self.slots)
        self.stc_params = stc.checked(self.slots)
        evalmod = (default_eval_mod(params, degree, double_angles) if eval_mod is None else
                   _part(eval_mod, EvalModParams, "eval_mod", double_angles=double_angles,
                         **({} if degree is None else {"degree": degree})))
        self.eval_mod_params = evalmod.checked(params)
        K = _range_K(params, K, self.ephemeral_weight)
        message_ratio_bits = _message_ratio_bits(params, message_ratio_bits, self.slots)
        #: sparse-secret encapsulation (None: ModRaise under the parameters' own secret)
        self.encapsulation = (Encapsulation(params, self.ephemeral_weight)
                              if self.ephemeral_weight else None)
        self.cts_levels, self.stc_levels = int(cts.levels), int(stc.levels)
        self.evalmod_levels = evalmod.levels(K)
        self.levels_used = self.cts_levels + self.evalmod_levels + self.stc_levels
        if params.depth < self.levels_used:
            raise OutOfLevelsError(
                f"Bootstrapper: bootstrapping uses {self.levels_used} levels (CoeffToSlot "
                f"{self.cts_levels}, EvalMod {self.evalmod_levels}, SlotToCoeff "
                f"{self.stc_levels}), the parameters have {params.depth}; use more depth or "
                "fewer transform levels")
        self.output_level = params.depth - self.levels_used
        #: the fitted EvalMod (K, K_0, the polynomial, the double angles)
        self.evalmod = evalmod.build(params, K, message_ratio_bits,
                                     params.depth - self.cts_levels - self.stc_levels)
        if self.evalmod.levels != self.evalmod_levels:
            raise ParameterError(
                f"Bootstrapper: {type(evalmod).__name__}.levels(K) said "
                f"{self.evalmod_levels} levels, but its build() uses {self.evalmod.levels}; "
                "make levels() agree with the EvalMod it builds")
        top = params.depth
        # CoeffToSlot: U⁻¹ (bit-reversed output) / (2·half); the 1/2 because Re and Im are
        # then w' ± conj(w')
        # (sparse slots: and the sub-sum's factor N/(2n))
        half = self.evalmod.interval[1] * (params.slots // self.slots)
        self.coeff_to_slot_stage = cts.build(params, self.slots, top, 1 / (2 * half),
                                             self.input_scale)
        # SlotToCoeff: U (bit-reversed input) · K_0/2π
        self.slot_to_coeff_stage = stc.build(params, self.slots,
                                             top - self.cts_levels - self.evalmod_levels,
                                             self.evalmod.output_factor)

    # -- what the parts decided -------------------------------------------------------------------
    @property
    def K(self) -> int:
        """The bound on |I| EvalMod covers."""
        return self.evalmod.K

    @property
    def K0(self) -> float:
        """K_0 = Q_0/Δ_in, EvalMod's period in slot units."""
        return self.evalmod.K0

    @property
    def Q0(self) -> int:
        return self.evalmod.Q0

    @property
    def message_ratio_bits(self) -> int:
        return self.evalmod.message_ratio_bits

    @property
    def input_scale(self) -> Fraction:
        """The scale a level-0 input must have (`bootstrap` brings higher levels to it)."""
        return self.evalmod.input_scale

    @property
    def interval(self) -> tuple[float, float]:
        """EvalMod's input range in slot units: y = t/Δ_0 with |t| <= (K + 1)·Q_0."""
        return self.evalmod.interval

    @property
    def degree(self) -> int:
        return self.evalmod.degree

    @property
    def double_angles(self) -> int:
        return self.evalmod.double_angles

    @property
    def coeffs(self) -> np.ndarray:
        """EvalMod's Chebyshev coefficients on [−1, 1]."""
        return self.evalmod.coeffs

    @property
    def transforms(self) -> tuple[LinearTransform, ...]:
        """CoeffToSlot's then SlotToCoeff's linear transforms (for `input_scale`)."""
        return (*self.coeff_to_slot_stage.transforms_for(self.input_scale),
                *self.slot_to_coeff_stage.transforms)

    @property
    def rotation_steps(self) -> list[int]:
        """The rotation steps every bootstrapping uses (conjugation too)."""
        steps: set[int] = set(self.coeff_to_slot_stage.sub_sum_steps)
        for lt in self.transforms:
            steps.update(lt.rotation_steps)
        return sorted(steps)

    def keys(self, keygen: KeyGenerator, progress: bool = False) -> GaloisKeys:
        """The Galois keys of `rotation_steps` and conjugation."""
        check_instance(keygen, KeyGenerator, "Bootstrapper.keys: keygen",
                       hint="pass KeyGenerator(params)")
        progress = check_bool(progress, "Bootstrapper.keys: progress")
        if keygen.params != self.params:
            raise ParamsMismatchError("Bootstrapper.keys: the key generator has other "
                                      "parameters than the bootstrapper")
        return keygen.rotation_keys(self.rotation_steps, conjugate=True,
                                    progress=progress)

    def encapsulation_keys(self, keygen: KeyGenerator) -> EncapsulationKeys:
        """The two switching keys of sparse-secret encapsulation (a fresh ephemeral secret),
        for a bootstrapper that encapsulates (`ephemeral_weight` > 0)."""
        check_instance(keygen, KeyGenerator, "Bootstrapper.encapsulation_keys: keygen",
                       hint="pass KeyGenerator(params)")
        if self.encapsulation is None:
            raise ParameterError("Bootstrapper.encapsulation_keys: this bootstrapper does not "
                                 "encapsulate (ephemeral_weight=0: the parameters' secret is "
                                 "sparse); it needs no such keys")
        return self.encapsulation.keys(keygen)

    def _evaluator(self, ev: Evaluator, op: str) -> Evaluator:
        """`ev` (an Evaluator of these parameters) in explicit mode: the stages place their own
        rescales."""
        if not isinstance(ev, Evaluator) or ev.params != self.params:
            raise ParameterError(f"{op}: needs an Evaluator of the bootstrapper's parameters, got "
                                 f"{type(ev).__name__}")
        return ev.explicit()

    def _ciphertext(self, ct: Ciphertext, op: str) -> Ciphertext:
        check_instance(ct, Ciphertext, f"{op}: ct")
        if ct.params != self.params:
            raise ParamsMismatchError(f"{op}: the ciphertext was made under other CKKSParams "
                                      "than the bootstrapper's")
        return ct

    # -- the four stages --------------------------------------------------------------------------
    @operation
    def mod_raise(self, ct: Ciphertext) -> Ciphertext:
        """The level-0 ciphertext read modulo the whole chain: it encrypts m + Q_0·I.  Each part
        is lifted exactly to its centred representative in [−Q_0/2, Q_0/2) (`centred_lift`),
        so I is as small as the secret allows (`bound_K`)."""
        ct = self._ciphertext(ct, "mod_raise")
        if ct.level != 0:
            raise OutOfLevelsError(f"mod_raise: expects a level-0 ciphertext, got level "
                                   f"{ct.level} (drop it to level 0 first)")
        top = self.params.ring(self.params.depth)
        parts = tuple(centred_lift(c.intt(), top).ntt() for c in ct.parts)
        return Ciphertext(parts, ct.scale, self.params.depth, self.params)

    @operation
    def coeff_to_slot(self, ev: Evaluator, raised: Ciphertext) -> tuple[Ciphertext, ...]:
        """Two ciphertexts whose slots are the raised plaintext's coefficients t/Δ_0 divided
        by EvalMod's range (K + 1)·K_0: the first N/2 and the last N/2, real, each in
        bit-reversed order.  With n ≤ N/4 slots, one ciphertext: the 2n coefficients of the
        sparse plaintext (the first n in the lower n of every 2n slots, the last n above)."""
        ev = self._evaluator(ev, "coeff_to_slot")
        raised = self._ciphertext(raised, "coeff_to_slot")
        return self.coeff_to_slot_stage.apply(ev, raised)

    @operation
    def eval_mod(self, ev: Evaluator, ct: Ciphertext) -> Ciphertext:
        """Slots u = y/((K + 1)·K_0) -> sin(2π·y/K_0) (the factor K_0/2π is SlotToCoeff's)."""
        ev = self._evaluator(ev, "eval_mod")
        return self.evalmod.evaluate(ev, self._ciphertext(ct, "eval_mod"))

    @operation
    def slot_to_coeff(self, ev: Evaluator, first: Ciphertext,
                      second: Ciphertext | None = None) -> Ciphertext:
        """The ciphertext whose coefficients are the slot values of (first, second) (bit-
        reversed halves), times K_0/2π: its slots are the message's again.  With n ≤ N/4
        slots, `first` alone (packed: `coeff_to_slot` returned one ciphertext)."""
        ev = self._evaluator(ev, "slot_to_coeff")
        first = self._ciphertext(first, "slot_to_coeff")
        packed = self.slot_to_coeff_stage.packed
        if (second is None) != packed:
            raise ParameterError(
                f"slot_to_coeff: {'one ciphertext' if packed else 'two ciphertexts'} expected "
                f"at {self.slots} slots, as coeff_to_slot returned them")
        if second is not None:
            second = self._ciphertext(second, "slot_to_coeff")
        out = self.slot_to_coeff_stage.apply(ev, first, second)
        return settle_scale(out, self.params.scale(out.level))

    @operation
    def bootstrap(self, ev: Evaluator, ct: Ciphertext,
                  encapsulation_keys: EncapsulationKeys | None = None) -> Ciphertext:
        """`ct` refreshed to `output_level`.  EvalMod's period is K_0 = Q_0/Δ_in, so the input
        must reach level 0 at exactly Δ_in = `input_scale`: from a higher level it gets there
        for free (an integer product and a rescale from level 1); a level-0 ciphertext at
        another scale raises ScaleMismatchError.  A bootstrapper that encapsulates needs
        `encapsulation_keys` (`Bootstrapper.encapsulation_keys(keygen)`)."""
        self._evaluator(ev, "bootstrap")
        if encapsulation_keys is not None:
            check_instance(encapsulation_keys, EncapsulationKeys, "bootstrap: encapsulation_keys",
                           hint="make them with bt.encapsulation_keys(keygen)")
        enc = self.encapsulation
        if enc is not None and encapsulation_keys is None:
            raise MissingKeyError(
                f"bootstrap: missing the sparse-secret encapsulation keys (to_sparse, to_dense): "
                f"this bootstrapper encapsulates with an ephemeral secret of weight "
                f"{self.ephemeral_weight}; make them once with "
                "bt.encapsulation_keys(keygen) and pass encapsulation_keys=")
        if enc is None and encapsulation_keys is not None:
            raise ParameterError("bootstrap: this bootstrapper does not encapsulate "
                                 "(ephemeral_weight=0); pass no encapsulation_keys")
        ct = ev.check_ciphertext(ct, op="bootstrap")
        x = ev.explicit()
        ct = ready(x, ct, always=True)  # relinearized, an unrescaled product rescaled
        target = self.input_scale
        if ct.level > 0:  # free: an integer product and a rescale from level 1
            ct = x.align(ct, 0, target)
        if ct.scale != target:
            raise ScaleMismatchError(
                f"bootstrap: the level-0 ciphertext's scale is not the one EvalMod is fitted to "
                f"(Bootstrapper.input_scale): {scale_difference(ct.scale, target)}; bootstrap it "
                "from a higher level (it is brought to that scale for free) or encode at "
                "input_scale")
        if enc is not None:
            assert encapsulation_keys is not None
            ct = enc.to_sparse(ct, encapsulation_keys)
        raised = self.mod_raise(ct)
        if enc is not None:
            assert encapsulation_keys is not None
            raised = enc.to_dense(raised, encapsulation_keys)
        parts = self.coeff_to_slot(ev, raised)  # (one when packed: n <= N/4)
        return self.slot_to_coeff(ev, *(self.eval_mod(ev, p) for p in parts))

    def plaintext_eval_mod(self) -> Callable[[np.ndarray], np.ndarray]:
        """EvalMod's plaintext counterpart: the exact centred reduction of y·Δ_0 mod Q_0, in slot
        units (y ↦ y − K_0·round(y/K_0)), for tests."""
        return self.evalmod.plaintext()


#: the ring degree from which `default_eval_mod` is the symmetric form (the n16 preset's shape
#: at N = 2^13..2^16; the small preset, N <= 2^12, keeps the plain cosine its tests measured)
SYMMETRIC_FROM_N = 1 << 13


def default_eval_mod(params: CKKSParams, degree: int | None = None,
                     double_angles: int | None = None) -> EvalModParams:
    """`Bootstrapper`'s EvalMod for ``degree=None``: from N = `SYMMETRIC_FROM_N` on the
    symmetric form of degree 30 (`SymmetricEvalModParams`; n16's K = 13: 5 + 4 levels as the
    plain form, 9 + 4 products per EvalMod instead of 13 + 4; the n16 shape at 2^14: replay
    0.88×, `ren.ckks.circuits.presets`), below it the plain cosine of degree 31; a `degree`
    given is the plain cosine of that degree anywhere."""
    check_instance(params, CKKSParams, "default_eval_mod: params")
    if degree is None and params.N >= SYMMETRIC_FROM_N:
        return SymmetricEvalModParams(30, double_angles)
    return EvalModParams(31 if degree is None else degree, double_angles)


def _range_K(params: CKKSParams, K: int | None, weight: int) -> int:
    """EvalMod's range: `K` checked, or `bound_K` for the secret ModRaise sees."""
    if K is None:
        return bound_K(params, weight)
    return check_int_range(
        K, "Bootstrapper: K", 1, params.N,
        hint="K bounds |I| in t = m + Q_0·I after ModRaise, at most h/2 + 1 <= N/2 + 1 for a "
             "secret of weight h; the default bound_K(params) covers it with overwhelming "
             "probability")


def _message_ratio_bits(params: CKKSParams, bits: int | None, slots: int) -> int:
    """log2 K_0: `bits` checked, or the default for `slots` slots (a sparse message's
    coefficients are as large as a full one's at N = 2·slots)."""
    if bits is None:
        bits = default_message_ratio_bits(2 * slots)
    top_bits = params.ring(0).Q.bit_length() - 20
    return check_int_range(
        bits, "Bootstrapper: message_ratio_bits", 4, top_bits,
        hint=f"Q_0 has {top_bits + 20} bits and the input scale needs 20 at least")


def _slots(params: CKKSParams, slots: Any) -> int:
    """The slot count bootstrapped: N/2 by default, or a power of two n in [2, N/2]."""
    if slots is None:
        return params.slots
    hint = (f"a power of two in [2, {params.slots}] (N/2): the message is replicated "
            f"N/(2·slots) times (Encoder.encode(z, slots=slots))")
    n = check_int_range(slots, "Bootstrapper: slots", 2, params.slots, hint=hint)
    if n & (n - 1):
        raise ParameterError(f"Bootstrapper: slots must be {hint}, got {n}")
    return n


def _ephemeral_weight(params: CKKSParams, weight: int | None) -> int:
    """The encapsulation's ephemeral weight: DEFAULT_WEIGHT for a dense secret, 0 (none) for a
    sparse one, or the one given (checked)."""
    if weight is None:
        weight = DEFAULT_WEIGHT if params.hamming_weight is None else 0
    return check_int_range(weight, "Bootstrapper: ephemeral_weight", 0, params.N,
                           hint="0: no encapsulation")


def _part(obj: Any, kind: type, name: str, **shortcuts: Any) -> Any:
    """The parameter object `obj` (an instance of `kind`), or the one the keyword shortcuts
    make; a shortcut away from its default beside `obj` is an error (which would win?)."""
    if obj is None:
        return kind(**{_FIELD.get(k, k): v for k, v in shortcuts.items()})
    default = kind()
    given = [k for k, v in shortcuts.items()
             if not _same(v, getattr(default, _FIELD.get(k, k)))]
    check_instance(obj, kind, f"Bootstrapper: {name}",
                   hint=f"a {kind.__name__} (or a subclass of it)")
    if given:
        raise ParameterError(f"Bootstrapper: give {name}= or {', '.join(given)}, not both "
                             f"({name} already says them)")
    return obj


def _same(a: Any, b: Any) -> bool:
    return a is b or (type(a) is type(b) and a == b)


#: keyword shortcut -> the field of its parameter object
_FIELD = {"cts_levels": "levels", "stc_levels": "levels", "cts_split": "split"}


__all__ = ["SMALL_RING_DEGREES", "SYMMETRIC_FROM_N", "Bootstrapper", "bootstrap_params_n16",
           "bootstrap_params_small", "bound_K", "centred_lift", "default_message_ratio_bits"]
