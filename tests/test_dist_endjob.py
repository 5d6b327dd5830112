"""The end of a job (`ren.distributed.shm.end_job`, on the client's critical path: `result()`
returns after it) lists the shared-memory directory once, after the job's marker went, and
looks each writer's pid up in /proc once, whatever number of files it has; what it removes is
unchanged (a dead writer's pool, the job's own segments).  Skipped without the `distributed`
extra."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

distributed = pytest.importorskip(
    "distributed", reason='needs Dask distributed: pip install -e ".[distributed]"')

from ren.distributed import shm, shmfiles  # noqa: E402


def test_a_jobs_end_lists_once_and_looks_each_writer_up_once(monkeypatch):
    if shm.SHM_DIR is None:
        pytest.skip("no shared-memory directory here")
    client = shm.client_prefix()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that is gone
    job = f"{client}-990101"
    pools = [os.path.join(shm.SHM_DIR, f"{client}-pool-{dead.pid}.{i}") for i in range(5)]
    segments = [os.path.join(shm.SHM_DIR, f"{job}-{os.getpid()}.{i}") for i in range(3)]
    marker = shmfiles.job_marker(job)
    for path in [marker, *pools, *segments]:
        with open(path, "wb") as f:
            f.write(b"x")
    listed: list[str] = []
    looked: list[str] = []
    listdir, exists = os.listdir, os.path.exists

    def counting_listdir(path="."):
        listed.append(path)
        return listdir(path)

    def counting_exists(path):
        if str(path).startswith("/proc/"):
            looked.append(str(path))
        return exists(path)

    monkeypatch.setattr(os, "listdir", counting_listdir)
    monkeypatch.setattr(os.path, "exists", counting_exists)
    try:
        assert shm.end_job(job) == 3  # the job's segments
        assert listed == [shm.SHM_DIR]
        assert f"/proc/{dead.pid}" in looked and len(looked) == len(set(looked))
        assert not any(exists(p) for p in [marker, *pools, *segments])
    finally:
        monkeypatch.undo()
        for path in [marker, *pools, *segments]:
            if os.path.exists(path):
                os.unlink(path)
