"""Transform elision: rules that shrink the NTT/INTT work pass 3's injections leave around ring
changes of NTT-domain values.  Part of pass 4's rule set (`ren.passes.p04_simplify_domains`);
not a pass of its own.

Rules:
  rescale_in_ntt   NTT(RESCALE(INTT(x))), x in NTT over R = (q_0..q_{L-1}, p_1..p_k), dropping
                   P = p_1···p_k: only the k dropped limbs are transformed (k INTT rows + L NTT
                   rows instead of L+k and L).  With h = floor(P/2):
                     z   = INTT(x mod P) + h                  (h in every coefficient; COEFF)
                     [z]_P by mixed radix, one modulus at a time from p_k down:
                       d_m = z_m mod p_m;  z_{m-1} = (z_m - d_m) · p_m^-1  over p_1..p_{m-1}
                     r   = sum_m d_m · p_k···p_{m+1}  in [0, P)  (each d_m lifted to Q exactly)
                     out = (x mod Q - NTT(r - h)) · P^-1 mod Q          (NTT domain)
                   x + h - [x + h]_P is a multiple of P, so out = floor((x + h) / P) exactly: the
                   RESCALE semantics (`ren.ring.divide_round_mont`), bit for bit.
                   From k = RESCALE_KERNEL_FROM on, the rounding is one RESCALE kernel:
                     out = (x mod Q) · P^-1 + NTT(RESCALE(CONCAT(0 over Q, y)))
                   with y = INTT(x mod P): RESCALE of rows that are 0 over Q is
                   -([y + h]_P - h) · P^-1, the same correction, made by the kernel's digits
                   and one k-term sum per word instead of k lifts of ~L rows each.
                   Both forms use only ops that existed before: limb selections (TO_RING onto a
                   subset, a view when contiguous), basis conversions from ONE modulus (exact:
                   the fast conversion of d in [0, p) is d itself), scalar products by
                   constants, RESCALE, CONCAT, and the broadcast constant
                   `ren.ir.broadcast_const` (h, or 0, in every coefficient, not only X^0).
  mod_up_in_ntt    NTT(TO_RING(INTT(x), R_ext)), a basis extension of an NTT-domain x: the rows
                   R_ext shares with x are x's rows as they are (TO_RING keeps shared residues,
                   and the NTT of a row depends on that row only); only the new moduli are
                   converted and transformed, and CONCAT assembles the two sets of rows
                   (|x| INTT rows + |new| NTT rows instead of |x| + |R_ext|).  A selection
                   with no new moduli, NTT(TO_RING(INTT(x), R_sub)), is TO_RING(x, R_sub).
No backend sees anything new: pass 11 lowers CONCAT to a WHERE between two loads with
TABLE-selected limbs, and pass 9 the broadcast constant to a VCONST.

Every replacement keeps the ring, domain and device of the node it replaces (the new constants
live on x's device).
"""

from __future__ import annotations

from ren.ir import broadcast_const, const_node, pnode
from ren.node import Node
from ren.ops import Op
from ren.rewrite import P, X
from ren.ring import RingSpec
from ren.spec import need_spec


def _to_ring(x: Node, ring: RingSpec) -> Node:
    return x if need_spec(x).ring == ring else pnode(Op.TO_RING, x, arg=ring)


def _scale(x: Node, c: int) -> Node:
    """x · c (a scalar product, in x's domain); c reduced mod x's Q."""
    s = need_spec(x)
    c %= s.ring.Q
    return x if c == 1 else pnode(Op.MUL, x, const_node(c, s.ring, s.domain, s.device))


#: from this many dropped moduli on (a key switch's mod-down by P), `rescale_in_ntt` hands the
#: exact rounding to one RESCALE kernel instead of the chain of one-modulus lifts: the chain
#: writes and sums k rows sets of about L rows, the kernel makes the k digits on k rows and
#: one k-term multiply-add per output word (`ren_cpu_rescale`).  Measured at N = 2^16, 8
#: special primes, a hoisted rotation set replayed 1.79 -> 1.63 s; for k = 1, 2 (a CKKS
#: rescale) the chain is as fast and needs no zero rows.
RESCALE_KERNEL_FROM = 3


