"""Limits on what one request may cost: query text size and nesting, and bounded
worker lanes whose work can be stopped.

The text check runs on the raw text before any parser: pyoxigraph's parser and our
rewrite recurse once per bracket level, so 1,000 nested ``{`` exhaust Python's
recursion limit and 3,000 overflow the native stack (a crash of the whole process,
not an exception). Brackets inside strings, IRIs and comments do not count.

>>> check_query("SELECT * WHERE { ?s ?p ?o }")
>>> check_query("ASK " + "{" * 65 + "}" * 65)
Traceback (most recent call last):
...
oms_rdf.errors.QueryError: ERR_QUERY: the query nests 65 levels of brackets; the limit is 64 (MAX_DEPTH)
"""

from __future__ import annotations

import queue
import re
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from ..errors import QueryError

__all__ = [
    "MAX_DEPTH",
    "MAX_QUERY_CHARS",
    "MAX_UPDATE_CHARS",
    "Cancelled",
    "Job",
    "Lane",
    "check_query",
    "nesting_depth",
]

MAX_DEPTH = 64  # levels of (, [ and { together
MAX_QUERY_CHARS = 512 * 1024  # a query is text a person or a program writes
MAX_UPDATE_CHARS = 16 * 1024 * 1024  # INSERT DATA carries data: as big as a body

_OPENS, _CLOSES = frozenset("([{"), frozenset(")]}")
# SPARQL's IRIREF: anything else after a < is the less-than operator.
_IRI = re.compile(r"<[^<>\"{}|^`\\\x00-\x20]*>")
_LONG = {"'''": re.compile(r"'''(?:[^'\\]|\\.|'(?!''))*'''", re.DOTALL),
         '"""': re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""', re.DOTALL)}  # fmt: skip
_SHORT = {
    "'": re.compile(r"'(?:[^'\\\n\r]|\\.)*'"),
    '"': re.compile(r'"(?:[^"\\\n\r]|\\.)*"'),
}


def nesting_depth(text: str, /) -> int:
    """Return the deepest nesting of brackets in SPARQL text, outside strings, IRIs
    and comments (an unclosed string or IRI ends the count: the parser reports it).

    >>> nesting_depth('SELECT * WHERE { FILTER(?o = "{{{" || ?o = <x:((>) } # {{{')
    2
    """
    depth = deepest = i = 0
    end = len(text)
    while i < end:
        c = text[i]
        if c in _OPENS:
            depth += 1
            deepest = max(deepest, depth)
        elif c in _CLOSES:
            depth = max(0, depth - 1)
        elif c == "#":
            newline = text.find("\n", i)
            i = end if newline < 0 else newline
        elif c == "<":
            iri = _IRI.match(text, i)
            if iri is not None:
                i = iri.end() - 1
        elif c in "'\"":
            pattern = _LONG.get(text[i : i + 3]) or _SHORT[c]
            literal = pattern.match(text, i)
            if literal is None:
                return deepest
            i = literal.end() - 1
        i += 1
    return deepest


def check_query(text: str, /, *, update: bool = False) -> None:
    """Refuse query (or update) text over the size or nesting limits.

    Raises:
        QueryError: ERR_QUERY naming the limit (MAX_QUERY_CHARS, MAX_UPDATE_CHARS
            or MAX_DEPTH) and what the text has.
    """
    limit, name = (MAX_UPDATE_CHARS, "MAX_UPDATE_CHARS") if update else (
        MAX_QUERY_CHARS, "MAX_QUERY_CHARS")  # fmt: skip
    what = "update" if update else "query"
    if len(text) > limit:
        raise QueryError(
            f"the {what} has {len(text):,} characters; the limit is "
            f"{limit // 1024:,} KiB of text ({name})"
        )
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise QueryError(
            f"the {what} nests {depth} levels of brackets; the limit is "
            f"{MAX_DEPTH} (MAX_DEPTH)"
        )


# --- lanes ------------------------------------------------------------------------

T = TypeVar("T")


class Cancelled(Exception):  # noqa: N818 - a stop asked for, not a failure
    """Raised inside a job whose caller stopped waiting (its time ran out)."""


class Job:
    """One piece of work on a lane; the work polls :meth:`check` to stop early."""

    def __init__(self) -> None:
        self._stop = threading.Event()

    def cancel(self) -> None:
        """Ask the work to stop at its next :meth:`check`."""
        self._stop.set()

    @property
    def cancelled(self) -> bool:
        """Whether the work was asked to stop."""
        return self._stop.is_set()

    def check(self) -> None:
        """Raise :class:`Cancelled` if the work was asked to stop."""
        if self._stop.is_set():
            raise Cancelled


class Lane:
    """A fixed number of daemon worker threads and a bounded queue.

    The threads never grow past ``workers``, whatever runs on them: work whose
    caller gave up keeps its thread until it returns (pyoxigraph 0.5 cannot
    interrupt a query inside one step of its evaluation), then the thread takes the
    next job. Work that polls its :class:`Job` stops at the next poll.

    >>> lane = Lane("example", workers=2)
    >>> lane.submit(lambda job: 6 * 7)[1].result()
    42
    >>> lane.close(grace=1.0)
    True
    """

    def __init__(self, name: str, *, workers: int, backlog: int = 64) -> None:
        self.name = name
        self.workers = workers
        self._jobs: queue.Queue[
            tuple[Job, Future[object], Callable[[Job], object]] | None
        ]
        self._jobs = queue.Queue(maxsize=backlog)
        self._live: set[Job] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{n}", daemon=True)
            for n in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, work: Callable[[Job], T]) -> tuple[Job, Future[T]]:
        """Queue ``work(job)``; return its job and a future of its result.

        Raises:
            queue.Full: when the backlog is full (the caller answers "busy").
            RuntimeError: after :meth:`close`.
        """
        if self._closed:
            raise RuntimeError(f"the {self.name} lane is closed")
        job, future = Job(), Future[T]()
        self._jobs.put_nowait((job, future, work))  # type: ignore[arg-type]
        return job, future

    @property
    def running(self) -> int:
        """How many jobs are on a thread now."""
        with self._lock:
            return len(self._live)

    def close(self, *, grace: float) -> bool:
        """Cancel every job, wait up to ``grace`` seconds for the running ones;
        return whether the lane is idle (the threads are daemons either way)."""
        self._closed = True
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[1].cancel()
        with self._lock:
            for job in self._live:
                job.cancel()
            self._idle.wait_for(lambda: not self._live, timeout=grace)
            idle = not self._live
        for _ in self._threads:
            try:
                self._jobs.put_nowait(None)
            except queue.Full:  # pragma: no cover - emptied above
                break
        return idle

    def _work(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            job, future, work = item
            if job.cancelled or not future.set_running_or_notify_cancel():
                continue
            with self._lock:
                self._live.add(job)
            try:
                result = work(job)
            except BaseException as exc:  # handed to the waiter, never lost
                # Its frames may hold pyoxigraph results, which must die on this
                # thread: the waiter gets the error without them.
                cause: BaseException | None = exc
                while cause is not None:
                    traceback.clear_frames(cause.__traceback__)
                    cause = cause.__cause__ or cause.__context__
                future.set_exception(exc.with_traceback(None))
            else:
                future.set_result(result)
            finally:
                with self._lock:
                    self._live.discard(job)
                    self._idle.notify_all()
                del item, work, future
