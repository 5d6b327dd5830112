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
                   and one k-term sum per word instead of k lifts of ~L rows each.  The 0 over
                   Q is the constant 0 (`ZERO_ROWS`), a scalar of the CONCAT kernel: no buffer
                   of zeros is stored or read.
                   Both forms use only ops that existed before: limb selections (TO_RING onto a
                   subset, a view when contiguous), basis conversions from ONE modulus (exact:
                   the fast conversion of d in [0, p) is d itself), scalar products by
                   constants, RESCALE, CONCAT, and the broadcast constant
                   `ren.ir.broadcast_const` (h, or 0, in every coefficient, not only X^0).
                   Fused roundings: when x = L + NTT(W) (`split_ntt` looks through sums,
                   differences, scalar products and limb selections, which all commute with the
                   NTT), e.g. x = d0 + mod_down(u) whose mod-down was itself elided into
                   u·P^-1 + NTT(R), then INTT(x mod P) = INTT(L mod P) + (W mod P) and
                   x mod Q - NTT(c) = L mod Q - NTT(c - W mod Q): the rescale by q and the
                   mod-down by P before it share ONE NTT over the kept rows (two before), with
                   the same words (INTT and NTT are exact and linear mod every modulus).  The
                   same holds for a linear transform's sum of giant steps (each a mod-down)
                   before its rescale.  `LOOK_THROUGH = False` builds the rounding from x as
                   it is (for comparisons).
  mod_up_in_ntt    NTT(TO_RING(INTT(x), R_ext)), a basis extension of an NTT-domain x: the rows
                   R_ext shares with x are x's rows as they are (TO_RING keeps shared residues,
                   and the NTT of a row depends on that row only); only the new moduli are
                   converted and transformed, and CONCAT assembles the two sets of rows
                   (|x| INTT rows + |new| NTT rows instead of |x| + |R_ext|).  A selection
                   with no new moduli, NTT(TO_RING(INTT(x), R_sub)), is TO_RING(x, R_sub).
  concat_times_zero_rows  CONCAT(a, b) · c with c = 0 mod every modulus of a (or b): those rows
                   are the constant 0, and the work that made them is dropped.  P·x on Q·P
                   (`ren.rlwe.keyswitch.times_p`, double hoisting's lift of c0: a mod-up times
                   P) becomes CONCAT(x·(P mod q), 0): no INTT, conversion or NTT.
No backend sees anything new: pass 11 lowers CONCAT to a WHERE between two loads with
TABLE-selected limbs, and pass 9 the broadcast constant to a VCONST.

