"""Giving the memory a large write freed back to the system.

A write of many quads parses and builds far more than it keeps: the update's
text, its algebra, the engine's buffers. The C allocator (glibc's) keeps what
was freed in its arenas for reuse, so a process's resident memory stays at the
high-water mark of its largest write. ``malloc_trim`` hands the free pages
back. Elsewhere (musl, macOS, Windows) there is no such call, and nothing is
done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


def give_back() -> bool:
    """Return the free heap to the system; whether the platform could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
