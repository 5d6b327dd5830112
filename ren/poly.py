"""`Poly`: a lazy polynomial in an RNS ring.

Every operation only builds IR nodes; nothing runs until a value is needed.  Compatibility of
rings, domains and devices is checked when a node is built, so a mistake is reported at the line
that made it, with a `RenError` subclass that says what was expected and how to fix it.

Thread safety: Polys may be built, realized and read from several threads (realization is
serialized by a lock in `ren.realization`).  A Poly's node changes only through the
becomes_map, under that lock, and always to a node with the same value.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ren import random as ren_random
from ren.device import Buffer, canonical_device, in_host_memory
from ren.errors import (
    DomainError,
    LevelError,
    ParameterError,
    RingMismatchError,
    ShapeError,
    TruthValueError,
    check_int,
    check_real,
    is_int,
)
from ren.ir import const_node
from ren.node import Node, substitute_many
from ren.ops import DType, Op
from ren.poly_checks import (
    OPERATOR_SYMBOL,
    as_domain,
    check_ring,
    moduli_to_drop,
    operand_error,
    unify_operands,
    unsupported_operator,
)
from ren.random import RandomSpec
from ren.realization import (
    current_recorder,
    host_residues,
    is_realized,
    realize_lock,
    realize_nodes,
)
from ren.ring import Domain, RingSpec, get_tables, pack_words, to_mont
from ren.ring.automorph import _check_g
from ren.ring.rns import pack_int64
from ren.sampling import validate as validate_random
from ren.serialize import PayloadDType, encode_poly, payload_dtype, read_poly, standard_residues
from ren.spec import PolySpec, need_spec, spec_of

#: Every live Poly, so realization can point overlapping graphs at realized buffers.
_live: weakref.WeakSet[Poly] = weakref.WeakSet()


class Poly:
    """A lazy polynomial: a handle on an IR node whose value is a (limbs × N) residue array.

    Operators: ``p + x``, ``p - x``, ``p * x`` (and reflected, and ``+=`` etc.) and ``-p``,
    where ``x`` is a Poly or an int (Python or NumPy integer).  This is exact modular arithmetic,
    so floats (``np.float64`` too), bools, None, strings and arrays raise `OperandError` (a
    TypeError), as do ``**``, ``/``, ``//``, ``%``, ``@``, ``<`` and the bitwise operators; NumPy
    never broadcasts over a Poly (``np.array([1, 2]) * p`` raises too).

    Equality: ``p == q`` and ``p != q`` with a Poly or an int raise `TruthValueError` (a
    TypeError), like ``bool(p)``: a lazy Poly has no value to compare, and Python's default
    identity answer would make ``if p == q:`` silently wrong.  Compare values explicitly
    (``p.tolist() == q.tolist()``) or identities with ``is``.  Because ``x in list`` and
    ``list.index`` call ``==``, search lists of Polys by identity:
    ``any(x is p for x in polys)``.  The hash is the identity, so Polys work as dict keys and
    set members (those compare hashes and identity, never ``==``).  A Poly compared with any
    other type (``p == None``) is simply unequal.
    """

    __slots__ = ("__weakref__", "_node", "_origin")

    def __init__(self, node: Node):
        if not isinstance(node, Node) or spec_of(node) is None:
            what = node.op.name + " node" if isinstance(node, Node) else type(node).__name__
            raise ParameterError(f"Poly(node) wraps a polynomial-valued IR node, got {what}; "
                                 "make Polys with Poly.from_coefficients, Poly.const, ...")
        self._node = node
        self._origin: RandomSpec | None = None
        _live.add(self)

    # -- identity -------------------------------------------------------------------------
    @property
    def node(self) -> Node:
        """The IR node this Poly currently stands for (it changes when the Poly is realized)."""
        return self._node

    @property
    def spec(self) -> PolySpec:
        return need_spec(self._node)  # set: __init__ checks it, and becomes_map keeps it

    @property
    def ring(self) -> RingSpec:
        return self.spec.ring

    @property
    def domain(self) -> Domain:
        return self.spec.domain

    @property
    def device(self) -> str:
        return self.spec.device

    def __repr__(self) -> str:
        s = self.spec
        return f"<Poly {s.ring.short()} {s.domain.name} {s.device} {self._node.op.name}>"

    def __bool__(self) -> bool:
        raise TruthValueError(
            "a lazy Poly has no truth value (used in `if`, `and`, `or`, `not`?); realize it and "
            "compare values explicitly, e.g. p.tolist() == q.tolist()")

    # identity hash: a Poly is a usable dict key and set member (dicts and sets compare
    # hashes and identity first, so they never call the raising __eq__ below)
    __hash__ = object.__hash__

    # -- constructors -----------------------------------------------------------------------
    @classmethod
    def from_coefficients(cls, coeffs: Sequence[int] | np.ndarray, ring: RingSpec,
                          device: str = "python") -> Poly:
        """A polynomial from N signed integer coefficients of any size (coefficient domain).

        The integers are packed into u32 words (two's complement), stored in a host BUFFER and
        reduced into the ring's RNS basis by TO_RNS when realized.  On a device whose storage is
        host memory ("cpu") the words buffer is that device's, so the device reduces them with
        its own kernel; on others (and on a device not available here) "python" reduces them
        and the residues are copied (COPY).
        """
        ring = check_ring(ring)
        device = canonical_device(device)
        words: np.ndarray | None = None
        if isinstance(coeffs, np.ndarray):
            if coeffs.ndim != 1 or not np.issubdtype(coeffs.dtype, np.integer):
                raise ShapeError(f"coefficients must be a 1-D integer array, got {coeffs.dtype}"
                                 f"{list(coeffs.shape)}")
            wide = coeffs.dtype.itemsize > 8 or coeffs.dtype == np.uint64
            if not wide and len(coeffs) and np.max(np.abs(coeffs.astype(np.int64))) < 1 << 62:
                words = pack_int64(coeffs.astype(np.int64))  # as pack_words, vectorized
            else:
                coeffs = coeffs.tolist()
        # a set or dict has no reliable order, so its "coefficients" would land anywhere
        if words is None and (isinstance(coeffs, str | bytes | bytearray)
                              or not isinstance(coeffs, Sequence)):
            raise ShapeError(
                "coefficients must be a sequence of ints (list, tuple, range or 1-D integer "
                f"array), got {type(coeffs).__name__}")
        if len(coeffs) != ring.N:
            raise ShapeError(
                f"from_coefficients: expected N={ring.N} coefficients for {ring!r}, got "
                f"{len(coeffs)}; pad with zeros or pick a ring with N={len(coeffs)}"
            )
        if words is None:
            assert not isinstance(coeffs, np.ndarray)  # arrays took the vectorized path
            for c in coeffs:
                if not is_int(c):
                    raise ShapeError(f"coefficients must be ints, found {type(c).__name__} "
                                     f"{c!r}")
            words = pack_words(coeffs)
        return cls(words_node(words, ring, device))

    @classmethod
    def from_residues(cls, residues: np.ndarray | Sequence[Sequence[int]], ring: RingSpec,
                      domain: Domain | str = Domain.COEFF, device: str = "python") -> Poly:
        """An already-realized polynomial from its (limbs × N) standard-form residues in
        `domain` (each row i in [0, q_i)).  The values are stored in Montgomery form."""
        ring = check_ring(ring)
        domain = as_domain(domain)
        device = canonical_device(device)
        # Exact ints only: a float, Fraction or bool would otherwise be truncated silently.
        std = standard_residues(ring, residues, "from_residues").astype(np.uint32)
        return cls._from_stored(to_mont(std, get_tables(ring)), ring, domain, device)

    @classmethod
    def _from_stored(cls, words: np.ndarray, ring: RingSpec, domain: Domain, device: str
                     ) -> Poly:
        """A realized polynomial over a copy of `words`, already in stored (Montgomery) form
        and reduced, on the canonical `device`."""
        buf = Buffer(device, (ring.limbs, ring.N)).copyin(words)
        return cls(Node(Op.AS_RING, DType.U32, (Node(Op.BUFFER, DType.U32, (), buf),),
                        (ring, domain)))

    @classmethod
    def const(cls, value: int, ring: RingSpec, domain: Domain | str = Domain.COEFF,
              device: str = "python") -> Poly:
        """The constant polynomial `value` (symbolic: no storage until a pass needs it)."""
        value = check_int(value, "Poly.const: value")
        return cls(const_node(value, check_ring(ring), as_domain(domain),
                              canonical_device(device)))

    @classmethod
    def _random(cls, ring: RingSpec, kind: str, params: tuple, device: str,
                domain: Domain | str = Domain.COEFF) -> Poly:
        ring = check_ring(ring)
        recorder = current_recorder()  # e.g. a JIT capture, which must refuse fresh randomness
        if recorder is not None:
            recorder.on_random(kind)
        validate_random(kind, params, ring)
        domain = as_domain(domain)
        if domain is Domain.NTT and kind != "uniform":
            raise DomainError(f"{kind} samples small coefficients, so it is defined in the "
                              "coefficient domain; sample it there and call .ntt()")
        spec = RandomSpec(kind, params, ren_random.next_seed(), canonical_device(device))
        return cls._sample(spec, ring, domain)

    @classmethod
    def _sample(cls, spec: RandomSpec, ring: RingSpec, domain: Domain) -> Poly:
        p = cls(Node(Op.AS_RING, DType.U32, (Node(Op.RANDOM, DType.U32, (), spec),),
                     (ring, domain)))
        p._origin = spec
        return p

    @classmethod
    def from_random(cls, spec: RandomSpec, ring: RingSpec,
                    domain: Domain | str = Domain.COEFF) -> Poly:
        """The sample that `spec` (kind, parameters, seed, device) describes: the same values as
        the Poly it was taken from (`random_origin`), e.g. a uniform half stored as its seed."""
        if not isinstance(spec, RandomSpec):
            raise ParameterError(f"Poly.from_random: expected a RandomSpec, got "
                                 f"{type(spec).__name__}")
        ring, domain = check_ring(ring), as_domain(domain)
        validate_random(spec.kind, spec.params, ring)
        if domain is Domain.NTT and spec.kind != "uniform":
            raise DomainError(f"{spec.kind} samples are defined in the coefficient domain")
        return cls._sample(spec, ring, domain)

    def random_origin(self) -> RandomSpec | None:
        """The RandomSpec this Poly was sampled from, if it is a sample itself (made by
        `uniform`, `ternary`, … or `from_random`; realizing it keeps the origin), else None."""
        return self._origin

    @classmethod
    def uniform(cls, ring: RingSpec, device: str = "python",
                domain: Domain | str = Domain.COEFF) -> Poly:
        """Uniformly random residues mod Q (in either domain: uniform stays uniform)."""
        return cls._random(ring, "uniform", (), device, domain)

    @classmethod
    def uniform_on_interval(cls, ring: RingSpec, lo: int, hi: int,
                            device: str = "python") -> Poly:
        """Coefficients uniform in [lo, hi], both ends included."""
        lo = check_int(lo, "uniform_on_interval: lo")
        hi = check_int(hi, "uniform_on_interval: hi")
        return cls._random(ring, "uniform_on_interval", (lo, hi), device)

    @classmethod
    def ternary(cls, ring: RingSpec, device: str = "python") -> Poly:
        """Coefficients uniform in {-1, 0, 1}."""
        return cls._random(ring, "ternary", (), device)

    @classmethod
    def sparse_ternary(cls, ring: RingSpec, hamming_weight: int, device: str = "python") -> Poly:
        """Exactly `hamming_weight` coefficients ±1 at random positions, the rest 0."""
        h = check_int(hamming_weight, "sparse_ternary: hamming_weight")
        return cls._random(ring, "sparse_ternary", (h,), device)

    @classmethod
    def gaussian(cls, ring: RingSpec, sigma: float = 3.2, device: str = "python") -> Poly:
        """Rounded Gaussian coefficients with standard deviation `sigma` (clipped at 6·sigma)."""
        return cls._random(ring, "gaussian", (check_real(sigma, "gaussian: sigma"),), device)

    # -- arithmetic ---------------------------------------------------------------------------
    # NumPy must not broadcast over a Poly (np.array([1, 2]) * p would be an object array of
    # Polys): with this, NumPy's operators return NotImplemented and Python asks the Poly.
    __array_ufunc__ = None

    def _coerce(self, symbol: str, other: Any, reverse: bool) -> Node:
        """The node of `other` as an operand of `symbol`; OperandError unless a Poly or an int."""
        if isinstance(other, Poly):
            return other._node
        if is_int(other):
            s = self.spec
            return const_node(int(other), s.ring, s.domain, s.device)
        # raise rather than return NotImplemented: Python's fallback is a bare TypeError
        raise operand_error(symbol, other, reverse)

    def _binary(self, op: Op, other: Any, reverse: bool = False) -> Poly:
        b = self._coerce(OPERATOR_SYMBOL[op], other, reverse)
        a = self._node
        if reverse:
            a, b = b, a
        a, b = unify_operands(op, a, b)
        return Poly(Node(op, DType.U32, (a, b)))

    def __add__(self, other: Any) -> Poly:
        return self._binary(Op.ADD, other)

    def __radd__(self, other: Any) -> Poly:
        return self._binary(Op.ADD, other, reverse=True)

    def __sub__(self, other: Any) -> Poly:
        return self._binary(Op.SUB, other)

    def __rsub__(self, other: Any) -> Poly:
        return self._binary(Op.SUB, other, reverse=True)

    def __mul__(self, other: Any) -> Poly:
        return self._binary(Op.MUL, other)

    def __rmul__(self, other: Any) -> Poly:
        return self._binary(Op.MUL, other, reverse=True)

    def __neg__(self) -> Poly:
        return Poly(Node(Op.NEG, DType.U32, (self._node,)))

    # Operators with no exact meaning on a Poly: a Ren error that says what to write instead.
    __pow__ = __rpow__ = unsupported_operator(
        "**", "there is no power operator; multiply (p * p, or a loop of squarings)")
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = \
        __divmod__ = __rdivmod__ = unsupported_operator(
            "/, //, % and divmod",
            "a Poly has no division; divide exactly by the ring's trailing moduli with "
            "p.rescale(moduli), or multiply by an inverse mod Q: p * pow(k, -1, Q) where "
            "Q = math.prod(p.ring.moduli)")
    __matmul__ = __rmatmul__ = unsupported_operator(
        "@", "* already is the ring product (the negacyclic convolution mod X^N + 1)")
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __lshift__ = __rlshift__ = \
        __rshift__ = __rrshift__ = __invert__ = unsupported_operator(
            "bitwise operators", "residues have no bitwise operations in Ren")
    __pos__ = __abs__ = unsupported_operator("unary + and abs()", "negate with -p")
    __lt__ = __le__ = __gt__ = __ge__ = unsupported_operator(
        "<, <=, > and >=", "polynomials mod Q have no order; realize them and compare values "
        "explicitly, e.g. p.coefficients() and q.coefficients()")

    def __eq__(self, other: object) -> bool:
        return self._equality("==", other)

    def __ne__(self, other: object) -> bool:
        return self._equality("!=", other)

    def _equality(self, symbol: str, other: object) -> bool:
        """`p == q` with a Poly or an int raises: a lazy Poly has no value yet, and answering with
        identity (Python's default) would make `if p == q:` silently wrong.  Anything else is
        never equal to a Poly: NotImplemented lets Python answer False (`p == None`)."""
        if isinstance(other, Poly) or is_int(other):
            raise TruthValueError(
                f"`Poly {symbol} {type(other).__name__}`: Ren does not compare lazy Polys "
                "implicitly, neither by value (they have none until realized) nor by identity; "
                "for identity write `p is q` (membership: `any(x is p for x in polys)`), for "
                "values realize and compare explicitly, e.g. p.tolist() == q.tolist() (same "
                "ring and domain) or p.coefficients() == q.coefficients()")
        return NotImplemented

    # -- representation and ring changes ------------------------------------------------------
    def ntt(self) -> Poly:
        """This polynomial in the NTT domain."""
        if self.domain is Domain.NTT:
            raise DomainError("ntt(): the polynomial is already in the NTT domain")
        return Poly(Node(Op.NTT, DType.U32, (self._node,)))

    def intt(self) -> Poly:
        """This polynomial in the coefficient domain."""
        if self.domain is Domain.COEFF:
            raise DomainError("intt(): the polynomial is already in the coefficient domain")
        return Poly(Node(Op.INTT, DType.U32, (self._node,)))

    def to_ring(self, ring: RingSpec) -> Poly:
        """This polynomial in another basis of the same dimension.

        Moduli shared with the current ring keep their residues exactly (a subset of the moduli
        is an exact reduction; a contiguous run of them becomes a zero-copy view).  Each new
        modulus gets the fast basis conversion of the residues, i.e. the value x + u·Q with
        0 <= u < limbs (see `ren.ring.fast_basis_convert`).
        """
        ring = check_ring(ring)
        if ring.N != self.ring.N:
            raise RingMismatchError(
                f"to_ring: cannot change the dimension N={self.ring.N} to N={ring.N}; "
                "rings must share N"
            )
        return Poly(Node(Op.TO_RING, DType.U32, (self._node,), ring))

    def rescale(self, moduli: int | Sequence[int]) -> Poly:
        """Divide by the product P of `moduli` and round (exactly): the result lives in the ring
        without them.  `moduli` (one int or a sequence) must be the ring's trailing moduli."""
        drop = moduli_to_drop(moduli)
        ring = self.ring
        if not drop:
            raise LevelError("rescale: give at least one modulus to divide by")
        if len(drop) >= ring.limbs:
            raise LevelError(
                f"rescale: cannot drop {len(drop)} of the ring's {ring.limbs} moduli; at least "
                "one must remain"
            )
        if ring.moduli[-len(drop):] != drop:
            raise LevelError(
                f"rescale: the ring ends with moduli {list(ring.moduli[-len(drop):])}, not "
                f"{list(drop)}; only trailing moduli can be divided out (last one last)"
            )
        return Poly(Node(Op.RESCALE, DType.U32, (self._node,), drop))

    def rotate(self, k: int) -> Poly:
        """The automorphism X -> X^(5^k mod 2N): a rotation of the CKKS slots by k."""
        k = check_int(k, "rotate: k")
        return Poly(Node(Op.ROTATE, DType.U32, (self._node,), k))

    def conjugate(self) -> Poly:
        """The automorphism X -> X^(2N-1) = X^-1: complex conjugation of the CKKS slots."""
        return Poly(Node(Op.CONJUGATE, DType.U32, (self._node,)))

    def automorph(self, g: int) -> Poly:
        """The Galois automorphism X -> X^g (g odd)."""
        g = _check_g(self.ring.N, g)
        return Poly(Node(Op.AUTOMORPH, DType.U32, (self._node,), g))

    def to(self, device: str) -> Poly:
        """A copy of this polynomial on `device`."""
        return Poly(Node(Op.COPY, DType.U32, (self._node,), canonical_device(device)))

    def contiguous(self) -> Poly:
        """Ask for this value in its own contiguous buffer (a materialization point)."""
        return Poly(Node(Op.CONTIGUOUS, DType.U32, (self._node,)))

    # -- realization and reading values ---------------------------------------------------------
    def realize(self, *others: Poly) -> Poly:
        """Compute this Poly (and `others`, together, sharing work) now; returns self.

        Afterwards the Poly — and every live Poly whose graph used it — points at a buffer, so
        nothing is computed twice.  Realizing an already realized Poly does nothing.
        """
        realize_polys((self, *others))
        return self

    @property
    def is_realized(self) -> bool:
        return is_realized(self._node)

    def numpy(self) -> np.ndarray:
        """The (limbs × N) uint32 array of standard-form residues, in this Poly's domain."""
        self.realize()
        return host_residues(self._node)

    def tolist(self) -> list[list[int]]:
        """The residues as a list of limbs, each a list of N ints in [0, q_i), in this Poly's
        domain (standard form, not Montgomery)."""
        return self.numpy().tolist()

    def coefficients(self) -> list[int]:
        """The N signed coefficients: the centred CRT lift (in (-Q/2, Q/2]) of the polynomial in
        coefficient form (an NTT-domain Poly is transformed back on the host)."""
        from ren.ring import crt_lift, intt

        res = self.numpy()
        if self.domain is Domain.NTT:
            res = intt(res, self.ring)
        return crt_lift(res, self.ring)

    def tobytes(self, form: str = "standard") -> bytes:
        """A versioned, self-describing, checksummed encoding (see `ren.serialize`).
        ``form="montgomery"`` writes the words as Ren stores them (no conversion at either end;
        readable by Ren only, which is what `ren.distributed` sends)."""
        dtype = payload_dtype(form, "Poly.tobytes")
        self.realize()  # first: the domain is read from the realized Poly
        words = host_residues(self.node, montgomery=dtype is PayloadDType.U32_MONTGOMERY)
        return encode_poly(self.ring, self.domain, words, dtype)

    @classmethod
    def frombytes(cls, data: bytes | bytearray | memoryview, device: str = "python", *,
                  checksum: bool = True) -> Poly:
        """The Poly encoded by `tobytes` (either form); corrupted, truncated or unknown-version
        data raises SerializationError.  ``checksum=False`` skips the checksum: only for bytes
        whose integrity the caller has just verified (inside a checksummed container)."""
        ring, domain, dtype, words = read_poly(data, checksum=checksum)
        if dtype is not PayloadDType.U32_MONTGOMERY:  # (read_poly has checked the range)
            words = to_mont(words, get_tables(ring))
        return cls._from_stored(words, ring, domain, canonical_device(device))


def words_node(words: np.ndarray, ring: RingSpec, device: str) -> Node:
    """The lazy reduction (TO_RNS) into `ring` of N signed integers packed as (N, W) u32 words
    (`ren.ring.pack_words`' layout, two's complement, low word first), on `device` (a
    canonical name): `Poly.from_coefficients` after its checks, and callers that hold such
    words already (the CKKS encoder's int64 coefficients on a little-endian host).  The words
    buffer is the device's where its storage is host memory, else "python"'s, copied over."""
    buf = Buffer(device if in_host_memory(device) else "python", words.shape)
    buf.attach(np.ascontiguousarray(words))
    node = Node(Op.TO_RNS, DType.U32, (Node(Op.BUFFER, DType.U32, (), buf),),
                (ring, words.shape[1]))
    if device != buf.device:
        node = Node(Op.COPY, DType.U32, (node,), device)
    return node


def live_polys() -> list[Poly]:
    """The Polys that currently exist (a snapshot)."""
    # Iterating the WeakSet fails if another thread adds to it meanwhile; copying its set of
    # references is one C call, so no other thread runs in between.
    refs = _live.data.copy()  # type: ignore[attr-defined]  # WeakSet.data: not in typeshed
    return [p for r in refs if (p := r()) is not None]


def apply_becomes_map(mapping: dict[Node, Node]) -> None:
    """Point every live Poly whose graph contains a realized output at the buffer-backed node,
    so later realizations reuse the buffers instead of recomputing."""
    if not mapping:
        return
    pending = [p for p in live_polys() if not is_realized(p._node)]
    if not pending:
        return
    new_nodes = substitute_many([p._node for p in pending], mapping)
    for p, n in zip(pending, new_nodes, strict=True):
        p._node = n


def realize_polys(polys: Sequence[Poly]) -> None:
    """Realize several Polys together (one SINK, shared intermediates computed once), then apply
    the becomes_map to every live Poly."""
    if isinstance(polys, str | bytes) or not isinstance(polys, Sequence):
        raise ParameterError(f"realize: expected a list or tuple of Polys, got "
                             f"{type(polys).__name__}; for one Poly p use p.realize()")
    for p in polys:
        if not isinstance(p, Poly):
            raise ParameterError(f"realize: expected Polys, got {type(p).__name__} {p!r}")
    with realize_lock:  # read the nodes inside: another thread's becomes_map may move them
        apply_becomes_map(realize_nodes([p._node for p in polys]))
