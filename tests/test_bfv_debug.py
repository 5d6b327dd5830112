"""The BFV noise-budget meter (`ren.bfv.debug.budget_meter`): exact shadows checked against
independent NumPy/big-integer results, budgets against the decryptor's, the operation that used
the most budget, and a program that runs out of budget (flagged at the right line, with the wrong
slots counted as a direct evaluation counts them).  N = 256, insecure: fast."""

from __future__ import annotations

import inspect
import warnings
from functools import cache

import numpy as np
import pytest

import ren.random
from ren.bfv import BFVParams, Decryptor, Encoder, Encryptor, Evaluator, galois_keys
from ren.bfv.debug import budget_meter
from ren.bfv.errors import WrongResultError
from ren.errors import ParameterError
from ren.rlwe import KeyGenerator

N, T = 256, 7681


@cache
def ctx(t: int = T):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = BFVParams.generate(N, t, 3, 1, insecure=True)
    with ren.random.seeded(f"test_bfv_debug:{t}"):
        kg = KeyGenerator(p)
        sk = kg.secret_key()
        gk = galois_keys(kg, [1, -3]) if p.batching else None
        ev = Evaluator(p, kg.relin_key(), gk)
    return p, sk, ev


def rand(seed: int, t: int = T) -> list[int]:
    return [int(v) for v in np.random.default_rng(seed).integers(-t, t, N)]


