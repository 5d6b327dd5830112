"""benchmarks/bench_bootstrap.py without running a bootstrapping: its argument checks and the
side-by-side report it prints from the subprocesses' figures (the runs themselves take minutes:
their figures are in benchmarks/README.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_bootstrap.py"
_spec = importlib.util.spec_from_file_location("bench_bootstrap", _PATH)
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_bootstrap"] = bench
_spec.loader.exec_module(bench)

REN = {"library": "ren", "params": "CKKSParams(N=65536, ...)", "slots": 32768, "bits_min": 21.6,
       "bits_max": 21.7, "levels_left": 9, "levels_used": 16, "depth": 25,
       "shape": "CoeffToSlot 3, EvalMod 10, SlotToCoeff 3", "galois_keys": 39,
       "key_bytes": 8.2 * 2**30, "prepare_s": 33.9, "keygen_s": 60.5, "mode": "eager",
       "first_s": 252.8, "replay_s": 56.2, "rss_gib": 22.7, "threads": 1}
DESILO = {"library": "desilo", "version": "2.0", "slots": 32768, "bits_min": 13.6,
          "bits_max": 13.7, "levels_left": 17, "keygen_s": 44.5, "first_s": 211.2,
          "replay_s": 215.2, "rss_gib": 6.5}


def test_the_report_compares_in_one_run(capsys):
    bench._report([REN, {**REN, "threads": 2, "replay_s": 40.0}, DESILO,
                   {"library": "seal", "skipped": "not installed"}])
    out = capsys.readouterr().out
    assert "ren (2 threads)" in out and "seal: skipped (not installed)" in out
    assert "ren/desilo, bootstrapping again (one thread): 0.26x the time, +8.0 bits" in out
    assert "21.6..21.7 bits" in out and "9 levels left" in out
    assert "first call 252.8 s; again 56.20 s (median), 4.5x" in out
    assert "39 Galois keys + relinearization, 8.20 GiB" in out


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
