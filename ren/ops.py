"""The `Op` enum, the small `DType` enum, and the op table: every fact about an op, once.

Ops fall into layers; a graph moves down the layers as the twelve passes run:

* **Polynomial ops** (built by `Poly`): BUFFER CONST RANDOM TO_RNS AS_RING ADD SUB MUL NEG NTT
  INTT TO_RING RESCALE ROTATE CONJUGATE AUTOMORPH COPY CONTIGUOUS SINK.
* **Scheduling ops** (introduced by the passes): CONCAT (rows of two polynomials assembled into
  one ring, made by pass 4's transform elision), BUFFERIZE STORE AFTER BUFFER_VIEW, REINDEX and
  VCONST (index-mapped values and per-limb constants), the index language GIDX ICONST IADD IMUL
  IAND ISHR ISHL BITREV TABLE CMPEQ WHERE, memory access INDEX LOAD, the lowered residue
  arithmetic MODADD MODSUB MODNEG MONTMUL with their MODULUS operand, the ring-kernel call
  RING_CALL, and the kernel boundary KERNEL SLOT.

`OP_INFO` gives each Op one `OpInfo` row (family, dtype, arity, elementwise, storage, the domain
it needs and gives, its ring kernel, the pass that lowers it, the kernel bodies it may appear
in, its ALU form, its viz colour group).  Every op set of the engine is derived from the table
(`GroupOp`, as in tinygrad); no other module spells a set of ops (tests/test_optable.py checks
both).

Adding an op: an enum member and its row here, then its semantics where they live: the
frontend method (`ren.poly`), the reference (`ren.reference`, an ``op_X`` method), and its
lowering.  An elementwise op lowers to a residue op (its row's ``alu``; that op gets a row, a
function in `ren.alu` and a C form in `ren.backend.elementwise_c`).  A ring kernel is a
`ren.ring.RingKernel` (its row's ``ring_kernel``) with its tables
(`ren.ring.ring_kernels`), its math in the interpreter's dispatch (`ren.interpret`) and one
implementation per backend.  Pass 3
(domains), pass 5 (materialization), pass 12 (kernel kinds), spec inference for arithmetic and
the viz colours follow from the row.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from ren.ring import Domain, RingKernel


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

    @property
    def info(self) -> OpInfo:
        """This op's row of the op table."""
        return OP_INFO[self]


# -- the op table -----------------------------------------------------------------------------
class Family(enum.Enum):
    """What kind of op it is (the groups below are derived from it and the other facts)."""

    LEAF = "leaf"  # no polynomial source: BUFFER CONST RANDOM, the lowered constant VCONST
    META = "meta"  # AS_RING: the ring and domain of a leaf or of storage
    ARITH = "arith"  # polynomial arithmetic (pass 11 lowers it to residue ops)
    TRANSFORM = "transform"  # NTT, INTT
    RING = "ring"  # changes of ring: TO_RNS, TO_RING, RESCALE
    AUTOMORPHISM = "automorphism"  # ROTATE CONJUGATE AUTOMORPH: fix constants, move slots
    REMAP = "remap"  # explicit index maps made by the passes: REINDEX (coefficients), CONCAT (rows)
    PLACEMENT = "placement"  # COPY (another device), CONTIGUOUS (a buffer of its own)
    SCHEDULE = "schedule"  # SINK, the storage and effect ops of the passes, KERNEL
    INDEX = "index"  # index arithmetic (dtype INDEX)
    SELECT = "select"  # CMPEQ, WHERE
    ACCESS = "access"  # INDEX, LOAD: an element of storage, inside a kernel body
    RESIDUE = "residue"  # residue ops on Montgomery words, and their MODULUS operand
    KERNEL = "kernel"  # SLOT, RING_CALL: exist only inside kernel bodies


class Body(enum.Flag):
    """The kernel bodies (`ren.kernel` kinds) an op may appear in."""

    NONE = 0
    ELEMENTWISE = enum.auto()
    RING = enum.auto()  # a ring kernel: STORE(SLOT0, RING_CALL(SLOT1))
    COPY = enum.auto()  # STORE(SLOT0, COPY(AS_RING(SLOT1)))
    ANY = ELEMENTWISE | RING | COPY


