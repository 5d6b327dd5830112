"""Baby-step giant-step planning for `ren.ckks.circuits.lintrans`: how many baby steps a
transform takes (`baby_steps_for`, weighing `rotation_costs` and keys), and in which order its
giant steps rotate (`giant_chains`, `horner_steps`); and the diagonals it plans for, read from
a matrix (`diagonals_of`) or a dict of them (checked).

**Giant steps by few keys.**  Σ_g rot_(g·n1)(v_g) = v_0 + rot_(n1)(v_1 + rot_(n1)(v_2 + …)):
evaluated in this Horner order, the giant steps g ≥ 1 make as many rotations (key switches) as
when each rotates by its own step g·n1, but by one key per direction when the steps are
consecutive (the gaps between them in general) instead of one key per giant step.  Giant steps
beyond slots/2 are the negative ones (g − slots/n1), their own chain.  At N = 2^16 the
bootstrapping's CoeffToSlot/SlotToCoeff need 27 Galois keys instead of 39 (−2.46 GiB), with the
same key switches; the planner (`baby_steps_for`) still charges a key per giant step, so its
choice of n1, and the key-switch count, is what it was.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ren.ckks.params import CKKSParams
from ren.errors import (
    ParameterError,
    check_choice,
    check_instance,
    check_int_range,
    check_real_range,
    check_sequence,
)
from ren.ring.ringspec import MAX_LOG_N

#: The most slots a transform acts on (N/2 at Ren's largest ring).
MAX_SLOTS = 1 << (MAX_LOG_N - 1)


#: what one key is charged in the planner's cost, in baby steps (`LinearTransform(key_cost=)`)
KEY_COST = 1.0


#: how `baby_steps_for` counts a transform's Galois keys: one per baby step and one per giant
#: step ("steps", `LinearTransform`'s planner), or one per baby step and the few keys of its
#: Horner chains ("horner": what `giant_chains` really uses, one per direction for
#: consecutive giant steps)
GIANT_KEYS = ("steps", "horner")


def baby_steps_for(indices: list[int], slots: int, baby_cost: float = 1.0,
                   giant_cost: float = 2.0, key_cost: float = 0.0, *,
                   giant_keys: str = "steps") -> int:
    """n1, the power of two that makes the transform cheapest: baby_cost per baby step,
    giant_cost per giant step, key_cost per Galois key (`giant_keys`: babies + giants, or
    with ``"horner"`` babies + the Horner chains' keys); among equal costs, fewer keys, then
    larger n1.  The defaults are a single-hoisted count (a baby step is a permutation, an
    inner product and a mod-down, a giant step adds a decomposition, about as much again);
    `LinearTransform` passes `rotation_costs` of its parameters and level.  A dense n×n matrix
    gets n1 ≈ √(n·(giant + key)/(baby + key)); a few scattered diagonals get n1 = slots (all
    hoisted).  With ``"horner"`` a large key_cost favours few baby steps, since the giant
    steps then cost time but hardly any keys (`ren.ckks.circuits.dft`'s ``key_cost``)."""
    slots = check_int_range(slots, "baby_steps_for: slots", 1, MAX_SLOTS)
    indices = [check_int_range(i, "baby_steps_for: a diagonal index", 0, slots - 1)
               for i in check_sequence(indices, "baby_steps_for: indices", 1, slots)]
    baby, giant, key = (check_real_range(c, f"baby_steps_for: {what}", 0.0)
                        for c, what in ((baby_cost, "baby_cost"), (giant_cost, "giant_cost"),
                                        (key_cost, "key_cost")))
    horner = check_choice(giant_keys, "baby_steps_for: giant_keys", GIANT_KEYS) == "horner"
    best: tuple[float, int, int] | None = None
    for e in range(slots.bit_length()):
        n1 = 1 << e
        babies = len({i % n1 for i in indices} - {0})
        steps = {i // n1 for i in indices}
        giants = len(steps - {0})
        keys = babies + (len({s % slots for chain in giant_chains(steps, n1, slots)
                              for s in horner_steps(chain, n1)} - {0}) if horner else giants)
        rank = (baby * babies + giant * giants + key * keys, keys, -n1)
        if best is None or rank < best:
            best = rank
    assert best is not None
    return -best[2]


def rotation_costs(params: CKKSParams, level: int, hoisting: str = "double"
                   ) -> tuple[float, float]:
    """(baby, giant): what a baby step and a giant step cost at `level` under `hoisting`
    (`HOISTING`), counted in limb rows read (N words each) by Ren's kernels, with L limbs at the
    level, K special primes and d digits; an NTT or INTT of a row counts w = log2(N)/4 rows and
    a basis conversion one per row it reads or writes (measured on the "cpu" device at
    N = 2^14: an NTT row took the time of 3 rows read by an elementwise kernel, a converted row
    1.2):

    * a double-hoisted baby step reads its d rotated digits and d key rows for each of its two
      inner products, and P·c0 rotated: 4·d·(L + K) + (L + K);
    * a double-hoisted giant step does the same, plus the mod-down of its inner sum's c1 (an
      INTT of K rows, a conversion K -> L, an NTT of L rows, the L + K rows read):
      (w + 2)·(L + K), and its decomposition (per digit an INTT, a conversion and an NTT onto
      L + K rows in all): d·(w + 1)·(L + K);
    * single hoisting divides both parts of every rotation by P: two mod-downs more per baby
      step, one more per giant step; without hoisting a baby step costs a giant step.

    About 2 to 3 double-hoisted baby steps per giant step at Ren's parameters, 1.5 to 2 single-
    hoisted ones.  The diagonal products (one per nonzero diagonal whatever n1 is) are left
    out."""
    check_instance(params, CKKSParams, "rotation_costs: params")
    level = params.check_level(level)
    hoisting = check_choice(hoisting, "rotation_costs: hoisting", HOISTING)
    L, K, N = params.limbs(level), len(params.special_moduli), params.N
    d, w = len(params.digits_at(level)), math.log2(N) / 4
    baby = float((4 * d + 1) * (L + K))
    mod_down = (w + 2) * (L + K)
    giant = baby + mod_down + d * (w + 1) * (L + K)
    if hoisting != "double":
        baby, giant = baby + 2 * mod_down, giant + mod_down
        if hoisting == "none":
            baby = giant
    return float(baby), float(giant)




#: the ways `LinearTransform.apply` can rotate: the baby steps' decomposition shared and the
#: mod-down by P deferred to one per giant step ("double"), the decomposition shared only
#: ("single"), or each rotation on its own ("none")
HOISTING = ("double", "single", "none")



def giant_chains(giants: Any, n1: int, slots: int) -> tuple[list[int], list[int]]:
    """The giant steps g (rotations by g·n1, g < slots/n1) as two Horner chains: the lower ones
    ascending (0 included), and the others as negative steps g − slots/n1, by ascending size.
    Σ_g rot_(g·n1)(v_g) is then v_0 + rot_(n1)(v_1 + rot_(n1)(v_2 + …)) on each side: as many
    rotations as giant steps g ≥ 1 whatever the split, by the few keys of `horner_steps` (one
    per direction when the steps are consecutive) instead of a key per giant step.  The split
    is the one with the fewest distinct keys (nearest slots/2 among equals; with more than 64
    giant steps, slots/2)."""
    gs = sorted(set(giants))
    if slots % n1:  # (n1 not a power of two: no negative giant steps)
        return gs, []
    m = slots // n1

    def split(t: int) -> tuple[list[int], list[int]]:
        return [g for g in gs if g < t], sorted((g - m for g in gs if g >= t), reverse=True)

    half = m // 2 + 1  # g·n1 <= slots/2 goes up
    if len(gs) > 64:
        return split(half)

    def keys(t: int) -> int:
        return len({s % slots for chain in split(t) for s in horner_steps(chain, n1)})

    best = min({*[g for g in gs if g], half, m}, key=lambda t: (keys(t), abs(t - half)))
    return split(best)


def horner_steps(chain: Sequence[int], n1: int) -> list[int]:
    """The rotation steps (signed, in slots) one Horner chain of `giant_chains` makes, from its
    far end in: the gaps between consecutive giant steps, then the nearest step itself (none
    for g = 0), each times n1."""
    return [step for _, step in horner_order(chain, n1) if step]


def horner_order(chain: Sequence[int], n1: int) -> list[tuple[int | None, int]]:
    """(giant step to add, the rotation before adding it) from the chain's far end in; a last
    (None, step) rotates the sum by the nearest giant step."""
    out: list[tuple[int | None, int]] = []
    prev: int | None = None
    for g in reversed(chain):
        out.append((g, 0 if prev is None else (prev - g) * n1))
        prev = g
    if prev:
        out.append((None, prev * n1))
    return out


# -- the diagonals of a transform's input (`LinearTransform`, `ren.ckks.debug`) ----------------
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

__all__ = ["GIANT_KEYS", "HOISTING", "KEY_COST", "MAX_SLOTS", "baby_steps_for", "diagonals_of",
           "giant_chains", "horner_order", "horner_steps", "rotation_costs"]
