"""glibc's allocator thresholds (`ren.backend.malloc`): the host devices tune them when they open,
``REN_MALLOC_TUNE=0`` leaves them alone, and tuned, a "python" replay stops page-faulting.

Each case runs in a fresh interpreter: the thresholds are process-wide and set once.  The
interpreter starts with ``MALLOC_TRIM_THRESHOLD_=65536`` (what Dask's nanny gives its workers,
glibc's worst case here), so untuned every large NumPy temporary is a fresh mapping."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = r"""
import resource, ren
from ren.backend.malloc import allocator_tuned
from ren.ring.ringspec import RingSpec, ntt_primes
ring = RingSpec(1 << 12, tuple(ntt_primes(1 << 12, 30, 8)))
a, b = ren.Poly.uniform(ring, domain="ntt"), ren.Poly.uniform(ring, domain="ntt")
ren.realize([a, b])
f = ren.jit(lambda x, y: (x * y + x) * y)
f(a, b).realize()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    f(a, b).realize()
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10
print(int(allocator_tuned()), faults)
"""


def _run(**env: str) -> tuple[bool, float]:
    full = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "MALLOC_TRIM_THRESHOLD_": "65536", **env}
    res = subprocess.run([sys.executable, "-c", SCRIPT], env=full, capture_output=True,
                         text=True, cwd=REPO, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    tuned, faults = res.stdout.split()
    return tuned == "1", float(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_host_devices_tune_the_allocator_and_replays_stop_faulting():
    tuned, faults = _run()
    off, faults_off = _run(REN_MALLOC_TUNE="0")
    assert tuned and not off
    # untuned each replay maps and faults in its temporaries (8 limbs x 4096 x 8 bytes = 64
    # pages each); tuned it reuses the heap
    assert faults_off > 200, faults_off
    assert faults < faults_off / 10, (faults, faults_off)


def test_tune_allocator_honours_the_switch_and_is_idempotent():
    from ren import settings
    from ren.backend import malloc

    first = malloc.tune_allocator()
    assert malloc.tune_allocator() is first  # once per process: the same answer again
    assert malloc.allocator_tuned() is first
    with settings.override(REN_MALLOC_TUNE=0):
        assert malloc.tune_allocator() is first  # already decided in this process