def line_of(fn, text: str) -> int:
    """The file line number of the line of `fn` containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(lines) if text in s)


def mixed(ev, x, y):
    a = ev.multiply(x, y)
    b = ev.rotate_columns(a, 1)
    c = ev.sub(b, ev.negate(x))
    d = ev.multiply_scalar(c, -5)
    e = ev.rotate_columns(d, -3)
    return ev.rotate_rows(e)


def test_shadow_budgets_and_worst_line_of_a_correct_program():
    p, sk, ev = ctx()
    x, y = rand(1), rand(2)
    report = budget_meter(mixed, x, y, evaluator=ev, secret_key=sk)
    assert report.ok and not report.failures and report.check() is report
    # the exact result, computed independently on the rows
    rows = lambda v: np.array(v, dtype=object).reshape(2, N // 2) % T  # noqa: E731
    a = rows(x) * rows(y) % T
    b = np.roll(a, -1, axis=1)
    c = (b + rows(x)) % T
    d = c * -5 % T
    e = np.roll(d, 3, axis=1)
    want = e[::-1].reshape(-1)
    assert report.steps[-1].expected.tolist() == want.tolist()
    enc, dec = Encoder(p), Decryptor(p, sk)
    assert enc.decode(dec.decrypt(report.steps[-1].ciphertext)).tolist() == want.tolist()
    # budgets are the decryptor's, `used` is relative to the poorest operand
    for s in report.steps:
        assert s.budget == dec.noise_budget(s.ciphertext) > 0
        if s.inputs:
            assert s.used == min(report.steps[i].budget for i in s.inputs) - s.budget
    w = report.worst
    assert w is not None and w.op == "multiply"
    assert w.where.endswith(f":{line_of(mixed, 'ev.multiply(x, y)')}")
    assert "ev.multiply(x, y)" in report.summary() and "every slot exact" in report.summary()
    assert [s.op for s in report.steps] == ["input", "input", "multiply", "rotate_columns",
                                            "negate", "sub", "multiply_scalar", "rotate_columns",
                                            "rotate_rows"]


def deep(ev, x):
    y = ev.square(x)  # square 1
    y = ev.square(y)  # square 2
    y = ev.square(y)  # square 3
    y = ev.square(y)  # square 4
    y = ev.square(y)  # square 5
    return ev.add(y, x)


def test_a_program_that_runs_out_of_budget_is_flagged_at_its_line():
    p, sk, ev = ctx()
    enc, dec = Encoder(p), Decryptor(p, sk)
    x = rand(3)
    with ren.random.seeded("deep"):
        ct = Encryptor(p, sk).encrypt(enc.encode(x))
    report = budget_meter(deep, ct, evaluator=ev, secret_key=sk)
    # direct evaluation: the first square that decrypts wrong, and how many slots
    cur, first, count = ct, None, 0
    for k in range(1, 6):
        cur = ev.square(cur)
        got = enc.decode(dec.decrypt(cur)).tolist()
        exact = [pow(v, 2 ** k, T) for v in x]
        bad = sum(g != e for g, e in zip(got, exact, strict=True))
        if bad and first is None:
            first, count = k, bad
    assert first is not None, "the chain was meant to run out of budget"
    assert not report.ok
    f = report.failures[0]
    assert f.index == first and f.op == "square" and f.wrong == count
    assert f.where.endswith(f":{line_of(deep, f'# square {first}')}")
    assert f.budget == 0
    assert all(s.wrong == 0 for s in report.steps[:first])
    assert all(s.wrong > 0 for s in report.steps[first:])  # the wrong value propagates
    with pytest.raises(WrongResultError, match=f"square {first}") as exc:
        report.check()
    assert "noise ran out" in str(exc.value)
    assert "FAIL" in report.table()


def test_coefficient_encoding_against_a_schoolbook_negacyclic_product():
    t = 256  # no batching: coefficient encoding only
    p, sk, ev = ctx(t)
    x, y = rand(4, t), rand(5, t)

    def prog(ev, a, b):
        return ev.add_plain(ev.multiply(a, b), Encoder(p).encode_coeffs([7]))

    report = budget_meter(prog, x, y, evaluator=ev, secret_key=sk, encoding="coeffs")
    ref = [0] * N
    for i in range(N):
        for j in range(N):
            k = i + j
            if k < N:
                ref[k] += x[i] * y[j]
            else:
                ref[k - N] -= x[i] * y[j]
    ref[0] += 7
    want = [v % t for v in ref]
    assert report.steps[-1].expected.tolist() == want
    assert report.ok and "every coefficient exact" in report.summary()


def test_plaintext_operands_and_errors():
    p, sk, ev = ctx()
    enc = Encoder(p)
    x, m = rand(6), rand(7)

    def prog(ev, a):
        return ev.sub_plain(ev.multiply_plain(a, enc.encode(m)), enc.encode([1]))

    report = budget_meter(prog, enc.encode(x), evaluator=ev, secret_key=sk)
    want = [(a * b - (1 if i == 0 else 0)) % T for i, (a, b) in enumerate(zip(x, m, strict=True))]
    assert report.steps[-1].expected.tolist() == want and report.ok
    with pytest.raises(ParameterError, match="Evaluator"):
        budget_meter(prog, x, evaluator=object(), secret_key=sk)
    with pytest.raises(ParameterError, match="encoding"):
        budget_meter(prog, x, evaluator=ev, secret_key=sk, encoding="slots")
    stray = Encryptor(p, sk).encrypt(enc.encode(x))
    with pytest.raises(ParameterError, match="no metered operation made"):
        budget_meter(lambda ev, a: ev.add(a, stray), x, evaluator=ev, secret_key=sk)

    def needs_key(ev, a):
        return ev.rotate_columns(a, 5)  # no Galois key for 5

    with pytest.raises(Exception, match=r"ev\.rotate_columns\(a, 5\)"):
        budget_meter(needs_key, x, evaluator=ev, secret_key=sk)


def test_bgv_explicit_mode_runs_out_and_auto_mode_names_the_line():
    bgv = pytest.importorskip("ren.bfv.bgv")
    from ren.bfv.bgv_params import BGVParams, DepthExhaustedError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = BGVParams.generate(N, T, 3, insecure=True)
    with ren.random.seeded("test_bfv_debug:bgv"):
        kg = KeyGenerator(p)
        sk, rk = kg.secret_key(), kg.relin_key()
    x = rand(8)
    # explicit mode: no switching, so the squares' noise outgrows Q; the meter flags it
    ev = bgv.BGVEvaluator(p, rk, auto=False)
    with ren.random.seeded("bgv-deep"):
        ct = bgv.BGVEncryptor(p, sk).encrypt(Encoder(p).encode(x))
    report = budget_meter(deep, ct, evaluator=ev, secret_key=sk)
    dec = bgv.BGVDecryptor(p, sk)
    cur, first = ct, None
    for k in range(1, 6):
        cur = ev.square(cur)
        got = Encoder(p).decode(dec.decrypt(cur)).tolist()
        if first is None and got != [pow(v, 2 ** k, T) for v in x]:
            first = k
    assert first is not None and report.failures[0].index == first
    assert report.failures[0].where.endswith(f":{line_of(deep, f'# square {first}')}")
    assert "level" in report.table()
    # auto mode: switching keeps every product exact until the levels run out, which raises
    # before computing, naming the line
    auto = bgv.BGVEvaluator(p, rk)
    with pytest.raises(DepthExhaustedError, match=r"# square 4"):
        budget_meter(deep, x, evaluator=auto, secret_key=sk)
    ok = budget_meter(lambda ev, a: ev.square(ev.square(a)), x, evaluator=auto, secret_key=sk)
    assert ok.ok and [s.level for s in ok.steps] == [3, 2, 1]
    # switching keeps the message (and, explicitly, the factor asked for)
    sw = budget_meter(lambda ev, a: ev.switch_to(ev.square(a), 1, factor=5), x, evaluator=ev,
                      secret_key=sk)
    assert sw.ok and [s.level for s in sw.steps] == [3, 3, 1]
    assert sw.steps[-1].ciphertext.factor == 5
