"""CKKS keys and their generation, all as Poly graphs (NTT domain).

A switching key from s' to s has one row pair per key-switching digit j, over the key ring
Q·P (the whole chain plus the special primes):

    b_j = -a_j·s + e_j + G_j·s'      with G_j = P·B_j mod QP,
    B_j ≡ 1 (mod the primes of digit j), ≡ 0 (mod the other chain primes).

The relinearization key has s' = s², the rotation key for step k has s' = s(X^(5^k)), the
conjugation key s' = s(X^-1).  Keys are realized when generated (they are long-lived).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from ren.ckks.ciphertext import check_ntt_polys
from ren.ckks.errors import MissingKeyError, ParamsMismatchError
from ren.ckks.params import CKKSParams
from ren.errors import ParameterError, is_int
from ren.poly import Poly
from ren.ring import conjugation_element, galois_element


def _poly_bytes(p: Poly) -> int:
    return 4 * p.ring.limbs * p.ring.N


def _check_key(kind: str, params: object, polys: tuple[object, ...]) -> None:
    """A key's fields: CKKSParams, and Polys over the key ring Q·P, NTT domain, on the
    parameters' device (the JIT rebuilds keys without running this again)."""
    if not isinstance(params, CKKSParams):
        raise ParameterError(f"{kind}: params must be CKKSParams, got {type(params).__name__}")
    check_ntt_polys(polys, lambda i: f"{kind}: polynomial {i}", params.key_ring,
                    "the key ring params.key_ring", "keys live in the key ring Q·P",
                    params.device)


@dataclass(eq=False)
class SecretKey:
    """The secret s (ternary or sparse ternary) in the NTT domain of the key ring."""

    poly: Poly
    params: CKKSParams

    def __post_init__(self) -> None:
        _check_key("SecretKey", self.params, (self.poly,))

    @property
    def nbytes(self) -> int:
        return _poly_bytes(self.poly)

    def __repr__(self) -> str:
        return f"<SecretKey N={self.params.N} ({self.nbytes} bytes)>"


