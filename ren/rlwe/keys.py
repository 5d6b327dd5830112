"""RLWE key objects, all Polys in the NTT domain of the key ring Q·P (the whole chain plus the
special primes).

A switching key from s' to s has one row pair per key-switching digit j (`ren.rlwe.gadget`):

    b_j = -a_j·s + e_j + G_j·s'

The relinearization key has s' = s², the Galois key of element g has s' = s(X^g) (rotation by k:
g = 5^k mod 2N; conjugation: g = 2N − 1).  `ren.rlwe.keygen` makes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ren.errors import ParameterError, is_int
from ren.poly import Poly
from ren.ring import conjugation_element
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


@dataclass(eq=False)
class SwitchingKey:
    """Key-switching rows (b_j, a_j), one pair per digit, over the key ring Q·P.

    ``galois`` is the Galois element g of a rotation/conjugation key (s' = s(X^g)); None for a
    relinearization key (or another switching key)."""

    b: tuple[Poly, ...]
    a: tuple[Poly, ...]
    params: RLWEParams
    galois: int | None = None

    def __post_init__(self) -> None:
        kind = type(self).__name__
        _check_params(kind, self.params)
        dnum = len(self.params.digits)
        for name in ("b", "a"):
            rows = getattr(self, name)
            if not isinstance(rows, tuple | list) or len(rows) != dnum:
                raise ParameterError(f"{kind}: {name} must be a tuple of {dnum} Polys (one per "
                                     f"key-switching digit), got {rows!r}"[:300])
            setattr(self, name, tuple(rows))
        _check_key(kind, self.params, self.b + self.a)
        N2 = 2 * self.params.N
        g = self.galois
        if g is not None and (not is_int(g) or not 0 < g < N2 or g % 2 == 0):
            raise ParameterError(f"{kind}: galois must be None or an odd int in (0, {N2}), got "
                                 f"{g!r}")

    @property
    def nbytes(self) -> int:
        return sum(_poly_bytes(p) for p in self.b + self.a)

    def __repr__(self) -> str:
        what = "relinearization" if self.galois is None else f"Galois g={self.galois}"
        return f"<{type(self).__name__} {what} dnum={len(self.b)} ({self.nbytes} bytes)>"


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
        return sum(k.nbytes for k in self.keys.values())

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
