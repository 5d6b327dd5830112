"""ren.distributed refusing what it cannot do with one clear RenError (issue 38): a client that
is not Dask's default one, a function that carries a secret's data, a scheduler lost mid-job,
and wrong arguments to every public function.  The tests that need a cluster share one
LocalCluster of one worker process (skipped without the `distributed` extra); the argument
checks of `run_point` need no Dask."""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time

import numpy as np
import pytest
from ckks_helpers import context
from distributed_helpers import square

import ren
from ren import settings
from ren.distributed import (
    DistributedError,
    SchedulerLostError,
    SecretKeyError,
    WireError,
    local_client,
    resolve_client,
    run_point,
    submit,
    sweep,
)
from ren.distributed import map as dmap
from ren.distributed.cluster import MAX_LOCAL_WORKERS, MAX_TIMEOUT, WORKER_ENV
from ren.distributed.sweep import MAX_POINTS, MAX_REPEAT, expand_grid
from ren.errors import ParameterError, RenError

POINT = {"N": 64, "depth": 2, "scale_bits": 30, "first_bits": 40, "insecure": True}


def needs_dask():
    return pytest.importorskip("distributed",
                               reason='needs Dask distributed: pip install -e ".[distributed]"')


@pytest.fixture(scope="module")
def client():
    """A client that is NOT Dask's default one (set_as_default=False): every call must use the
    client it is given."""
    distributed = needs_dask()
    with (distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.WARNING,
                                   env=dict(WORKER_ENV)) as cluster,
          distributed.Client(cluster, set_as_default=False, direct_to_workers=True) as c):
        c.wait_for_workers(1, timeout=120)
        yield c


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))


def values(i: int, slots: int) -> np.ndarray:
    return np.random.default_rng(i).uniform(-1, 1, slots)


def double(ev, ct):
    return ev.add(ct, ct)


# -- the client the caller passed, everywhere ------------------------------------------------
def test_map_and_sweep_use_the_client_they_are_given_not_the_default_one(client, ckks,
                                                                         monkeypatch):
    """With no default client (the fixture's is not one) map and sweep worked only up to
    waiting: Dask's as_completed took the default client's loop (`ValueError: No clients
    found`); beside another default client it watched that client's loop, and results
    sometimes never arrived.  Now as_completed runs on the given client's loop."""
    distributed = needs_dask()
    loops = []
    real = distributed.as_completed

    def spy(*args, **kwargs):
        loops.append(kwargs.get("loop"))
        return real(*args, **kwargs)

    monkeypatch.setattr(distributed, "as_completed", spy)
    cts = [ckks.encrypt(values(i, 32)) for i in range(3)]
    rlk = ckks.ev.relin_key
    with pytest.raises(ValueError):
        distributed.default_client()  # really no default client here
    outs = dmap(square, cts, keys=rlk, client=client, timeout=60)
    for i, out in enumerate(outs):
        assert np.max(np.abs(ckks.decrypt(out) - values(i, 32) ** 2)) < 2**-15
    # beside another client that is the default one (a cluster of its own, no workers)
    with (distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cl,
          distributed.Client(cl) as other):
        assert distributed.default_client() is other
        outs = dmap(square, cts, keys=rlk, client=client, timeout=60)
        rows = sweep(double, [POINT], reference=lambda x: 2 * x, repeat=1, client=client,
                     frame=False, timeout=60)
    assert len(outs) == 3 and rows[0]["bits"] > 15 and rows[0]["error"] is None
    assert loops and all(loop is client.loop for loop in loops)


