"""Smoke test of benchmarks/bench_ntt.py at a tiny size: NumPy and every compiled vector path run
and agree."""

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
    from ren.backend import cpu

    rows = bench.main(["--shapes", "1024x2,2048x3", "--repeat", "1", "--bits", "30,31"])
    out = capsys.readouterr().out
    assert [(r["N"], r["limbs"], r["bits"]) for r in rows] == [
        (1024, 2, 30), (2048, 3, 30), (1024, 2, 31), (2048, 3, 31)]
    paths = cpu.available_isas()  # every path this machine runs, side by side
    keys = ["numpy ntt", "numpy intt", *(f"{p} {k}" for p in paths for k in ("ntt", "intt"))]
    for r in rows:  # bench() asserted bit-identity with ren.ring; here: every figure is there
        assert r["butterflies"] == r["limbs"] * r["N"] // 2 * (r["N"].bit_length() - 1)
        assert all(r[k] > 0 for k in keys), r
    assert "bit-identical" in out and "goal:" not in out  # the goal shape was not run
    assert all(f"{p} ntt" in out for p in paths)


def test_one_path_and_a_path_the_machine_lacks(capsys, monkeypatch) -> None:
    c_host = pytest.importorskip("ren.backend.c_host", reason="no compiled device in checkout")
    if c_host.find_cc() is None:
        pytest.skip("no C compiler: the 'cpu' device cannot run")
    from ren.backend import cpu_isa

    monkeypatch.setattr(cpu_isa, "cpu_features", lambda: frozenset())
    rows = bench.main(["--shapes", "1024x1", "--repeat", "1", "--isa", "scalar,avx2"])
    out = capsys.readouterr().out
    assert "avx2 skipped" in out and "lacks avx2" in out
    assert "scalar ntt" in rows[0] and "avx2 ntt" not in rows[0]


def test_compiled_mismatch_is_caught(monkeypatch) -> None:
    c_host = pytest.importorskip("ren.backend.c_host", reason="no compiled device in checkout")
    if c_host.find_cc() is None:
        pytest.skip("no C compiler: the 'cpu' device cannot run")
    make = bench.compiled("scalar")

    def broken(kind, ring):  # a "compiled" NTT that leaves one word wrong
        bind = make(kind, ring)

        def wrap(out, a):
            run = bind(out, a)

            def call():
                run()
                out[0, 0] ^= 1
            return call
        return wrap

    monkeypatch.setattr(bench, "compiled", lambda isa: broken)
    with pytest.raises(AssertionError, match="compiled"):
        bench.main(["--shapes", "1024x2", "--repeat", "1", "--isa", "scalar"])
