"""Named bootstrapping shapes that trade precision against the levels left to the user.

    bt = preset_bootstrapper(params, "levels")       # two transform levels fewer
    bt = preset_bootstrapper(params, "precision")    # one level more, K_0 twice as large
    Bootstrapper(params, **bootstrap_shape(params, "balanced"))   # the same, by hand

A bootstrapping's levels are CoeffToSlot's + EvalMod's + SlotToCoeff's (`Bootstrapper`).  The
presets move the two transforms' levels around the shape the benchmarks use (`base`: 2 + 2
transform levels up to N = 2^12, 3 + 3 above) and, for precision, the message ratio K_0:

* ``"balanced"``: CoeffToSlot and SlotToCoeff ``base`` levels each, the default K_0
  (`default_message_ratio_bits`).
* ``"levels"`` (precision for levels): ``base − 1`` levels each, the default K_0: two levels
  more for the user's circuit; the transforms merge more butterfly stages each (more
  diagonals: more rotations per transform and usually more Galois keys), and their rounding
  grows with it.  Above N = 2^12 CoeffToSlot and SlotToCoeff share their keys and the baby
  steps are chosen for few keys (``cts_split="first"``, ``key_cost``: below), so that at
  N = 2^16 the lean mode fits in 6 GiB.
* ``"precision"`` (levels for precision): CoeffToSlot ``base + 1`` levels, SlotToCoeff
  ``base``, K_0 twice the default: one level less; sparser CoeffToSlot factors have fewer
  diagonals, so their error is smaller, and that leaves room for a larger K_0, which shrinks
  the sine's deviation from the identity ((2π·y/K_0)²/6 relatively) and EvalMod's share of
  the error.

**Figures** (slots uniform in [−1, 1], three seeds each, "cpu" device; tests/
test_ckks_bootstrap_presets.py checks them at N = 256):

=========  ========================  ===================  ============  ==========
preset     shape (CtS, StC, K_0)     N = 256, h = 16       levels left   Galois keys
=========  ========================  ===================  ============  ==========
balanced   2, 2, 2^12                27.9–28.1 bits        2 of 14       15 + conj.
levels     1, 1, 2^12                26.9–27.3 bits        4 of 14       16 + conj.
precision  3, 2, 2^13                28.8–28.9 bits        1 of 14       11 + conj.
=========  ========================  ===================  ============  ==========

At N = 2^16 (`bootstrap_params_n16`, dense secret with encapsulation, 25 levels; one run each,
``bench_bootstrap.py --preset n16 --shape …``, stop 57): balanced 3, 3, 2^6 21.5 bits with 10
levels left (replay 6.2–6.7 s); levels 2, 2, 2^6 21.4–21.5 bits with **12 levels left** (18.0 s,
its fast mode's RNS diagonals need 17.2 GiB: use it with ``--lean``); precision 4, 3, 2^7 leaves 9
levels but measured **20.4 bits, less than balanced**: at this ring the error is not the
transforms' and EvalMod's that the preset shrinks, so it buys nothing there.  At N = 2^16 trade
levels for precision with Meta-BTS instead (`ren.ckks.circuits.MetaBootstrapper`, the first
bootstrapping's error bootstrapped once more): **37.1–37.4 bits with 9 levels left**, 12.6 s.

**EvalMod above N = 2^12** (all three presets, through `Bootstrapper`'s default,
`ren.ckks.circuits.bootstrap.default_eval_mod`): the symmetric form of degree 30
(`ren.ckks.circuits.evalmod.SymmetricEvalModParams`: the input shifted by a quarter period,
free, then an even polynomial): 5 + 4 levels as the plain degree-31 cosine, so the levels
left above are unchanged, and 9 + 4 ciphertext products per EvalMod instead of 13 + 4 (two
EvalMods: 8 relinearizations, 16 mod-downs by P fewer a bootstrapping); the same Galois keys
and diagonals.  The balanced n16 shape at smaller rings (the n16 parameters at N = 2^13/2^14,
INSECURE, as ``bench_bootstrap.py --preset n16 --log-n 13|14`` runs it; one thread on a
machine loaded 5–11, so noisy; /tmp/notes/tune.md of stop 50), plain → symmetric:

======  ======================  ======================  ========================================
N       bits, plain             bits, symmetric         replay, symmetric / plain
======  ======================  ======================  ========================================
2^13    23.10–23.27             23.11–23.28             0.87–0.88× (CPU and sum of per-kernel
                                                        minima, one process alternating);
                                                        kernels 3,473 → 2,948
2^14    22.55–22.59             22.52–22.58             0.83–0.92× process CPU, 0.70–0.84× sum
                                                        of per-kernel minima (separate processes,
                                                        alternated); kernels 3,659 → 3,134
======  ======================  ======================  ========================================

The benchmark itself, alternated (``bench_bootstrap.py --preset n16 --log-n 14 --reps 5``, 4
runs each, load ~2): replay 1.84–1.95 s against 2.09–2.18 s (0.88×), bits 22.3..22.7 against
22.5..22.7 (six inputs each), peak RSS 2.7 GiB both.  EvalMod is a smaller share of the n16
replay than at these rings (CoeffToSlot's factors merge
five butterfly stages there, four to five here): expect less there (not run at N = 2^16).

**Keys of the levels preset.**  Above N = 2^12 it has two transforms on each side, and 15
butterfly stages do not split evenly in two.  Split as `merge_stages` does (the later group one
stage more), CoeffToSlot's groups (it applies the stages in reverse) and SlotToCoeff's merge
different stages: four transforms with disjoint rotations, 58 rotation keys at n16 (6.26 GiB of
lean keys: the 9.6 GiB peak measured in stop 47).  So the preset splits CoeffToSlot the other
way (``cts_split="first"``, `ren.ckks.circuits.dft.SPLITS`): each CoeffToSlot transform merges
the stages of a SlotToCoeff one, the two use the same rotations and share their keys; and it
chooses baby steps with ``key_cost=LEVELS_KEY_COST`` (4 baby steps a key, the Horner giant
steps' keys counted: `ren.ckks.circuits.bsgs.baby_steps_for`), n1 = 1024, 8, 8, 1024 instead of
2048, 16, 16, 2048: 17 rotation keys instead of 33, for twice the giant steps.  Memory from the
parameters (``benchmarks/bench_bootstrap.py --preset n16 --shape … --dry-run``, keys in full,
diagonals on Q; lean: seeded halves and integer diagonals):

=================  ============  =====================  ===============  ===================
preset             Galois keys   keys (+relin, encap.)   diagonals        lean keys + diag.
=================  ============  =====================  ===============  ===================
balanced           26 + conj.    5.95 GiB               316, 2.93 GiB    2.97 GiB + 158 MiB
levels (old)       58 + conj.    12.51 GiB              1150, 11.48 GiB  6.26 GiB + 575 MiB
levels             17 + conj.    4.10 GiB               1022, 9.98 GiB   2.05 GiB + 511 MiB
precision          39 + conj.    8.62 GiB               259, 2.13 GiB
=================  ============  =====================  ===============  ===================

In the lean mode (``--lean``) the levels preset holds 2.55 GiB before the JIT plan's arena,
less than balanced's 3.13 GiB (which peaked at 4.7 GiB at n16).  Its arena is about the old
split's (n16-shaped lean stand-ins: 2^13 122 MiB against 125; 2^14 296 MiB against 289),
which at n16 left 2.8 GiB beside keys and diagonals: about 4.2–5.3 GiB expected at n16, and
**measured in stop 57: peak RSS 5.1 GiB** (arena 1.61 GiB, keys 2.05 GiB, diagonals 511 MiB;
12 levels left, 21.4–21.5 bits, replay 26.8 s on one thread), within the 6 GiB goal.
Precision stays (2^13: 23.27 bits against 23.33; 2^14: 22.74 against 22.62), and the CPU time
grows with the giant steps (lean replay, CPU seconds, noisy: 2^13 3.79 against 3.38; 2^14 7.77
against 7.99).  In the fast mode the
preset's RNS diagonals (9.98 GiB) are not for a laptop.
"""

