"""The README's tour runs as written: its first Python block, then "Looking inside" (now in
docs/guide-passes.md) on the graph it builds (which showed 3 nodes and an empty schedule when it
reused the realized `c`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PASSES_GUIDE = ROOT / "docs" / "guide-passes.md"


def _block(path: Path, after: str) -> str:
    text = path.read_text()
    start = text.index(after)
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)


def test_the_tour_and_looking_inside_run(capsys):
    ns: dict = {}
    exec(compile(_block(README, "## A short tour"), "README tour", "exec"), ns)
    exec(compile(_block(PASSES_GUIDE, "## Looking inside"), "docs looking inside", "exec"), ns)
    out = capsys.readouterr().out
    assert "12_kernelize" in out and "MUL" in out and "AUTOMORPH" in out
    assert len(ns["trace"].graphs) == 13
    assert len(ns["ren"].schedule(ns["d"])) > 3  # kernels, not an empty list


def test_the_readme_stays_a_front_door():
    """What a newcomer needs first, with the rest in docs/: at most ~200 lines, the two commands
    first, a picture, and links into the documentation that exist."""
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    first = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    assert first.splitlines()[0].startswith('pip install -e ".[test]"')
    assert "ren-inspect report ckks_multiply -o report.html" in first
    assert "python -m pytest" in first
    assert "![" in text and (ROOT / "docs" / "report.png").is_file()
    links = re.findall(r"\]\(((?:docs|examples)/[^)#\s]+)(?:#[^)]*)?\)", text)
    assert len(links) >= 10
    missing = [link for link in links if not (ROOT / link).exists()]
    assert missing == [], f"README links to missing files: {missing}"


def test_ci_runs_the_readme_commands_as_written():
    """.ci/run mirrors the README's first block: the set-up and both test commands."""
    ci = (ROOT / ".ci" / "run").read_text()
    first = re.search(r"```bash\n(.*?)```", README.read_text(), re.S).group(1)
    commands = [line.split("  #", 1)[0].strip() for line in first.replace("\\\n", " ").splitlines()]
    for command in commands:
        if command.startswith(("pip ", "python -m pytest")):
            flat = " ".join(command.split())
            assert flat in " ".join(ci.replace("\\\n", " ").split()), command