# -- no secret's data in a function -----------------------------------------------------------
def test_a_plain_function_closing_over_the_secret_poly_is_refused(client, ckks):
    """refuse_secret_data ran only on captured plans: a plain function (or a jit function
    under REN_JIT=0) closing over sk.poly went out with the secret's residues in its pickle.
    Now the function's pickle is checked too, on every path, in the NTT and the coefficient
    domain, for map and for sweep."""
    sk = ckks.keygen.secret_key()
    s, s_coefficients = sk.poly, sk.poly.intt()
    cts = [ckks.encrypt(values(i, 32)) for i in range(2)]

    def half_decrypt(ct):
        return ct.parts[0] + ct.parts[1] * s.to_ring(ct.parts[1].ring)

    with pytest.raises(SecretKeyError, match=r"map: the function \(with what it closes over\) "
                                             r"contains the data of a secret key"):
        submit(half_decrypt, cts, client=client)

    def coefficients(ct):
        return ct.parts[0] + s_coefficients.to_ring(ct.parts[0].ring).ntt()

    with pytest.raises(SecretKeyError, match="contains the data of a secret key"):
        submit(coefficients, cts, client=client)
    jitted = ren.jit(half_decrypt)
    with settings.override(REN_JIT=0), pytest.raises(SecretKeyError, match="the function"):
        submit(jitted, cts, client=client)  # eager on the workers: the function travels

    def program(ev, ct):
        _ = s  # closes over the client's secret
        return ev.add(ct, ct)

    with pytest.raises(SecretKeyError, match="sweep: the program, inputs and reference contains"):
        sweep(program, [POINT], repeat=1, client=client)
    # a function with public keys only still travels
    ev = ckks.ev
    outs = dmap(lambda ct: ev.add(ct, ct), cts, client=client, timeout=60)
    assert np.max(np.abs(ckks.decrypt(outs[1]) - 2 * values(1, 32))) < 2**-15


# -- a scheduler lost mid-job -----------------------------------------------------------------
RELEASE = threading.Event()  # the slow tasks of the lost-scheduler test (workers in-process)


def slow_after(ct, i):
    if i >= 2:
        RELEASE.wait(20)
    return ct


def test_a_lost_scheduler_raises_one_error_with_what_arrived(ckks):
    """The scheduler closed mid-map: the client cancels every future (reason
    scheduler-connection-lost) and the old code resent an input, asked the lost scheduler for
    its workers (waiting out the connect timeout, then `KeyError: 'workers'`) and cancelled
    through it (ClosedClientError).  Now: at once, one SchedulerLostError with the results that
    had arrived."""
    distributed = needs_dask()
    import dask.config

    batch = [(ckks.encrypt(values(i, 32)), i) for i in range(6)]
    RELEASE.clear()
    # short connect timeouts: the old code's wait on the lost scheduler ends in seconds
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                           dashboard_address=":0", silence_logs=logging.CRITICAL)
        c = distributed.Client(cluster, set_as_default=False, timeout=2)
        try:
            job = submit(slow_after, batch, client=c)

            def kill_the_scheduler():
                deadline = time.monotonic() + 30
                while job.result_bytes == 0 and time.monotonic() < deadline:
                    time.sleep(0.005)  # a result has arrived
                cluster.sync(cluster.scheduler.close)

            killer = threading.Thread(target=kill_the_scheduler, daemon=True)
            killer.start()
            t0 = time.monotonic()
            with pytest.raises(SchedulerLostError, match="the Dask scheduler was lost") as e:
                job.result(timeout=60)
            assert time.monotonic() - t0 < 10  # not the connect timeouts' sum
            killer.join(5)
        finally:
            RELEASE.set()
            with contextlib.suppress(Exception):
                c.close(timeout=2)
            with contextlib.suppress(Exception):
                cluster.close(timeout=2)
    err = e.value
    assert isinstance(err, DistributedError) and isinstance(err, RenError)
    assert err.completed and set(err.completed) <= {0, 1} and sorted(err.results) == err.completed
    assert f"{len(err.completed)} of 6 results (map: inputs) had arrived" in str(err)
    for i in err.completed:  # what arrived, decoded
        assert np.max(np.abs(ckks.decrypt(err.results[i]) - values(i, 32))) < 2**-20
    # and a call with the client that lost its scheduler says so
    with pytest.raises(DistributedError, match="lost its scheduler"):
        resolve_client(c)