Every replacement keeps the ring, domain and device of the node it replaces (the new constants
live on x's device).
"""

from __future__ import annotations

from ren.errors import ParameterError
from ren.ir import broadcast_const, const_node, const_value, is_const, is_subset, pnode
from ren.node import Node
from ren.ops import GroupOp, Op
from ren.rewrite import P, X
from ren.ring import Domain, RingSpec
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


#: `rescale_in_ntt` looks through sums for NTT-domain terms (`split_ntt`); False builds the
#: rounding from x as it is (the form before, kept for comparisons)
LOOK_THROUGH = True
#: how deep `split_ntt` looks through sums, scalar products and limb selections (a linear
#: transform's sum over its giant steps is a chain of additions as long as their number)
SPLIT_DEPTH = 32
#: the most NTT terms one rounding gathers (`split_ntt`): each gathered W stays live until the
#: rounding's correction is computed (its dropped rows are read first, its kept rows after),
#: so gathering a whole linear transform's giant steps trades memory for NTTs
#: the zero rows of the RESCALE-kernel form: "const" (a scalar 0 in the CONCAT kernel) or
#: "broadcast" (a stored buffer of zeros, the form before; kept for comparisons)
ZERO_ROWS = "const"
MAX_TERMS = 1000  # (no limit in practice: the fast mode's memory does not grow; a lean plan's
#                   arena grew ~29 % at N = 2^12 for 14 % fewer NTT rows; 1 gives +5 % for 9 %)


def _plus(a: Node | None, b: Node | None) -> Node | None:
    return b if a is None else a if b is None else pnode(Op.ADD, a, b)


def _minus(a: Node | None, b: Node | None) -> Node | None:
    if b is None:
        return a
    return _scale(b, -1) if a is None else pnode(Op.SUB, a, b)


def split_ntt(x: Node, depth: int | None = None, terms: set[Node] | None = None
              ) -> tuple[Node | None, Node | None]:
    """(L, W) with x = L + NTT(W) exactly, for an NTT-domain x: W (COEFF, on x's ring) gathers
    the NTT terms of x found through sums, differences, products by a scalar constant and limb
    selections (each commutes with the NTT, which is linear and acts on every limb alone); L is
    the rest (None: 0).  W is None when x has no such term; then L is x itself, not rebuilt.
    Only the nodes on a path to an NTT are rebuilt (a shared node is split once).  `terms`, when
    given, receives the NTT nodes gathered."""
    return _split(x, SPLIT_DEPTH if depth is None else depth, {},
                  set() if terms is None else terms)


def _split(x: Node, depth: int, memo: dict, terms: set[Node]) -> tuple[Node | None, Node | None]:
    key = (x, depth)
    got = memo.get(key)
    if got is None:
        got = memo[key] = _split_node(x, depth, memo, terms)
    return got


def _split_node(x: Node, depth: int, memo: dict, terms: set[Node]
                ) -> tuple[Node | None, Node | None]:
    op = x.op
    if op is Op.NTT:
        terms.add(x)
        return None, x.src[0]
    if depth == 0 or op not in GroupOp.NTT_LINEAR:
        return x, None
    if op is Op.TO_RING:
        if not is_subset(x):
            return x, None
        lo, w = _split(x.src[0], depth - 1, memo, terms)
        if w is None:
            return x, None
        return (None if lo is None else _to_ring(lo, x.arg)), _to_ring(w, x.arg)
    a, b = x.src
    if op is Op.MUL:
        const, other = (a, b) if is_const(a) else (b, a) if is_const(b) else (None, None)
        if const is None or other is None or is_const(other):
            return x, None
        lo, w = _split(other, depth - 1, memo, terms)
        if w is None:
            return x, None
        c = const_value(const)
        return (None if lo is None else _scale(lo, c)), _scale(w, c)
    la, wa = _split(a, depth - 1, memo, terms)
    lb, wb = _split(b, depth - 1, memo, terms)
    if wa is None and wb is None:
        return x, None
    if op is Op.ADD:
        return _plus(la, lb), _plus(wa, wb)
    return _minus(la, lb), _minus(wa, wb)


class _Rows:
    """x = L + NTT(W) (`split_ntt`, or L = x when nothing is found) and the two things a
    rounding reads of x: rows in the coefficient domain, and x's rows minus an NTT."""

    def __init__(self, x: Node) -> None:
        terms: set[Node] = set()
        self.lo, self.w = split_ntt(x, terms=terms) if LOOK_THROUGH else (x, None)
        if self.w is not None and len(terms) > MAX_TERMS:
            self.lo, self.w = x, None

    def coeff(self, ring: RingSpec) -> Node:
        """INTT(x on `ring`) = INTT(L on ring) + W on ring (INTT(NTT(W)) = W)."""
        lo = None if self.lo is None else pnode(Op.INTT, _to_ring(self.lo, ring))
        out = _plus(lo, None if self.w is None else _to_ring(self.w, ring))
        assert out is not None
        return out

    def minus_ntt(self, ring: RingSpec, c: Node) -> Node:
        """x on `ring` - NTT(c) = L on ring - NTT(c - W on ring): one NTT for both."""
        if self.w is not None:
            c = pnode(Op.SUB, c, _to_ring(self.w, ring))
        if self.lo is None:
            return pnode(Op.NTT, _scale(c, -1))
        return pnode(Op.SUB, _to_ring(self.lo, ring), pnode(Op.NTT, c))

    def plus_ntt(self, ring: RingSpec, factor: int, c: Node) -> Node:
        """(x on `ring`)·factor + NTT(c) = (L on ring)·factor + NTT(c + (W on ring)·factor)."""
        if self.w is not None:
            c = pnode(Op.ADD, _scale(_to_ring(self.w, ring), factor), c)
        nc = pnode(Op.NTT, c)
        return nc if self.lo is None else pnode(Op.ADD, _scale(_to_ring(self.lo, ring), factor), nc)


def _zero_rows(ring: RingSpec, device: str) -> Node:
    """The rows of 0 under a RESCALE kernel's dropped rows.  With ZERO_ROWS = "const" they are
    the constant polynomial 0 (0 at X^0 and so in every coefficient): a scalar operand of the
    CONCAT kernel, which reads no buffer for them.  "broadcast" is the broadcast constant, which
    pass 5 stores once in a buffer of zeros that every such CONCAT reads (the form before)."""
    if ZERO_ROWS == "broadcast":
        return broadcast_const(0, ring, device)
    if ZERO_ROWS != "const":
        raise ParameterError(f"elision.ZERO_ROWS is {ZERO_ROWS!r}: set it to 'const' (a scalar 0 "
                             "in the CONCAT kernel) or 'broadcast' (a stored buffer of zeros)")
    return const_node(0, ring, Domain.COEFF, device)


def rescale_in_ntt(x: Node, r: Node) -> Node:
    """NTT(RESCALE(INTT(x))) with the correction applied in the NTT domain (module docstring).
    An NTT term inside x (x = L + NTT(W), `split_ntt`: e.g. the correction of a key switch's
    mod-down by P that a rescale by q follows) joins the correction's NTT: one NTT over the kept
    rows for both roundings instead of two (the words are the same: INTT and NTT are exact and
    linear mod every modulus)."""
    spec = need_spec(x)
    ring, dev, k = spec.ring, spec.device, len(r.arg)
    keep = ring.drop_last(k)  # Q
    special = ring.sub(ring.limbs - k)  # P, the dropped moduli
    P_ = special.Q
    rows_of = _Rows(x)
    p_inv = pow(P_, -1, keep.Q)
    if k >= RESCALE_KERNEL_FROM:  # one RESCALE kernel of zeros over Q and INTT(x mod P)
        rows = pnode(Op.CONCAT, _zero_rows(keep, dev), rows_of.coeff(special), arg=ring)
        return rows_of.plus_ntt(keep, p_inv, pnode(Op.RESCALE, rows, arg=r.arg))
    h = P_ // 2
    # z = [x + h] on the dropped limbs, coefficient domain
    z = pnode(Op.ADD, rows_of.coeff(special), broadcast_const(h, special, dev))
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
    return _scale(rows_of.minus_ntt(keep, centred), p_inv)


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


def concat_times_zero_rows(cat: Node, c: Node) -> Node | None:
    """CONCAT(a, b) · c with c = 0 mod every modulus of a or of b: that source's rows are 0
    (a constant; the work that made them is dropped).  Double hoisting's P·c0 on Q·P
    (`ren.rlwe.keyswitch.times_p`: a mod-up of c0 times P) then needs no INTT, conversion or NTT:
    its rows of P are 0 and its rows of Q are c0·(P mod q)."""
    v = const_value(c)
    s = need_spec(cat)
    out = []
    for src in cat.src:
        ring = need_spec(src).ring
        out.append(const_node(0, ring, s.domain, s.device) if all(v % q == 0 for q in ring.moduli)
                   else _scale(src, v))
    if not any(is_const(o) for o in out):
        return None
    return pnode(Op.CONCAT, *out, arg=cat.arg)


ELISION_RULES = [
    (P(Op.NTT, P(Op.RESCALE, P(Op.INTT, X("x")), name="r")), rescale_in_ntt, "rescale_in_ntt"),
    (P(Op.NTT, P(Op.TO_RING, P(Op.INTT, X("x")), name="t")), mod_up_in_ntt, "mod_up_in_ntt"),
    (P(Op.MUL, P(Op.CONCAT, name="cat"), P(Op.AS_RING, P(Op.CONST), name="c"),
       commutative=True), concat_times_zero_rows, "concat_times_zero_rows"),
]
