"""The oracle: evaluate a high-level Poly graph with simple, obviously correct math.

`evaluate(*polys)` returns, for each Poly, a (limbs × N) uint32 array of standard-form residues
in that Poly's domain.  Nothing here uses the fast paths of `ren.ring`: products are schoolbook
negacyclic convolutions, transforms are direct evaluations at the odd powers of the root of
unity, CRT and rounding use Python big integers.  It is slow (O(N^2)) and meant for tests on
small rings; later stages of Ren are checked against it.

It stays independent of the code it checks: its arithmetic, including the Montgomery form of
storage (`mont_encode`, `mont_decode`: big-integer formulas, where `ren.ring` has vectorised
u32 ones), is its own.  What it shares is the IR's definition of each op: ring and domain
inference (`ren.spec`), including the rule that a product of two polynomials is NTT and a
product by a constant keeps the other operand's domain (`ren.spec.is_poly_product`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from ren.node import Node, toposort
from ren.ops import Op
from ren.ring import Domain, RingSpec
from ren.sampling import sample
from ren.spec import is_poly_product, need_ring, need_spec

I64 = np.int64
R = 1 << 32  # the Montgomery radix of storage


def mont_decode(raw: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Stored words -> standard residues: raw·R^-1 mod q (q an int64 column of moduli)."""
    rinv = np.array([pow(R, -1, int(m)) for m in q.ravel()], dtype=I64).reshape(q.shape)
    return (raw % q) * rinv % q


