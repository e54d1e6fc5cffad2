"""Failures the fuzzers found that are not fixed yet, each with its reproducer.

Each entry names its ``xfail(strict=True)`` test in ``test_found.py`` and says how
to recognise the failure. The CI fuzz tests pass over a known failure (so the
suite stays green) and run.py counts it apart from new ones. When a fix lands,
its reproducer passes, the strict xfail fails the suite, and the entry goes.
"""

from __future__ import annotations

from collections.abc import Callable

KNOWN: dict[str, Callable[[BaseException], bool]] = {}  # none open


def known(exc: BaseException) -> str | None:
    """The reproducer of a known, unfixed failure ``exc`` is, or None."""
    for name, matches in KNOWN.items():
        if matches(exc):
            return name
    return None
