"""What the BFV and BGV evaluators share: the checks of their arguments and keys, the tensor of
two ciphertexts, a centred residue and the missing-key errors.

Each scheme names its own parameters in a mismatch (``under``: BFV says "other BFVParams than
this one's", BGV "other parameters than this one's BGVParams") and its own ciphertext class and
evaluator in the hints; the logic is one.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ren.bfv.encoder import Plaintext
from ren.bfv.errors import MissingKeyError, ParamsMismatchError
from ren.errors import ParameterError, check_instance
from ren.poly import Poly
from ren.rlwe import GaloisKeys, RelinKey

C = TypeVar("C")


def check_same(params: Any, obj: Any, what: str, under: str) -> None:
    """ParamsMismatchError unless `obj` was made under `params` (`under` says which other
    parameters, in the scheme's words)."""
    if getattr(obj, "params", None) != params:
        raise ParamsMismatchError(f"{what} was made under {under}; use objects from one "
                                  "parameter set")


def check_plaintext(pt: Any, params: Any, who: str, hint: str, under: str) -> Plaintext:
    """`pt` as a plaintext operand of `who`, made under `params` (`hint`: how to make one)."""
    check_instance(pt, Plaintext, f"{who}: pt", hint=hint)
    check_same(params, pt, f"{who}: the plaintext", under)
    return pt


def check_keys(params: Any, relin_key: RelinKey | None, galois_keys: GaloisKeys | None,
               who: str, under: str) -> tuple[RelinKey | None, GaloisKeys | None]:
    """An evaluator's optional keys, each of its type and made under `params`."""
    if relin_key is not None:
        check_instance(relin_key, RelinKey, f"{who}: relin_key")
        check_same(params, relin_key, "the relinearization key", under)
    if galois_keys is not None:
        check_instance(galois_keys, GaloisKeys, f"{who}: galois_keys")
        check_same(params, galois_keys, "the Galois keys", under)
    return relin_key, galois_keys


def check_ciphertext(ct: Any, cls: type[C], hint: str, params: Any, under: str, who: str,
                     size: int | None = 2) -> C:
    """`ct` as an operand of `who`: a `cls` made under `params` with `size` parts (None: any);
    a 3-part one where 2 are needed is told to relinearize."""
    check_instance(ct, cls, f"{who}: ct", hint=hint)
    check_same(params, ct, f"{who}: the ciphertext", under)
    if size is not None and ct.size != size:
        raise ParameterError(f"{who}: expected a ciphertext of {size} parts, got {ct.size}"
                             + ("; relinearize it first" if ct.size == 3 else ""))
    return ct


def tensor(a: tuple[Poly, ...], b: tuple[Poly, ...] | None) -> tuple[Poly, Poly, Poly]:
    """(a0·b0, a0·b1 + a1·b0, a1·b1), the 3-part product under (1, s, s²); b None squares a
    (one product fewer)."""
    a0, a1 = a
    if b is None:
        return (a0 * a0, (a0 * a1) * 2, a1 * a1)
    b0, b1 = b
    return (a0 * b0, a0 * b1 + a1 * b0, a1 * b1)


def centred(x: int, m: int) -> int:
    """x mod m in (−m/2, m/2]."""
    x %= m
    return x - m if x > m // 2 else x


def missing_relin_key(evaluator: str) -> MissingKeyError:
    return MissingKeyError("relinearize needs the relinearization key: "
                           f"{evaluator}(params, keygen.relin_key(), ...)")


def missing_galois_key(what: str, g: int, evaluator: str) -> MissingKeyError:
    return MissingKeyError(f"no Galois key for {what} (element {g}); make it with "
                           f"ren.bfv.galois_keys(keygen, [...]) and pass it to the {evaluator}")
