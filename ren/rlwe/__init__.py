"""Ring-LWE on Ren's lazy polynomials: the scheme-independent layer under CKKS.

Parameters (ring degree, modulus chain and levels, special primes, key-switching digits, secret
and error distributions) and the gadget decomposition, as in Lattigo's ``core/rlwe``.  Nothing
here knows about scales or encoding: `ren.ckks` builds on this layer (and a BFV/BGV or
bootstrapping would reuse it); this layer never imports `ren.ckks`.
"""

from ren.rlwe.errors import InsecureParametersWarning, MissingKeyError, ParamsMismatchError
from ren.rlwe.gadget import balanced_digits, gadget_constants
from ren.rlwe.params import HE_STANDARD_128, RLWEParams, estimated_security, max_log_qp

__all__ = [
    "HE_STANDARD_128",
    "InsecureParametersWarning",
    "MissingKeyError",
    "ParamsMismatchError",
    "RLWEParams",
    "balanced_digits",
    "estimated_security",
    "gadget_constants",
    "max_log_qp",
]
