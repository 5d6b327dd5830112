"""tools/mutate.py (the mutation driver) on a toy module: a mutant the toy test notices is
killed, one it cannot notice survives, and the tree under test is left untouched."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent / "tools" / "mutate.py"


def _tool():
    spec = importlib.util.spec_from_file_location("ren_mutate_tool", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_mutants_are_killed_or_survive(tmp_path):
    source = "def add(a, b):\n    return a + b\n\n\ndef unused(x):\n    return x * 3\n"
    (tmp_path / "toy.py").write_text(source)
    (tmp_path / "test_toy.py").write_text(
        "from toy import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    results = _tool().run(["toy.py"], ["test_toy.py"], root=tmp_path, timeout=120)
    verdicts = {(m.line, m.what): v for m, v in results}
    assert verdicts[(2, "Add -> Sub")] == "killed"
    assert verdicts[(6, "Mult -> Add")] == "survived"
    assert verdicts[(6, "3 -> 4")] == "survived"
    assert (tmp_path / "toy.py").read_text() == source


def test_tests_run_without_bytecode(tmp_path, monkeypatch):
    """A mutant of the same length as the previous one (`*` -> `+`), written within the same
    second, would run from the previous one's .pyc (valid by size and mtime in seconds): the
    tests run with PYTHONDONTWRITEBYTECODE=1."""
    (tmp_path / "toy.py").write_text("def f(a, b):\n    return a * b\n")
    (tmp_path / "test_toy.py").write_text("def test_f():\n    pass\n")
    tool = _tool()
    seen = []
    real = tool.subprocess.run

    def fake_run(cmd, **kw):
        if "pytest" not in cmd:  # listing the tree to copy
            return real(cmd, **kw)
        seen.append(kw.get("env") or {})
        return type("R", (), {"returncode": 1})()

    monkeypatch.setattr(tool.subprocess, "run", fake_run)
    tool.run(["toy.py"], ["test_toy.py"], root=tmp_path, timeout=120)
    assert seen and all(env.get("PYTHONDONTWRITEBYTECODE") == "1" for env in seen)


def test_mutants_cover_the_operator_kinds():
    tool = _tool()
    src = ("def f(a, b):\n    if not a < b and b == 1:\n        return a - 2\n"
           "    return True\n")
    whats = {m.what for m in tool.mutants("f.py", src)}
    assert {"Lt -> LtE", "Eq -> NotEq", "And -> Or", "drop not", "Sub -> Add", "2 -> 3",
            "True -> False", "condition -> False", "return value -> None"} <= whats
    for m in tool.mutants("f.py", src):
        compile(src[:m.start] + m.new + src[m.end:], "f.py", "exec")  # every mutant parses