def mont_encode(v: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Standard residues -> stored words: v·R mod q."""
    return (v % q) * (R % q) % q


# -- independent number theory -------------------------------------------------------------------
@cache
def root_of_unity(q: int, N: int) -> int:
    """The smallest primitive 2N-th root of unity mod q (the definition of the NTT domain)."""
    exp = (q - 1) // (2 * N)
    g = 2
    while True:
        c = pow(g, exp, q)
        if pow(c, N, q) == q - 1:
            break
        g += 1
    return min(pow(c, k, q) for k in range(1, 2 * N, 2))


def _brv(j: int, bits: int) -> int:
    return int(format(j, f"0{bits}b")[::-1], 2) if bits else 0


@cache
def _exponents(N: int) -> np.ndarray:
    """E[j, i] = (2·brv(j) + 1)·i mod 2N: slot j is the evaluation at psi^(2·brv(j)+1)."""
    bits = N.bit_length() - 1
    e = np.array([2 * _brv(j, bits) + 1 for j in range(N)], dtype=I64)
    return (e[:, None] * np.arange(N, dtype=I64)[None, :]) % (2 * N)


def _power_table(base: int, q: int, count: int) -> np.ndarray:
    out, x = [], 1
    for _ in range(count):
        out.append(x)
        x = x * base % q
    return np.array(out, dtype=I64)


def ntt_limb(a: np.ndarray, q: int, N: int) -> np.ndarray:
    """Direct NTT of one limb: A_j = sum_i a_i psi^((2brv(j)+1) i) mod q."""
    V = _power_table(root_of_unity(q, N), q, 2 * N)[_exponents(N)]
    return ((V * a[None, :]) % q).sum(axis=1) % q


def intt_limb(A: np.ndarray, q: int, N: int) -> np.ndarray:
    """Direct inverse: a_i = N^-1 sum_j psi^-((2brv(j)+1) i) A_j mod q."""
    psi_inv = pow(root_of_unity(q, N), -1, q)
    V = _power_table(psi_inv, q, 2 * N)[_exponents(N)]
    s = ((V * A[:, None]) % q).sum(axis=0) % q
    return s * pow(N, -1, q) % q


def negacyclic_mul_limb(a: np.ndarray, b: np.ndarray, q: int) -> np.ndarray:
    """Schoolbook product in Z_q[X]/(X^N + 1): c_k = sum_{i+j=k} a_i b_j - sum_{i+j=k+N} a_i b_j."""
    N = a.shape[0]
    prods = (a[:, None] * b[None, :]) % q  # < 2^62
    acc = np.zeros(2 * N, dtype=I64)
    idx = np.arange(N)[:, None] + np.arange(N)[None, :]
    np.add.at(acc, idx.ravel(), prods.ravel())  # sums of N terms < 2^31 fit in int64
    return (acc[:N] - acc[N:]) % q


def automorph_coeffs(a: list[int] | np.ndarray, g: int, q: int) -> np.ndarray:
    """a(X^g) mod (X^N + 1) by direct substitution: X^i -> X^(i·g), X^N = -1."""
    N = len(a)
    out = np.zeros(N, dtype=I64)
    for i in range(N):
        e = (i * g) % (2 * N)
        if e < N:
            out[e] = (out[e] + a[i]) % q
        else:
            out[e - N] = (out[e - N] - a[i]) % q
    return out


def crt(limbs: np.ndarray, moduli: tuple[int, ...]) -> list[int]:
    """Residues (L, N) → integers in [0, Q) by the textbook CRT formula."""
    Q = 1
    for q in moduli:
        Q *= q
    out = []
    for n in range(limbs.shape[1]):
        x = 0
        for i, q in enumerate(moduli):
            qh = Q // q
            x += int(limbs[i, n]) * pow(qh, -1, q) * qh
        out.append(x % Q)
    return out


def centred(x: int, Q: int) -> int:
    x %= Q
    return x - Q if x > Q // 2 else x


def to_rns_values(words: np.ndarray, ring: RingSpec, W: int) -> np.ndarray:
    """TO_RNS: (N × W) two's-complement u32 words -> (L, N) residues."""
    ints = []
    for row in np.asarray(words).reshape(ring.N, W):
        x = sum(int(w) << (32 * k) for k, w in enumerate(row))
        if x >> (32 * W - 1):
            x -= 1 << (32 * W)
        ints.append(x)
    return np.array([[x % q for x in ints] for q in ring.moduli], dtype=I64)


def basis_convert(x: np.ndarray, src: RingSpec, dst: RingSpec) -> np.ndarray:
    """TO_RING on coefficients: shared moduli keep their residues, new ones get the fast basis
    conversion integer sum_i [x_i qhat_i^-1]_{q_i} qhat_i (not reduced mod Q)."""
    Q = src.Q
    ints = [sum((int(x[i, c]) * pow(Q // q, -1, q) % q) * (Q // q)
                for i, q in enumerate(src.moduli)) for c in range(src.N)]
    rows = []
    for p in dst.moduli:
        if p in src.moduli:
            rows.append(np.asarray(x[src.moduli.index(p)], dtype=I64))
        else:
            rows.append(np.array([v % p for v in ints], dtype=I64))
    return np.stack(rows)


def divide_round(x: np.ndarray, ring: RingSpec, k: int) -> np.ndarray:
    """RESCALE on coefficients: the residues mod ``ring.drop_last(k)`` of round(x / P), P the
    product of the last `k` moduli and x the centred lift mod Q (big integers; the signature of
    `ren.ring.divide_round`, which it checks)."""
    dst = ring.drop_last(k)
    P = ring.Q // dst.Q
    ints = [centred(v, ring.Q) for v in crt(x, ring.moduli)]
    rounded = [(v + P // 2) // P for v in ints]  # round(v / P); P is odd: no ties
    return np.array([[r % q for r in rounded] for q in dst.moduli], dtype=I64)


# -- the evaluator ---------------------------------------------------------------------------
class ReferenceEvaluator:
    """Evaluates high-level nodes; values are int64 (L, N) standard residues in the node's domain.

    Subclasses (the IR interpreter) add handlers for lowered ops.
    """

    def __init__(self) -> None:
        self.values: dict[Node, np.ndarray] = {}

    # helpers
    @staticmethod
    def qcol(ring: RingSpec) -> np.ndarray:
        return np.array(ring.moduli, dtype=I64).reshape(-1, 1)

    def to_coeff(self, x: np.ndarray, ring: RingSpec, domain: Domain) -> np.ndarray:
        if domain is Domain.COEFF:
            return x
        return np.stack([intt_limb(x[i], q, ring.N) for i, q in enumerate(ring.moduli)])

    def to_domain(self, x: np.ndarray, ring: RingSpec, domain: Domain) -> np.ndarray:
        if domain is Domain.COEFF:
            return x
        return np.stack([ntt_limb(x[i], q, ring.N) for i, q in enumerate(ring.moduli)])

    def scalar_value(self, n: Node) -> np.ndarray | None:
        """The per-limb value (L, 1) of a scalar constant operand, else None."""
        if n.op is Op.AS_RING and n.src[0].op is Op.CONST:
            ring = n.arg[0]
            return np.array([n.src[0].arg[0] % q for q in ring.moduli], dtype=I64).reshape(-1, 1)
        return None

    def evaluate(self, roots: list[Node]) -> list[np.ndarray]:
        for n in toposort(*roots):
            if n not in self.values:
                self.values[n] = self.eval_node(n)
        return [self.values[r] for r in roots]

    def eval_node(self, n: Node) -> np.ndarray:
        handler = getattr(self, f"op_{n.op.name}", None)
        if handler is None:
            raise NotImplementedError(f"{type(self).__name__} cannot evaluate {n.op.name}")
        return handler(n)

    def v(self, n: Node) -> np.ndarray:
        return self.values[n]

    # leaves
    def op_BUFFER(self, n: Node) -> np.ndarray:
        return n.arg.copyout().astype(I64)  # raw storage; AS_RING decides its meaning

    def op_CONST(self, n: Node) -> None:
        return None  # only meaningful under AS_RING

    def op_RANDOM(self, n: Node) -> None:
        return None

    def op_AS_RING(self, n: Node) -> np.ndarray:
        ring, domain = n.arg
        leaf = n.src[0]
        q = self.qcol(ring)
        if leaf.op is Op.CONST:
            c = np.array([leaf.arg[0] % qq for qq in ring.moduli], dtype=I64).reshape(-1, 1)
            if domain is Domain.NTT:
                return np.broadcast_to(c, (ring.limbs, ring.N)).copy()
            out = np.zeros((ring.limbs, ring.N), dtype=I64)
            out[:, :1] = c
            return out
        if leaf.op is Op.RANDOM:
            return sample(leaf.arg, ring).astype(I64)
        return mont_decode(self.v(leaf).reshape(ring.limbs, ring.N), q)  # storage: Montgomery

    def op_TO_RNS(self, n: Node) -> np.ndarray:
        ring, W = n.arg
        return to_rns_values(self.v(n.src[0]), ring, W)

    # arithmetic
    def _binary(self, n: Node, fn) -> np.ndarray:
        ring = need_ring(n)
        return fn(self.v(n.src[0]), self.v(n.src[1])) % self.qcol(ring)

    def op_ADD(self, n: Node) -> np.ndarray:
        return self._binary(n, lambda a, b: a + b)

    def op_SUB(self, n: Node) -> np.ndarray:
        return self._binary(n, lambda a, b: a - b)

    def op_NEG(self, n: Node) -> np.ndarray:
        return (-self.v(n.src[0])) % self.qcol(need_ring(n))

    def op_MUL(self, n: Node) -> np.ndarray:
        a, b = n.src
        ring = need_ring(n)
        q = self.qcol(ring)
        if not is_poly_product(n):  # a product by a constant: per-limb scalar, either domain
            for s, other in ((a, b), (b, a)):
                c = self.scalar_value(s)
                if c is not None:
                    return self.v(other) * c % q
        spec = need_spec(n)
        ca = self.to_coeff(self.v(a), ring, need_spec(a).domain)
        cb = self.to_coeff(self.v(b), ring, need_spec(b).domain)
        prod = np.stack([negacyclic_mul_limb(ca[i], cb[i], qq)
                         for i, qq in enumerate(ring.moduli)])
        return self.to_domain(prod, ring, spec.domain)

    # representation changes
    def op_NTT(self, n: Node) -> np.ndarray:
        return self.to_domain(self.v(n.src[0]), need_spec(n).ring, Domain.NTT)

    def op_INTT(self, n: Node) -> np.ndarray:
        return self.to_coeff(self.v(n.src[0]), need_spec(n).ring, Domain.NTT)

    def _in_coeff(self, n: Node,
                  fn: Callable[[np.ndarray, RingSpec, RingSpec], np.ndarray]) -> np.ndarray:
        """Apply fn(coefficients, src_ring, dst_ring) -> coefficients in the output ring, keeping
        domains."""
        src = need_spec(n.src[0])
        out = need_spec(n)
        coeffs = self.to_coeff(self.v(n.src[0]), src.ring, src.domain)
        return self.to_domain(fn(coeffs, src.ring, out.ring), out.ring, out.domain)

    def op_TO_RING(self, n: Node) -> np.ndarray:
        return self._in_coeff(n, basis_convert)

    def op_RESCALE(self, n: Node) -> np.ndarray:
        k = len(n.arg)  # the moduli dropped, the last k of the source ring (`ren.spec`)
        return self._in_coeff(n, lambda x, src, dst: divide_round(x, src, k))

    def _automorph(self, n: Node, g: int) -> np.ndarray:
        def subst(x: np.ndarray, src: RingSpec, dst: RingSpec) -> np.ndarray:
            return np.stack([automorph_coeffs(x[i], g, q) for i, q in enumerate(src.moduli)])
        return self._in_coeff(n, subst)

    def op_ROTATE(self, n: Node) -> np.ndarray:
        N = need_spec(n).ring.N
        return self._automorph(n, pow(5, n.arg, 2 * N))

    def op_CONJUGATE(self, n: Node) -> np.ndarray:
        return self._automorph(n, 2 * need_spec(n).ring.N - 1)

    def op_AUTOMORPH(self, n: Node) -> np.ndarray:
        return self._automorph(n, n.arg)

    def op_CONCAT(self, n: Node) -> np.ndarray:
        """Each row of the result ring from the source that has its modulus (no arithmetic)."""
        rows = []
        for q in n.arg.moduli:
            src = next(s for s in n.src if q in need_ring(s).moduli)  # (a VCONST side too)
            rows.append(self.v(src)[need_ring(src).moduli.index(q)])
        return np.stack(rows)

    def op_COPY(self, n: Node) -> np.ndarray:
        return self.v(n.src[0])

    op_CONTIGUOUS = op_COPY

    def op_SINK(self, n: Node) -> None:
        return None


def evaluate(*polys) -> list[np.ndarray]:
    """For each Poly (or polynomial-valued Node): its (limbs × N) standard residues (uint32) in
    its own domain, computed straight from the graph."""
    nodes = [p.node if hasattr(p, "node") else p for p in polys]
    return [v.astype(np.uint32) for v in ReferenceEvaluator().evaluate(nodes)]
