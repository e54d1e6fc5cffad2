"""Bounded worker lanes whose work can be stopped: where the servers run store calls.

A store call never runs on the event loop (a long one would stall every client):
it runs on a :class:`Lane`, a fixed number of threads with a bounded queue, and
the request waits for it with :func:`wait_on`, at most its time limit. Work that
polls its :class:`Job` stops at the next poll once the waiter gives up.

>>> import asyncio
>>> lane = Lane("example", workers=1)
>>> asyncio.run(wait_on(lane, lambda job: 6 * 7, timeout=5.0))
42
>>> lane.close(grace=1.0)
True
"""

from __future__ import annotations

import asyncio
import queue
import threading
import traceback
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Protocol, TypeVar

__all__ = ["Cancelled", "Job", "Lane", "Runner", "runner_on", "wait_on"]

T = TypeVar("T")


class Runner(Protocol):
    """How a route runs a store call off the event loop, and waits for its result."""

    def __call__(self, work: Callable[[], T], /) -> Awaitable[T]: ...


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


async def wait_on(lane: Lane, work: Callable[[Job], T], timeout: float | None) -> T:
    """Run ``work`` on ``lane`` and wait for it, at most ``timeout`` seconds; at the
    limit (or when the request is cancelled) the job is told to stop.

    Raises:
        TimeoutError: past ``timeout``.
        queue.Full: when the lane's backlog is full.
    """
    job, future = lane.submit(work)
    try:
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
    except BaseException:
        job.cancel()
        future.cancel()
        raise


def runner_on(lane: Lane) -> Runner:
    """Return how a route runs its store calls: on ``lane``, off the event loop,
    without a time limit (a write finishes, committed or refused)."""

    async def run(work: Callable[[], T]) -> T:
        return await wait_on(lane, lambda job: work(), None)

    return run