from __future__ import annotations

from typing import Any

from ren.ckks.circuits.bootstrap import Bootstrapper, default_message_ratio_bits
from ren.ckks.params import CKKSParams
from ren.errors import check_choice, check_instance, check_int_range

#: the preset names, each a trade of precision against levels (module docstring)
PRESETS = ("balanced", "levels", "precision")
#: the ``levels`` preset's `Bootstrapper(key_cost=)`: baby steps charged per Galois key, with
#: the Horner giant steps' keys counted (module docstring: n16's keys 34 -> 18)
LEVELS_KEY_COST = 4.0


def base_levels(params: CKKSParams) -> int:
    """The transform levels of the balanced shape: 2 (each of CoeffToSlot and SlotToCoeff) up
    to N = 2^12, 3 above (the benchmarks' shapes)."""
    check_instance(params, CKKSParams, "base_levels: params")
    return 2 if params.N <= 1 << 12 else 3


def bootstrap_shape(params: CKKSParams, preset: str = "balanced",
                    slots: int | None = None) -> dict[str, Any]:
    """The `Bootstrapper` keyword arguments of `preset` (one of `PRESETS`) for `params` and
    `slots` (default N/2): cts_levels, stc_levels, and for "precision" message_ratio_bits (one
    more than the default for that many slots; module docstring)."""
    check_instance(params, CKKSParams, "bootstrap_shape: params")
    preset = check_choice(preset, "bootstrap_shape: preset", PRESETS)
    n = params.slots if slots is None else check_int_range(slots, "bootstrap_shape: slots", 1,
                                                           params.slots)
    base = base_levels(params)
    if preset == "levels":
        shape: dict[str, Any] = {"cts_levels": base - 1, "stc_levels": base - 1}
        if base > 2:  # several transforms each: CoeffToSlot's merge SlotToCoeff's stages
            shape.update(cts_split="first", key_cost=LEVELS_KEY_COST)
        return shape
    if preset == "precision":
        return {"cts_levels": base + 1, "stc_levels": base,
                "message_ratio_bits": default_message_ratio_bits(2 * n) + 1}
    return {"cts_levels": base, "stc_levels": base}


def preset_bootstrapper(params: CKKSParams, preset: str = "balanced",
                        **kwargs: Any) -> Bootstrapper:
    """`Bootstrapper(params, **bootstrap_shape(params, preset, slots), **kwargs)`: a keyword
    in `kwargs` overrides the preset's (e.g. ``degree=``)."""
    shape = bootstrap_shape(params, preset, kwargs.get("slots"))
    return Bootstrapper(params, **{**shape, **kwargs})


__all__ = ["LEVELS_KEY_COST", "PRESETS", "base_levels", "bootstrap_shape", "preset_bootstrapper"]
