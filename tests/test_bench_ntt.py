"""Smoke test of benchmarks/bench_ntt.py at a tiny size: both implementations run and agree."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_ntt.py"
_spec = importlib.util.spec_from_file_location("bench_ntt", _PATH)
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_ntt"] = bench
_spec.loader.exec_module(bench)


def test_tiny_numpy_and_compiled(capsys) -> None:
    c_host = pytest.importorskip("ren.backend.c_host", reason="no compiled device in checkout")
    if c_host.find_cc() is None:
        pytest.skip("no C compiler: the 'cpu' device cannot run")
    rows = bench.main(["--shapes", "1024x2,2048x3", "--repeat", "1", "--bits", "30,31"])
    out = capsys.readouterr().out
    assert [(r["N"], r["limbs"], r["bits"]) for r in rows] == [
        (1024, 2, 30), (2048, 3, 30), (1024, 2, 31), (2048, 3, 31)]
    for r in rows:  # bench() asserted bit-identity with ren.ring; here: every figure is there
        assert r["butterflies"] == r["limbs"] * r["N"] // 2 * (r["N"].bit_length() - 1)
        assert all(r[k] > 0 for k in ("numpy ntt", "numpy intt", "cpu ntt", "cpu intt")), r
    assert "bit-identical" in out and "goal:" not in out  # the goal shape was not run


def test_compiled_mismatch_is_caught(monkeypatch) -> None:
    c_host = pytest.importorskip("ren.backend.c_host", reason="no compiled device in checkout")
    if c_host.find_cc() is None:
        pytest.skip("no C compiler: the 'cpu' device cannot run")
    make = bench.compiled()

    def broken(kind, ring):  # a "compiled" NTT that leaves one word wrong
        bind = make(kind, ring)

        def wrap(out, a):
            run = bind(out, a)

            def call():
                run()
                out[0, 0] ^= 1
            return call
        return wrap

    monkeypatch.setattr(bench, "compiled", lambda: broken)
    with pytest.raises(AssertionError, match="compiled"):
        bench.main(["--shapes", "1024x2", "--repeat", "1"])