@dataclass(frozen=True)
class OpInfo:
    """The facts about one Op.

    ``dtype``: the dtype of its nodes (None: it varies).  ``arity``: its number of sources
    (None: variadic).  ``elementwise``: each element of its value comes from elements of its
    sources (at possibly mapped positions), so it fuses into an elementwise kernel (a TO_RING
    does only when it selects moduli, so its row says no: see `ren.ir.ring_kernel_of`).
    ``storage``: it names words in memory.  ``needs_domain``: the domain its polynomial sources
    must be in, which pass 3 converts them to (`ren.ir.required_domain`: a MUL only when both
    operands are polynomials, a TO_RING only onto new moduli).  ``gives_domain``: its result's
    domain (None: its sources').  ``ring_kernel``: the ring kernel computing it
    (`ren.ir.ring_kernel_of`).  ``lowered_by``: the pass after which no node of it is left in
    the graph (kernel bodies, held in KERNEL args, are not the graph); None: it can reach the
    schedule.  ``body``: the kernel bodies it may appear in.  ``alu``: the op of `ren.alu`'s
    table computing it inside a kernel body (itself for an ALU op; ADD's is MODADD).
    ``affine``: an index op that keeps an index expression affine in the coefficient index.
    ``introduced_by``: the first pass that can make it (0: the frontend builds it); with
    ``lowered_by`` it gives the ops each stage's contract allows (`ren.contracts`).
    ``viz``: its colour group in `ren.viz`.
    """

    family: Family
    dtype: DType | None
    arity: int | None
    viz: str
    elementwise: bool = False
    storage: bool = False
    needs_domain: Domain | None = None
    gives_domain: Domain | None = None
    ring_kernel: RingKernel | None = None
    lowered_by: int | None = None
    body: Body = Body.NONE
    alu: Op | None = None
    affine: bool = False
    introduced_by: int = 0


_F, _U, _I, _V = Family, DType.U32, DType.INDEX, DType.VOID
_COEFF, _NTT = Domain.COEFF, Domain.NTT
_EW = Body.ELEMENTWISE


def _index(op: Op, arity: int, affine: bool = False, alu: bool = True,
           introduced_by: int = 8) -> OpInfo:
    # pass 8 writes automorphisms as index maps; pass 11 adds TABLE (limb maps)
    return OpInfo(_F.INDEX, _I, arity, "index", elementwise=True, lowered_by=12, body=_EW,
                  alu=op if alu else None, affine=affine, introduced_by=introduced_by)


def _residue(op: Op, arity: int) -> OpInfo:
    return OpInfo(_F.RESIDUE, _U, arity, "lowered", elementwise=True, lowered_by=12, body=_EW,
                  alu=op, introduced_by=11)


def _arith(arity: int, alu: Op, **facts) -> OpInfo:
    return OpInfo(_F.ARITH, _U, arity, "arithmetic", elementwise=True, lowered_by=11, alu=alu,
                  **facts)


