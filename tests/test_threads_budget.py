"""The eager templates' graph-runner budget (ren.replay): a template that does not fit what is
left takes the runners of the least recently used templates, so a later, larger op (bench_ckks's
polynomial after the key generation, encryption, multiply, ...) still gets one; the words are the
same with and without a runner, and the budget is given back."""

import gc

import numpy as np
import pytest

import ren
from ren import replay
from ren.replay import templates


def _ops(ring: ren.RingSpec):
    a = ren.Poly.from_coefficients(list(range(ring.N)), ring).ntt().realize()
    b = ren.Poly.from_coefficients([7] * ring.N, ring).ntt().realize()

    def small():  # one structure ...
        return ((a * b + a).intt() * 3).numpy()

    def large():  # ... and another, with more intermediates
        return ((a * b + a * a + b * b).intt().rescale(ring.moduli[-2:]) * 5 + 1).numpy()

    def small2():  # the small one's shape, another constant: another key, as many bytes
        return ((a * b + a).intt() * 5).numpy()

    return small, large, small2


def _new_template(op):
    """(op's words, the one template its first call put in the cache)."""
    seen = {id(t) for t in templates._items.values()}
    words = op()
    (t,) = [t for t in templates._items.values() if id(t) not in seen]
    return words, t


@pytest.fixture
def fresh_cache():
    templates.clear()
    gc.collect()
    with replay._retained_lock:  # runners of templates still alive elsewhere: taken back too
        replay._evict(1 << 62, None)
    before = replay.retained_graph_bytes()
    yield before
    templates.clear()
    gc.collect()


def _dropped(before: int) -> bool:
    """Whether the budget is back where it was once the cache is emptied."""
    templates.clear()
    gc.collect()
    return replay.retained_graph_bytes() == before


def test_a_template_takes_the_least_recently_used_runner(fresh_cache, monkeypatch):
    before = fresh_cache
    ring = ren.RingSpec.generate(1024, 6)
    small, large, _ = _ops(ring)
    want_small, s = _new_template(small)
    want_large, l_ = _new_template(large)
    # room for either template's runner, not for both
    room = max(s.retained_bytes(), l_.retained_bytes())
    assert min(s.retained_bytes(), l_.retained_bytes()) > 0
    monkeypatch.setattr(replay, "GRAPH_BYTES_TOTAL", before + room)
    for _ in range(3):
        assert np.array_equal(small(), want_small)
    assert s.runner is not None and l_.runner is None
    for _ in range(3):  # its third run: it takes the small one's runner
        assert np.array_equal(large(), want_large)
    assert l_.runner is not None and s.runner is None
    assert replay.retained_graph_bytes() == before + l_.retained_bytes()
    # the small one runs on without a runner, and gets one back two runs later
    assert np.array_equal(small(), want_small)
    assert s.runner is None
    for _ in range(2):
        assert np.array_equal(small(), want_small)
    assert s.runner is not None and l_.runner is None
    assert replay.retained_graph_bytes() == before + s.retained_bytes()
    assert np.array_equal(large(), want_large)
    del s, l_
    assert _dropped(before)


def test_the_least_recently_used_runner_goes_first(fresh_cache, monkeypatch):
    before = fresh_cache
    ring = ren.RingSpec.generate(1024, 6)
    small, large, small2 = _ops(ring)
    want_a, a = _new_template(small)
    want_b, b = _new_template(small2)
    want_c, c = _new_template(large)
    assert a.retained_bytes() == b.retained_bytes() <= c.retained_bytes()
    monkeypatch.setattr(replay, "GRAPH_BYTES_TOTAL", before + a.retained_bytes()
                        + c.retained_bytes())
    for op, want in ((small, want_a), (small2, want_b), (small, want_a)):
        for _ in range(2):
            assert np.array_equal(op(), want)
    assert a.runner is not None and b.runner is not None  # a was run after b
    for _ in range(2):
        assert np.array_equal(large(), want_c)
    assert c.runner is not None and b.runner is None and a.runner is not None
    del a, b, c
    assert _dropped(before)


def test_a_template_larger_than_the_budget_never_gets_one(fresh_cache, monkeypatch):
    ring = ren.RingSpec.generate(1024, 6)
    small, _, _ = _ops(ring)
    want, s = _new_template(small)
    monkeypatch.setattr(replay, "GRAPH_BYTES_PER_TEMPLATE", s.retained_bytes() - 1)
    for _ in range(5):
        assert np.array_equal(small(), want)
    assert s.runner is None and s.runner_after == -1
    del s
    assert _dropped(fresh_cache)
