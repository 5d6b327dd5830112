"""The engine installs lean: without the viz extra (click, rich, jinja2, pygraphviz) Ren and
CKKS work, and ren.viz / ren-inspect say which extra to install instead of a bare import error.
Each check runs in a subprocess whose import system hides the viz packages."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HIDE = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("click", "rich", "jinja2", "pygraphviz"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
"""


def run_hidden(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HIDE + textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": f"{ROOT}:{ROOT / 'cli'}", "PATH": "/usr/bin:/bin"})


def test_the_engine_and_ckks_work_without_the_viz_extra():
    r = run_hidden("""
        import warnings
        import ren
        from ren.ckks import CKKSParams, Decryptor, Encoder, Encryptor, KeyGenerator
        ring = ren.RingSpec.generate(16, 2)
        p = ren.Poly.from_coefficients(list(range(16)), ring)
        assert (p * 3).coefficients() == [3 * i for i in range(16)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            params = CKKSParams(N=64, depth=1, scale_bits=30, first_bits=40, insecure=True)
        kg = KeyGenerator(params)
        enc = Encoder(params)
        ct = Encryptor(params, kg.public_key()).encrypt(enc.encode([0.5]))
        assert abs(enc.decode(Decryptor(params, kg.secret_key()).decrypt(ct))[0] - 0.5) < 1e-3
        print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_viz_without_its_extra_says_what_to_install():
    r = run_hidden("import ren.viz")
    assert r.returncode == 1
    assert "ImportError: ren.viz needs" in r.stderr and "pip install -e '.[viz]'" in r.stderr


def test_ren_inspect_without_its_extra_says_what_to_install():
    r = run_hidden("import ren_cli; ren_cli.main()")
    assert r.returncode == 2
    assert r.stderr.startswith("ren-inspect: error: it needs click")
    assert "'.[viz]'" in r.stderr
    assert "Traceback" not in r.stderr