OP_INFO: dict[Op, OpInfo] = {
    # storage and leaves (a CONST that is an output stays: pass 9 lowers only its uses)
    Op.BUFFER: OpInfo(_F.LEAF, _U, 0, "storage", storage=True),
    Op.CONST: OpInfo(_F.LEAF, _U, 0, "storage"),
    Op.RANDOM: OpInfo(_F.LEAF, _U, 0, "storage", ring_kernel=RingKernel.RANDOM, lowered_by=12),
    Op.TO_RNS: OpInfo(_F.RING, _U, 1, "storage", gives_domain=_COEFF,
                      ring_kernel=RingKernel.TO_RNS, lowered_by=12),
    Op.AS_RING: OpInfo(_F.META, _U, 1, "storage", body=Body.COPY),
    # polynomial arithmetic
    Op.ADD: _arith(2, Op.MODADD),
    Op.SUB: _arith(2, Op.MODSUB),
    Op.MUL: _arith(2, Op.MONTMUL, needs_domain=_NTT, gives_domain=_NTT),
    Op.NEG: _arith(1, Op.MODNEG),
    # representation and ring changes
    Op.NTT: OpInfo(_F.TRANSFORM, _U, 1, "transform", gives_domain=_NTT, ring_kernel=RingKernel.NTT,
                   lowered_by=12),
    Op.INTT: OpInfo(_F.TRANSFORM, _U, 1, "transform", gives_domain=_COEFF,
                    ring_kernel=RingKernel.INTT, lowered_by=12),
    Op.TO_RING: OpInfo(_F.RING, _U, 1, "ring", needs_domain=_COEFF,
                       ring_kernel=RingKernel.BASIS_CONVERT, lowered_by=12),
    Op.RESCALE: OpInfo(_F.RING, _U, 1, "ring", needs_domain=_COEFF, ring_kernel=RingKernel.RESCALE,
                       lowered_by=12),
    Op.ROTATE: OpInfo(_F.AUTOMORPHISM, _U, 1, "ring", elementwise=True, lowered_by=2),
    Op.CONJUGATE: OpInfo(_F.AUTOMORPHISM, _U, 1, "ring", elementwise=True, lowered_by=2),
    Op.AUTOMORPH: OpInfo(_F.AUTOMORPHISM, _U, 1, "ring", elementwise=True, needs_domain=_NTT,
                         lowered_by=8),
    Op.COPY: OpInfo(_F.PLACEMENT, _U, 1, "schedule", lowered_by=12, body=Body.COPY),
    Op.CONTIGUOUS: OpInfo(_F.PLACEMENT, _U, 1, "schedule", lowered_by=5),
    Op.CONCAT: OpInfo(_F.REMAP, _U, 2, "ring", elementwise=True, lowered_by=11,
                      introduced_by=4),
    Op.SINK: OpInfo(_F.SCHEDULE, _V, None, "schedule"),
    # scheduling
    Op.BUFFERIZE: OpInfo(_F.SCHEDULE, _U, 1, "schedule", lowered_by=6, introduced_by=5),
    Op.STORE: OpInfo(_F.SCHEDULE, _V, 2, "schedule", lowered_by=12, body=Body.ANY,
                     introduced_by=6),
    Op.AFTER: OpInfo(_F.SCHEDULE, _U, 2, "schedule", storage=True, introduced_by=6),
    Op.BUFFER_VIEW: OpInfo(_F.SCHEDULE, _U, 1, "storage", storage=True, introduced_by=10),
    # pass 4's elision reads a constant at coefficient 0 everywhere (`ren.ir.broadcast_const`)
    Op.REINDEX: OpInfo(_F.REMAP, _U, 2, "ring", elementwise=True, lowered_by=11, introduced_by=4),
    Op.VCONST: OpInfo(_F.LEAF, _U, None, "lowered", elementwise=True, lowered_by=12, body=_EW,
                      alu=Op.VCONST, introduced_by=9),
    # index language
    Op.GIDX: _index(Op.GIDX, 0, affine=True, alu=False),
    Op.ICONST: _index(Op.ICONST, 0, affine=True, alu=False, introduced_by=4),
    Op.IADD: _index(Op.IADD, 2, affine=True),
    Op.IMUL: _index(Op.IMUL, 2, affine=True),
    Op.IAND: _index(Op.IAND, 2),
    Op.ISHR: _index(Op.ISHR, 2),
    Op.ISHL: _index(Op.ISHL, 2),
    Op.BITREV: _index(Op.BITREV, 1),
    Op.TABLE: _index(Op.TABLE, 1, introduced_by=11),
    Op.CMPEQ: OpInfo(_F.SELECT, _I, 2, "index", elementwise=True, lowered_by=12, body=_EW,
                     alu=Op.CMPEQ, introduced_by=9),
    Op.WHERE: OpInfo(_F.SELECT, _U, 3, "index", elementwise=True, lowered_by=12, body=_EW,
                     alu=Op.WHERE, introduced_by=8),
    Op.INDEX: OpInfo(_F.ACCESS, _U, 3, "index", elementwise=True, lowered_by=12, body=_EW,
                     introduced_by=11),
    Op.LOAD: OpInfo(_F.ACCESS, _U, 1, "index", elementwise=True, lowered_by=12, body=_EW,
                    introduced_by=11),
    # lowered residue arithmetic
    Op.MODADD: _residue(Op.MODADD, 3),
    Op.MODSUB: _residue(Op.MODSUB, 3),
    Op.MODNEG: _residue(Op.MODNEG, 2),
    Op.MONTMUL: _residue(Op.MONTMUL, 3),
    Op.MODULUS: _residue(Op.MODULUS, 1),
    # kernels
    Op.RING_CALL: OpInfo(_F.KERNEL, _U, None, "kernel", body=Body.RING, introduced_by=12),
    Op.KERNEL: OpInfo(_F.SCHEDULE, _V, None, "kernel", introduced_by=12),
    Op.SLOT: OpInfo(_F.KERNEL, None, 0, "kernel", storage=True, body=Body.ANY, introduced_by=12),
}


def ops_where(pred: Callable[[OpInfo], bool]) -> frozenset[Op]:
    """The ops whose row satisfies `pred`."""
    return frozenset(op for op, info in OP_INFO.items() if pred(info))


