"""The ``"cpu"`` device's cache folder: where its compiled libraries are kept between processes.

`cache_dir()` is ``$REN_CACHE_DIR/cpu``, else ``$XDG_CACHE_HOME/ren/cpu``, else
``~/.cache/ren/cpu`` (`configured_cache_dir()`).  A folder that cannot be created falls back to a
private temporary one removed at exit, with one `CacheWarning` per configured folder and
process.  A folder that exists but cannot be written (another user's, read-only) is still read:
its libraries load, and what this process compiles goes to a private folder.  So does any
library that cannot be written where it belongs (the folder read-only or full, a folder standing
where the library or its stamp goes): `cached_library`, one `CacheWarning` per folder and
process.  Opening a writable folder sweeps the build folders and stamps a killed
process left there (older than an hour).  What goes into the folder, and how a library in it is
verified before it is loaded, is `ren.backend.c_host.cached_library`'s job.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence

from ren import settings
from ren.backend import c_host
from ren.backend.c_host import TEMP_PREFIX, library_key, library_verifies, write_atomically
from ren.errors import DeviceError


class CacheWarning(UserWarning):
    """The ``"cpu"`` device cannot use its cache folder: compiled libraries go to a private
    temporary folder for this process, so the next process compiles them again."""


_cache_dirs: dict[str, str] = {}  # configured folder -> the folder used (itself or a private one)
_write_dirs: dict[str, str] = {}  # a folder that cannot be written -> where its libraries go
_cache_dirs_lock = threading.Lock()
#: build folders and stamps older than this are a crashed process's leftovers
_STALE_SECONDS = 3600


def cache_root() -> str:
    """The root of Ren's caches: ``$REN_CACHE_DIR``, else ``$XDG_CACHE_HOME/ren``, else
    ``~/.cache/ren`` (compiled libraries in ``cpu/``, `ren.plan_cache` in ``plans/``)."""
    return settings.get("REN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ren")


def configured_cache_dir() -> str:
    """The cache folder the settings ask for: ``$REN_CACHE_DIR/cpu``, else
    ``$XDG_CACHE_HOME/ren/cpu``, else ``~/.cache/ren/cpu``."""
    return os.path.join(cache_root(), "cpu")


def cache_dir() -> str:
    """Where compiled libraries are kept between processes: `configured_cache_dir()`, or — when
    it cannot be created or written — a private temporary folder removed at exit (one
    `CacheWarning` per configured folder and process)."""
    want = configured_cache_dir()
    with _cache_dirs_lock:
        got = _cache_dirs.get(want)
        if got is None:
            got = _cache_dirs[want] = _open_cache(want)
    return got


def _open_cache(folder: str) -> str:
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=TEMP_PREFIX + "probe-", dir=folder)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        if _readable_folder(folder):  # read it; what this process compiles goes elsewhere
            return folder
        return _private_cache(folder, e)
    _sweep(folder)
    return folder


def _readable_folder(folder: str) -> bool:
    """Whether `folder` is an existing folder whose files can be listed and read."""
    try:
        os.listdir(folder)
    except OSError:
        return False
    return os.path.isdir(folder) and os.access(folder, os.R_OK | os.X_OK)


def cached_library(source: str, flags: Sequence[str], folder: str) -> str:
    """`ren.backend.c_host.cached_library` in the cache `folder`; a library that cannot be
    written there (read-only, full, a folder where the library or its stamp goes) is built in
    this process's private folder for `folder` instead (one `CacheWarning` per folder)."""
    return c_host.cached_library(source, flags, folder, fallback=_write_elsewhere)


def _write_elsewhere(folder: str, error: OSError) -> str:
    with _cache_dirs_lock:
        got = _write_dirs.get(folder)
        if got is None:
            got = _write_dirs[folder] = _private_folder(folder, error, (
                "the 'cpu' device cannot write a compiled library into {folder} ({origin}; "
                "{error}); this process builds the libraries it cannot write there in the "
                "private temporary folder {private} instead, so the next one compiles them "
                "again.  Remove what is in the way or set REN_CACHE_DIR to a folder you can "
                "write."))
    return got


