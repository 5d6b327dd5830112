"""One CKKS bootstrapping at the small preset (N = 256, INSECURE) as a ren-inspect program.

Run:  ren-inspect report examples/inspect_bootstrap.py -o bootstrap.html
(a large graph: see the report's note on how many nodes each stage draws).
"""

from __future__ import annotations

import numpy as np

from ren.ckks import Encoder, Encryptor, Evaluator, KeyGenerator
from ren.ckks.circuits.bootstrap import Bootstrapper, bootstrap_params_small

PARAMS = bootstrap_params_small()
BOOTSTRAPPER = Bootstrapper(PARAMS)
_KEYGEN = KeyGenerator(PARAMS)  # ren-inspect loads this file under its seeded random stream
EVALUATOR = Evaluator(PARAMS, _KEYGEN.relin_key(), BOOTSTRAPPER.keys(_KEYGEN))
_ENCRYPTOR = Encryptor(PARAMS, _KEYGEN.public_key())


def function(ct):
    """ct (level 1) bootstrapped back to level 2."""
    return BOOTSTRAPPER.bootstrap(EVALUATOR, ct)


def example_inputs():
    x = np.random.default_rng(0).uniform(-1, 1, PARAMS.slots)
    return (_ENCRYPTOR.encrypt(Encoder(PARAMS).encode(x, level=1)).realize(),)
