"""benchmarks/bench_bootstrap.py without running a bootstrapping: its argument checks, the
side-by-side report it prints from the subprocesses' figures (the runs themselves take minutes:
their figures are in benchmarks/README.md), and its memory estimate from the parameters against
a Bootstrapper and keys of the small presets (and, dry, at N = 2^16)."""

from __future__ import annotations

import pytest
from bench_helpers import load_benchmark

bench = load_benchmark("bench_bootstrap")

REN = {"library": "ren", "params": "CKKSParams(N=65536, ...)", "slots": 32768, "bits_min": 21.6,
       "bits_max": 21.7, "levels_left": 9, "levels_used": 16, "depth": 25,
       "shape": "CoeffToSlot 3, EvalMod 10, SlotToCoeff 3", "galois_keys": 39,
       "key_bytes": 8.2 * 2**30, "prepare_s": 33.9, "keygen_s": 60.5, "mode": "eager",
       "first_s": 252.8, "replay_s": 56.2, "rss_gib": 22.7, "threads": 1}
DESILO = {"library": "desilo (small key)", "version": "2.0", "slots": 32768, "bits_min": 13.6,
          "bits_max": 13.7, "levels_left": 17, "keygen_s": 44.5, "first_s": 211.2,
          "replay_s": 215.2, "rss_gib": 6.5}
MEDIUM = {**DESILO, "library": "desilo (medium key)", "replay_s": 33.3, "rss_gib": 16.7,
          "bits_min": 15.1}


def test_the_report_compares_in_one_run(capsys):
    bench._report([REN, {**REN, "threads": 2, "replay_s": 40.0}, MEDIUM, DESILO,
                   {"library": "seal", "skipped": "not installed"}])
    out = capsys.readouterr().out
    assert "ren (2 threads)" in out and "seal: skipped (not installed)" in out
    assert "ren/desilo (small key), bootstrapping again (one thread): 0.26x the time, +8.0 " \
           "bits, -8 levels, 3.49x the peak RSS" in out
    assert "ren/desilo (medium key), bootstrapping again (one thread): 1.69x the time, +6.5 " \
           "bits, -8 levels, 1.36x the peak RSS" in out
    assert "21.6..21.7 bits" in out and "9 levels left" in out
    assert "first call 252.8 s; again 56.20 s (median), 4.5x" in out
    assert "39 Galois keys + relinearization, 8.20 GiB" in out
    assert "ren replay by thread count (speed-up over 1): 1: 56.2 s (1.00x); 2: 40 s (1.41x)" \
        in out


def test_the_report_names_the_encapsulation_keys(capsys):
    bench._report([{**REN, "encapsulation": 32}])
    assert "39 Galois keys + relinearization + 2 encapsulation keys (ephemeral secret of " \
        "weight 32), 8.20 GiB" in capsys.readouterr().out


def test_the_report_gives_the_traced_graph_and_its_plan(capsys):
    bench._report([{**REN, "units": 5944, "kernels": 4842, "graph_nodes": 60123,
                    "arena_bytes": 1522 * 2**20, "peak_live_bytes": 1510 * 2**20}])
    assert "JIT plan: 5944 exec units (4842 kernels) from a traced graph of 60,123 nodes; " \
        "arena 1522 MiB against 1510 MiB peak-live (1.008x)" in capsys.readouterr().out


def test_the_report_says_how_the_first_call_was_compiled(capsys):
    bench._report([{**REN, "compiled_by": "plan cache", "first_s": 0.66, "replay_s": 0.018}])
    out = capsys.readouterr().out
    assert "first call 0.7 s (template from the plan cache); again 0.02 s (median), 36.7x" in out


@pytest.mark.parametrize("argv", [["--preset", "n16", "--log-n", "12"], ["--log-n", "13"],
                                  ["--log-n", "7"]])
def test_bad_ring_degrees_are_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main([*argv, "--peers", "none"])
    assert e.value.code == 2 and "--log-n" in capsys.readouterr().err


def test_bad_first_call_mode_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["--first-call", "warm", "--peers", "none"])
    assert e.value.code == 2 and "--first-call" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["0", "x", "1,-2", ""])
def test_bad_thread_counts_are_a_usage_error(bad, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["--threads", bad, "--peers", "none"])
    assert e.value.code == 2 and "--threads" in capsys.readouterr().err


