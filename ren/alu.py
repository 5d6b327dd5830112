"""The ALU table: what each index-language op and each lowered residue op computes, once.

`alu(op, arg)` returns the function that computes a node ``op`` (with node argument ``arg``) from
the values of its sources.  The interpreter (`ren.interpret`, kernel bodies), the index folding
of pass 11 and the NumPy backend (its compile-time index evaluator and its runtime steps) all
evaluate through this table, so the three cannot drift apart.

Value conventions (NumPy arrays broadcast; index ops also take plain Python ints):

* index values — int64: GIDX, ICONST, IADD IMUL IAND ISHR ISHL, BITREV (arg: bit count),
  TABLE (arg: the table; value ``arg[i]``); CMPEQ gives a bool (0/1) array;
* WHERE(cond, a, b) — ``a`` where cond is nonzero, else ``b`` (any dtype);
* residues — u32 words in Montgomery form (x·2^32 mod q, fully reduced);
* MODULUS(limb) (arg: the moduli, one per limb) — a `Moduli` value: the modulus of each
  element, with the Montgomery constant -q^-1 mod 2^32 it needs (`ren.ring.neg_inv32`; derived
  here, not stored);
* MODADD(a, b, m), MODSUB(a, b, m), MODNEG(a, m) — modular add, subtract, negate mod m;
  MONTMUL(a, b, m) — the Montgomery product a·b·2^-32 mod m (so Montgomery-form operands give a
  Montgomery-form product);
* VCONST(limb) (arg: per-limb u32 Montgomery words) — the word of each element's limb.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from ren.ops import Op
from ren.ring import mod_add, mod_neg, mod_sub, mont_mul_raw, neg_inv32
from ren.ring.tables import bit_reverse_indices

I64 = np.int64
U32 = np.uint32
U64 = np.uint64


class Moduli:
    """The value of a MODULUS node: per-element moduli (u32) with their u64 copy and Montgomery
    constant, all of one broadcastable shape."""

    __slots__ = ("q32", "q64", "qneg")

    def __init__(self, q32: np.ndarray, q64: np.ndarray, qneg: np.ndarray):
        self.q32, self.q64, self.qneg = q32, q64, qneg

    @classmethod
    def of(cls, moduli) -> Moduli:
        q = np.asarray(moduli, dtype=U64)
        return cls(q.astype(U32), q, neg_inv32(q))

    def __getitem__(self, index) -> Moduli:
        return Moduli(self.q32[index], self.q64[index], self.qneg[index])

    def __repr__(self) -> str:
        return f"Moduli({self.q32.tolist()})"


@lru_cache(maxsize=1024)
def moduli_table(moduli: tuple[int, ...]) -> Moduli:
    """The `Moduli` of a MODULUS node's table (computed once per table)."""
    return Moduli.of(moduli)


def _modadd(a, b, m: Moduli):
    return mod_add(a, b, m.q32)


def _modsub(a, b, m: Moduli):
    return mod_sub(a, b, m.q32)


def _modneg(a, m: Moduli):
    return mod_neg(a, m.q32)


def _montmul(a, b, m: Moduli):
    return mont_mul_raw(a, b, m.q32, m.q64, m.qneg)


#: ops whose function does not depend on the node's arg
ALU: dict[Op, Callable[..., Any]] = {
    Op.IADD: operator.add,
    Op.IMUL: operator.mul,
    Op.IAND: operator.and_,
    Op.ISHR: operator.rshift,
    Op.ISHL: operator.lshift,
    Op.CMPEQ: np.equal,
    Op.WHERE: np.where,
    Op.MODADD: _modadd,
    Op.MODSUB: _modsub,
    Op.MODNEG: _modneg,
    Op.MONTMUL: _montmul,
}


def _bitrev(bits: int) -> Callable[[Any], Any]:
    table = bit_reverse_indices(bits)
    return lambda i: table[i]


def _table(values: tuple[int, ...]) -> Callable[[Any], Any]:
    table = np.asarray(values, dtype=I64)
    return lambda i: table[i]


def _vconst(words: tuple[int, ...]) -> Callable[[Any], Any]:
    table = np.asarray(words, dtype=U32)
    return lambda limb: table[limb]


def _modulus(moduli: tuple[int, ...]) -> Callable[[Any], Moduli]:
    table = moduli_table(moduli)
    return lambda limb: table[limb]


#: ops whose function is built from the node's arg
ALU_ARG: dict[Op, Callable[[Any], Callable[..., Any]]] = {
    Op.BITREV: _bitrev,
    Op.TABLE: _table,
    Op.VCONST: _vconst,
    Op.MODULUS: _modulus,
}

#: every op the table evaluates (besides the leaves GIDX and ICONST): exactly the op table's
#: `GroupOp.ALU` (tests/test_alu.py checks)
ALU_OPS = frozenset(ALU) | frozenset(ALU_ARG)


def alu(op: Op, arg: Any = None) -> Callable[..., Any]:
    """The function computing `op` (node argument `arg`) from its source values."""
    fn = ALU.get(op)
    if fn is not None:
        return fn
    make = ALU_ARG.get(op)
    if make is None:
        raise KeyError(f"{op.name} is not an ALU op")
    return make(arg)


def fold_index(op: Op, arg: Any, *values: int) -> int:
    """An index op on constant operands, as a Python int (pass 11's folding)."""
    return int(alu(op, arg)(*values))


__all__ = ["ALU", "ALU_ARG", "ALU_OPS", "Moduli", "alu", "fold_index", "moduli_table"]
