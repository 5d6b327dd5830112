#!/usr/bin/env bash
# The GPU check of issue 11, for a session that has a GPU machine: run it once there, e.g.
#   run(command="bash benchmarks/gpu_check.sh", timeout_s=560)
# It runs the `gpu` tests (every corpus program, CKKS op and the ckks_basics example bit-identical
# to the NumPy backend; device copies; CUDA-graph replay) and benchmarks/bench_cuda.py, and
# leaves the logs and figures in $OUT (./gpu_out when OUT is unset).  Ren is not installed there:
# it runs from the checkout (PYTHONPATH); the machine's image already has CuPy (cupy-cuda13x),
# NVRTC, NumPy, networkx, rich, pytest and hypothesis.  Exit status: nonzero if either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-gpu_out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"

{ nvidia-smi -L; "$PY" -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', \
numpy.__version__, 'GPUs', cupy.cuda.runtime.getDeviceCount())"; } 2>&1 | tee "$OUT/gpu.txt"
if ! "$PY" -c "import cupy, sys; sys.exit(0 if cupy.is_available() else 1)" 2>/dev/null; then
    echo "gpu_check: no GPU visible to CuPy: this script is for a GPU machine" | tee -a "$OUT/gpu.txt"
    exit 2
fi

timeout 250 "$PY" -m pytest -p no:cacheprovider -m gpu -q -rs tests/test_cuda.py 2>&1 \
    | tee "$OUT/gpu_tests.log"
tests=${PIPESTATUS[0]}

timeout 270 "$PY" benchmarks/bench_cuda.py --reps 50 --json "$OUT/bench_cuda.json" 2>&1 \
    | tee "$OUT/bench_cuda.log"
bench=${PIPESTATUS[0]}

echo "gpu_check: gpu tests exit $tests, bench_cuda exit $bench" | tee -a "$OUT/gpu.txt"
[ "$tests" -eq 0 ] && [ "$bench" -eq 0 ]
