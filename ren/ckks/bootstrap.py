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

import numpy as np

from ren.ckks.ciphertext import Ciphertext, settle_scale
from ren.ckks.encapsulation import DEFAULT_WEIGHT, Encapsulation, EncapsulationKeys
from ren.ckks.errors import (
    InsecureParametersWarning,
    MissingKeyError,
    OutOfLevelsError,
    ParamsMismatchError,
    ScaleMismatchError,
)
from ren.ckks.evaluator import Evaluator
from ren.ckks.lintrans import LinearTransform
from ren.ckks.operations import operation
from ren.ckks.params import CKKSParams, log2_exact, scale_difference
from ren.ckks.polyeval import MAX_DEGREE, chebyshev_coefficients, depth_of
from ren.ckks.special_fft import Diagonals, merge_stages, special_fft_stages
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


#: EvalMod's fit has at least this degree: a constant or a line cannot follow a cosine.
MIN_EVALMOD_DEGREE = 2
#: Bits the EvalMod fit must leave: its error on [-1, 1], times 4 per double-angle step (the
#: derivative of 2c² − 1) and SlotToCoeff's K_0/2π, must stay below 2^-FIT_BITS in slot units.
#: (The default degree-31 fit leaves about 30; below 10 the bootstrapping returns noise.)
FIT_BITS = 10


def _fit_evalmod(K: int, K0: float, r: int, degree: int, levels_left: int) -> np.ndarray:
    """The Chebyshev coefficients of EvalMod's cosine, cos(2π(u·(K + 1) − 1/4)/2^r) on [-1, 1],
    at `degree`; a ParameterError when the fit is too coarse for a meaningful bootstrapping
    (`FIT_BITS`): a degree or double-angle count too small for the range K gives garbage
    silently otherwise.  The message names the smallest degree of the form 2^k − 1 that fits
    (within `levels_left` levels), or asks for more double angles."""
    half = (K + 1) * K0

    def fn(u: np.ndarray) -> np.ndarray:
        return np.cos(2 * np.pi * (u * half / K0 - 0.25) / 2 ** r)

    def lost(d: int) -> tuple[np.ndarray, float]:
        c = chebyshev_coefficients(fn, d)
        u = np.linspace(-1.0, 1.0, max(2001, 4 * (d + 1) + 1))
        err = float(np.max(np.abs(np.polynomial.chebyshev.chebval(u, c) - fn(u))))
        return c, err * 4.0 ** r * K0 / (2 * np.pi)

    coeffs, err = lost(degree)
    if err <= 2.0 ** -FIT_BITS:
        return coeffs
    better = None
    for k in range(2, min(levels_left, 10) + 1):  # 3, 7, …, 1023: each fit cheap
        if (1 << k) - 1 > degree and lost((1 << k) - 1)[1] <= 2.0 ** -FIT_BITS:
            better = (1 << k) - 1
            break
    width = 2 * math.pi * (K + 1) / 2 ** r
    fix = (f"use degree={better}" if better is not None else
           "no degree up to 1023 fits in the levels left")
    raise ParameterError(
        f"Bootstrapper: a degree-{degree} fit of EvalMod's cosine (its argument spans ±"
        f"{width:.3g} radians with K={K} and double_angles={r}) is off by 2^"
        f"{math.log2(err) if err > 0 else -math.inf:.1f} in slot units after the {r} double "
        f"angle(s) and SlotToCoeff's K_0/2π, more than 2^-{FIT_BITS}: the bootstrapping would "
        f"return noise; {fix}, or more double_angles (each halves the argument and costs a "
        "level)")


