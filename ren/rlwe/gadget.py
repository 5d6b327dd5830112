"""The gadget of hybrid key switching: how the chain Q splits into digits, and the constants G_j.

A switching key holds one row pair per digit j (a contiguous range of chain primes D_j).  The
gadget constant of digit j is

    G_j = P·B_j mod QP,   B_j ≡ 1 (mod the primes of digit j), ≡ 0 (mod the other chain primes),

so Σ_j [d]_{D_j}·G_j ≡ P·d (mod QP) for any d, and a mod-down by P after the inner product with
the key leaves d·s'.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ren.errors import check_instance, check_int_range, check_real_range, check_sequence

if TYPE_CHECKING:
    from ren.rlwe.params import RLWEParams


def balanced_digits(bits: list[float], dnum: int) -> list[tuple[int, int]]:
    """Split limbs (with these bit sizes, in order) into `dnum` contiguous groups minimizing the
    largest group's total bits (a small dynamic program)."""
    bits = [check_real_range(b, f"balanced_digits: bits[{i}]", 0, lo_open=True)
            for i, b in enumerate(check_sequence(bits, "balanced_digits: bits", 1, hint=(
                "the bit size of each limb, e.g. [math.log2(q) for q in moduli]")))]
    n = len(bits)
    dnum = check_int_range(dnum, "balanced_digits: dnum", 1, n,
                           hint="every digit holds at least one limb")
    prefix = [0.0]
    for b in bits:
        prefix.append(prefix[-1] + b)
    inf = float("inf")
    # cost[d][i]: best max-group-bits for the first i limbs in d groups; cut[d][i]: last start
    cost = [[inf] * (n + 1) for _ in range(dnum + 1)]
    cut = [[0] * (n + 1) for _ in range(dnum + 1)]
    cost[0][0] = 0.0
    for d in range(1, dnum + 1):
        for i in range(d, n + 1):
            for j in range(d - 1, i):
                c = max(cost[d - 1][j], prefix[i] - prefix[j])
                if c < cost[d][i]:
                    cost[d][i], cut[d][i] = c, j
    out = []
    i = n
    for d in range(dnum, 0, -1):
        j = cut[d][i]
        out.append((j, i))
        i = j
    return out[::-1]


def gadget_constants(params: RLWEParams) -> list[int]:
    """G_j = P·B_j mod QP for each key-switching digit j (see the module docstring)."""
    from ren.rlwe.params import RLWEParams  # (params imports this module)

    check_instance(params, RLWEParams, "gadget_constants: params")
    Q = math.prod(params.chain)
    P = math.prod(params.special_moduli)
    out = []
    for a, b in params.digits:
        D = math.prod(params.chain[a:b])
        Qhat = Q // D
        B = Qhat * pow(Qhat, -1, D)
        out.append(P * B % (Q * P))
    return out


__all__ = ["balanced_digits", "gadget_constants"]
