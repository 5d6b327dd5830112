"""What ``ren-inspect`` writes and where: the console, tables, marked diffs and output files.

An output file's directory must exist (a typo in ``-o`` must not create directories); a file
that cannot be written fails before any work, as one `InspectError` line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ren.errors import InspectError
from ren.viz import arena as av

LINE_STYLE = {"+": "green", "-": "red", "~": "yellow", "=": "bold", "@": "magenta"}


def console() -> Console:
    """A console on the current stdout: colour only on a terminal (rich also honours NO_COLOR);
    120 columns when not a terminal so tables do not wrap in files and pipes."""
    c = Console(highlight=False)
    return c if c.is_terminal else Console(highlight=False, width=120)


def _require_directory(target: Path, directory: Path) -> None:
    """InspectError unless `directory` (where `target` goes) exists: never create it, so a
    typo in -o does not silently make directories."""
    if directory.is_dir():
        return
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise InspectError(f"cannot write {target}: {existing} is a file, not a directory")
    raise InspectError(f"cannot write {target}: the directory {directory} does not exist; "
                       f"create it first (mkdir -p {directory}) or pick another -o")


def check_output_file(output: Path | None) -> None:
    """Fail before any work when `output` cannot be a file to write (None: stdout): its
    directory must exist and let the file be created (tried, then removed) or, for a file that
    exists, opened for writing (not truncated)."""
    if output is None:
        return
    with os_errors(output):
        if output.is_dir():
            raise InspectError(f"cannot write {output}: it is a directory; give a file name "
                               f"(-o {output}/NAME)")
        _require_directory(output, output.parent)
        try:
            with open(output, "x"):
                pass
        except FileExistsError:
            if output.is_file():  # (a device or a pipe is opened when it is written, not now)
                with open(output, "a"):
                    pass
        else:
            output.unlink()


def check_output_dir(output: Path) -> None:
    """Fail before any work when `output` cannot be the directory of per-stage files (it is
    created if missing, but its parent must exist)."""
    with os_errors(output):
        if output.exists() and not output.is_dir():
            raise InspectError(f"cannot write files into {output}: it is a file, not a "
                               "directory")
        _require_directory(output, output.parent)


@contextlib.contextmanager
def os_errors(output: Path) -> Iterator[None]:
    """An OSError (permission denied, name too long, disk full) as one clear InspectError."""
    try:
        yield
    except OSError as e:
        why = e.strerror or str(e)
        if isinstance(e, FileNotFoundError) and output.parent.is_dir():  # e.g. under /proc
            why = (f"the directory {output.parent} does not let files be created in it ({why}); "
                   "pick another -o")
        raise InspectError(f"cannot write {output}: {why}") from None


def write_file(output: Path, write: Callable[[Any], None]) -> None:
    """Open `output` for text and call `write(f)`."""
    with os_errors(output), open(output, "w", encoding="utf-8") as f:
        write(f)


def write_text(output: Path, text: str) -> None:
    """Write `text` to the file `output`."""
    write_file(output, lambda f: f.write(text))


def emit(text: str, output: Path | None, what: str = "") -> None:
    """Write `text` to `output` (saying so on stderr) or to stdout."""
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    check_output_file(output)
    write_text(output, text)
    click.echo(f"wrote {output} ({av.fmt_bytes(len(text.encode()))}){what}", err=True)


def print_marked(text: str) -> None:
    """Print lines coloured by their first character (+ - ~ = @) on a terminal."""
    out = console()
    for line in text.splitlines():
        out.print(Text(line, style=LINE_STYLE.get(line[:1], "")), soft_wrap=True)


def table(title: str, columns: list[str], rows: list[list[Any]]) -> Table:
    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for c in columns:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*(str(x) for x in r))
    return t