def rescale_in_ntt(x: Node, r: Node) -> Node:
    """NTT(RESCALE(INTT(x))) with the correction applied in the NTT domain (module docstring)."""
    spec = need_spec(x)
    ring, dev, k = spec.ring, spec.device, len(r.arg)
    keep = ring.drop_last(k)  # Q
    special = ring.sub(ring.limbs - k)  # P, the dropped moduli
    P_ = special.Q
    if k >= RESCALE_KERNEL_FROM:  # one RESCALE kernel of zeros over Q and INTT(x mod P)
        rows = pnode(Op.CONCAT, broadcast_const(0, keep, dev),
                     pnode(Op.INTT, _to_ring(x, special)), arg=ring)
        correction = pnode(Op.NTT, pnode(Op.RESCALE, rows, arg=r.arg))  # -([x+h]_P - h)/P
        return pnode(Op.ADD, _scale(_to_ring(x, keep), pow(P_, -1, keep.Q)), correction)
    h = P_ // 2
    # z = [x + h] on the dropped limbs, coefficient domain
    z = pnode(Op.ADD, pnode(Op.INTT, _to_ring(x, special)), broadcast_const(h, special, dev))
    terms = []  # d_m · (p_k···p_{m+1}), over Q
    weight = 1
    for m in range(k, 0, -1):
        p = special.moduli[m - 1]
        d = _to_ring(z, special.select((p,)))  # the digit d_m in [0, p_m)
        # one exact conversion lifts d_m to Q and to the limbs still to be reduced
        lifted = pnode(Op.TO_RING, d, arg=ring.drop_last(k - m + 1))
        terms.append(_scale(_to_ring(lifted, keep), weight))
        if m > 1:
            rest = special.sub(0, m - 1)
            z = _scale(pnode(Op.SUB, _to_ring(z, rest), _to_ring(lifted, rest)),
                       pow(p, -1, rest.Q))
        weight *= p
    rem = terms[0]
    for t in terms[1:]:
        rem = pnode(Op.ADD, rem, t)
    centred = pnode(Op.SUB, rem, broadcast_const(h, keep, dev))  # [x + h]_P - h, in [-h, h]
    diff = pnode(Op.SUB, _to_ring(x, keep), pnode(Op.NTT, centred))
    return _scale(diff, pow(P_, -1, keep.Q))


def mod_up_in_ntt(x: Node, t: Node) -> Node | None:
    """NTT(TO_RING(INTT(x), R_ext)): the rows R_ext shares with x are x's own rows (TO_RING keeps
    shared residues, and a row's NTT depends on that row only); only the new rows are converted
    and transformed (none: a limb selection of x itself).  None when R_ext shares no modulus
    with x (nothing to reuse)."""
    src, ext = need_spec(x).ring, t.arg
    shared = [q for q in src.moduli if q in ext.moduli]
    new = tuple(q for q in ext.moduli if q not in src.moduli)
    if not shared:
        return None
    if not new:
        return _to_ring(x, ext)
    kept = _to_ring(x, src.select(shared))
    converted = pnode(Op.NTT, pnode(Op.TO_RING, pnode(Op.INTT, x), arg=ext.select(new)))
    return pnode(Op.CONCAT, kept, converted, arg=ext)


ELISION_RULES = [
    (P(Op.NTT, P(Op.RESCALE, P(Op.INTT, X("x")), name="r")), rescale_in_ntt, "rescale_in_ntt"),
    (P(Op.NTT, P(Op.TO_RING, P(Op.INTT, X("x")), name="t")), mod_up_in_ntt, "mod_up_in_ntt"),
]
