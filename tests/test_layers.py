"""Imports point downward only: a module never imports one of a higher layer, not even inside a
function (a helper two layers need lives in the lower one; e.g. `ren.ir`'s and `ren.device`'s
module docstrings).  This test is where the rule is written down: the layers, lowest first, are
listed in `LAYERS`; a module that is in no layer fails the test, so a new module must be placed
deliberately."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent

#: (layer name, module prefixes), lowest first.  A module may import its own layer and below.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("ren.errors", "ren.callsite", "ren.settings", "ren.ring", "ren.random",
              "ren.sampling", "ren.device", "ren.serialize")),
    ("ir", ("ren.ops", "ren.node", "ren.spec", "ren.ir", "ren.alu", "ren.kernel", "ren.dump",
            "ren.nxgraph", "ren.reference")),
    ("engine", ("ren.rewrite", "ren.contracts", "ren.passes", "ren.schedule", "ren.interpret",
                "ren.tlsf", "ren.memory", "ren.memory_order", "ren.backend", "ren.runtime",
                "ren.arena_ahead", "ren.compile_batches", "ren.replay", "ren.structure_key",
                "ren.realization", "ren.plan_cache", "ren.canonical_form")),
    ("frontend", ("ren.poly", "ren.poly_checks", "ren.tree", "ren.corpus", "ren.random_programs",
                  "ren")),
    ("jit", ("ren.jit", "ren.jit_call")),
    ("rlwe", ("ren.rlwe",)),
    ("ckks", ("ren.ckks", "ren.bfv")),
    ("distributed", ("ren.distributed",)),
    ("viz", ("ren.viz",)),
    ("passdev", ("ren.passdev", "ren.testing")),
    ("cli", ("ren_cli",)),
]


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for rank, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            # the package itself ("ren") is its own entry: it is no prefix of its submodules
            nested = p != "ren" and module.startswith(p + ".")
            if (module == p or nested) and len(p) > best_len:
                best, best_len = rank, len(p)
    if best is None:
        raise LookupError(module)
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "cli":
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement in the file, at any depth."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")
                pkg = pkg[: len(pkg) - node.level + 1]
                base = ".".join([*pkg, base] if base else pkg)
            out.append((node.lineno, base))
            # `from ren import poly` (or `from ren.ckks import chain`) imports the submodule
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names
                    if base == "ren" or base.startswith(("ren.", "ren_cli"))]
    return out


SOURCES = sorted([*ROOT.glob("ren/**/*.py"), *ROOT.glob("cli/**/*.py")])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_downward(path: Path) -> None:
    module = module_name(path)
    try:
        own = layer_of(module)
    except LookupError:
        pytest.fail(f"{module} is in no layer of tests/test_layers.py: add it to LAYERS")
    if module == "ren":  # the package front door re-exports every layer up to the JIT
        return
    bad = []
    for line, target in imports(path, module):
        if not (target == "ren" or target.startswith(("ren.", "ren_cli"))):
            continue
        try:
            rank = layer_of(target)
        except LookupError:
            continue  # a name imported from a package, e.g. `from ren import errors`
        if rank > own and target != "ren":
            bad.append(f"line {line}: {module} ({LAYERS[own][0]}) imports {target} "
                       f"({LAYERS[rank][0]})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_layer_check_catches_an_upward_import(tmp_path: Path) -> None:
    """The checker itself can fail: a pass importing the frontend is reported."""
    fake = ROOT / "ren" / "passes" / "p01_simplify.py"
    src = fake.read_text() + "\n\ndef _f():\n    from ren.poly import Poly\n"
    path = tmp_path / "p01_simplify.py"
    path.write_text(src)
    found = [t for _, t in imports(path, "ren.passes.p01_simplify")]
    assert "ren.poly" in found
    assert layer_of("ren.poly") > layer_of("ren.passes.p01_simplify")


# -- no import circles between packages ----------------------------------------------------------
def _package(module: str) -> str:
    """The package a module belongs to: itself for a package, else its parent."""
    path = ROOT / Path(*module.split("."))
    if module.startswith("ren_cli"):
        path = ROOT / "cli" / Path(*module.split("."))
    return module if path.is_dir() else module.rpartition(".")[0]


def import_graph(sources: list[Path] = SOURCES) -> nx.DiGraph:
    """Module -> the Ren modules it imports (at any depth, functions included).  ``from ren
    import x`` is an edge to ren.x when x is a module and to ren otherwise."""
    modules = {module_name(p): p for p in sources}
    g = nx.DiGraph()
    g.add_nodes_from(modules)
    for module, path in modules.items():
        for _, target in imports(path, module):
            if target in modules and target != module:
                g.add_edge(module, target)
    # `imports` adds both `ren.p` and `ren.p.x` for `from ren.p import x`: keep only the real
    # one (`from ren.ckks import chain` is ren.ckks.chain, not the package ren.ckks)
    for module, path in modules.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level and \
                    all(f"{node.module}.{a.name}" in modules for a in node.names) and \
                    g.has_edge(module, node.module):
                g.remove_edge(module, node.module)
    return g


def circles_between_packages(g: nx.DiGraph) -> list[list[str]]:
    """Each strongly connected set of modules that spans more than one package."""
    return [sorted(c) for c in nx.strongly_connected_components(g)
            if len(c) > 1 and len({_package(m) for m in c}) > 1]


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    """The import graph of every source, built once for the module (parsing them all took ~1 s
    per test); a test that changes it works on a copy."""
    return import_graph()


def test_no_import_circle_outside_one_package(graph: nx.DiGraph) -> None:
    """A circle of imports inside one package is its own business; one that crosses packages
    (e.g. ren.backend -> ren.replay -> ren.runtime -> ren.backend) means two layers know each
    other: a hook or a helper one layer down breaks it."""
    found = circles_between_packages(graph)
    assert not found, "import circles across packages:\n" + "\n".join(map(str, found))


def test_the_circle_check_can_fail(graph: nx.DiGraph) -> None:
    """The check itself finds a circle: the old backend_override importing ren.replay."""
    g = graph.copy()
    g.add_edge("ren.backend", "ren.replay")
    assert any({"ren.backend", "ren.replay", "ren.runtime"} <= set(c)
               for c in circles_between_packages(g))


def test_a_submodule_imported_from_its_package_is_an_edge_to_it(graph: nx.DiGraph) -> None:
    """``from ren.ckks import chain`` imports ren.ckks.chain, not the package's front door (which
    re-exports ren.ckks.circuits, whose modules import ren.ckks.params: no circle)."""
    g = graph
    assert g.has_edge("ren.ckks.params", "ren.ckks.chain")
    assert not g.has_edge("ren.ckks.params", "ren.ckks")
    assert g.has_edge("ren.ckks", "ren.ckks.circuits")  # `from ren.ckks import circuits, debug`
