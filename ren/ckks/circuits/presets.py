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
  grows with it.
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

At N = 2^16 (`bootstrap_params_n16`, dense secret with encapsulation, 25 levels): balanced
3, 3, 2^6 measured 21.3 bits with 10 levels left (before the Horner giant steps); levels
2, 2, 2^6 leaves 12 levels and precision 4, 3, 2^7 leaves 9 — **their precision and time are
still to be measured**.  Their memory from the parameters (``benchmarks/bench_bootstrap.py
--preset n16 --shape … --dry-run``; keys in full, diagonals on Q):

=========  ============  =====================  ===============
preset     Galois keys   keys (+relin, encap.)   diagonals
=========  ============  =====================  ===============
balanced   26 + conj.    5.95 GiB               316, 2.93 GiB
levels     58 + conj.    12.51 GiB              1150, 11.48 GiB
precision  39 + conj.    8.62 GiB               259, 2.13 GiB
=========  ============  =====================  ===============

So at N = 2^16 the levels preset in full (RNS) form is not for a laptop: two-stage transforms
of 2^15 slots have ~2^8 diagonals each.  In the lean mode (``--lean``: lean keys, coefficient
diagonals) its keys resident are 6.26 GiB (59 Galois keys; balanced 2.97 GiB) and its
diagonals 575 MiB; the JIT plan's arena is what remains.  A Meta-BTS plan once held every
expanded diagonal from its first bootstrapping to its second (n16 balanced: 4.47 GiB of arena
against 1.46 for one; n16 levels ran out of 23 GiB); `ren.schedule.regenerate_leaf_chains`
now computes them again where they are read, so two bootstrappings keep about one's arena
(N = 2^13, levels shape, lean Meta-BTS: 710 → 316 MB).  The largest remaining term is a single-
hoisted transform's c0 path, fused into one kernel that reads all of its expanded diagonals
(511 at n16): projected ~15 GiB peak at n16 for the lean levels shape, ~10 GiB once each giant
step's inner sum is its own buffer; below 6 GiB needs fewer keys.
"""

from __future__ import annotations

from typing import Any

from ren.ckks.circuits.bootstrap import Bootstrapper, default_message_ratio_bits
from ren.ckks.params import CKKSParams
from ren.errors import check_choice, check_instance, check_int_range

#: the preset names, each a trade of precision against levels (module docstring)
PRESETS = ("balanced", "levels", "precision")


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
        return {"cts_levels": base - 1, "stc_levels": base - 1}
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


__all__ = ["PRESETS", "base_levels", "bootstrap_shape", "preset_bootstrapper"]
