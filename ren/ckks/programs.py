"""The registry of the programs built on the CKKS `Evaluator`'s operations: polynomials and
linear transforms.

They live in `ren.ckks.circuits`, which imports the evaluator (never the other way round) and
registers them here when it is imported; ``import ren.ckks`` imports it, so the methods
`Evaluator.evaluate_polynomial` and `Evaluator.linear_transform` always find them.  The registry
is its own module so that the evaluator holds operations only, and the circuits plug in through
one public door.
"""

from __future__ import annotations

from collections.abc import Callable

from ren.ckks.ciphertext import Ciphertext
from ren.errors import ParameterError, check_callable, check_choice

#: The Evaluator methods a program implements.
PROGRAMS = ("evaluate_polynomial", "linear_transform")
#: name -> the registered implementation (filled by `ren.ckks.circuits` when it is imported)
REGISTERED: dict[str, Callable[..., Ciphertext]] = {}


def register_program(name: str, fn: Callable[..., Ciphertext]) -> None:
    """Make `fn` (called as ``fn(evaluator, ct, *args)``) the implementation of the Evaluator
    method `name` (one of `PROGRAMS`): how `ren.ckks.circuits` plugs its polynomial evaluation
    and linear transforms into the evaluator without the evaluator importing it."""
    check_choice(name, "register_program: name", PROGRAMS)
    check_callable(fn, "register_program: fn")
    REGISTERED[name] = fn


def registered_program(name: str) -> Callable[..., Ciphertext]:
    """The implementation registered for the Evaluator method `name`; ParameterError when
    `ren.ckks.circuits` has not been imported."""
    fn = REGISTERED.get(name)
    if fn is None:  # only when ren.ckks.evaluator is loaded without its package
        raise ParameterError(f"Evaluator.{name} is implemented in ren.ckks.circuits, which is "
                             "not loaded; import ren.ckks (or ren.ckks.circuits) first")
    return fn
