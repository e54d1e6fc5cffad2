"""Vacuum of an on-disk store: its live quads copied into a new store, swapped in.

Oxigraph never drops a string from its dictionary, so removed data stays in the
files until the store is rewritten. The quads are bulk loaded into
``<path>.vacuum``; a ``<path>.vacuum-ready`` mark is written once that store is
complete and closed; then the directories are swapped by renames and the old
one deleted. A crash before the mark leaves the old store (the staging one is
deleted on the next open, :func:`finish_vacuum`), after it the new one (the
next open finishes the swap): never a mix.

RocksDB closes only with the last reference to it, and a folder renamed under
an open store is corrupted: the swap waits for what other threads of the
process are doing with the old store (a call under way, an answer still being
read), and their calls meanwhile wait for the new one (:class:`Swapping`).
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from ..errors import ErrorCode, StoreError

if TYPE_CHECKING:
    from .embedded import LocalBackend

__all__ = ["Closed", "finish_vacuum", "fsync_dir", "vacuum"]

SWAP_WAIT = 30.0  # seconds vacuum waits for other threads to let go of the store
SWAP_CALL_WAIT = 2.0  # seconds a call waits for a swap before it is refused


def vacuum(
    backend: LocalBackend,
    progress: Callable[[int], object] | None,
    reading: Callable[[], int],
) -> None:
    """Rewrite ``backend``'s store with only its live quads, and swap it in
    (``progress``: called with the number of quads copied so far; ``reading``:
    how many answers of the store are still being read).

    Raises:
        StoreError: ERR_CONFLICT when another thread still holds the old store
            after ``SWAP_WAIT`` seconds; ERR_STORE for a copy that failed
            (nothing changed either way).
    """
    if backend.path is None:
        fresh = ox.Store()
        fresh.extend(counted(backend.store, progress))
        backend.store = fresh
        return
    path = backend.path
    staging = vacuum_paths(path)[0]
    shutil.rmtree(staging, ignore_errors=True)
    try:
        copy = ox.Store(str(staging))
        copy.bulk_extend(counted(backend.store, progress))
        copy.flush()
        del copy
        gc.collect()  # RocksDB closes with the last reference
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise StoreError(
            f"vacuum failed before the swap, nothing changed: {exc}"
        ) from exc
    _swap(backend, path, reading)


def _swap(backend: LocalBackend, path: Path, reading: Callable[[], int]) -> None:
    """Swap the complete copy at ``<path>.vacuum`` in, once nobody else holds
    the old store; calls meanwhile wait (:class:`Swapping`)."""
    staging, ready = vacuum_paths(path)
    old, swapped = backend.store, threading.Event()
    old.flush()
    backend.store = Swapping(backend, swapped)  # type: ignore[assignment]
    try:
        if not let_go(old, reading):
            backend.store = old
            shutil.rmtree(staging, ignore_errors=True)
            raise StoreError(
                f"vacuum waited {SWAP_WAIT:.0f} s for another thread to let go "
                "of the store (a query under way, or an answer not read to its "
                "end); nothing changed: read answers to their end, then vacuum",
                code=ErrorCode.CONFLICT,
            )
        del old
        if not closed_at(path):  # something of it (an iterator) is still alive
            shutil.rmtree(staging, ignore_errors=True)
            raise StoreError(
                f"vacuum waited {SWAP_WAIT:.0f} s for the store's last reader "
                "to let go of it, and closed it; nothing changed: open it again",
                code=ErrorCode.CONFLICT,
            )
        ready.write_bytes(b"")
        fsync_dir(path.parent)
        finish_vacuum(path)
        backend.store = ox.Store(str(path))
    except BaseException:
        if isinstance(backend.store, Swapping):  # not reopened: say so clearly
            backend.store = Closed(path)
        raise
    finally:
        swapped.set()


def let_go(old: ox.Store, reading: Callable[[], int]) -> bool:
    """Wait until only the caller holds ``old`` (no other thread's call is under
    way on it) and no answer of it is being read; False after ``SWAP_WAIT``."""
    # Three references are the caller's: its name, this argument, getrefcount's.
    deadline = time.monotonic() + SWAP_WAIT
    while sys.getrefcount(old) > 3 or reading():
        if time.monotonic() > deadline:
            return False
        gc.collect()
        time.sleep(0.005)
    return True


def closed_at(path: Path) -> bool:
    """Wait until RocksDB has closed the store at ``path`` in this process (its
    last holder gone, a query's iterator included); False after ``SWAP_WAIT``.
    Opening it succeeds only then: RocksDB refuses a second opening by the
    process that holds it."""
    deadline = time.monotonic() + SWAP_WAIT
    while True:
        gc.collect()
        try:
            probe = ox.Store(str(path))
        except OSError as exc:
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                return False
            time.sleep(0.005)
            continue
        del probe
        gc.collect()
        return True


class Swapping:
    """Stands for the pyoxigraph store while vacuum swaps it: a call waits for
    the swap, then goes to the store that is there (the new one).

    Not for long: a caller still reading the old store (an iterator, while it
    asks more) would keep it open and the swap waiting on it; after
    ``SWAP_CALL_WAIT`` it is refused, and what it held goes with its frames."""

    def __init__(self, backend: LocalBackend, swapped: threading.Event) -> None:
        self._backend, self._swapped = backend, swapped

    def __getattr__(self, name: str) -> Any:
        return getattr(self._swapped_in(), name)

    def __len__(self) -> int:
        return len(self._swapped_in())

    def __iter__(self) -> Iterator[ox.Quad]:
        return iter(self._swapped_in())

    def _swapped_in(self) -> Any:
        if not self._swapped.wait(SWAP_CALL_WAIT):
            raise StoreError(
                f"the store at {self._backend.path} is being swapped for its "
                "vacuumed copy; ask again",
                code=ErrorCode.CONFLICT,
            )
        return self._backend.store


class Closed:
    """Stands for the pyoxigraph store after close(): every use is a clear error."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def __getattr__(self, name: str) -> Any:
        raise StoreError(f"the store at {self.path or 'memory'} is closed")

    def __len__(self) -> int:
        raise StoreError(f"the store at {self.path or 'memory'} is closed")


def vacuum_paths(path: Path) -> tuple[Path, Path]:
    return path.with_name(path.name + ".vacuum"), path.with_name(
        path.name + ".vacuum-ready"
    )


def finish_vacuum(path: Path) -> None:
    """Finish or discard a vacuum a crash interrupted (see LocalBackend.vacuum)."""
    staging, ready = vacuum_paths(path)
    old = path.with_name(path.name + ".vacuum-old")
    if ready.exists():
        if staging.exists():
            if path.exists():
                path.rename(old)
            staging.rename(path)
            fsync_dir(path.parent)
        ready.unlink()
        fsync_dir(path.parent)
    elif staging.exists():
        shutil.rmtree(staging)  # an unfinished copy: the old store stands
    if old.exists():
        shutil.rmtree(old)


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def counted(
    quads: Iterable[ox.Quad], progress: Callable[[int], object] | None
) -> Iterator[ox.Quad]:
    for n, quad in enumerate(quads, 1):
        if progress is not None and n % 100_000 == 0:
            progress(n)
        yield quad
