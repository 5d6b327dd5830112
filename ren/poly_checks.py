"""The argument and operand checks of `ren.poly.Poly`'s operations, and the errors they raise.

`Poly` builds IR nodes and nothing else; what it accepts (rings, domains, operands of + - *, the
moduli a rescale drops) and how a refusal is worded lives here, in one place, so the class reads as
the list of operations it offers.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ren.errors import (
    DeviceError,
    DomainError,
    OperandError,
    ParameterError,
    RingMismatchError,
    is_int,
)
from ren.node import Node
from ren.ops import Op
from ren.ring import Domain, RingSpec
from ren.spec import is_constant_poly, need_spec


def as_domain(domain: Domain | str) -> Domain:
    """`domain` as a Domain (a Domain, or its name in any case); DomainError otherwise."""
    if isinstance(domain, Domain):
        return domain
    try:
        return Domain[str(domain).upper()]
    except KeyError:
        raise DomainError(f"unknown domain {domain!r}; use Domain.COEFF or Domain.NTT") from None


def check_ring(ring: Any) -> RingSpec:
    """`ring` itself when it is a RingSpec; ParameterError otherwise."""
    if not isinstance(ring, RingSpec):
        raise ParameterError(f"expected a RingSpec, got {type(ring).__name__}")
    return ring


#: The operator each arithmetic op is written with, for messages.
OPERATOR_SYMBOL = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*"}

#: What Poly arithmetic takes, said in every OperandError.
SUPPORTED_ARITHMETIC = (
    "Poly arithmetic is exact modular arithmetic over ints and Polys: p + x, p - x, p * x (and "
    "reflected) and -p, where x is a Poly or an int (Python or NumPy integer)")


def operand_error(symbol: str, other: Any, reverse: bool) -> OperandError:
    """The error for `Poly <symbol> other` (or reflected) with an operand that is no Poly/int."""
    name = type(other).__name__
    shown = f"{name} {symbol} Poly" if reverse else f"Poly {symbol} {name}"
    if isinstance(other, bool | np.bool_):
        hint = "; a bool is a flag, not a number: write int(flag) if you mean 0 or 1"
    elif isinstance(other, numbers.Number):
        hint = (f"; a {name} would have to be rounded, so it is refused: pass an int, or "
                "encode real numbers with ren.ckks (Encoder, Evaluator.multiply_scalar)")
    elif isinstance(other, np.ndarray | list | tuple):
        hint = ("; arrays and sequences do not broadcast over a Poly: make a Poly of the values "
                "first (Poly.from_coefficients(values, p.ring) or Poly.from_residues)")
    else:
        hint = ""
    return OperandError(
        f"unsupported operand: `{shown}` ({other!r:.40}); {SUPPORTED_ARITHMETIC}{hint}")


def unsupported_operator(symbol: str, hint: str) -> Any:
    """A dunder method that raises OperandError for the operator `symbol` (unary or binary)."""

    def method(self: object, *_args: Any) -> Any:
        raise OperandError(f"Poly does not support {symbol}: {hint}.  {SUPPORTED_ARITHMETIC}")

    method.__name__ = f"unsupported {symbol}"
    return method


def moduli_to_drop(moduli: Any) -> tuple[int, ...]:
    """The `moduli` argument of rescale (one int or a sequence of ints) as a tuple of ints."""
    if is_int(moduli):
        return (int(moduli),)
    bad = ParameterError(f"rescale: moduli must be ints (one, or a list/tuple of them), got "
                         f"{type(moduli).__name__} {moduli!r}")
    if isinstance(moduli, str | bytes) or not isinstance(moduli, Sequence | np.ndarray):
        raise bad
    if isinstance(moduli, np.ndarray) and moduli.ndim != 1:
        raise bad
    if not all(is_int(q) for q in moduli):
        raise bad
    return tuple(int(q) for q in moduli)


def unify_operands(op: Op, a: Node, b: Node) -> tuple[Node, Node]:
    """Check two operands of an elementwise op; re-tag a constant to the other's domain."""
    sa, sb = need_spec(a), need_spec(b)
    if sa.ring != sb.ring:
        raise RingMismatchError(
            f"{op.name}: operands live in different rings ({sa.ring.short()} vs "
            f"{sb.ring.short()}); convert one with .to_ring(other.ring) or rescale first"
        )
    if sa.device != sb.device:
        raise DeviceError(
            f"{op.name}: operands are on different devices ({sa.device} vs {sb.device}); "
            f"move one with .to({sa.device!r})"
        )
    if sa.domain is not sb.domain:
        if is_constant_poly(a):
            a = a.replace(arg=(sa.ring, sb.domain))
        elif is_constant_poly(b):
            b = b.replace(arg=(sb.ring, sa.domain))
        elif op.info.needs_domain is None:  # MUL: pass 3 converts a product's operands
            raise DomainError(
                f"{op.name}: operands are in different domains ({sa.domain.name} vs "
                f"{sb.domain.name}); call .ntt() or .intt() on one of them"
            )
    return a, b
