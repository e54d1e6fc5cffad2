"""A time limit for the queries a thread sends to a SPARQL server.

The store's calls into a server backend say nothing of time; a caller that must
answer within a limit (the SPARQL endpoint, the MCP ``sparql`` tool) wraps its
call in :func:`time_limit`, and every query the thread sends inside the block is
given what is left of it: the HTTP request is aborted at the limit, and the server
is told the limit where it has a parameter for it (Virtuoso's ``timeout``), so
that its work stops too.

>>> with time_limit(5.0):
...     0 < (remaining() or 0) <= 5.0
True
>>> remaining() is None
True
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import ErrorCode, StoreError

__all__ = ["QueryTimeoutError", "remaining", "time_limit"]

_DEADLINE: ContextVar[float | None] = ContextVar("oms_rdf_deadline", default=None)


class QueryTimeoutError(StoreError, TimeoutError):
    """ERR_QUERY: a query ran past its time limit; its request was aborted (and,
    where the server can be told, its evaluation stopped there). A
    :class:`TimeoutError` too: the SPARQL endpoint answers it as its own limit."""

    default_code = ErrorCode.QUERY


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Queries this thread sends to a server in the block answer within ``seconds``
    from now (None: no limit; an outer, nearer limit stays in force)."""
    if seconds is None:
        yield
        return
    deadline = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining() -> float | None:
    """Seconds left of the limit in force on this thread (None: no limit; zero or
    less: past it)."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()