class Bootstrapper:
    """Bootstrapping for one parameter set (see the module docstring): the prepared transforms,
    the fitted EvalMod polynomial, the levels it uses and the keys it needs.

    Args:
        cts_levels / stc_levels: levels (sparse linear transforms) of CoeffToSlot and
            SlotToCoeff: more levels, fewer rotations.
        degree: the Chebyshev degree of the cosine fit (depth ⌈log2(degree + 1)⌉).
        double_angles: r, the double-angle steps after it (one level each); default: the
            fewest that bring the cosine's argument within ±9 radians, where a degree-31 fit
            is exact to about 2^-45 (r = 3 for K = 10, 5 for K = 29).
        K: the bound on |I| EvalMod covers (default `bound_K`).
        message_ratio_bits: log2 of K_0 = Q_0/Δ_in, Δ_in the scale the input must have at
            level 0 (`input_scale`); default `default_message_ratio_bits(N)`.
        ephemeral_weight: the Hamming weight of the ephemeral sparse secret of sparse-secret
            encapsulation (`ren.ckks.encapsulation`; 0: none).  Default: 32 when the
            parameters' secret is dense (ternary), 0 when it is sparse already.  With it,
            `bootstrap` needs the keys of `encapsulation_keys`.
    """

    def __init__(self, params: CKKSParams, degree: int = 31, double_angles: int | None = None,
                 K: int | None = None, cts_levels: int = 2, stc_levels: int = 2,
                 message_ratio_bits: int | None = None,
                 ephemeral_weight: int | None = None) -> None:
        if not isinstance(params, CKKSParams):
            raise ParameterError(f"Bootstrapper needs CKKSParams, got {type(params).__name__}")
        # every argument is checked before any work (the fit, the transforms' encodings)
        if ephemeral_weight is None:
            ephemeral_weight = DEFAULT_WEIGHT if params.hamming_weight is None else 0
        ephemeral_weight = check_int_range(ephemeral_weight, "Bootstrapper: ephemeral_weight", 0,
                                           params.N, hint="0: no encapsulation")
        stages = params.slots.bit_length() - 1
        for name, v in (("cts_levels", cts_levels), ("stc_levels", stc_levels)):
            check_int_range(v, f"Bootstrapper: {name}", 1, stages,
                            hint=f"log2 of the {params.slots} slots is the most")
        degree = check_int_range(
            degree, "Bootstrapper: degree", MIN_EVALMOD_DEGREE, MAX_DEGREE,
            hint="EvalMod fits a cosine: a constant or a line cannot follow it, and above "
                 f"{MAX_DEGREE} the fit and the evaluation (about degree ciphertext products) "
                 "are out of proportion; 31 is the default")
        if K is not None:
            K = check_int_range(
                K, "Bootstrapper: K", 1, params.N,
                hint="K bounds |I| in t = m + Q_0·I after ModRaise, at most h/2 + 1 <= N/2 + 1 "
                     "for a secret of weight h; the default bound_K(params) covers it with "
                     "overwhelming probability")
        if double_angles is not None:
            double_angles = check_int_range(
                double_angles, "Bootstrapper: double_angles", 0, params.depth,
                hint="each double-angle step takes one level; None picks the fewest that keep "
                     "the cosine's argument within ±9 radians")
        if message_ratio_bits is None:
            message_ratio_bits = default_message_ratio_bits(params.N)
        top_bits = params.ring(0).Q.bit_length() - 20
        message_ratio_bits = check_int_range(
            message_ratio_bits, "Bootstrapper: message_ratio_bits", 4, top_bits,
            hint=f"Q_0 has {top_bits + 20} bits and the input scale needs 20 at least")
        #: sparse-secret encapsulation (None: ModRaise under the parameters' own secret)
        self.encapsulation = Encapsulation(params, ephemeral_weight) if ephemeral_weight \
            else None
        self.ephemeral_weight = ephemeral_weight
        self.params, self.degree = params, degree
        self.cts_levels, self.stc_levels = cts_levels, stc_levels
        self.K = bound_K(params, self.ephemeral_weight) if K is None else K
        if double_angles is None:
            double_angles = max(0, math.ceil(math.log2(2 * math.pi * (self.K + 1) / 9)))
        self.double_angles = double_angles
        self.evalmod_levels = depth_of(degree) + double_angles
        self.levels_used = cts_levels + self.evalmod_levels + stc_levels
        if params.depth < self.levels_used:
            raise OutOfLevelsError(
                f"Bootstrapper: bootstrapping uses {self.levels_used} levels (CoeffToSlot "
                f"{cts_levels}, EvalMod {self.evalmod_levels}, SlotToCoeff {stc_levels}), the "
                f"parameters have {params.depth}; use more depth or fewer transform levels")
        self.output_level = params.depth - self.levels_used
        self.Q0 = params.ring(0).Q
        self.message_ratio_bits = message_ratio_bits
        #: the scale a level-0 input must have (`bootstrap` brings higher levels to it)
        self.input_scale = Fraction(round(Fraction(self.Q0, 1 << message_ratio_bits)))
        self.K0 = float(Fraction(self.Q0) / self.input_scale)
        #: EvalMod's input range in slot units: y = t/Δ_0 with |t| <= (K + 1)·Q_0
        half = (self.K + 1) * self.K0
        self.interval = (-half, half)
        # fitted on [-1, 1]: CoeffToSlot already divides by `half` (no level for the change)
        self.coeffs = _fit_evalmod(self.K, self.K0, double_angles, degree, params.depth
                                   - cts_levels - stc_levels - double_angles)
        K0 = self.K0
        # CoeffToSlot: U⁻¹ (bit-reversed output) / (2·half); the 1/2 because Re and Im are
        # then w' ± conj(w')
        top = params.depth
        cts = merge_stages(special_fft_stages(params.slots, inverse=True), cts_levels)
        self._cts_diagonals = self._balanced(cts, 1 / (2 * half), top)
        self._cts_rest = tuple(LinearTransform(params, d, top - g)
                               for g, d in enumerate(self._cts_diagonals) if g)
        self._cts_first: dict[Fraction, LinearTransform] = {}
        # SlotToCoeff: U (bit-reversed input) · K_0/2π
        stc = merge_stages(special_fft_stages(params.slots), stc_levels)
        stc[0] = {k: v * (K0 / (2 * np.pi)) for k, v in stc[0].items()}
        stc_top = top - cts_levels - self.evalmod_levels
        self._stc = tuple(LinearTransform(params, d, stc_top - g) for g, d in enumerate(stc))
        self._cts_for(self.input_scale)

    def _balanced(self, groups: list[Diagonals], factor: float, top: int) -> list[Diagonals]:
        """`groups` (applied from level `top` down), times `factor` in all, shared out so that
        every transform's plaintexts have the same relative precision.  An entry d encoded at
        the transform's plaintext scale Δ_pt = Δ_out·P/Δ_in is exact to 1/(|d|·Δ_pt); the
        entries shrink by half per inverse butterfly stage and by 1/(2·half) in all (2^-36 at
        N = 2^16), and only the first transform has a large Δ_pt (its input scale is the small
        Δ_in).  So each group is normalized to entries of at most 1 and gets the share of the
        factor that makes max|d|·Δ_pt the same for all (about 2^50 at the presets)."""
        p = self.params
        log_pt, log_total, unit = [], math.log2(factor), []
        for g, d in enumerate(groups):
            level = top - g
            into = self.input_scale if g == 0 else p.scale(level)
            log_pt.append(log2_exact(p.scale(level - 1) * math.prod(p.rescale_moduli(level))
                                     / into))
            peak = max(float(np.max(np.abs(v))) for v in d.values())
            log_total += math.log2(peak)
            unit.append({k: v / peak for k, v in d.items()})
        even = (log_total + sum(log_pt)) / len(groups)
        return [{k: v * 2.0 ** (even - lp) for k, v in d.items()}
                for d, lp in zip(unit, log_pt, strict=True)]

    def _cts_for(self, scale: Fraction) -> tuple[LinearTransform, ...]:
        """The CoeffToSlot transforms for inputs of `scale` (the level-0 ciphertext's): the
        first one's plaintexts depend on it."""
        if scale not in self._cts_first:
            self._cts_first[scale] = LinearTransform(self.params, self._cts_diagonals[0],
                                                     self.params.depth, scale)
        return (self._cts_first[scale], *self._cts_rest)

    @property
    def transforms(self) -> tuple[LinearTransform, ...]:
        """CoeffToSlot's then SlotToCoeff's linear transforms (for `input_scale`)."""
        return (*self._cts_for(self.input_scale), *self._stc)

    @property
    def rotation_steps(self) -> list[int]:
        """The rotation steps every bootstrapping uses (conjugation too)."""
        steps: set[int] = set()
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

    def _times_i(self, ct: Ciphertext, sign: int) -> Ciphertext:
        """ct·(sign·i) in every slot, exactly and without a level: the plaintext sign·X^(N/2)
        at scale 1 (ζ_j^(N/2) = i for every slot's root)."""
        N = self.params.N
        coeffs = np.zeros(N, dtype=np.int64)
        coeffs[N // 2] = sign
        mono = Poly.from_coefficients(coeffs, self.params.ring(ct.level),
                                      device=ct.c0.device).ntt()
        return Ciphertext(tuple(c * mono for c in ct.parts), ct.scale, ct.level, self.params)

    @operation
    def coeff_to_slot(self, ev: Evaluator, raised: Ciphertext) -> tuple[Ciphertext, Ciphertext]:
        """Two ciphertexts whose slots are the raised plaintext's coefficients t/Δ_0 divided
        by EvalMod's range (K + 1)·K_0: the first N/2 and the last N/2, real, each in
        bit-reversed order."""
        ev = self._evaluator(ev, "coeff_to_slot")
        w = self._ciphertext(raised, "coeff_to_slot")
        for lt in self._cts_for(raised.scale):
            w = ev.linear_transform(w, lt)
        conj = ev.conjugate(w)
        return ev.add(w, conj), self._times_i(ev.sub(w, conj), -1)

    @operation
    def eval_mod(self, ev: Evaluator, ct: Ciphertext) -> Ciphertext:
        """Slots u = y/((K + 1)·K_0) -> sin(2π·y/K_0) (the factor K_0/2π is SlotToCoeff's)."""
        ev = self._evaluator(ev, "eval_mod")
        ct = self._ciphertext(ct, "eval_mod")
        v = ev.evaluate_polynomial(ct, list(self.coeffs), basis="chebyshev")
        for _ in range(self.double_angles):  # cos 2θ = 2cos²θ − 1
            v = ev.add_scalar(ev.multiply_int(ev.rescale(ev.square(v)), 2), -1)
        return v

    @operation
    def slot_to_coeff(self, ev: Evaluator, first: Ciphertext, second: Ciphertext) -> Ciphertext:
        """The ciphertext whose coefficients are the slot values of (first, second) (bit-
        reversed halves), times K_0/2π: its slots are the message's again."""
        ev = self._evaluator(ev, "slot_to_coeff")
        first = self._ciphertext(first, "slot_to_coeff")
        second = self._ciphertext(second, "slot_to_coeff")
        out = ev.add(first, self._times_i(second, 1))
        for lt in self._stc:
            out = ev.linear_transform(out, lt)
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
        ct = ev._ct(ct)
        if ct.size != 2:
            ct = ev.relinearize(ct)
        x = ev.explicit()
        target = self.input_scale
        while x._is_product(ct):  # an unrescaled product
            ct = x.rescale(ct)
        if ct.level > 0:
            ct = x._reach(ct, 0, target)
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
        first, second = self.coeff_to_slot(ev, raised)
        return self.slot_to_coeff(ev, self.eval_mod(ev, first), self.eval_mod(ev, second))

    def plaintext_eval_mod(self) -> Callable[[np.ndarray], np.ndarray]:
        """EvalMod's plaintext counterpart: the exact centred reduction of y·Δ_0 mod Q_0, in slot
        units (y ↦ y − K_0·round(y/K_0)), for tests."""
        K0 = self.K0
        return lambda y: y - K0 * np.round(y / K0)


__all__ = ["SMALL_RING_DEGREES", "Bootstrapper", "bootstrap_params_n16", "bootstrap_params_small",
           "bound_K", "centred_lift", "default_message_ratio_bits"]
