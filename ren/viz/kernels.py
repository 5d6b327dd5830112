"""The scheduled kernels of a program: each one's kind, buffers, AST and, where a backend has a
renderer, its rendered source.

    infos = kernel_infos(arena_view)          # from ren.viz.arena.plan_program(polys)
    infos[0].ast_text, infos[0].source

Rendered source comes from the device registry: a backend whose `Device` has a
``render(item) -> str`` method (the C-family renderers) shows it; the NumPy backend
interprets the AST and has none.
"""

from __future__ import annotations

from dataclasses import dataclass

from ren.backend import get_device
from ren.dump import _lines, _Names, format_arg
from ren.errors import RenError
from ren.kernel import LIGHT_KINDS, ScheduledKernel
from ren.viz.arena import ArenaView


@dataclass
class KernelInfo:
    index: int
    name: str
    kind: str
    ring: str
    space: str
    writes: str
    reads: str
    ast_text: str
    source: str | None
    source_note: str
    same_as: int | None = None  # an earlier kernel with the same AST and source (not repeated)

    @property
    def title(self) -> str:
        return f"[{self.index}] {self.name} ({self.kind})"


def ast_text(item: ScheduledKernel, names: _Names) -> str:
    """The kernel's AST in the dump format (one node per line); a view's binding."""
    if item.ast is None:
        view, base = item.bufs[0], item.bufs[1]
        return f"view: {format_arg(view, names)} (bound to {format_arg(base, names)})"
    return "\n".join(_lines(item.ast, names, ""))


def rendered_source(item: ScheduledKernel, device: str | None = None) -> tuple[str | None, str]:
    """(source, note): the kernel rendered by `device`'s renderer (default: its own device)."""
    if item.kind in LIGHT_KINDS:
        return None, f"a {item.kind} item has no kernel source"
    name = device or item.bufs[0].device
    try:
        dev = get_device(name)
    except RenError as e:
        return None, f"no renderer: {e}"
    render = getattr(dev, "render", None)
    if callable(render):
        try:
            return str(render(item)), f"rendered for {name}"
        except RenError as e:
            return None, f"rendering for {name} failed: {e}"
    # the device interprets the AST (NumPy): show what the C-family renderer makes of it
    from ren.backend.render_c import CUDA, render_program

    try:
        program = render_program(item, CUDA)
    except RenError as e:
        return None, f"device {name!r} interprets the AST; the CUDA C renderer failed: {e}"
    return ("\n\n".join(k.source for k in program.kernels),
            f"CUDA C from ren.backend.render_c (device {name!r} itself interprets the AST)")


def kernel_infos(view: ArenaView, device: str | None = None) -> list[KernelInfo]:
    """One KernelInfo per scheduled item, in schedule order."""
    names = _Names()
    for b in (b for item in view.items for b in item.bufs):  # bufN as in the final dump
        if id(b) in view.names:
            names.buffers[id(b)] = view.names[id(b)]
    out: list[KernelInfo] = []
    first: dict[tuple, int] = {}  # a bootstrapping has 4,433 kernels, most of them repeats
    for i, item in enumerate(view.items):
        source, note = rendered_source(item, device)
        ring = format_arg(item.ring, names) if item.ring is not None else "—"
        if item.ring is not None:
            ring += f" (N={item.ring.N}, {item.ring.limbs} limbs)"
        space = f"{item.space[0]}x{item.space[1]}" if item.space else "—"
        text = ast_text(item, names)
        shape = source.replace(item.name, "") if source else source  # the same but its name
        same = first.setdefault((item.kind, ring, space, text, shape), i)
        out.append(KernelInfo(i, item.name, item.kind, ring, space, view.name(item.bufs[0]),
                              ", ".join(view.name(b) for b in item.bufs[1:]) or "—",
                              text, source, note, None if same == i else same))
    return out


__all__ = ["KernelInfo", "ast_text", "kernel_infos", "rendered_source"]
