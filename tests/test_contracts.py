"""Stage contracts (`ren.contracts`): every pass declares one, every corpus and random program
meets each of them after every pass, and a pass that leaves what its contract forbids is caught
and named (pass, condition, node) when REN_CHECK is on.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ren
from ren import contracts
from ren import random_programs as rp
from ren.contracts import Contract, Forbid
from ren.corpus import PROGRAMS, build
from ren.errors import ContractError, ScheduleError
from ren.ir import gidx, pnode
from ren.node import Node, substitute, toposort
from ren.ops import OP_INFO, Family, Op, ops_after
from ren.passes import PASSES, get_pass
from ren.passes import p05_materialize as p05
from ren.passes import p07_becomes_map as p07
from ren.rewrite import P
from ren.schedule import ScheduleContext, run_passes

R = ren.RingSpec.generate(16, 3)


def _stages(outputs, ctx: ScheduleContext | None = None) -> tuple[list, ScheduleContext]:
    ctx = ctx or ScheduleContext()
    trace = run_passes(*outputs, trace=True, ctx=ctx)
    return trace.graphs[1:], ctx


def _assert_contracts(outputs) -> None:
    graphs, ctx = _stages(outputs)
    for (name, graph), (_, _, mod) in zip(graphs, PASSES):
        contracts.check(graph, mod.CONTRACT, name, ctx)


def test_every_pass_declares_its_contract():
    for num, name, mod in PASSES:
        assert isinstance(mod.CONTRACT, Contract), name
        assert mod.CONTRACT.stage == num, name
        text = mod.CONTRACT.describe()
        assert text.startswith(f"contract after pass {num} ")
        assert "ops allowed:" in text


def test_the_allowed_ops_come_from_the_op_table():
    # an op is allowed from the pass that introduces it until the pass that lowers it
    for op, info in OP_INFO.items():
        stages = [k for k in range(13) if op in ops_after(k)]
        if info.family is Family.KERNEL:
            assert stages == [], op  # only inside kernel bodies
            continue
        end = 12 if info.lowered_by is None else info.lowered_by - 1
        assert stages == list(range(info.introduced_by, end + 1)), op
    assert get_pass(12).CONTRACT.ops == ops_after(12)
    assert Op.ROTATE in ops_after(1) and Op.ROTATE not in ops_after(2)
    assert Op.BUFFERIZE not in ops_after(4) and Op.BUFFERIZE in ops_after(5)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_corpus_meets_every_contract(program: str):
    _assert_contracts(build(program))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_programs_meet_every_contract(data):
    prog = rp.build(rp.DrawChooser(data.draw))
    _assert_contracts(prog.outputs)


def test_pass_4_contract_follows_the_elision_switch():
    prog = build("keyswitch_ntt")
    for elide in (True, False):
        graphs, ctx = _stages(prog, ScheduleContext(elide=elide))
        contracts.check(graphs[3][1], get_pass(4).CONTRACT, graphs[3][0], ctx)
    with ren.settings.override(REN_NO_ELISION=1):
        assert ScheduleContext().elide is False
    assert ScheduleContext().elide is True


# -- a pass that breaks its contract is named --------------------------------------------------
def _x() -> ren.Poly:
    return ren.Poly.from_coefficients(list(range(16)), R)


def _y() -> ren.Poly:
    return ren.Poly.from_coefficients([3 * i + 1 for i in range(16)], R)


def _identity(sink: Node, ctx=None) -> Node:
    return sink


#: (pass number, a program, a broken `run` for that pass, what the error must say)
BROKEN: list[tuple[int, Callable[[], list[ren.Poly]], Callable, str]] = [
    (1, lambda: [_x() + 0], _identity, r"rule add_zero still applies"),
    (2, lambda: [_x().rotate(1)], _identity, r"ROTATE may not appear after pass 2"),
    (3, lambda: [_x() * _y()], _identity, r"an op that needs a domain reading a source in the"),
    (4, lambda: [(_x() * _y()).intt().ntt() + _x().ntt()], _identity, r"an NTT of an INTT"),
    (5, lambda: [(_x() + _y()).ntt()], _identity,
     r"ring-kernel op and COPY reads storage"),
    (6, lambda: [_x() + _y()], _identity, r"BUFFERIZE may not appear after pass 6"),
    (7, lambda: [_x() + _y()], _identity, r"every requested output has a becomes_map entry"),
    (8, lambda: [(_x() * _y()).rotate(1)], _identity, r"AUTOMORPH may not appear after pass 8"),
    (9, lambda: [_x() * 5 + 1], _identity, r"a constant read by anything but the SINK"),
    (10, lambda: [_x().to_ring(R.sub(0, 2)).ntt()], _identity,
     r"a TO_RING onto a contiguous run"),
    (11, lambda: [_x() + _y()], _identity, r"ADD may not appear after pass 11"),
]


@pytest.mark.parametrize("number, program, broken, message", BROKEN,
                         ids=[f"{n:02d}" for n, *_ in BROKEN])
def test_a_pass_that_breaks_its_contract_is_reported(monkeypatch, number, program, broken,
                                                     message):
    outputs = program()
    _assert_contracts(outputs)  # the real pass keeps its contract
    mod = get_pass(number)
    monkeypatch.setattr(mod, "run", broken)
    with pytest.raises(ContractError, match=message) as err:
        run_passes(*outputs, ctx=ScheduleContext(check=True))
    text = str(err.value)
    assert f"pass {number:02d}_{mod.NAME} broke its contract" in text
    # the node, numbered as in dump (pass 7's offender is a requested output, not in the graph)
    assert re.search(r"at node (%\d+|\?) = [A-Z_]+\(", text), text


def test_contracts_are_checked_under_ren_check(monkeypatch):
    monkeypatch.setattr(get_pass(6), "run", _identity)
    x = _x() + _y()
    with ren.settings.override(REN_CHECK=1), pytest.raises(ContractError, match="06_"):
        x.realize()


def test_the_last_contract_is_checked_even_without_ren_check(monkeypatch):
    monkeypatch.setattr(get_pass(12), "run", _identity)
    with pytest.raises(ContractError, match="STORE may not appear after pass 12"):
        run_passes(_x() + _y())


def test_a_forbidden_shape_is_reported_with_its_node():
    # pass 11's contract: every residue op carries its MODULUS operand
    graphs, ctx = _stages([_x() + _y()])
    name, graph = graphs[10]
    mod = next(n for n in toposort(graph) if n.op is Op.MODADD)
    bare = mod.replace(src=mod.src[:2] + (gidx(0),))
    broken = substitute(graph, {mod: bare})
    with pytest.raises(ContractError, match="a residue op without its MODULUS operand"):
        contracts.check(broken, get_pass(11).CONTRACT, name, ctx)
    # pass 6's: a STORE writes a BUFFER
    name6, g6 = graphs[5]
    store = next(n for n in toposort(g6) if n.op is Op.STORE)
    other = store.replace(src=(store.src[1], store.src[1]))
    with pytest.raises(ContractError, match="a STORE whose target is not a BUFFER"):
        contracts.check(substitute(g6, {store: other}), get_pass(6).CONTRACT, name6, ctx)


def test_violations_lists_every_offender():
    c = Contract(1, forbid=(Forbid("an ADD", P(Op.ADD)),))
    sink = Node(Op.SINK, ren.DType.VOID, ((_x() + _y()).node, (_x() - _y() + _x()).node))
    found = list(c.violations(sink))
    assert [w for w, _ in found] == ["an ADD", "an ADD"]
    with pytest.raises(ContractError, match=r"\(2 offending nodes\)"):
        contracts.check(sink, c, "01_test")


def test_contract_errors_are_schedule_errors():
    assert issubclass(ContractError, ScheduleError)
    assert ren.ContractError is ContractError


def test_pass_5_and_7_checks_see_what_they_claim():
    outputs = [(_x() + _y()).ntt(), _x() * 3]
    graphs, ctx = _stages(outputs)
    assert p05._unbuffered_input(graphs[4][1], ctx) is None
    assert p05._unbuffered_output(graphs[4][1], ctx) is None
    assert p07._unmapped(graphs[6][1], ctx) is None
    unmarked = graphs[3][1]  # before pass 5: the NTT reads a computed sum, outputs unmarked
    assert p05._unbuffered_input(unmarked, ctx).op is Op.NTT
    assert p05._unbuffered_output(unmarked, ctx) is not None
    ctx.becomes_map = {}
    assert p07._unmapped(graphs[6][1], ctx) is ctx.outputs[0]


def test_inspect_prints_a_pass_contract():
    from click.testing import CliRunner
    from ren_cli.main import cli

    out = CliRunner().invoke(cli, ["passes", "elementwise_chain", "--pass", "6"])
    assert out.exit_code == 0, out.output
    assert "# contract after pass 6 (checked with REN_CHECK=1):" in out.output
    assert "never: a STORE whose target is not a BUFFER" in out.output
    assert "always: every BUFFER is stored at most once" in out.output


def test_a_constant_outside_as_ring_is_caught():
    c = Node(Op.CONST, ren.DType.U32, (), (5, "python"))
    sink = Node(Op.SINK, ren.DType.VOID, (pnode(Op.NEG, c),))
    assert contracts.CONST_UNDER_AS_RING.find(sink, None) is c


def test_a_rule_deleted_from_its_pass_is_caught(monkeypatch):
    """The contract states the invariant on its own, not only as "the pass's rules are done":
    a pass that loses a rule breaks its contract."""
    from ren.passes import p04_simplify_domains as p04
    from ren.rewrite import RuleSet

    without = RuleSet([r for r in p04.rules.rules if r.name != "ntt_of_intt"])
    monkeypatch.setattr(p04, "rules", without)
    x = (_x() * _y()).intt().ntt() + _x().ntt()
    with pytest.raises(ContractError, match="pass 04_simplify_domains broke its contract: an NTT "
                                            "of an INTT"):
        run_passes(x, ctx=ScheduleContext(check=True))