# -- wrong arguments: run_point (no Dask needed) ------------------------------------------------
@pytest.mark.parametrize("kwargs, match", [
    ({"program": None}, r"run_point: program must be callable, got NoneType"),
    ({"point": {"N": 64, "depht": 2}}, r"run_point: point sets unknown field\(s\) \['depht'\]"),
    ({"point": {1: 64}}, r"unknown field\(s\) \[1\]"),
    ({"point": [("N", 64)]}, r"run_point: point must be a Mapping, got list"),
    ({"point": None}, r"run_point: point must be a Mapping"),
    ({"point": {}}, r"run_point: point sets no N and no depth \(and no 'preset'\)"),
    ({"point": {"N": 64}}, r"run_point: point sets no depth"),
    ({"inputs": 3}, r"run_point: inputs must be callable, got int 3"),
    ({"reference": "np.square"}, r"run_point: reference must be callable, got str"),
    ({"repeat": "x"}, r"run_point: repeat must be an int in \[1, 10000\], got str 'x'"),
    ({"repeat": 0}, r"repeat must be an int in \[1, 10000\], got int 0"),
    ({"repeat": -1}, r"repeat must be an int in \[1, 10000\], got int -1"),
    ({"repeat": 2.0}, r"repeat must be an int"),
    ({"repeat": True}, r"repeat must be an int"),
    ({"repeat": MAX_REPEAT + 1}, r"repeat must be an int in \[1, 10000\]"),
    ({"meter": "yes"}, r"run_point: meter must be True or False"),
    ({"seed": 1.5}, r"run_point: seed must be an int"),
    ({"seed": math.nan}, r"run_point: seed must be an int"),
    ({"inputs": lambda slots: None}, r"run_point: inputs\(slots\) must be a list or tuple"),
    ({"inputs": lambda slots: []}, r"inputs\(slots\) must be a sequence of at least 1 items"),
    ({"reference": lambda x: 1.0}, r"reference\(\*inputs\) must return the expected output: "
                                   r"a vector of 1 to 32 numbers"),
    ({"reference": lambda x: np.zeros(33)}, r"a vector of 1 to 32 numbers .* shape \(33,\)"),
    ({"reference": lambda x: ["a"] * 4}, r"must return the expected output"),
    ({"program": lambda ev, ct: 3}, r"run_point: the program's result must be a Ciphertext, "
                                    r"got int 3"),
])
def test_run_point_refuses_wrong_arguments(kwargs, match):
    args = {"program": double, "point": POINT, "repeat": 1, **kwargs}
    program, point = args.pop("program"), args.pop("point")
    with pytest.raises(ParameterError, match=match):
        run_point(program, point, **args)


# -- wrong arguments: map, submit, MapJob.result, resolve_client ---------------------------------
@pytest.mark.parametrize("timeout", [-1, 0, "x", math.nan, math.inf, -math.inf, 2 * MAX_TIMEOUT,
                                     True, [5]])
def test_map_and_sweep_refuse_a_bad_timeout_before_sending_anything(client, ckks, timeout):
    """map(timeout=-1) raised Dask's ValueError, timeout='x' a KeyError, after the batch had
    been sent; now ParameterError first."""
    ct = ckks.encrypt(values(0, 32))
    with pytest.raises(ParameterError, match=r"map: timeout must be a finite real number > 0 "
                                             r"and <= 1000000000.*or None"):
        dmap(square, [ct], keys=ckks.ev.relin_key, client=client, timeout=timeout)
    with pytest.raises(ParameterError, match="sweep: timeout must be a finite real"):
        sweep(double, [POINT], repeat=1, client=client, timeout=timeout)


def test_a_jobs_result_refuses_a_bad_timeout_and_still_delivers(client, ckks):
    job = submit(square, [ckks.encrypt(values(0, 32))], keys=ckks.ev.relin_key, client=client)
    with pytest.raises(ParameterError, match="map: timeout must be"):
        job.result(timeout="soon")
    (out,) = job.result(timeout=60)
    assert np.max(np.abs(ckks.decrypt(out) - values(0, 32) ** 2)) < 2**-15


def test_map_refuses_wrong_functions_batches_keys_and_clients(client, ckks):
    ct = ckks.encrypt(values(0, 32))
    for fn in (None, 3, "square", [square]):
        with pytest.raises(ParameterError, match=r"map: fn must be a ren\.jit function or a"):
            submit(fn, [ct], client=client)
    # a dict would map over its keys, a set in no order: refused (the old code took them)
    for batch in (None, 3, "abc", b"ab", ct, math.nan, {}, {"a": ct}, {1, 2}, frozenset()):
        with pytest.raises(ParameterError, match="map: batch must be a list"):
            submit(square, batch, client=client)
    with pytest.raises(WireError, match="keys: a object cannot travel"):
        submit(square, [ct], keys=object(), client=client)
    with pytest.raises(WireError, match=r"batch\[1\]: a set cannot travel"):
        submit(lambda x: x, [ct, {1, 2}], client=client)
    for bad in ("tcp://localhost:8786", 3, object()):
        with pytest.raises(ParameterError, match=r"client must be a distributed\.Client"):
            resolve_client(bad)
    assert resolve_client(client) is client
    assert dmap(square, (), client=client) == []  # an empty batch: nothing to do