def test_the_report_gives_memory_per_part(capsys):
    bench._report([{**REN, "key_parts": {"galois": [8 * 2**30, 4 * 2**30 + 2**20],
                                         "relin": [210 * 2**20, 105 * 2**20]},
                    "diagonals": 316, "diagonal_bytes": 3 * 2**30, "arena_bytes": 1536 * 2**20}])
    out = capsys.readouterr().out
    assert "memory: keys serialized 8.21 GiB full, 4.10 GiB compact (0.500x) -- galois 8.00 " \
        "GiB / 4.00 GiB, relin 210.0 MiB / 105.0 MiB" in out
    assert "316 plaintext diagonals (at their level) 3.00 GiB; keys in memory 8.20 GiB; " \
        "arena 1.50 GiB" in out
    assert "ren replay by thread count" not in out  # one thread count: no ratio


@pytest.mark.parametrize("secret", ["preset", "dense"])
def test_the_memory_estimate_is_what_the_small_presets_allocate(secret):
    """The estimate from the parameters against the Bootstrapper's transforms and the keys it
    makes: the same Galois keys, diagonal words and key words (in memory; serialized, within
    the containers' headers)."""
    import ren
    from ren.ckks import KeyGenerator
    from ren.ckks.serialize import serialized_size

    params, shape = bench.make_params("small", "python", 8, secret)
    est = bench.estimate_memory(params, **shape)
    bt = bench.circuits()[0].Bootstrapper(params, **shape)
    with ren.random.seeded(1):
        kg = KeyGenerator(params)
        keys = {"galois": bt.keys(kg), "relin": kg.relin_key()}
        if bt.encapsulation is not None:
            keys["encapsulation"] = bt.encapsulation_keys(kg)
    assert est["galois_keys"] == len(keys["galois"]) == len(bt.rotation_steps) + 1
    assert set(est["key_bytes"]) == set(keys) and ("encapsulation" in keys) == (secret == "dense")
    for name, key in keys.items():
        assert est["key_bytes"][name] == key.nbytes
        full, compact = serialized_size(key), serialized_size(key, compact=True)
        assert est["key_bytes"][name] < full < 1.01 * est["key_bytes"][name]
        assert est["key_bytes_compact"][name] < compact < 1.02 * est["key_bytes_compact"][name]
    words = [p for t in bt.transforms for p in t.diagonal_polys]
    assert est["diagonals"] == len(words) == sum(len(t.diagonals) for t in bt.transforms)
    assert est["diagonal_bytes"] == sum(4 * p.ring.limbs * p.ring.N for p in words)
    assert all(p.ring.limbs == params.limbs(t.level) for t in bt.transforms  # Q rows only
               for p in t.diagonal_polys)


def test_a_dry_run_at_n16_runs_nothing_and_sizes_the_keys(monkeypatch, capsys):
    def no_runs(*args, **kwargs):
        raise AssertionError("a dry run started a subprocess")

    monkeypatch.setattr(bench, "_in_subprocess", no_runs)
    assert bench.main(["--preset", "n16", "--dry-run", "--threads", "1,2"]) == 0
    out = capsys.readouterr().out
    params, shape = bench.make_params("n16", "python", 8, "preset")
    est = bench.estimate_memory(params, **shape)
    one_key = 2 * len(params.digits) * params.key_ring.limbs * params.N * 4  # b and a rows
    assert est["key_bytes"]["galois"] == est["galois_keys"] * one_key
    assert est["key_bytes"]["relin"] == one_key == 2 * est["key_bytes_compact"]["relin"]
    assert est["diagonals"] > est["galois_keys"] > 20
    full = sum(est["key_bytes"].values()) / 2**30
    assert f"{est['galois_keys']} Galois keys (conjugation included) + relinearization + " \
        f"encapsulation: {full:.2f} GiB full, {full / 2:.2f} GiB with seeded" in out
    assert "N = 65536, 32768 slots" in out and "threads [1, 2]" in out


@pytest.mark.parametrize("bad", ["3", "x", "0", "8,full,-4"])
def test_bad_slot_counts_are_a_usage_error(bad, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["--slots", bad, "--peers", "none", "--dry-run"])
    assert e.value.code == 2 and "--slots" in capsys.readouterr().err


def test_the_report_has_a_line_per_slot_count(capsys):
    rows = [{**REN, "slots": 8, "bits_min": 28.1, "bits_max": 28.3, "replay_s": 0.07,
             "first_s": 2.5, "galois_keys": 11},
            {**REN, "slots": 8, "threads": 2, "replay_s": 0.05},
            {**REN, "slots": 32768}]
    bench._report(rows)
    out = capsys.readouterr().out
    assert "ren by slot count: slots | bits | levels left | replay s | first call s | " \
        "Galois keys" in out
    assert "       8 | 28.1..28.3 | 9 | 0.07 | 2.5 | 11" in out
    assert "   32768 | 21.6..21.7 | 9 | 56.2 | 253 | 39" in out
    # the thread ratio compares runs of one slot count only
    assert "ren replay by thread count (speed-up over 1): 1: 0.07 s (1.00x); 2: 0.05 s (1.40x)" \
        in out


