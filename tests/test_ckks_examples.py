"""The CKKS examples run (with their small, insecure parameters) and reach their precision."""

from __future__ import annotations

import runpy
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _main(name: str):
    return runpy.run_path(str(EXAMPLES / name), run_name="example")["main"]


def test_ckks_basics(capsys):
    bits = _main("ckks_basics.py")(["--small"])
    out = capsys.readouterr().out
    assert "precision" in out and "max error" in out and "modulus chain" in out
    assert min(bits.values()) >= 24, bits


def test_ckks_logreg(capsys):
    res = _main("ckks_logreg.py")(["--small"])
    out = capsys.readouterr().out
    assert "bits of precision" in out and "agree" in out
    assert res["bits"] >= 24 and res["agree"] >= 0.95


def test_ckks_inference(capsys):
    """A dense layer, a Chebyshev sigmoid and an output neuron, with the budget, the key plan
    and the precision meter printed; then degree-63 sigmoid and exp."""
    res = _main("ckks_inference.py")(["--small"])
    out = capsys.readouterr().out
    assert "budget: " in out and "Galois key(s)" in out and "largest loss" in out
    assert res["network"] >= 26 and res["sigmoid"] >= 24 and res["exp"] >= 24, res
