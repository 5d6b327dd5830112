"""A linear transform's plaintext diagonals kept as integer coefficients
(``LinearTransform(diagonals="coeff")``, `ren.ckks.circuits.lintrans`): `CoefficientDiagonals`
packs each pre-rotated diagonal's coefficients once, expands them into every application's
graph, and decodes them back to slot values when asked.

**What is kept.**  A diagonal's information is one integer vector c = round(Δ_pt·m), m the
inverse embedding of the pre-rotated diagonal d (|m_i| ≤ max|d|, so |c| ≤ Δ_pt·max|d| + 1/2).
`CoefficientDiagonals.words` keeps it packed in two's-complement 32-bit words (a BUFFER node,
N × W): two a coefficient (8 bytes) below 2^62, else the fewest that hold it (three for
SlotToCoeff's first transform at the small bootstrapping preset, whose EvalMod factor makes
2^67 to 2^69 at its 60-bit scale; at `bootstrap_params_n16` the largest bound is 2^61.4, so 8
bytes throughout).  W is the bound made storage; nothing else is kept: not the limbs, and not
the complex diagonals the words were made from (8·N bytes each, as much again as the words).

**Expansion.**  Every application expands the words in its own graph, TO_RNS onto the level's
moduli (Q·P where double hoisting multiplies) then NTT: the nodes
`Poly.from_coefficients(c, ring).ntt()` makes, so the same residues as the "rns" form and
results equal to the last bit.  No live Poly holds them, so the limbs live in the realization's
arena only while used, and under `ren.jit` the plan holds the words and replays the expansion.
Memory: 4·N·W bytes a diagonal instead of 4·N·L (L limbs): the bootstrapping at N = 2^16 keeps
158 MiB instead of 2.93 GiB, at N = 4096 9.9 MiB instead of 88 MiB (its arena grows by 8%).
Time: a TO_RNS and an NTT of L limbs per diagonal per application: at N = 4096 the
bootstrapping's kernels take 0.66 s instead of 0.51 s on one core (TO_RNS 0.11 s: the "cpu"
device reduces each word with a 64-bit division, about four NTTs' time per limb; the NTTs
0.03 s).

**Decoding.**  `decoded` (what `LinearTransform.diagonals` and `matrix` read in this form) turns
the words back into slot values at each read: d' = rot_(g·n1)(embed(c)/Δ_pt), the diagonal the
transform applies.  It differs from the given one by the rounding of c: |c − Δ_pt·m| ≤ 1/2 in
each of N coefficients, so |d' − d| ≤ N/(2·Δ_pt) in every slot (2^-43 for the bootstrapping's
transforms at N = 2^16, whose Δ_pt is 2^58), plus float64's rounding (about 2^-50·max|d|;
measured at N = 4096 in the same shape: 2^-58 to 2^-43, each diagonal decoded in 0.1 to 0.4 ms).
As with Lattigo's or OpenFHE's encoded transforms, the exact values given are the caller's to
keep: the "rns" form keeps them (`LinearTransform.diagonals` is then the given dict).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from ren.ckks.ciphertext import Plaintext
from ren.ckks.embedding import embed
from ren.ckks.params import CKKSParams
from ren.node import Node
from ren.ops import DType, Op
from ren.poly import Poly


class CoefficientDiagonals:
    """The diagonals of one transform at `level`, encoded at `scale` (Δ_pt) for baby-step
    giant-step with `baby_steps` = n1: giant step g -> {baby step b: the words of
    rot_(−g·n1)(d_(g·n1+b))} (`words`), stored with `store`, expanded with `expand` and
    `plaintext` (on Q·P first when `double`: the Q plaintext is then a view of that expansion),
    decoded with `decoded`."""

    def __init__(self, params: CKKSParams, level: int, scale: Fraction, baby_steps: int,
                 double: bool) -> None:
        self.params, self.level, self.scale = params, level, scale
        self.baby_steps, self.double = baby_steps, double
        #: giant step g -> {baby step b: the BUFFER node of the diagonal's integer
        #: coefficients, packed in two's-complement u32 words (N × W)}
        self.words: dict[int, dict[int, Node]] = {}
        self._copy_to: str | None = None  # (a device whose storage is not host memory)

    def store(self, g: int, b: int, coeffs: Any) -> None:
        """Keep the coefficients' words (the BUFFER under `Poly.from_coefficients`' TO_RNS,
        which is made but never realized: nothing expands them now)."""
        node = Poly.from_coefficients(coeffs, self.params.ring(self.level),
                                      device=self.params.device).node
        if node.op is Op.COPY:
            self._copy_to, node = node.arg, node.src[0]
        self.words.setdefault(g, {})[b] = node.src[0]

    def expand(self, g: int, b: int, ring: Any) -> Poly:
        """Diagonal (g, b) from its stored words on `ring` (Q or Q·P), in the NTT domain: a
        graph of TO_RNS and NTT (the node `Poly.from_coefficients(...).ntt()` would make: the
        same residues), in no live Poly until the caller holds one."""
        words = self.words[g][b]
        node = Node(Op.TO_RNS, DType.U32, (words,), (ring, words.arg.shape[1]))
        if self._copy_to is not None:
            node = Node(Op.COPY, DType.U32, (node,), self._copy_to)
        return Poly(node).ntt()

    def plaintext(self, g: int, b: int) -> Plaintext:
        """A fresh Plaintext of diagonal (g, b) on Q, expanded from its words (a view of its
        Q·P expansion for double hoisting, the graph then sharing one expansion)."""
        p = self.params
        poly = (self.expand(g, b, p.ring_qp(self.level)).to_ring(p.ring(self.level))
                if self.double else self.expand(g, b, p.ring(self.level)))
        return Plaintext(poly, self.scale, self.level, p)

    def group(self, g: int) -> Mapping[int, Plaintext]:
        """Giant step g's diagonals, baby step -> a fresh plaintext at each read."""
        return _Expanding(self, g)

    def coefficients(self, g: int, b: int) -> tuple[np.ndarray, int]:
        """(c·2^-shift, shift): diagonal (g, b)'s integer coefficients c as float64 (exact below
        2^53, rounded beyond), shift > 0 only where c would pass float64's range."""
        w = self.words[g][b].arg.array()
        width = w.shape[1]
        shift = max(0, 32 * width - 1000)
        out = w[:, -1].view(np.int32).astype(np.float64) * 2.0 ** (32 * (width - 1) - shift)
        for k in range(width - 1):
            out += w[:, k].astype(np.float64) * 2.0 ** (32 * k - shift)
        return out, shift

    def decoded(self, i: int) -> np.ndarray:
        """Diagonal i = g·n1 + b as the transform applies it: its slot values decoded from the
        words (the module docstring bounds their distance to the given ones); a KeyError if i is
        none of the transform's diagonals."""
        g, b = divmod(i, self.baby_steps)
        if b not in self.words.get(g, {}):
            raise KeyError(i)
        c, shift = self.coefficients(g, b)
        m = c * float(Fraction(1 << shift) / self.scale)
        return np.roll(embed(m, self.params.N), -g * self.baby_steps)

    def indices(self) -> list[int]:
        """The diagonal indices i = g·n1 + b, ascending."""
        return sorted(g * self.baby_steps + b for g, group in self.words.items() for b in group)

    def diagonals(self) -> Mapping[int, np.ndarray]:
        """A read-only mapping {i: diagonal i}: the indices at once, each diagonal `decoded`
        at every read (nothing is kept)."""
        return _Decoded(self)

    @property
    def nbytes(self) -> int:
        """Bytes of the stored words: 4·N·W a diagonal."""
        return sum(4 * math.prod(w.arg.shape) for group in self.words.values()
                   for w in group.values())


