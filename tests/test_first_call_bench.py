"""bench_bootstrap's first-call lines name the first call's system CPU seconds: on a VM the new
arena's page faults are a large, machine-dependent part of a first call (N = 2^16: ~2.2 s of
CPU for 0.87 GiB of pages never touched), and the ratio cannot be read without them."""

from __future__ import annotations

from bench_helpers import load_benchmark

bench = load_benchmark("bench_bootstrap")


def test_the_cpu_ratio_names_the_first_calls_system_seconds():
    r = {"first_cpu_s": 9.5, "replay_cpu_s": 6.5, "first_sys_s": 2.25}
    assert bench._cpu_ratio(r) == " (CPU 9.50 s, 2.25 s of it system against 6.50 s: 1.46x)"
    # a row measured before the field existed reads as before
    assert bench._cpu_ratio({"first_cpu_s": 9.5, "replay_cpu_s": 6.5}) == \
        " (CPU 9.50 s against 6.50 s: 1.46x)"
    assert bench._cpu_ratio({"first_cpu_s": 9.5}) == ""


def test_a_ren_run_measures_its_first_calls_system_seconds():
    out = bench.run_ren("small", "cpu", reps=1, log_n=8)
    assert 0.0 <= out["first_sys_s"] <= out["first_cpu_s"]
