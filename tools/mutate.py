"""Mutation testing for Ren: break one line at a time and see whether a test notices.

    python tools/mutate.py ren/passes/p05_materialize.py --tests tests/test_p05_rules.py \\
        tests/test_fusion_growth.py [--lines 80-140] [--max 60] [--timeout 600]

For each mutant of the named source files (an arithmetic or comparison operator swapped, a
boolean operator flipped, an integer constant moved by one, a `not` dropped, a condition
forced, a `return` of a value replaced by `return None`), the tests run in a scratch copy of
the repository (`pytest -x -q`); a mutant is *killed* when they fail, *survived* when they
pass, *timeout* when they take longer than --timeout.  Survivors are where a test cannot fail:
either write the test that kills them, or say why the mutant is equivalent.

The tree under test is copied once (tracked and untracked files, not .git); each mutant edits
one file there and restores it, so the working tree is never touched.  Exit status: 0, also
with survivors (this is a report, not a gate).
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# operator swaps: each maps to the ones tried instead
_BINOPS: dict[type, tuple[type, ...]] = {
    ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.Add,), ast.FloorDiv: (ast.Mult,),
    ast.Mod: (ast.FloorDiv,), ast.LShift: (ast.RShift,), ast.RShift: (ast.LShift,),
    ast.BitAnd: (ast.BitOr,), ast.BitOr: (ast.BitAnd,), ast.BitXor: (ast.BitOr,),
}
_CMPOPS: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE,), ast.LtE: (ast.Lt,), ast.Gt: (ast.GtE,), ast.GtE: (ast.Gt,),
    ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
}


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the repository root
    line: int
    start: int  # offsets of the replaced text in the file
    end: int
    new: str
    what: str


def _offsets(source: str) -> list[int]:
    """Offset of the start of each line (1-based line numbers index it after a dummy 0)."""
    starts, pos = [0, 0], 0
    for line in source.splitlines(keepends=True):
        pos += len(line)
        starts.append(pos)
    return starts


def _replace(node: ast.AST, new_node: ast.AST, source: str, starts: list[int], path: str,
             what: str) -> Mutant:
    start = starts[node.lineno] + node.col_offset
    end = starts[node.end_lineno] + node.end_col_offset
    return Mutant(path, node.lineno, start, end, f"({ast.unparse(new_node)})", what)


def mutants(path: str, source: str) -> Iterator[Mutant]:
    """Every mutant of one file, in source order."""
    tree = ast.parse(source)
    starts = _offsets(source)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef |
                                ast.AsyncFunctionDef)
                  and n.body and isinstance(n.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp):
            for new in _BINOPS.get(type(node.op), ()):
                mutated = ast.BinOp(node.left, new(), node.right)
                yield _replace(node, mutated, source, starts, path,
                               f"{type(node.op).__name__} -> {new.__name__}")
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            for new in _CMPOPS.get(type(node.ops[0]), ()):
                mutated = ast.Compare(node.left, [new()], node.comparators)
                yield _replace(node, mutated, source, starts, path,
                               f"{type(node.ops[0]).__name__} -> {new.__name__}")
        elif isinstance(node, ast.BoolOp):
            new = ast.Or if isinstance(node.op, ast.And) else ast.And
            yield _replace(node, ast.BoolOp(new(), node.values), source, starts, path,
                           f"{type(node.op).__name__} -> {new.__name__}")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield _replace(node, node.operand, source, starts, path, "drop not")
        elif (isinstance(node, ast.Constant) and type(node.value) is int
              and id(node) not in docstrings):
            yield _replace(node, ast.Constant(node.value + 1), source, starts, path,
                           f"{node.value} -> {node.value + 1}")
        elif isinstance(node, ast.Constant) and type(node.value) is bool:
            yield _replace(node, ast.Constant(not node.value), source, starts, path,
                           f"{node.value} -> {not node.value}")
        elif isinstance(node, ast.If | ast.While):
            yield _replace(node.test, ast.Constant(False), source, starts, path,
                           "condition -> False")
        elif isinstance(node, ast.Return) and node.value is not None:
            yield _replace(node.value, ast.Constant(None), source, starts, path,
                           "return value -> None")


def _scratch_copy(root: Path) -> Path:
    """The tree's tracked and untracked (not ignored) files, copied to a temp folder (every
    file when `root` is not a git checkout)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root,
                            capture_output=True, text=True)
    files = listed.stdout.splitlines() if listed.returncode == 0 else [
        str(f.relative_to(root)) for f in root.rglob("*") if f.is_file()]
    dest = Path(tempfile.mkdtemp(prefix="ren-mutate-"))
    for f in files:
        src = root / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    return dest


def run(paths: list[str], tests: list[str], lines: tuple[int, int] | None = None,
        limit: int | None = None, timeout: float = 600,
        root: Path = ROOT) -> list[tuple[Mutant, str]]:
    """Run every mutant of `paths` (relative to `root`; optionally only those on `lines`, at
    most `limit` per file) against `tests`; returns (mutant, "killed" | "survived" |
    "timeout") pairs and prints each."""
    scratch = _scratch_copy(root)
    results: list[tuple[Mutant, str]] = []
    try:
        for path in paths:
            original = (root / path).read_text()
            todo = [m for m in sorted(mutants(path, original), key=lambda m: (m.line, m.start))
                    if lines is None or lines[0] <= m.line <= lines[1]]
            for m in todo[:limit]:
                (scratch / path).write_text(original[:m.start] + m.new + original[m.end:])
                t0 = time.perf_counter()
                try:
                    # no bytecode: a mutant of the same length written within the same second
                    # as the previous one would otherwise run from the previous one's .pyc
                    # (its validation compares the source's size and mtime in seconds)
                    r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q",
                                        "-p", "no:cacheprovider", *tests], cwd=scratch,
                                       capture_output=True, timeout=timeout,
                                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
                    verdict = "killed" if r.returncode else "survived"
                except subprocess.TimeoutExpired:
                    verdict = "timeout"
                results.append((m, verdict))
                print(f"{verdict:9} {m.path}:{m.line}  {m.what}  "
                      f"({time.perf_counter() - t0:.0f} s)", flush=True)
            (scratch / path).write_text(original)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    killed = sum(v != "survived" for _, v in results)
    print(f"{len(results)} mutants: {killed} killed or timed out, {len(results) - killed} "
          "survived")
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="source files to mutate (relative to the root)")
    ap.add_argument("--tests", nargs="+", required=True, help="pytest arguments to run")
    ap.add_argument("--lines", help="only mutants on these lines, e.g. 80-140")
    ap.add_argument("--max", type=int, help="at most this many mutants per file")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per test run")
    args = ap.parse_args(argv)
    lines = tuple(map(int, args.lines.split("-"))) if args.lines else None
    run(args.paths, args.tests, lines, args.max, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
