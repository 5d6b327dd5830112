"""RNS arithmetic for Z_Q[X]/(X^N + 1), vectorised over (limbs × N) NumPy arrays.

* `RingSpec`, `Domain` — the ring and the two storage domains (``ringspec``).
* Montgomery u32 arithmetic with R = 2^32 (``modarith``).
* Negacyclic NTT / inverse NTT over all limbs at once (``ntt``).
* CRT lift, TO_RNS reduction of packed big integers, fast basis conversion and exact
  divide-and-round (``rns``).
* Galois automorphisms X -> X^g as index maps (``automorph``).
* The list of ring kernels and their constant tables as plain arrays (``ring_kernels``).
"""

from ren.ring.automorph import (
    automorph_coeff_map,
    automorph_ntt_map,
    conjugation_element,
    galois_element,
)
from ren.ring.modarith import (
    from_mont,
    mod_add,
    mod_neg,
    mod_sub,
    mont_mul,
    mont_mul_raw,
    mont_words,
    to_mont,
)
from ren.ring.ntt import intt, ntt
from ren.ring.ring_kernels import RingKernel, kernel_tables, twiddle_rows
from ren.ring.ringspec import Domain, RingSpec, is_prime
from ren.ring.rns import (
    crt_lift,
    divide_round,
    divide_round_mont,
    fast_basis_convert,
    fast_basis_convert_mont,
    pack_words,
    reduce_words,
    ring_convert,
    ring_convert_mont,
    unpack_words,
)
from ren.ring.tables import RingTables, get_tables, neg_inv32, primitive_root_2n

__all__ = [
    "Domain",
    "RingKernel",
    "RingSpec",
    "RingTables",
    "automorph_coeff_map",
    "automorph_ntt_map",
    "conjugation_element",
    "crt_lift",
    "divide_round",
    "divide_round_mont",
    "fast_basis_convert",
    "fast_basis_convert_mont",
    "from_mont",
    "galois_element",
    "get_tables",
    "intt",
    "is_prime",
    "kernel_tables",
    "mod_add",
    "mod_neg",
    "mod_sub",
    "mont_mul",
    "mont_mul_raw",
    "mont_words",
    "neg_inv32",
    "ntt",
    "pack_words",
    "primitive_root_2n",
    "reduce_words",
    "ring_convert",
    "ring_convert_mont",
    "to_mont",
    "twiddle_rows",
    "unpack_words",
]