@pytest.mark.parametrize("shape", ["levels", "precision"])
def test_the_memory_estimate_follows_the_shape(shape):
    """The estimate of a named shape against its Bootstrapper (keys and diagonal words)."""
    params, kwargs = bench.make_params("small", "python", 8, "preset", shape)
    est = bench.estimate_memory(params, **kwargs)
    bt = bench.circuits()[0].Bootstrapper(params, **kwargs)
    assert est["galois_keys"] == len(bt.rotation_steps) + 1
    assert est["diagonals"] == sum(len(t.diagonals) for t in bt.transforms)
    assert est["diagonal_bytes"] == sum(t.nbytes for t in bt.transforms)


def test_a_sparse_run_bootstraps_its_slots():
    """One eager Ren run at 8 slots (N = 256): the replicated message comes back."""
    r = bench.run_ren("small", "cpu", 1, eager=True, slots=8)
    assert r["slots"] == 8 and r["bits_min"] > 24 and r["levels_left"] == 2
    assert r["galois_keys"] < 16  # fewer than at full slots (15 + conjugation)


def test_meta_bts_doubles_the_bits_for_one_level():
    """--meta (eager, N = 256): Meta-BTS's row has far more bits than the plain row, one level
    fewer left, and says what it ran."""
    plain = bench.run_ren("small", "cpu", 1, eager=True)
    meta = bench.run_ren("small", "cpu", 1, eager=True, meta=True)
    assert meta["bits_min"] > plain["bits_min"] + 12
    assert meta["levels_left"] == plain["levels_left"] - 1
    assert meta["levels_used"] == plain["levels_used"] + 1
    assert meta["shape"].startswith("Meta-BTS") and not plain["shape"].startswith("Meta-BTS")


def test_the_report_gives_the_lean_modes_memory_per_part(capsys):
    bench._report([{**REN, "lean": True, "key_bytes": 3 * 2**30, "key_bytes_full": 6 * 2**30,
                    "diagonal_form": "coeff", "diagonals": 316, "diagonal_bytes": 158 * 2**20,
                    "arena_bytes": 1024 * 2**20}])
    out = capsys.readouterr().out
    assert "memory (lean mode): keys resident 3.00 GiB of 6.00 GiB stored; diagonals (coeff) " \
        "158.0 MiB; arena 1.00 GiB; together 4.15 GiB" in out
    bench._report([{**REN, "lean": True, "diagonals": 316, "diagonal_bytes": 2**30}])
    assert "arena (eager: in the peak RSS); keys and diagonals 9.20 GiB" in \
        capsys.readouterr().out


@pytest.mark.parametrize("secret", ["preset", "dense"])
def test_the_lean_estimate_is_what_lean_keys_hold(secret):
    """The lean key bytes of the estimate against lean keys of the small preset (their b rows
    and seeds), and half the stored bytes within the seeds."""
    import ren
    from ren.ckks import KeyGenerator

    params, shape = bench.make_params("small", "python", 8, secret)
    est = bench.estimate_memory(params, **shape)
    bt = bench.circuits()[0].Bootstrapper(params, **shape)
    with ren.random.seeded(1):
        kg = KeyGenerator(params, lean=True)
        keys = {"galois": bt.keys(kg), "relin": kg.relin_key()}
        if bt.encapsulation is not None:
            keys["encapsulation"] = bt.encapsulation_keys(kg)
    for name, key in keys.items():
        assert key.is_lean and est["key_bytes_lean"][name] == key.nbytes
        assert est["key_bytes"][name] == key.full_nbytes == 2 * est["key_bytes_compact"][name]
    assert est["diagonal_bytes_coeff"] == est["diagonals"] * params.N * 8


def test_a_dry_run_at_n16_estimates_the_lean_mode(monkeypatch, capsys):
    monkeypatch.setattr(bench, "_in_subprocess", lambda *a, **k: pytest.fail("a run started"))
    assert bench.main(["--preset", "n16", "--dry-run", "--lean"]) == 0
    out = capsys.readouterr().out
    params, shape = bench.make_params("n16", "python", 8, "preset")
    est = bench.estimate_memory(params, **shape)
    keys = sum(est["key_bytes_lean"].values())
    assert keys < sum(est["key_bytes"].values()) / 1.99
    diagonals = est["diagonal_bytes_coeff"] if bench.coeff_diagonals() else est["diagonal_bytes"]
    assert diagonals < 2**30 or not bench.coeff_diagonals()
    rows = est["dnum"] * est["key_limbs"] * params.N * 4
    assert f"lean mode (--lean): keys resident {bench._mib(keys)} (b halves and seeds), " \
        f"diagonals {bench._mib(diagonals)}" in out
    assert f"{bench._mib(keys + diagonals)} before the arena, which adds a key's regenerated " \
        f"a rows ({bench._mib(rows)})" in out


