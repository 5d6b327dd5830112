"""CoeffToSlot and SlotToCoeff, bootstrapping's homomorphic special FFTs, as swappable parameter
objects.

    CoeffToSlotParams(levels=3)        # U⁻¹ factored into 3 sparse transforms (3 levels)
    SlotToCoeffParams(levels=2)
    Bootstrapper(params, cts=CoeffToSlotParams(3), stc=SlotToCoeffParams(2))

**CoeffToSlot** applies U⁻¹ (`ren.ckks.special_fft`) to the slots z = U·(t_lo + i·t_hi)/Δ_in of
the raised plaintext, factored into `levels` sparse linear transforms (baby-step giant-step,
hoisted rotations; one level each): the result w holds the coefficients (bit-reversed), and
w ± conj(w) (one conjugation; −i· by the free monomial X^(N/2)) split it into two ciphertexts
of real slots t_lo and t_hi.  The overall factor (EvalMod's 1/((K + 1)·K_0), a 1/2 for the
± split) is shared out among the transforms so that each one's plaintexts keep the same
relative precision (`balanced`).  **Levels**: `levels`; **rotations**: about 2^(r+1) − 1
diagonals per transform for r merged butterfly stages, so more levels mean fewer rotations
and keys.  **Precision**: exact to about 2^-47 (float64 encoding is the floor).

**SlotToCoeff** applies U to v_lo + i·v_hi (EvalMod's outputs), factored the same way, with
EvalMod's `output_factor` folded into its first transform.  **Levels**: `levels`;
**precision**: log2 √n bits of error growth on what EvalMod leaves.

**Keys.**  With as many levels on both sides, a CoeffToSlot split ``"first"`` (`SPLITS`)
merges the stages SlotToCoeff merges, so the two use the same rotations and share their Galois
keys; ``key_cost`` chooses each transform's baby steps counting the Horner giant steps' few keys
(`planned_baby_steps`), trading giant steps (time) for keys (memory).  `transform_plans` and
`rotation_keys` give the transforms' levels, diagonal positions, baby steps and keys from the
parameters alone (n16's ``levels`` preset: 59 Galois keys with the default split, 18 with
``"first"`` and key_cost 4).

**Sparse slots** (`Bootstrapper(slots=n)`, n < N/2: a message replicated N/(2n) times, a
polynomial in X^(N/2n), `Encoder.encode(z, slots=n)`).  CoeffToSlot first sums the raised
ciphertext over the replicas (`CoeffToSlot.sub_sum`: rotations by n, 2n, …, N/4; the trace onto
X^(N/2n) keeps the sparse part of m + Q_0·I times N/(2n), a factor the first transform divides
out).  Both transforms then work on n×n matrices: log2(n) butterfly stages instead of
log2(N/2), so fewer diagonals per level, rotations within 2n.  For n ≤ N/4 the real and
imaginary parts are *packed* into one ciphertext of 2n-periodic slots (`packs`): the last
CoeffToSlot matrix writes the lower n of every 2n slots only, a rotation by n (the sub-sum's
key) moves the imaginary part above it, and SlotToCoeff's first matrix reads (v_lo | v_hi) as
v_lo + i·v_hi (`widen`: an n×n matrix as diag(M, M) on 2n slots): EvalMod runs once instead of
twice.  At N = 256 (small preset): 8 slots 28.1 bits with 64 mod-downs by P in the graph,
32 slots 28.1 bits with 76, all 128 slots 28.3 bits with 118.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ren.ckks.ciphertext import Ciphertext
from ren.ckks.circuits import lintrans
from ren.ckks.circuits.bsgs import (
    KEY_COST,
    baby_steps_for,
    giant_chains,
    horner_steps,
    rotation_costs,
)
from ren.ckks.circuits.lintrans import DIAGONAL_FORMS, LinearTransform
from ren.ckks.evaluator import Evaluator
from ren.ckks.params import CKKSParams, log2_exact
from ren.ckks.special_fft import (
    Diagonals,
    multiply_diagonals,
    special_fft_stages,
)
from ren.errors import check_choice, check_int_range, check_real_range
from ren.poly import Poly

#: which transforms take one butterfly stage more when the levels do not divide the stages:
#: the last ones ("last", as `ren.ckks.special_fft.merge_stages` splits) or the first ones
#: ("first").  CoeffToSlot applies the stages in the reverse order of SlotToCoeff, so a
#: CoeffToSlot split "first" merges the same stages as a SlotToCoeff of as many levels split
#: "last": their transforms have the same diagonal positions and use the same rotations, and
#: the two share their Galois keys (n16's ``levels`` preset: 34 keys instead of 59).
SPLITS = ("last", "first")


def _check_levels(levels: int, slots: int, name: str) -> int:
    stages = slots.bit_length() - 1
    return check_int_range(levels, f"Bootstrapper: {name}", 1, max(1, stages),
                           hint=f"log2 of the {slots} slots is the most")


def _check_diagonals(diagonals: str, name: str) -> str:
    return check_choice(diagonals, f"Bootstrapper: {name} diagonals", DIAGONAL_FORMS)


def _check_shape(split: str, key_cost: float | None, name: str) -> None:
    check_choice(split, f"Bootstrapper: {name} split", SPLITS)
    if key_cost is not None:
        check_real_range(key_cost, f"Bootstrapper: {name} key_cost", 0.0,
                         hint="what one Galois key costs, in baby steps (None: LinearTransform's "
                              "planner)")


def stage_sizes(stages: int, levels: int, split: str = "last") -> list[int]:
    """How many of `stages` butterfly stages each of `levels` transforms merges, in the order
    applied: as even as possible, the last (``split="last"``) or first ones one more."""
    base, extra = divmod(stages, levels)
    sizes = [base + (g >= levels - extra) for g in range(levels)]
    return sizes if check_choice(split, "stage_sizes: split", SPLITS) == "last" else sizes[::-1]


def stage_groups(slots: int, levels: int, inverse: bool, split: str = "last"
                 ) -> list[Diagonals]:
    """The special FFT's stages on `slots` slots (inverse: CoeffToSlot's order) merged into
    `levels` matrices split as `split` says (`stage_sizes`), in the order applied."""
    stages = special_fft_stages(slots, inverse=inverse)
    out, at = [], 0
    for size in stage_sizes(len(stages), levels, split):
        m = stages[at]
        for st in stages[at + 1:at + size]:
            m = multiply_diagonals(st, m, slots)  # st applied after m
        out.append(m)
        at += size
    return out


def group_indices(slots: int, levels: int, inverse: bool, split: str = "last"
                  ) -> list[list[int]]:
    """The diagonal indices of `stage_groups`' matrices, from the stages' positions alone
    (stage S_len has diagonals 0 and ±len/2; a product of stages, the sums): no values, so
    cheap at any slot count (a value that cancels to zero exactly is still counted)."""
    stages = slots.bit_length() - 1
    order = list(range(stages, 0, -1)) if inverse else list(range(1, stages + 1))
    out, at = [], 0
    for size in stage_sizes(stages, levels, split):
        found = {0}
        for s in order[at:at + size]:
            half = 1 << (s - 1)
            found = {(i + o) % slots for i in found for o in (0, half, -half)}
        out.append(sorted(found))
        at += size
    return out


def planned_baby_steps(params: CKKSParams, indices: list[int], level: int,
                       key_cost: float | None, hoisting: str | None = None) -> int:
    """n1 for a transform with diagonals at `indices` at `level` rotated with `hoisting`
    (default `lintrans.DEFAULT_HOISTING`): `LinearTransform`'s own choice when `key_cost` is
    None, else `baby_steps_for` charging `key_cost` baby steps per Galois key counted with its
    Horner chains (``giant_keys="horner"``)."""
    hoisting = lintrans.DEFAULT_HOISTING if hoisting is None else hoisting
    baby, giant = rotation_costs(params, level, hoisting)
    if key_cost is None:
        return baby_steps_for(indices, params.slots, baby, giant, KEY_COST * baby)
    return baby_steps_for(indices, params.slots, baby, giant, key_cost * baby,
                          giant_keys="horner")


def transform_plans(params: CKKSParams, cts: CoeffToSlotParams, stc: SlotToCoeffParams,
                    evalmod_levels: int) -> list[tuple[int, list[int], int]]:
    """(level, diagonal indices, n1) of every CoeffToSlot and SlotToCoeff transform of a full-
    slot bootstrapping of `params` (CoeffToSlot from the top level, SlotToCoeff below
    EvalMod's `evalmod_levels`), from the parameters alone: what the benchmarks' dry run counts
    keys and diagonals from, without encoding anything."""
    slots, top = params.slots, params.depth
    stc_top = top - cts.levels - evalmod_levels
    out = []
    for part, inverse, first in ((cts, True, top), (stc, False, stc_top)):
        part.checked(slots)
        for g, ind in enumerate(group_indices(slots, part.levels, inverse, part.split)):
            out.append((first - g, ind, planned_baby_steps(params, ind, first - g,
                                                           part.key_cost)))
    return out


def rotation_keys(plans: list[tuple[int, list[int], int]], slots: int) -> set[int]:
    """The rotation steps (mod `slots`, 0 left out) of `transform_plans`: baby steps and the
    Horner chains' steps; conjugation is one key more."""
    steps: set[int] = set()
    for _, ind, n1 in plans:
        steps |= {i % n1 for i in ind}
        for chain in giant_chains({i // n1 for i in ind}, n1, slots):
            steps |= {s % slots for s in horner_steps(chain, n1)}
    return steps - {0}


@dataclass(frozen=True)
class CoeffToSlotParams:
    """CoeffToSlot's shape: `levels` sparse transforms (module docstring).  `diagonals`: how
    its transforms store their plaintext diagonals (`LinearTransform(diagonals=)`): "rns",
    encoded (limbs × N words each), or "coeff", integer coefficients (N·8 bytes each) expanded
    at every application (a TO_RNS and an NTT per diagonal more)."""

    levels: int = 2
    diagonals: str = "rns"
    #: which transforms take a stage more (`SPLITS`; "first" shares SlotToCoeff's keys)
    split: str = "last"
    #: baby steps charged per Galois key when choosing n1 (`planned_baby_steps`; None:
    #: `LinearTransform`'s planner)
    key_cost: float | None = None

    def checked(self, slots: int) -> CoeffToSlotParams:
        """These parameters checked for `slots` slots (at most log2(slots) levels)."""
        _check_levels(self.levels, slots, "cts_levels")
        _check_diagonals(self.diagonals, "CoeffToSlot")
        _check_shape(self.split, self.key_cost, "CoeffToSlot")
        return self

    def build(self, params: CKKSParams, slots: int, top: int, factor: float,
              input_scale: Fraction) -> CoeffToSlot:
        """The prepared CoeffToSlot from level `top` down, times `factor` in all."""
        return CoeffToSlot(params, slots, int(self.levels), top, factor, input_scale,
                           self.diagonals, self.split, self.key_cost)


@dataclass(frozen=True)
class SlotToCoeffParams:
    """SlotToCoeff's shape: `levels` sparse transforms (module docstring); `diagonals` as in
    `CoeffToSlotParams`."""

    levels: int = 2
    diagonals: str = "rns"
    split: str = "last"
    key_cost: float | None = None

    def checked(self, slots: int) -> SlotToCoeffParams:
        """These parameters checked for `slots` slots (at most log2(slots) levels)."""
        _check_levels(self.levels, slots, "stc_levels")
        _check_diagonals(self.diagonals, "SlotToCoeff")
        _check_shape(self.split, self.key_cost, "SlotToCoeff")
        return self

    def build(self, params: CKKSParams, slots: int, top: int, factor: float) -> SlotToCoeff:
        """The prepared SlotToCoeff from level `top` down, times `factor`."""
        return SlotToCoeff(params, slots, int(self.levels), top, factor, self.diagonals,
                           self.split, self.key_cost)


def balanced(params: CKKSParams, groups: list[Diagonals], factor: float, top: int,
             input_scale: Fraction) -> list[Diagonals]:
    """`groups` (applied from level `top` down, the first to inputs of `input_scale`), times
    `factor` in all, shared out so that every transform's plaintexts have the same relative
    precision.  An entry d encoded at the transform's plaintext scale Δ_pt = Δ_out·P/Δ_in is
    exact to 1/(|d|·Δ_pt); the entries shrink by half per inverse butterfly stage and by
    1/(2·half) in all (2^-36 at N = 2^16), and only the first transform has a large Δ_pt (its
    input scale is the small Δ_in).  So each group is normalized to entries of at most 1 and
    gets the share of the factor that makes max|d|·Δ_pt the same for all (about 2^50 at the
    presets)."""
    p = params
    log_pt, log_total, unit = [], math.log2(factor), []
    for g, d in enumerate(groups):
        level = top - g
        into = input_scale if g == 0 else p.scale(level)
        log_pt.append(log2_exact(p.scale(level - 1) * math.prod(p.rescale_moduli(level))
                                 / into))
        peak = max(float(np.max(np.abs(v))) for v in d.values())
        log_total += math.log2(peak)
        unit.append({k: v / peak for k, v in d.items()})
    even = (log_total + sum(log_pt)) / len(groups)
    return [{k: v * 2.0 ** (even - lp) for k, v in d.items()}
            for d, lp in zip(unit, log_pt, strict=True)]


def times_i(ct: Ciphertext, sign: int) -> Ciphertext:
    """ct·(sign·i) in every slot, exactly and without a level: the plaintext sign·X^(N/2) at
    scale 1 (ζ_j^(N/2) = i for every slot's root)."""
    p = ct.params
    coeffs = np.zeros(p.N, dtype=np.int64)
    coeffs[p.N // 2] = sign
    mono = Poly.from_coefficients(coeffs, p.ring(ct.level), device=ct.c0.device).ntt()
    return Ciphertext(tuple(c * mono for c in ct.parts), ct.scale, ct.level, p)


def widen(d: Diagonals, n: int) -> Diagonals:
    """The n×n matrix of diagonals `d` as the 2n×2n block-diagonal matrix diag(M, M) (its
    diagonals of length 2n): row j, in block j − j mod n, reads column j + k within the block,
    which is diagonal k or k − n of the wide matrix."""
    out: Diagonals = {}
    r = np.arange(2 * n) % n
    for k, v in d.items():
        k %= n
        row = v[r]
        inside = r + k < n
        for key, keep in ((k, inside), ((k + n) % (2 * n), ~inside)):
            if np.any(keep):
                part = np.where(keep, row, 0)
                out[key] = out[key] + part if key in out else part
    return out


def _lower_rows(d: Diagonals, n: int) -> Diagonals:
    """The 2n×2n matrix `d` with its rows n … 2n − 1 zeroed."""
    mask = np.arange(2 * n) < n
    return {k: v * mask for k, v in d.items() if np.any(v[mask] != 0)}


def _combine(n: int) -> Diagonals:
    """The 2n×2n matrix that reads (v_lo | v_hi) as v_lo + i·v_hi in both halves."""
    lower = np.arange(2 * n) < n
    return {0: np.where(lower, 1, 1j).astype(complex), n: np.where(lower, 1j, 1).astype(complex)}


def packs(params: CKKSParams, slots: int) -> bool:
    """Whether n slots pack CoeffToSlot's real and imaginary parts into one ciphertext of 2n
    slots (n ≤ N/4): EvalMod then runs once instead of twice."""
    return 2 * slots <= params.slots


class CoeffToSlot:
    """The prepared CoeffToSlot transforms; the first one's plaintexts depend on the input's
    scale, so it is prepared per scale (`transforms_for`)."""

    def __init__(self, params: CKKSParams, slots: int, levels: int, top: int, factor: float,
                 input_scale: Fraction, diagonals: str = "rns", split: str = "last",
                 key_cost: float | None = None) -> None:
        self.params, self.slots, self.levels, self.top = params, slots, levels, top
        self.diagonal_form = diagonals  # (`LinearTransform(diagonals=)`)
        groups = stage_groups(slots, levels, True, split)
        self.packed = packs(params, slots)
        if self.packed:  # the last transform writes the lower n of every 2n slots only
            groups[-1] = _lower_rows(widen(groups[-1], slots), slots)
        every = balanced(params, groups, factor, top, input_scale)
        self._babies = [None if key_cost is None else
                        planned_baby_steps(params, sorted(d), top - g, key_cost)
                        for g, d in enumerate(every)]
        self._rest = tuple(LinearTransform(params, d, top - g, diagonals=diagonals,
                                           baby_steps=self._babies[g])
                           for g, d in enumerate(every) if g)
        #: the first transform's diagonals, prepared again per input scale (`transforms_for`);
        #: the others live in their transforms only (~63 MiB at N = 2^16 not kept twice)
        self.diagonals = every[:1]
        self._first: dict[Fraction, LinearTransform] = {}
        self.transforms_for(input_scale)

    @property
    def sparse(self) -> bool:
        """Fewer slots than N/2: the raised plaintext is first summed over its replicas."""
        return self.slots < self.params.slots

    @property
    def sub_sum_steps(self) -> list[int]:
        """The sub-sum's rotations: n, 2n, 4n, …, N/4 for n slots (none at N/2 slots)."""
        out, step = [], self.slots
        while step < self.params.slots:
            out.append(step)
            step *= 2
        return out

    @property
    def rotation_steps(self) -> list[int]:
        """Every rotation CoeffToSlot makes: the sub-sum's and the transforms'."""
        steps = set(self.sub_sum_steps)
        for lt in self.transforms_for(next(iter(self._first))):
            steps.update(lt.rotation_steps)
        return sorted(steps)

    def sub_sum(self, ev: Evaluator, raised: Ciphertext) -> Ciphertext:
        """Σ_k rot_(k·n)(raised) for k < N/(2n) (log2(N/2n) rotations): the trace onto
        polynomials in X^(N/2n), which keeps the sparse part of t = m + Q_0·I times N/(2n)
        (the message's, and that of I) and removes the rest of I (`ev` explicit)."""
        for step in self.sub_sum_steps:
            raised = ev.add(raised, ev.rotate(raised, step))
        return raised

    def transforms_for(self, scale: Fraction) -> tuple[LinearTransform, ...]:
        """The transforms for inputs of `scale` (the raised ciphertext's)."""
        if scale not in self._first:
            self._first[scale] = LinearTransform(self.params, self.diagonals[0], self.top, scale,
                                                 diagonals=self.diagonal_form,
                                                 baby_steps=self._babies[0])
        return (self._first[scale], *self._rest)

    def apply(self, ev: Evaluator, raised: Ciphertext) -> tuple[Ciphertext, ...]:
        """(real part, imaginary part) of U⁻¹·slots, each in real slots (`ev` explicit); with
        sparse slots, of the sub-sum (`sub_sum`), and for n ≤ N/4 packed into one ciphertext:
        the real part in the lower n of every 2n slots, the imaginary part in the upper n (the
        last transform leaves the upper ones zero; a rotation by n moves the imaginary part
        there)."""
        w = self.sub_sum(ev, raised) if self.sparse else raised
        for lt in self.transforms_for(raised.scale):
            w = ev.linear_transform(w, lt)
        conj = ev.conjugate(w)
        real, imag = ev.add(w, conj), times_i(ev.sub(w, conj), -1)
        if self.packed:
            return (ev.add(real, ev.rotate(imag, self.slots)),)
        return real, imag


class SlotToCoeff:
    """The prepared SlotToCoeff transforms."""

    def __init__(self, params: CKKSParams, slots: int, levels: int, top: int,
                 factor: float, diagonals: str = "rns", split: str = "last",
                 key_cost: float | None = None) -> None:
        self.params, self.slots, self.levels, self.top = params, slots, levels, top
        groups = stage_groups(slots, levels, False, split)
        self.packed = packs(params, slots)
        if self.packed:  # (v_lo | v_hi) -> v_lo + i·v_hi first
            groups[0] = multiply_diagonals(widen(groups[0], slots), _combine(slots), 2 * slots)
        groups[0] = {k: v * factor for k, v in groups[0].items()}
        self.transforms = tuple(
            LinearTransform(params, d, top - g, diagonals=diagonals,
                            baby_steps=None if key_cost is None else
                            planned_baby_steps(params, sorted(d), top - g, key_cost))
            for g, d in enumerate(groups))

    def apply(self, ev: Evaluator, first: Ciphertext, second: Ciphertext | None = None
              ) -> Ciphertext:
        """U·(first + i·second) (`ev` explicit); packed (n ≤ N/4), U·(lower + i·upper) of
        `first` alone."""
        out = first if second is None else ev.add(first, times_i(second, 1))
        for lt in self.transforms:
            out = ev.linear_transform(out, lt)
        return out


__all__ = ["SPLITS", "CoeffToSlot", "CoeffToSlotParams", "SlotToCoeff", "SlotToCoeffParams",
           "balanced", "group_indices", "packs", "planned_baby_steps", "rotation_keys",
           "stage_groups", "stage_sizes", "times_i", "transform_plans", "widen"]