def ops_after(stage: int) -> frozenset[Op]:
    """The ops the graph may hold after pass `stage` (0: the frontend's graph): made by then
    (``introduced_by``) and not yet lowered (``lowered_by``).  Kernel bodies are not the graph."""
    return ops_where(lambda i: i.introduced_by <= stage and i.family is not Family.KERNEL
                     and (i.lowered_by is None or i.lowered_by > stage))


#: high-level arithmetic -> the residue op pass 11 lowers it to (ADD -> MODADD, …)
LOWERED_ALU: dict[Op, Op] = {op: i.alu for op, i in OP_INFO.items()
                             if i.alu is not None and i.alu is not op}

#: op -> the ring kernel computing it (see `ren.ir.ring_kernel_of` for the conditions)
RING_KERNEL_OF: dict[Op, RingKernel] = {op: i.ring_kernel for op, i in OP_INFO.items()
                                        if i.ring_kernel is not None}


class GroupOp:
    """Op sets, all derived from `OP_INFO`."""

    #: index-language ops (dtype INDEX; CMPEQ's value is 0 or 1)
    INDEX = ops_where(lambda i: i.dtype is DType.INDEX)
    #: the leaves of the index language: the coefficient/limb index and integer constants
    INDEX_LEAF = ops_where(lambda i: i.family is Family.INDEX and i.arity == 0)
    #: binary index arithmetic (folded on constant operands by pass 11)
    INDEX_ARITH = ops_where(lambda i: i.family is Family.INDEX and i.arity == 2)
    #: index ops that make an index expression non-affine in the coefficient index
    NONAFFINE = ops_where(lambda i: i.family in (Family.INDEX, Family.SELECT) and not i.affine)
    #: element access inside a kernel body
    ACCESS = ops_where(lambda i: i.family is Family.ACCESS)
    #: the lowered residue ops and their MODULUS operand
    RESIDUE = ops_where(lambda i: i.family is Family.RESIDUE)
    #: word values read from a per-limb table by their index source (a limb's modulus, a
    #: lowered constant); a kernel may take them at run time (`elementwise_c`'s row tables)
    LIMB_VALUE = frozenset({Op.MODULUS, Op.VCONST})
    #: residue arithmetic (the lowered form of ADD SUB NEG MUL; last operand: the MODULUS)
    MOD_ARITH = frozenset(LOWERED_ALU.values())
    #: ops `ren.alu` evaluates (besides the leaves GIDX and ICONST)
    ALU = frozenset(op for op, i in OP_INFO.items() if i.alu is op)
    #: polynomial arithmetic
    ARITH = ops_where(lambda i: i.family is Family.ARITH)
    #: the domain conversions NTT and INTT
    TRANSFORM = ops_where(lambda i: i.family is Family.TRANSFORM)
    #: ops an NTT passes through exactly, limb by limb (`ren.passes.elision.split_ntt`): the
    #: binary polynomial arithmetic (ADD, SUB, and MUL where one source is a scalar constant)
    #: and TO_RING where it selects limbs (the callers check those two conditions)
    NTT_LINEAR = ops_where(lambda i: i.family is Family.ARITH and i.arity == 2) | {Op.TO_RING}
    #: automorphisms (they fix constant polynomials)
    AUTOMORPHISM = ops_where(lambda i: i.family is Family.AUTOMORPHISM)
    #: ops that only change where a value is read, not what is computed
    INDEX_MAP = ops_where(lambda i: i.family in (Family.AUTOMORPHISM, Family.REMAP))
    #: device moves and contiguity requests (they keep a value)
    PLACEMENT = ops_where(lambda i: i.family is Family.PLACEMENT)
    #: storage in the graph: BUFFER, AFTER (a buffer after an effect), BUFFER_VIEW
    STORAGE = ops_where(lambda i: i.storage and i.family is not Family.KERNEL)
    #: what holds words: graph storage, and inside a kernel body the SLOTs bound to it
    MEMORY = ops_where(lambda i: i.storage)
    #: ops that fuse into elementwise kernels
    ELEMENTWISE = ops_where(lambda i: i.elementwise)
    #: ops whose polynomial sources must be in one domain (pass 3)
    NEEDS_DOMAIN = ops_where(lambda i: i.needs_domain is not None)
    #: what a kernel body of each kind may contain
    ELEMENTWISE_BODY = ops_where(lambda i: Body.ELEMENTWISE in i.body)
    RING_BODY = ops_where(lambda i: Body.RING in i.body)
    COPY_BODY = ops_where(lambda i: Body.COPY in i.body)
    #: what the graph may hold after the last pass: storage, constants, the SINK and KERNELs
    SCHEDULED = ops_after(max(i.lowered_by or 0 for i in OP_INFO.values()))
