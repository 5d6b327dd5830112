"""RLWE key objects, all Polys in the NTT domain of the key ring Q·P (the whole chain plus the
special primes).

A switching key from s' to s has one row pair per key-switching digit j (`ren.rlwe.gadget`):

    b_j = -a_j·s + e_j + G_j·s'

The relinearization key has s' = s², the Galois key of element g has s' = s(X^g) (rotation by k:
g = 5^k mod 2N; conjugation: g = 2N − 1).  `ren.rlwe.keygen` makes them.

Every a_j is a uniform sample of a 32-byte seed.  A *lean* switching key keeps the seeds instead
of the a rows (half the key's bytes) and regenerates them inside each key switch:
``KeyGenerator(params, lean=True)`` makes lean keys, ``key.lean()`` / ``keys.lean()`` turn stored
keys lean, ``.stored()`` back.  Results are the same words either way (see `SwitchingKey`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache

from ren.errors import ParameterError, check_bool, is_int
from ren.poly import Poly
from ren.random import SEED_BYTES, RandomSpec
from ren.ring import Domain, conjugation_element
from ren.rlwe.ciphertext import check_ntt_polys
from ren.rlwe.errors import MissingKeyError, ParamsMismatchError
from ren.rlwe.params import RLWEParams


def _poly_bytes(p: Poly) -> int:
    return 4 * p.ring.limbs * p.ring.N


def _check_params(kind: str, params: object) -> RLWEParams:
    """`params`, if they are RLWEParams (a scheme's parameters such as CKKSParams are)."""
    if not isinstance(params, RLWEParams):
        raise ParameterError(f"{kind}: params must be RLWEParams (or a scheme's parameters such "
                             f"as CKKSParams), got {type(params).__name__}")
    return params


def _check_key(kind: str, params: object, polys: tuple[object, ...]) -> None:
    """A key's fields: parameters, and Polys over the key ring Q·P, NTT domain, on the
    parameters' device (the JIT rebuilds keys without running this again)."""
    checked = _check_params(kind, params)
    check_ntt_polys(polys, lambda i: f"{kind}: polynomial {i}", checked.key_ring,
                    "the key ring params.key_ring", "keys live in the key ring Q·P", checked)


@dataclass(eq=False)
class SecretKey:
    """The secret s (ternary or sparse ternary) in the NTT domain of the key ring."""

    poly: Poly
    params: RLWEParams

    def __post_init__(self) -> None:
        _check_key("SecretKey", self.params, (self.poly,))

    @property
    def nbytes(self) -> int:
        return _poly_bytes(self.poly)

    def __repr__(self) -> str:
        return f"<SecretKey N={self.params.N} ({self.nbytes} bytes)>"


@dataclass(eq=False)
class PublicKey:
    """(b, a) = (-a·s + e, a) over the key ring Q·P (NTT domain)."""

    b: Poly
    a: Poly
    params: RLWEParams

    def __post_init__(self) -> None:
        _check_key("PublicKey", self.params, (self.b, self.a))

    @property
    def nbytes(self) -> int:
        return _poly_bytes(self.b) + _poly_bytes(self.a)

    def __repr__(self) -> str:
        return f"<PublicKey N={self.params.N} ({self.nbytes} bytes)>"


def _uniform_origin(p: object, kind: str, j: int) -> RandomSpec:
    """The seed of row a_j if it is exactly a uniform sample (NTT domain), else a
    ParameterError: only such a row can be regenerated."""
    o = p.random_origin() if isinstance(p, Poly) else None
    if o is None or o.kind != "uniform" or not isinstance(p, Poly) or p.domain is not Domain.NTT:
        raise ParameterError(f"{kind}.lean(): row a[{j}] is not a seeded uniform sample (it was "
                             "computed, or read from bytes without its seed), so it cannot be "
                             "regenerated; make the key with KeyGenerator(params, lean=True), or "
                             "load it from ren.ckks.dumps(key, compact=True)")
    return o


@dataclass(eq=False, init=False)
class SwitchingKey:
    """Key-switching rows (b_j, a_j), one pair per digit, over the key ring Q·P.

    ``galois`` is the Galois element g of a rotation/conjugation key (s' = s(X^g)); None for a
    relinearization key (or another switching key).

    **Lean keys.**  Every a_j is a seeded uniform sample.  A *lean* key (``lean=True``, or
    `lean()` of a stored one, or ``KeyGenerator(params, lean=True)``) keeps only the b_j and the
    32-byte seeds of the a_j: reading ``key.a`` gives fresh, unrealized samples (RANDOM nodes),
    so each key switch regenerates the rows it reads inside its own graph (eagerly, and in
    every `ren.jit` replay), the memory planner frees them after their last use, and the key
    itself holds half the bytes (`nbytes`; `full_nbytes` is a stored key's).  The values are the
    stored key's word for word (`ren.sampling` defines them on every device).  The cost is the
    sampling: each key switch regenerates its digits' a rows over the whole key ring Q·P
    (about a SHAKE-128 squeeze per residue) and then keeps the Q_l·P rows it needs."""

    b: tuple[Poly, ...]
    #: the a rows: Polys (a stored key), or their seeds (a lean key); read them as `a`
    a_rows: tuple[Poly, ...] | tuple[RandomSpec, ...]
    params: RLWEParams
    galois: int | None = None

    def __init__(self, b: tuple[Poly, ...], a: tuple[Poly, ...], params: RLWEParams,
                 galois: int | None = None, *, lean: bool = False) -> None:
        self.b, self.params, self.galois = b, params, galois
        self.a_rows = a
        kind = type(self).__name__
        _check_params(kind, self.params)
        dnum = len(self.params.digits)
        for name in ("b", "a_rows"):
            rows = getattr(self, name)
            if not isinstance(rows, tuple | list) or len(rows) != dnum:
                raise ParameterError(f"{kind}: {name[0]} must be a tuple of {dnum} Polys (one "
                                     f"per key-switching digit), got {rows!r}"[:300])
            setattr(self, name, tuple(rows))
        _check_key(kind, self.params, self.b + self.a_rows)  # type: ignore[operator]
        N2 = 2 * self.params.N
        g = self.galois
        if g is not None and (not is_int(g) or not 0 < g < N2 or g % 2 == 0):
            raise ParameterError(f"{kind}: galois must be None or an odd int in (0, {N2}), got "
                                 f"{g!r}")
        if check_bool(lean, f"{kind}: lean"):
            # public: ren.jit captures the rows unrealized and every replay regenerates them
            self.a_rows = tuple(replace(_uniform_origin(p, kind, j), public=True)
                                for j, p in enumerate(self.a_rows))

    @property
    def a(self) -> tuple[Poly, ...]:
        """The rows a_j: the stored Polys, or (a lean key) fresh unrealized samples of their
        seeds, which a computation regenerates where it reads them."""
        rows = self.a_rows
        if rows and isinstance(rows[0], RandomSpec):
            ring = self.params.key_ring
            return tuple(Poly.from_random(s, ring, Domain.NTT) for s in rows)  # type: ignore
        return rows  # type: ignore[return-value]

    @property
    def is_lean(self) -> bool:
        """Whether the a rows are kept as seeds (regenerated at each use)."""
        return bool(self.a_rows) and isinstance(self.a_rows[0], RandomSpec)

    @property
    def seeds(self) -> tuple[RandomSpec, ...] | None:
        """The a rows' seeds (RandomSpec), when every row is a seeded uniform sample (always
        for a lean key and for keys from `KeyGenerator`), else None."""
        if self.is_lean:
            return self.a_rows  # type: ignore[return-value]
        out = [p.random_origin() for p in self.a_rows]  # type: ignore[union-attr]
        # a key's rows are public samples, lean or stored (`RandomSpec.public`)
        return None if any(o is None or o.kind != "uniform" for o in out) else tuple(
            replace(o, public=True) for o in out if o is not None)

    def lean(self) -> SwitchingKey:
        """This key as a lean key (same class, same values; the b rows are shared): its a rows
        become their seeds.  ParameterError if a row is not a seeded uniform sample."""
        if self.is_lean:
            return self
        return type(self)(self.b, self.a, self.params, self.galois, lean=True)

    def stored(self) -> SwitchingKey:
        """This key with its a rows realized and kept (the inverse of `lean`; a key read from
        its compact form, whose rows are unrealized samples, realizes them in place)."""
        rows = self.a
        rows[0].realize(*rows[1:])
        return type(self)(self.b, rows, self.params, self.galois) if self.is_lean else self

    @property
    def nbytes(self) -> int:
        """The bytes the key holds in memory: its realized rows (both halves of a stored key;
        the b half of a lean one, and 32 bytes a seed)."""
        held = sum(_poly_bytes(p) for p in self.b if p.is_realized)
        if self.is_lean:
            return held + SEED_BYTES * len(self.a_rows)
        return held + sum(_poly_bytes(p) for p in self.a if p.is_realized)

    @property
    def full_nbytes(self) -> int:
        """The bytes of the key with both halves stored."""
        return 2 * sum(_poly_bytes(p) for p in self.b)

    def __repr__(self) -> str:
        what = "relinearization" if self.galois is None else f"Galois g={self.galois}"
        return (f"<{type(self).__name__} {what} dnum={len(self.b)}{' lean' if self.is_lean else ''}"
                f" ({self.nbytes} bytes)>")


class RelinKey(SwitchingKey):
    """The switching key from s² to s."""


class GaloisKey(SwitchingKey):
    """The switching key from s(X^g) to s."""


@dataclass(eq=False)
class GaloisKeys:
    """Rotation and conjugation keys, by Galois element."""

    keys: dict[int, GaloisKey]
    params: RLWEParams
    _steps: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        _check_params("GaloisKeys", self.params)
        if not isinstance(self.keys, dict):
            raise ParameterError(f"GaloisKeys: keys must be a dict of Galois element -> "
                                 f"GaloisKey, got {type(self.keys).__name__}")
        for g, key in self.keys.items():
            if not isinstance(key, GaloisKey) or key.galois != g:
                raise ParameterError(f"GaloisKeys: keys[{g!r}] must be the GaloisKey of element "
                                     f"{g!r}, got {key!r}")
            if key.params != self.params:
                raise ParamsMismatchError(f"GaloisKeys: keys[{g}] was made under other "
                                          f"{type(self.params).__name__}")
        by_g = steps_by_element(self.params.N)
        self._steps = {g: by_g[g] for g in self.keys if g in by_g}

    @property
    def steps(self) -> list[int]:
        """The left-rotation steps (0 <= k < N/2) with a key."""
        return sorted(self._steps.values())

    @property
    def has_conjugate(self) -> bool:
        return conjugation_element(self.params.N) in self.keys

    def for_galois(self, g: int, what: str) -> GaloisKey:
        """The key of element `g` (MissingKeyError naming `what` and the keys there are)."""
        if not is_int(g):
            raise ParameterError(f"for_galois: g must be a Galois element (an odd int), got "
                                 f"{type(g).__name__} {g!r}"[:200])
        try:
            return self.keys[g]
        except KeyError:
            raise MissingKeyError(
                f"no key for {what}; have rotation steps {self.steps}"
                f"{' and conjugation' if self.has_conjugate else ''}. Generate it with "
                f"keygen.rotation_keys([...]) and pass it to the Evaluator") from None

    def __contains__(self, g: int) -> bool:
        return g in self.keys

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def nbytes(self) -> int:
        """The bytes the keys hold in memory (a lean key's a rows are seeds)."""
        return sum(k.nbytes for k in self.keys.values())

    @property
    def full_nbytes(self) -> int:
        """The bytes of the keys with both halves stored."""
        return sum(k.full_nbytes for k in self.keys.values())

    @property
    def is_lean(self) -> bool:
        """Whether every key is lean (`SwitchingKey.lean`)."""
        return bool(self.keys) and all(k.is_lean for k in self.keys.values())

    def lean(self) -> GaloisKeys:
        """These keys as lean keys (`SwitchingKey.lean`): the a rows kept as seeds."""
        return GaloisKeys({g: k.lean() for g, k in self.keys.items()},  # type: ignore[misc]
                          self.params)

    def stored(self) -> GaloisKeys:
        """These keys with their a rows realized and kept (`SwitchingKey.stored`)."""
        return GaloisKeys({g: k.stored() for g, k in self.keys.items()},  # type: ignore[misc]
                          self.params)

    def __repr__(self) -> str:
        return (f"<GaloisKeys steps {self.steps}{' + conjugation' if self.has_conjugate else ''}"
                f" ({self.nbytes} bytes)>")


@lru_cache(maxsize=8)
def steps_by_element(N: int) -> dict[int, int]:
    """Galois element 5^k mod 2N -> rotation step k (0 <= k < N/2)."""
    out, g = {}, 1
    for k in range(N // 2):
        out[g] = k
        g = g * 5 % (2 * N)
    return out


__all__ = ["GaloisKey", "GaloisKeys", "PublicKey", "RelinKey", "SecretKey", "SwitchingKey",
           "steps_by_element"]