def _private_cache(folder: str, error: OSError) -> str:
    return _private_folder(folder, error, (
        "the 'cpu' device cannot keep compiled libraries in {folder} ({origin}; {error}); this "
        "process uses the private temporary folder {private} instead, so the next one compiles "
        "them again.  Set REN_CACHE_DIR to a folder you can write."))


def _private_folder(folder: str, error: OSError, message: str) -> str:
    """A new private temporary folder (removed at exit) standing in for `folder`, with one
    CacheWarning (`message` formatted with folder, origin, error and private)."""
    try:
        private = tempfile.mkdtemp(prefix="ren-cpu-cache-")
    except OSError as e:
        raise DeviceError(f"the 'cpu' device has no usable folder for compiled libraries: "
                          f"{folder} ({type(error).__name__}: {error}) nor a temporary one "
                          f"({e}); set REN_CACHE_DIR (or TMPDIR) to a writable folder") from None
    atexit.register(shutil.rmtree, private, True)
    origin = (f"REN_CACHE_DIR={settings.get('REN_CACHE_DIR')!r}" if settings.get("REN_CACHE_DIR")
              else "the default cache folder")
    warnings.warn(message.format(folder=folder, origin=origin, private=private,
                                 error=f"{type(error).__name__}: {error}"),
                  CacheWarning, stacklevel=5)
    return private


def _sweep(folder: str) -> None:
    """Remove build folders and stamps a killed process left behind (older than an hour)."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(TEMP_PREFIX)]
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        try:
            if time.time() - os.lstat(path).st_mtime < _STALE_SECONDS:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.remove(path)
        except OSError:
            continue


# -- the kernel index: which cached library holds a kernel ---------------------------------------
# A compiler run builds the kernels a schedule needs that the process has not loaded yet, so
# which kernels share a library depends on the process's history: another program run first
# groups them differently, the library sources differ and the cache misses.  The index maps a
# kernel (its name is a hash of its text) to the library that holds it, under a context (the
# library head: Ren's C prelude for the vector path, the flags and the compiler), so a process
# finds kernels wherever an earlier one compiled them.  An entry is only a pointer: the library
# is verified against its stamp before it is loaded, as every cached library is.

_INDEX = "index"
_ENTRY_MAGIC = "ren-kernel 1"


def _entry_path(folder: str, name: str, context: str) -> str:
    key = hashlib.sha256(f"{name}\0{context}".encode()).hexdigest()
    return os.path.join(folder, _INDEX, key[:32])


def indexed_library(folder: str, name: str, context: str,
                    verified: dict[str, bool]) -> str | None:
    """The cached library holding kernel `name` under `context`, if the index knows one and the
    library verifies against its stamp (`verified` memoizes that per library path)."""
    try:
        with open(_entry_path(folder, name, context)) as f:
            parts = f.read().split()
    except (OSError, UnicodeDecodeError):
        return None
    if len(parts) != 5 or " ".join(parts[:2]) != _ENTRY_MAGIC or parts[2] != name:
        return None
    key = parts[3]
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key) or parts[4] != context:
        return None
    so = os.path.join(folder, key[:24] + ".so")
    if so not in verified:
        verified[so] = library_verifies(so, key)
    return so if verified[so] else None


def index_library(folder: str, names: list[str], so: str, context: str) -> None:
    """Record that the cached library `so` holds the kernels `names` (best effort: an index
    that cannot be written only costs a later process a compile)."""
    key = library_key(so)
    if key is None or os.path.dirname(so) != folder:  # (one built elsewhere: not `folder`'s)
        return
    try:
        os.makedirs(os.path.join(folder, _INDEX), exist_ok=True)
        for name in names:
            write_atomically(_entry_path(folder, name, context),
                             f"{_ENTRY_MAGIC} {name} {key} {context}\n", folder)
    except OSError:
        return


__all__ = ["CacheWarning", "cache_dir", "cache_root", "cached_library", "configured_cache_dir",
           "index_library", "indexed_library"]
