"""Pass development: check a pass of your own, and measure what it buys.

    from ren.passdev import check, compare, ablate, pass_timing
    check(my_pass, after="lower_ring_ops")                 # contracts + semantics, shrunk failures
    print(compare("ckks_multiply", {"default": "default", "mine": mine}).text())
    print(ablate("ckks_multiply").text())                  # each optional pass removed in turn

These tools build programs (the corpus, the CKKS examples, random programs) and run them, so they
sit above the schemes and the report's program registry (`ren.viz.programs`); the pipeline and
the `Pass` they take are `ren.passes` values (the engine layer).
"""

from ren.passdev.check import CheckFailure, CheckReport, check
from ren.passdev.measure import ablate, compare, measure, pass_timing

__all__ = ["CheckFailure", "CheckReport", "ablate", "check", "compare", "measure",
           "pass_timing"]
