"""Smoke test of benchmarks/bench_ntt.py at a tiny size: NumPy and every compiled vector path run
and agree."""

from __future__ import annotations

import pytest
from bench_helpers import load_benchmark

bench = load_benchmark("bench_ntt")


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


def _lazy_butterflies(x, rounds: int, q: int, w: int, pairs_words: int):
    """The forward lazy butterfly (Harvey, words in [0, 4q)) in Python integers: what
    ren_cpu_fly_regs computes on every X, Y word pair, `rounds` times."""
    ws, mask = (w << 32) // q, (1 << 32) - 1
    X, Y = [int(v) for v in x[:pairs_words]], [int(v) for v in x[pairs_words:]]
    for _ in range(rounds):
        for k in range(pairs_words):
            a = min(X[k], (X[k] - 2 * q) & mask)
            t = (Y[k] * w - ((Y[k] * ws) >> 32) * q) & mask
            X[k], Y[k] = (a + t) & mask, (a - t + 2 * q) & mask
    return X + Y


def test_the_register_butterfly_of_every_path_is_the_ntts_butterfly() -> None:
    import numpy as np

    c_host = pytest.importorskip("ren.backend.c_host", reason="no compiled device in checkout")
    if c_host.find_cc() is None:
        pytest.skip("no C compiler: the 'cpu' device cannot run")
    from ren.backend import cpu

    q, w = bench.FLY_Q, bench.FLY_W
    for isa in cpu.available_isas():
        lib = cpu.ring_library(isa)
        words = 2 * lib.ren_cpu_fly_pairs() * max(1, lib.ren_cpu_vector_bits() // 32)
        x = np.random.default_rng(7).integers(0, 4 * q, words, dtype=np.uint32)
        x[:2] = 4 * q - 1, 0  # the range's edges
        x[-1] = 4 * q - 1
        want = _lazy_butterflies(x, 3, q, w, words // 2)
        assert bench.fly_in_registers(isa, x, 3) == 3 * words // 2
        assert x.tolist() == want, isa
        # and it is the butterfly: X + wY, X - wY mod q, words below 4q
        y = np.random.default_rng(8).integers(0, q, words, dtype=np.uint32)
        before = [int(v) for v in y]
        bench.fly_in_registers(isa, y, 1)
        half = words // 2
        for k in range(half):
            assert int(y[k]) % q == (before[k] + w * before[half + k]) % q
            assert int(y[half + k]) % q == (before[k] - w * before[half + k]) % q
        assert int(y.max()) < 4 * q
    with pytest.raises(ValueError, match="uint32"):
        bench.fly_in_registers("scalar", np.zeros(3, np.uint32), 1)
    with pytest.raises(ValueError, match="2 < q < 2\\^30"):
        bench.fly_in_registers("scalar", np.zeros(16, np.uint32), 1, q=(1 << 30) + 3)
    with pytest.raises(ValueError, match="0 <= w < q"):
        bench.fly_in_registers("scalar", np.zeros(16, np.uint32), 1, q=97, w=97)
    # the smallest odd modulus and the twiddle 0 are fine: Y's product vanishes
    z = np.arange(16, dtype=np.uint32)
    assert bench.fly_in_registers("scalar", z, 2, q=3, w=0) == 16
    assert z.tolist() == _lazy_butterflies(np.arange(16, dtype=np.uint32), 2, 3, 0, 8)


def test_the_report_gives_the_register_rates(capsys) -> None:
    c_host = pytest.importorskip("ren.backend.c_host", reason="no compiled device in checkout")
    if c_host.find_cc() is None:
        pytest.skip("no C compiler: the 'cpu' device cannot run")
    from ren.backend import cpu

    vector = [p for p in cpu.available_isas() if p != "scalar"]
    if not vector:
        pytest.skip("this machine runs no vector path")
    rates = bench.register_rates(vector, 1, rounds=64)
    # ns per butterfly: a vector butterfly takes a few cycles for 8 or 16 of them
    assert set(rates) == set(vector) and all(0 < ns < 100 for ns in rates.values()), rates
    bench.main(["--shapes", "1024x1", "--repeat", "1", "--bits", "30"])
    out = capsys.readouterr().out
    assert "in registers" in out and f"{vector[0]} " in out.split("in registers")[1]
    assert "of its path's rate in registers" in out