def test_a_lean_run_gives_the_stored_runs_results_with_half_the_key_bytes():
    """--lean (N = 256, eager): lean keys (and coefficient diagonals where the Bootstrapper
    has them) decrypt to the very values of the stored run (same seeds): equal precision
    figures; the keys in memory are about half."""
    plain = bench.run_ren("small", "cpu", 1, eager=True)
    lean = bench.run_ren("small", "cpu", 1, eager=True, lean=True)
    assert lean["lean"] and not plain["lean"]
    assert (lean["bits_min"], lean["bits_max"]) == (plain["bits_min"], plain["bits_max"])
    assert lean["levels_left"] == plain["levels_left"]
    assert lean["key_bytes_full"] == plain["key_bytes"] == plain["key_bytes_full"]
    assert lean["key_bytes"] < plain["key_bytes"] / 1.9
    assert lean["diagonal_form"] == ("coeff" if bench.coeff_diagonals() else "rns")


def test_desilo_keys_and_keep_level_are_checked(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--desilo-keys", "large", "--dry-run"])
    with pytest.raises(SystemExit):
        bench.main(["--keep-level", "--dry-run"])
    assert "--keep-level is for --meta" in capsys.readouterr().err


def test_the_report_says_when_the_first_call_compiled(capsys):
    bench._report([{**REN, "first_compiles": 3}, {**REN, "threads": 2, "first_compiles": 0}])
    out = capsys.readouterr().out
    assert out.count("compiler run(s) inside it") == 1
    assert "first call 252.8 s, 3 compiler run(s) inside it (kernels not in the compile " \
           "cache); again 56.20 s" in out


@pytest.mark.parametrize("secret", ["preset", "sparse"])
def test_the_n16_shape_at_a_smaller_ring_keeps_the_n16_parameters(secret):
    full, _ = bench.make_params("n16", "python", 16, secret)
    small, shape = bench.make_params("n16", "python", 14, secret)
    assert (full.N, small.N) == (1 << 16, 1 << 14) and small.insecure
    for name in ("depth", "scale_bits", "first_bits", "secret", "hamming_weight"):
        assert getattr(small, name) == getattr(full, name), name
    assert len(small.special_moduli) == len(full.special_moduli) == 8
    assert shape == bench.make_params("n16", "python", 16, secret)[1]  # the same shape


@pytest.mark.parametrize("argv", [["--preset", "n16", "--log-n", "12"],
                                  ["--preset", "small", "--log-n", "14"]])
def test_each_preset_takes_its_own_ring_degrees(argv, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main([*argv, "--peers", "none", "--dry-run"])
    assert e.value.code == 2 and f"--log-n {argv[-1]}: --preset {argv[1]} takes" in \
        capsys.readouterr().err


def test_the_plan_cache_mode_reports_both_processes_first_calls(capsys):
    fill = {**REN, "first_s": 3.0, "replay_s": 2.0, "first_cpu_s": 2.8, "replay_cpu_s": 2.0,
            "compiled_by": "schedule"}
    second = {**REN, "first_s": 2.3, "replay_s": 2.0, "first_cpu_s": 2.2, "replay_cpu_s": 2.0,
              "compiled_by": "plan cache"}
    lines = bench._plan_cache_lines(fill, second)
    assert lines[1] == ("  first process (scheduled, plan stored): first call 3.00 s, replay "
                        "2.00 s: 1.50x (CPU 2.80 s against 2.00 s: 1.40x)")
    assert lines[2] == ("  second process (plan cache): first call 2.30 s, replay 2.00 s: "
                        "1.15x (CPU 2.20 s against 2.00 s: 1.10x)")
    assert len(lines) == 3 and bench._plan_cache_lines({"skipped": "failed"}, second) == []
    missed = bench._plan_cache_lines(fill, {**second, "compiled_by": "schedule"})
    assert "did not load the plan: it missed the plan cache" in missed[-1]
    bench._report([second])
    assert "1.1x (CPU 2.20 s against 2.00 s: 1.10x); peak RSS" in capsys.readouterr().out