@dataclass(eq=False)
class PublicKey:
    """(b, a) = (-a·s + e, a) over the top-level ring Q (NTT domain)."""

    b: Poly
    a: Poly
    params: CKKSParams

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
    relinearization key."""

    b: tuple[Poly, ...]
    a: tuple[Poly, ...]
    params: CKKSParams
    galois: int | None = None

    def __post_init__(self) -> None:
        kind = type(self).__name__
        if not isinstance(self.params, CKKSParams):
            raise ParameterError(f"{kind}: params must be CKKSParams, got "
                                 f"{type(self.params).__name__}")
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
    params: CKKSParams
    _steps: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.params, CKKSParams):
            raise ParameterError(f"GaloisKeys: params must be CKKSParams, got "
                                 f"{type(self.params).__name__}")
        if not isinstance(self.keys, dict):
            raise ParameterError(f"GaloisKeys: keys must be a dict of Galois element -> "
                                 f"GaloisKey, got {type(self.keys).__name__}")
        for g, key in self.keys.items():
            if not isinstance(key, GaloisKey) or key.galois != g:
                raise ParameterError(f"GaloisKeys: keys[{g!r}] must be the GaloisKey of element "
                                     f"{g!r}, got {key!r}")
            if key.params != self.params:
                raise ParamsMismatchError(f"GaloisKeys: keys[{g}] was made under other "
                                          "CKKSParams")
        by_g = _steps_by_element(self.params.N)
        self._steps = {g: by_g[g] for g in self.keys if g in by_g}

    @property
    def steps(self) -> list[int]:
        """The left-rotation steps (0 <= k < N/2) with a key."""
        return sorted(self._steps.values())

    @property
    def has_conjugate(self) -> bool:
        return conjugation_element(self.params.N) in self.keys

    def for_galois(self, g: int, what: str) -> GaloisKey:
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
def _steps_by_element(N: int) -> dict[int, int]:
    """Galois element 5^k mod 2N -> rotation step k (0 <= k < N/2)."""
    out, g = {}, 1
    for k in range(N // 2):
        out[g] = k
        g = g * 5 % (2 * N)
    return out


def gadget_constants(params: CKKSParams) -> list[int]:
    """G_j = P·B_j mod QP for each key-switching digit j (see the module docstring)."""
    Q = math.prod(params.chain)
    P = math.prod(params.special_moduli)
    out = []
    for a, b in params.digits:
        D = math.prod(params.chain[a:b])
        Qhat = Q // D
        B = Qhat * pow(Qhat, -1, D)
        out.append(P * B % (Q * P))
    return out


def normalize_steps(steps: Iterable[int] | None, slots: int) -> list[int]:
    """Rotation steps reduced mod N/2 (rotation by k and k + N/2 coincide), without 0."""
    if steps is None:  # the powers of two: enough for rotate_sum
        steps = [1 << i for i in range(slots.bit_length() - 1)]
    if isinstance(steps, str | bytes) or not isinstance(steps, Iterable):
        raise ParameterError(f"rotation_keys: steps must be a list of ints, e.g. [{steps!r}] "
                             f"for one step, got {type(steps).__name__} {steps!r}")
    out: list[int] = []
    for k in steps:
        if isinstance(k, bool) or not isinstance(k, int):
            raise ParameterError(f"rotation steps must be ints, got {k!r}")
        if k % slots and k % slots not in out:
            out.append(k % slots)
    return out


class KeyGenerator:
    """Draws a secret key (fresh OS randomness unless `ren.random.seed` is set) and derives the
    public, relinearization, rotation and conjugation keys from it."""

    def __init__(self, params: CKKSParams, secret_key: SecretKey | None = None) -> None:
        if not isinstance(params, CKKSParams):
            raise ParameterError(f"KeyGenerator needs CKKSParams, got {type(params).__name__}")
        self.params = params
        if secret_key is not None and not isinstance(secret_key, SecretKey):
            raise ParameterError(f"KeyGenerator: secret_key must be a SecretKey (or None to draw "
                                 f"one), got {type(secret_key).__name__}; a public or switching "
                                 "key cannot derive keys")
        if secret_key is None:
            ring = params.key_ring
            s = (Poly.ternary(ring, device=params.device) if params.secret == "ternary"
                 else Poly.sparse_ternary(ring, params.hamming_weight, device=params.device))
            secret_key = SecretKey(s.ntt().realize(), params)
        elif secret_key.params != params:
            raise ParamsMismatchError("KeyGenerator: the secret key belongs to other CKKSParams")
        self._sk = secret_key

    def secret_key(self) -> SecretKey:
        return self._sk

    def public_key(self) -> PublicKey:
        """A fresh public key (b, a) = (-a·s + e, a) over the key ring QP (the top level and
        the special primes): encryption works there and divides by P, so a fresh ciphertext
        carries only rounding noise (the encryption noise shrinks by the factor P)."""
        p = self.params
        ring = p.key_ring
        s = self._sk.poly.to_ring(ring)
        a = Poly.uniform(ring, device=p.device, domain="NTT")
        b = Poly.gaussian(ring, p.sigma, device=p.device).ntt() - a * s
        b.realize(a)
        return PublicKey(b, a, p)

    def _switching_rows(self, s_from: Poly) -> tuple[tuple[Poly, ...], tuple[Poly, ...]]:
        p = self.params
        ring, s = p.key_ring, self._sk.poly
        bs, as_ = [], []
        for g in gadget_constants(p):
            a = Poly.uniform(ring, device=p.device, domain="NTT")
            bs.append(Poly.gaussian(ring, p.sigma, device=p.device).ntt() - a * s + s_from * g)
            as_.append(a)
        bs[0].realize(*bs[1:], *as_)
        return tuple(bs), tuple(as_)

    def relin_key(self) -> RelinKey:
        """The relinearization key (from s² to s)."""
        s = self._sk.poly
        return RelinKey(*self._switching_rows(s * s), self.params)

    def galois_key(self, g: int) -> GaloisKey:
        """The key that switches s(X^g) back to s (g odd)."""
        return GaloisKey(*self._switching_rows(self._sk.poly.automorph(g)), self.params,
                         galois=g % (2 * self.params.N))

    def rotation_keys(self, steps: Iterable[int] | None = None, conjugate: bool = False,
                      progress: bool = False) -> GaloisKeys:
        """Keys for left rotations by each of `steps` (negative = right; default: the powers of
        two below N/2, which `Evaluator.rotate_sum` needs) and, if asked, conjugation.
        ``progress=True`` shows a rich progress bar."""
        if not isinstance(conjugate, bool):
            raise ParameterError(f"rotation_keys: conjugate must be True or False, got "
                                 f"{conjugate!r}")
        N = self.params.N
        elements = [galois_element(N, k) for k in normalize_steps(steps, self.params.slots)]
        if conjugate:
            elements.append(conjugation_element(N))
        todo = _progress(elements, progress, "Galois keys")
        return GaloisKeys({g: self.galois_key(g) for g in todo}, self.params)


def _progress(items: list, show: bool, label: str):
    if not show:
        return items
    from rich.progress import track  # imported only when a bar is asked for

    return track(items, description=f"generating {len(items)} {label}")
