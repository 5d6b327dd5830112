"""The `Op` enum and the small `DType` enum of Ren's IR.

Ops fall into layers; a graph moves down the layers as the twelve passes run:

* **Polynomial ops** (built by `Poly`): BUFFER CONST RANDOM TO_RNS AS_RING ADD SUB MUL NEG NTT
  INTT TO_RING RESCALE ROTATE CONJUGATE AUTOMORPH COPY CONTIGUOUS SINK.
* **Scheduling ops** (introduced by the passes): CONCAT (rows of two polynomials assembled into
  one ring, made by pass 4's transform elision), BUFFERIZE STORE AFTER BUFFER_VIEW, REINDEX and
  VCONST (index-mapped values and per-limb constants), the index language GIDX ICONST IADD IMUL
  IAND ISHR ISHL BITREV TABLE CMPEQ WHERE, memory access INDEX LOAD, the lowered residue
  arithmetic MODADD MODSUB MODNEG MONTMUL with their MODULUS operand, the ring-kernel call
  RING_CALL, and the kernel boundary KERNEL SLOT.
"""

from __future__ import annotations

import enum


class DType(enum.Enum):
    """Element type of a node's value."""

    U32 = "u32"  # residues (one u32 limb per modulus and coefficient) or packed words
    INDEX = "index"  # integer index arithmetic
    VOID = "void"  # effects and containers: STORE, SINK, KERNEL

    __hash__ = object.__hash__  # members are singletons; Enum's default hashes the name in Python

    def __repr__(self) -> str:
        return f"DType.{self.name}"


class Op(enum.Enum):
    # -- storage and leaves
    BUFFER = enum.auto()  # arg: Buffer
    CONST = enum.auto()  # arg: (value: int, device: str); a constant polynomial
    RANDOM = enum.auto()  # arg: RandomSpec (kind, params, seed, device)
    TO_RNS = enum.auto()  # src: BUFFER of packed words; arg: (ring, limb_count)
    AS_RING = enum.auto()  # arg: (ring, domain); attaches ring metadata to storage/computation
    # -- polynomial arithmetic
    ADD = enum.auto()
    SUB = enum.auto()
    MUL = enum.auto()
    NEG = enum.auto()
    # -- representation and ring changes
    NTT = enum.auto()
    INTT = enum.auto()
    TO_RING = enum.auto()  # arg: target ring
    RESCALE = enum.auto()  # arg: tuple of dropped (trailing) moduli
    ROTATE = enum.auto()  # arg: k (slot rotation)
    CONJUGATE = enum.auto()
    AUTOMORPH = enum.auto()  # arg: Galois element g (odd)
    COPY = enum.auto()  # arg: destination device
    CONTIGUOUS = enum.auto()
    # src: (a, b) in one domain on disjoint moduli; arg: the ring of the result (its moduli are
    # a's and b's, in any order); each row comes from the source that has its modulus
    CONCAT = enum.auto()
    SINK = enum.auto()
    # -- scheduling
    BUFFERIZE = enum.auto()
    STORE = enum.auto()  # src: (target, value); arg: (ring, domain) of the stored value
    AFTER = enum.auto()  # src: (buffer, effect): the buffer's value after the effect ran
    BUFFER_VIEW = enum.auto()  # src: (base,); arg: (element offset, element count)
    REINDEX = enum.auto()  # src: (value, index expr): value read at a computed coefficient index
    # arg: (ring, per-limb Montgomery words), broadcast over coefficients; inside a kernel
    # (after indexify): src (limb index,), arg the words only
    VCONST = enum.auto()
    # -- index language
    GIDX = enum.auto()  # arg: axis (0 = limb, 1 = coefficient)
    ICONST = enum.auto()  # arg: int
    IADD = enum.auto()
    IMUL = enum.auto()
    IAND = enum.auto()
    ISHR = enum.auto()
    ISHL = enum.auto()
    BITREV = enum.auto()  # arg: number of bits
    TABLE = enum.auto()  # arg: tuple of ints; value = arg[src[0]]
    CMPEQ = enum.auto()
    WHERE = enum.auto()  # src: (cond, a, b)
    INDEX = enum.auto()  # src: (buffer, limb index, coefficient index)
    LOAD = enum.auto()  # src: (INDEX,)
    # -- lowered residue arithmetic (Montgomery-form words; last operand: the MODULUS)
    MODADD = enum.auto()
    MODSUB = enum.auto()
    MODNEG = enum.auto()
    MONTMUL = enum.auto()
    MODULUS = enum.auto()  # src: (limb index,); arg: tuple of moduli; value: arg[limb]
    # -- kernels
    RING_CALL = enum.auto()  # src: input SLOTs; arg: RingCall (kind and explicit parameters)
    KERNEL = enum.auto()  # src: buffers; arg: Kernel (AST over SLOTs)
    SLOT = enum.auto()  # arg: kernel.Slot (parameter index, shape, dtype, strides)

    __hash__ = object.__hash__  # members are singletons; node hashing is hot

    def __repr__(self) -> str:
        return f"Op.{self.name}"


#: Index-language ops (dtype INDEX; CMPEQ's value is 0 or 1).
INDEX_OPS = frozenset(
    {Op.GIDX, Op.ICONST, Op.IADD, Op.IMUL, Op.IAND, Op.ISHR, Op.ISHL, Op.BITREV, Op.TABLE,
     Op.CMPEQ}
)

#: Lowered residue arithmetic, and the high-level op each one implements.
LOWERED_ALU = {Op.ADD: Op.MODADD, Op.SUB: Op.MODSUB, Op.NEG: Op.MODNEG, Op.MUL: Op.MONTMUL}