# -- wrong arguments: sweep --------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, error, match", [
    ({"program": None}, ParameterError, r"sweep: program must be callable"),
    ({"errors": "ignore"}, ParameterError, r"sweep: errors must be one of 'raise', 'record'"),
    ({"errors": None}, ParameterError, r"sweep: errors must be one of"),
    ({"frame": "yes"}, ParameterError, r"sweep: frame must be True or False"),
    ({"meter": 1}, ParameterError, r"sweep: meter must be True or False, got int 1"),
    ({"repeat": 0}, ParameterError, r"sweep: repeat must be an int in \[1, 10000\]"),
    ({"repeat": 10**12}, ParameterError, r"sweep: repeat must be an int in \[1, 10000\]"),
    ({"seed": "7"}, ParameterError, r"sweep: seed must be an int"),
    ({"inputs": [np.ones(4)]}, ParameterError, r"sweep: inputs must be callable"),
    ({"reference": np.ones(4)}, ParameterError, r"sweep: reference must be callable"),
    ({"grid": {"N": [64] * 1000, "depth": [2] * 1000}}, ParameterError,
     rf"the grid has 1000000 points .* more than {MAX_POINTS}"),
    ({"grid": {1: [64]}}, ParameterError, r"sweep: the grid sets unknown field\(s\) \[1\]"),
    ({"grid": [POINT, 3]}, ParameterError, r"dict of field -> list of choices"),
    ({"grid": []}, ParameterError, r"the grid has no points"),
    ({"grid": None}, ParameterError, r"dict of field -> list of choices"),
    ({"client": "tcp://x:8786"}, ParameterError, r"client must be a distributed\.Client"),
])
def test_sweep_refuses_wrong_arguments(client, kwargs, error, match):
    args = {"program": double, "grid": [POINT], "repeat": 1, "client": client, **kwargs}
    program, grid = args.pop("program"), args.pop("grid")
    with pytest.raises(error, match=match):
        sweep(program, grid, **args)


def test_expand_grid_refuses_mixed_field_names_and_huge_products():
    with pytest.raises(ParameterError, match=r"point 0 sets unknown field\(s\) \['x', 1\]"):
        expand_grid([{"N": 64, 1: 2, "x": 3}])  # names of mixed types: listed, not a TypeError
    with pytest.raises(ParameterError, match="more than"):
        expand_grid({f: list(range(40)) for f in ("N", "depth", "scale_bits", "first_bits")})


# -- wrong arguments: local_client ---------------------------------------------------------------
@pytest.mark.parametrize("kwargs, match", [
    ({"bogus_option": 1}, r"local_client: unknown cluster option\(s\) \['bogus_option'\]"),
    ({"workers": 0}, rf"local_client: workers must be an int in \[1, {MAX_LOCAL_WORKERS}\], "
                     r"got int 0"),
    ({"workers": -2}, r"local_client: workers must be an int in"),
    ({"workers": "2"}, r"local_client: workers must be an int in"),
    ({"workers": 2.0}, r"local_client: workers must be an int in"),
    ({"workers": math.nan}, r"local_client: workers must be an int in"),
    ({"workers": 10**9}, r"local_client: workers must be an int in"),
    ({"threads_per_worker": 0}, r"local_client: threads_per_worker must be an int in"),
    ({"threads_per_worker": None}, r"local_client: threads_per_worker must be an int in"),
    ({"profile": "no"}, r"local_client: profile must be True or False"),
])
def test_local_client_refuses_wrong_arguments_before_starting_anything(kwargs, match):
    """local_client(bogus_option=1) started a nanny that died (`RuntimeError: Nanny failed to
    start`); now every argument is checked first."""
    needs_dask()
    t0 = time.monotonic()
    with pytest.raises(ParameterError, match=match), local_client(**kwargs):
        pass
    assert time.monotonic() - t0 < 1  # nothing started


def test_local_client_says_when_the_cluster_does_not_start():
    needs_dask()
    with (pytest.raises(DistributedError, match=r"local_client: the local Dask cluster did not "
                                                r"start \(ValueError: Could not interpret 'lots'"),
          local_client(workers=1, memory_limit="lots")):
        pass
