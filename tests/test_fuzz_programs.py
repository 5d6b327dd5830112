"""Random programs from `random_programs` (seeded, reproducible) against the big-integer oracle.

The fast test runs the first few hundred seeds, which include programs that realized a constant
beside a product by it (seeds 100 and 119 came out wrong before issue 16's fix); the slow test
runs a few thousand.  `python tests/fuzz_programs.py --count N [--backend cpu]` runs more.
"""

from __future__ import annotations

import fuzz_programs
import pytest


def test_seeded_programs_match_the_reference():
    assert fuzz_programs.run(400) == []


@pytest.mark.slow
def test_many_seeded_programs_match_the_reference():
    assert fuzz_programs.run(5000, seed=400) == []
