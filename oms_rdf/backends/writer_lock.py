"""The lock of the one process that writes an on-disk store.

A file beside the store's folder (``NAME.lock``), taken with ``flock`` before
the store is touched and removed when it closes: a vacuum swaps the folder,
RocksDB's own lock with it, so only a lock outside the folder lets an opening
tell a vacuum a crash left (its to finish) from one another process is making.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

__all__ = ["writer_lock", "writer_unlock"]


# The writer locks this process holds: descriptor -> the pid that took it.
_HELD: dict[int, int] = {}


def writer_lock(path: Path) -> int | None:
    """Take the lock of the one process that writes the store at ``path``: a
    file beside its folder (a vacuum swaps the folder, RocksDB's own lock with
    it), held until :func:`writer_unlock`; return its descriptor. None where
    the folder beside cannot be written: no vacuum can be under way there (it
    writes its copy beside), and RocksDB's lock still keeps one writer.

    Raises:
        OSError: when another process holds it.
    """
    lock = path.with_name(path.name + ".lock")
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                return None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            inode = os.fstat(fd).st_ino
            os.close(fd)
            mine = any(os.fstat(held).st_ino == inode for held in _HELD)
            who = (
                "this process has it open (another store object on it)"
                if mine
                else ("another process has it open")
            )
            raise OSError(
                f"LOCK: Resource temporarily unavailable: {who} for writing"
            ) from None
        try:
            if os.stat(lock).st_ino == os.fstat(fd).st_ino:
                _HELD[fd] = os.getpid()
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # a writer closing removed that file: take the one there now


def writer_unlock(path: Path, fd: int, owner: int) -> None:
    """Remove the lock file, then let it go (one opened meanwhile is seen to be
    removed by :func:`writer_lock`, which takes a new one). A fork's copy of
    the store leaves both to the process that took them."""
    if os.getpid() != owner or _HELD.pop(fd, None) is None:
        return
    try:
        os.unlink(path.with_name(path.name + ".lock"))
    except FileNotFoundError:
        pass
    os.close(fd)


def _forget_inherited_locks() -> None:
    """In a forked child: close the writer locks it inherited, so that it holds
    no store locked after its parent is gone (flock is shared across a fork)."""
    for fd in list(_HELD):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


os.register_at_fork(after_in_child=_forget_inherited_locks)
