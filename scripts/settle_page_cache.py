"""Drop this environment's shared libraries from the page cache, so that the next process
to load them reads them back as a machine does after a restart.

Why: on recent Linux kernels (seen on 6.18 with ext4), the pages of a file that pip has
just written sit in the page cache in large folios, and a process that maps the file (a
shared library it loads) maps each whole folio at its first touch. The collector's
flusher then counted ~50 MiB more RSS and PSS than the same flusher once those pages had
been read back from disk (pyarrow's ``libarrow.so``: 30 vs 13 MiB; polars' runtime: 26 vs
11 MiB), until the kernel happened to recycle them. Nothing in the collector differs:
the extra pages are clean library code that the kernel would reclaim under pressure.
``scripts/setup.sh`` runs this after installing, and ``benchmarks/ingest.py`` before it
measures, so that figures taken right after an install are those of a settled machine.

Only clean pages of files nothing has mapped are dropped (``POSIX_FADV_DONTNEED``);
``os.sync()`` first makes pip's fresh pages clean. No privilege is needed, nothing is
written, and the only cost is reading the libraries from disk again on their next load.

    python scripts/settle_page_cache.py [--quiet]
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def shared_libraries() -> list[Path]:
    """The shared libraries of this interpreter's environment and of the repository's own
    compiled modules (``normalize/*.so``)."""
    dirs = {Path(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")} | {ROOT / "normalize"}
    found: list[Path] = []
    for top in dirs:
        for dirpath, _, names in os.walk(top):
            found += [Path(dirpath) / n for n in names if n.endswith(".so") or ".so." in n]
    return found


def settle(paths: list[Path]) -> int:
    """Advise the kernel to drop each file's cached pages; returns the bytes advised."""
    os.sync()
    total = 0
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        except OSError:
            pass
        finally:
            os.close(fd)
    return total


def main() -> None:
    if not hasattr(os, "posix_fadvise"):  # not Linux: nothing to settle
        return
    paths = shared_libraries()
    total = settle(paths)
    if "--quiet" not in sys.argv:
        print(f"page cache: {len(paths)} shared libraries ({total / 2**20:,.0f} MiB) left to be read back from disk")


if __name__ == "__main__":
    main()
