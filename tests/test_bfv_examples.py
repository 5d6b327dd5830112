"""The BFV example runs (with its small, insecure parameters) and decrypts the dot product
exactly."""

from __future__ import annotations

import runpy
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_bfv_basics(capsys):
    res = runpy.run_path(str(EXAMPLES / "bfv_basics.py"), run_name="example")["main"](["--small"])
    out = capsys.readouterr().out
    assert "noise budget" in out and "dot product" in out
    assert res["exact"] and res["dot"] == res["want"]
    assert res["fresh"] > res["final"] > 40


def test_bgv_basics(capsys):
    res = runpy.run_path(str(EXAMPLES / "bgv_basics.py"), run_name="example")["main"](["--small"])
    out = capsys.readouterr().out
    assert "noise budget" in out and "dot product" in out and "level" in out
    assert res["exact"] and res["exact3"] and res["dot"] == res["want"]
    assert res["fresh"] > res["final"] > res["deep"] > 0 and res["level"] == 1
