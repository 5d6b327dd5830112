"""Smoke test of benchmarks/bench_bfv.py at a tiny, insecure ring (N = 2^10, one rep): Ren's BFV
on the compiled "cpu" device (the python device where no C compiler is found), SEAL's BFV when
TenSEAL is installed, Ren's BGV; the report's tables come out of the results."""

from __future__ import annotations

import pytest
from bench_helpers import load_benchmark

bench = load_benchmark("bench_bfv")

CFG = bench.Config(preset=None, reps=1, keygen_reps=1, chain=2, insecure=True)


def _cfg() -> object:
    try:
        bench._device(CFG)
    except bench.Skipped:
        return bench.Config(**{**CFG.__dict__, "device": "python"})
    return CFG


def _check(res, cfg, chain: int) -> None:
    for op in bench.OPS:
        assert len(res.times[op]) == (cfg.keygen_reps if op == "keygen" else cfg.reps), op
        assert all(t > 0 for t in res.times[op]), op
    assert res.params["exact"] == "all", res.params
    b = res.precision
    # fresh ≈ 99 bits at this ring; a product uses about 24, a rotation about 3; a result that
    # decrypted wrongly would already have failed "exact"
    assert 90 < b["encrypt"] < 110 and b["add"] <= b["encrypt"], b
    assert b["rotate"] < b["encrypt"] and b["rotate_rows"] < b["encrypt"], b
    assert b["mul"] < b["rotate"] - 10, b
    chained = [b[f"multiply x{i}"] for i in range(1, chain + 1)]
    assert all(a - c > 10 for a, c in zip([b["encrypt"], *chained], chained)), b


def test_ren_bfv_and_bgv_tiny() -> None:
    cfg = _cfg()
    res = bench.run_ren(cfg)
    _check(res, cfg, cfg.chain)
    assert res.median_ms("mul jit") > 0 and res.median_ms("rotate jit") > 0
    if hasattr(bench, "run_ren"):
        try:
            bgv = bench.run_ren(cfg, "bgv")
        except bench.Skipped:
            return
        # two levels, one product; BGV's exactness is tests/test_bgv.py's, here it only runs
        assert all(len(bgv.times[op]) >= 1 for op in bench.OPS)
        assert bgv.precision["mul"] < bgv.precision["encrypt"] - 10, bgv.precision
        text = bench.report([res, bgv], ["a note"])
        assert "ren-bgv" in text and "a note" in text


def test_against_seal_tiny() -> None:
    pytest.importorskip("tenseal", reason="SEAL peer not installed (pip install -e '.[bench]')")
    cfg = _cfg()
    ren, seal = bench.run_ren(cfg), bench.run_seal(cfg)
    _check(seal, cfg, cfg.chain)
    for k in seal.precision:  # the budgets of the same N, t, Q: within 2 bits of SEAL's
        assert abs(ren.precision[k] - seal.precision[k]) <= 2, (k, ren.precision, seal.precision)
    text = bench.report([ren, seal], [])
    assert "noise budget" in text and "ren-bfv/seal" in text and "goal <= 0.5x" in text
    assert bench.ratio(ren, seal, "mul") == ren.median_ms("mul jit") / seal.median_ms("mul")


def test_main_smoke(capsys) -> None:
    results = bench.main(["--smoke", "--only", "ren", "--device", _cfg().device])
    assert [r.lib for r in results] == ["ren-bfv"]
    assert "decrypts exactly" in capsys.readouterr().out