class _Expanding(Mapping[int, Plaintext]):
    """Giant step g's diagonals, baby step -> Plaintext: each read expands the stored words
    anew (`CoefficientDiagonals.plaintext`)."""

    def __init__(self, store: CoefficientDiagonals, g: int) -> None:
        self._store, self._g = store, g

    def __getitem__(self, b: int) -> Plaintext:
        if b not in self._store.words[self._g]:
            raise KeyError(b)
        return self._store.plaintext(self._g, b)

    def __iter__(self) -> Iterator[int]:
        return iter(self._store.words[self._g])

    def __len__(self) -> int:
        return len(self._store.words[self._g])


class _Decoded(Mapping[int, np.ndarray]):
    """Diagonal index -> its slot values, decoded from the words at each read
    (`CoefficientDiagonals.decoded`), the indices ascending."""

    def __init__(self, store: CoefficientDiagonals) -> None:
        self._store = store

    def __getitem__(self, i: int) -> np.ndarray:
        if isinstance(i, bool) or not isinstance(i, int | np.integer):
            raise KeyError(i)
        return self._store.decoded(int(i))

    def __iter__(self) -> Iterator[int]:
        return iter(self._store.indices())

    def __len__(self) -> int:
        return sum(len(group) for group in self._store.words.values())

    def __repr__(self) -> str:
        return (f"<{len(self)} diagonals decoded from their coefficients at each read: "
                f"{self._store.indices()[:8]}{'…' if len(self) > 8 else ''}>")


__all__ = ["CoefficientDiagonals"]
