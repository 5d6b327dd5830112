"""Long differential runs: many random programs (`random_programs`) against the big-integer
oracle, on one backend.

    python tests/fuzz_programs.py --count 20000                  # the NumPy device
    python tests/fuzz_programs.py --count 5000 --backend cpu     # the compiled C device
    python tests/fuzz_programs.py --seed 1234 --count 1 -v       # replay one program

Program i is built from seed `--seed + i` alone, so a failure is reproduced by its seed.  Prints
the counts and every failing seed; exits 1 if any program was wrong.  (The test suite runs a
short version of this: `tests/test_realize.py` and the `slow`-marked test in
`tests/test_fuzz_programs.py`.)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import traceback

from ren import random_programs


def backend(kind: str) -> contextlib.AbstractContextManager:
    """Run every "python" device on `kind` (as the test suite's --ren-backend does)."""
    if kind == "python":
        return contextlib.nullcontext()
    from ren.backend import backend_override
    from ren.backend.cpu import open_device

    return backend_override("python", open_device)


def run(count: int, seed: int = 0, kind: str = "python", verbose: bool = False) -> list[int]:
    """Check programs seed..seed+count-1 on backend `kind`; returns the failing seeds."""
    failed = []
    with backend(kind):
        for s in range(seed, seed + count):
            try:
                random_programs.check(random_programs.build(random_programs.RandomChooser(s)))
            except Exception:
                failed.append(s)
                if verbose or len(failed) <= 5:
                    print(f"seed {s}: FAILED", file=sys.stderr)
                    traceback.print_exc()
    return failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0, help="seed of the first program")
    ap.add_argument("--backend", choices=("python", "cpu"), default="python")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    failed = run(args.count, args.seed, args.backend, args.verbose)
    dt = time.perf_counter() - t0
    print(f"{args.count} programs (seeds {args.seed}..{args.seed + args.count - 1}) on "
          f"{args.backend!r}: {args.count - len(failed)} right, {len(failed)} wrong, {dt:.0f} s")
    if failed:
        print("failing seeds:", " ".join(map(str, failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
