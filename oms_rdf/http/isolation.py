"""Queries in worker processes, killed when their time runs out.

pyoxigraph 0.5 cannot interrupt a query inside one step of its evaluation (an
aggregate, GROUP BY, ORDER BY or DISTINCT over everything, the knowledge of a
point in time built where the rewrite cannot say it): a thread that runs one keeps
its CPU long after its caller gave up. A process can be stopped at any instant, so
the SPARQL endpoint over an on-disk store asks each query of a worker process that
holds a read-only opening of the store, and kills it (SIGKILL, then reaps it) as
soon as the query's job is cancelled: at its time limit, or when the server stops.

- **Fresh views.** A read-only opening is a view as of the opening. With each
  query goes the store's version, a digest of its folder (RocksDB's log grows with
  every commit, its tables come and go, the bulk-write mark is a file there); a
  worker whose opening is of another version opens the store again first.
- **Same answer.** The worker runs ``GrainStore.query`` with the request's options
  at the server's clock reading, and serialises the result with the endpoint's
  :func:`~oms_rdf.http.app.serialize_results`: the bytes the server would make.
- **Cheap workers.** Workers are forked from a *zygote* (:mod:`.zygote`), a
  single-threaded process started once with the package imported: a fork takes
  milliseconds (an interpreter's start takes half a second, and more while the
  machine is busy), and is safe (no other thread holds a lock). At most
  ``workers`` are kept (the query lane's threads); a killed one is replaced at
  once. Until the zygote has started, a query waits for it, within its time
  limit (:func:`~oms_rdf.http.app.serve` waits for it before it listens).
- **Answers that stream.** One worker at a time opens the store again in the
  background soon after each write (:class:`~.workers.Pool`), so that an idle
  worker's opening is mostly current: an answer that streams goes to one whose
  opening is of the store's version now (or is being made), at the cost of a
  round trip; when none is (just after a write, under steady writes), it is
  answered in the query's thread instead, stopped between rows
  (:func:`isolated_answer`).
- **Where a worker cannot read.** While an import or bulk load runs, a read-only
  opening is refused (the mark of :mod:`oms_rdf.backends.embedded`): the query is
  refused too (ERR_CONFLICT, a 503 saying an import runs), never run where it
  could not be killed.
- **Lifetime.** When the server's end of the zygote's socket closes (it ends, or
  :meth:`QueryProcesses.close`), the zygote kills its workers; a worker dies with
  the zygote, and ends by itself when its own socket closes.

An in-memory store's queries run in a child forked from the serving process
(:mod:`.forking`); a server backend's are aborted at their limit, and the server
told it (:func:`oms_rdf.store.time_limit`). :func:`isolation_for` picks.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ..codec.grain import now_ms
from ..errors import ErrorCode, StoreError
from ..store import GrainStore
from .forking import ForkedQueries
from .lanes import Job
from .results import QueryRequest
from .workers import BOOT, POLL, Pool, store_version
from .zygote import rebuilt

__all__ = [
    "POLL",
    "Isolation",
    "QueryProcesses",
    "isolated_answer",
    "isolation_for",
    "store_version",
]


class QueryProcesses:
    """Worker processes that answer queries over one on-disk store.

    >>> QueryProcesses.serving(GrainStore(), workers=2) is None  # in memory
    True
    """

    def __init__(
        self, path: Path, *, workers: int, clock: Callable[[], int] = now_ms
    ) -> None:
        self.path, self.clock = path, clock
        self._pool = Pool(path, workers)
        # The workers go with the pool, however it goes (an app dropped unclosed).
        self._finalizer = weakref.finalize(self, self._pool.close)
        # The first worker is forked once the zygote has started, off this thread.
        threading.Thread(target=self.ready, args=(BOOT,), daemon=True).start()

    def ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the zygote to start and a worker to
        be forked; return whether one is. Until then queries run in-thread."""
        if not self._pool.zygote.wait_ready(timeout):
            return False
        self._pool.start_spare()
        return bool(self._pool.pids())

    @classmethod
    def serving(cls, store: GrainStore, *, workers: int) -> QueryProcesses | None:
        """Return processes for ``store`` if it is a writable on-disk store, else
        None (in memory, read-only, or over a server: queries stay in-thread)."""
        if store.folder is None or store.read_only or os.name != "posix":
            return None
        return cls(store.folder, workers=workers, clock=lambda: store.clock())

    @property
    def pids(self) -> list[int]:
        """The process ids of the workers now alive (idle, busy or starting)."""
        return self._pool.pids()

    def answer(self, asked: QueryRequest, job: Job) -> tuple[bytes, str]:
        """Return the answer to ``asked`` as the endpoint serialises it, and its
        media type, from a worker. While the zygote starts, the query waits for
        it (until ``job`` is cancelled at its time limit).

        The knowledge of now is asked at the store's clock reading here. The
        worker is killed as soon as ``job`` is cancelled.

        Raises:
            Cancelled: when ``job`` was cancelled (the worker is killed).
            OmsError: what the query raised in the worker, rebuilt (same class,
                code, message and path).
            StoreError: ERR_CONFLICT while an import or bulk load runs (no
                worker can open the store, and none is run where it cannot be
                killed); ERR_STORE when the worker ended without answering.
        """
        reply = self._pool.ask(self._request(asked), job)
        assert reply is not None  # only a fresh_only ask gives none
        header, body = reply
        if "media" in header:
            return body, str(header["media"])
        if "unavailable" in header:
            code = ErrorCode(header.get("code", ErrorCode.STORE))
            raise StoreError(str(header["unavailable"]), code=code)
        raise rebuilt(header)

    def try_answer(self, asked: QueryRequest, job: Job) -> tuple[bytes, str] | None:
        """Like :meth:`answer`, from an idle worker whose opening is of the store
        as it is now, or is being made (the pool opens it again soon after each
        write, and a new worker opens it as it starts); None, without waiting,
        when there is none, or it cannot read the store (an import runs): the
        caller answers then.

        Raises:
            Cancelled, OmsError, StoreError: as :meth:`answer`.
        """
        reply = self._pool.ask(self._request(asked), job, fresh_only=True)
        if reply is None or "unavailable" in reply[0]:
            return None
        header, body = reply
        if "media" in header:
            return body, str(header["media"])
        raise rebuilt(header)

    def _request(self, asked: QueryRequest) -> dict[str, Any]:
        return {
            "version": store_version(self.path),
            "now": self.clock(),
            "asked": dataclasses.asdict(asked),
        }

    def close(self) -> None:
        """Kill every worker (busy ones too) and reap them; later queries are
        cancelled."""
        self._finalizer()


class Isolation(Protocol):
    """Where a query runs so that it can be killed at its limit: worker processes
    (:class:`QueryProcesses`) or forked children (:class:`~.forking.ForkedQueries`)."""

    @property
    def pids(self) -> list[int]: ...

    def ready(self, timeout: float) -> bool: ...

    def answer(self, asked: QueryRequest, job: Job) -> tuple[bytes, str]: ...

    def try_answer(self, asked: QueryRequest, job: Job) -> tuple[bytes, str] | None: ...

    def close(self) -> None: ...


def isolation_for(store: GrainStore, *, workers: int) -> Isolation | None:
    """How ``store``'s queries are made killable: worker processes over a writable
    on-disk store, forked children over one in memory; None over a server (its
    queries are aborted at the limit, :func:`oms_rdf.store.time_limit`) or where
    processes cannot be forked."""
    return QueryProcesses.serving(store, workers=workers) or ForkedQueries.serving(
        store
    )


def isolated_answer(
    isolated: Isolation | None,
    asked: QueryRequest,
    job: Job,
    here: Callable[[], tuple[bytes, str]],
    *,
    whole: bool = False,
) -> tuple[bytes, str]:
    """Return the answer to ``asked`` from ``isolated`` (a process killed when
    ``job`` is cancelled), or from ``here()`` (the caller's thread) when there is
    none.

    A query pyoxigraph may evaluate in one step goes to a process: one that
    aggregates, groups, orders or removes duplicates; so does any with ``whole``
    (a whole graph's dump). Any other answer streams: it goes to a process when
    that costs no more than a round trip (:meth:`Isolation.try_answer`: an idle
    worker whose opening of an on-disk store is current), else it is answered
    in the caller's thread, stopped between two rows at its limit (a worker's
    opening again after a write takes 60 ms or more, a fork 10 ms: more than
    such a query). Such an answer slow to its first row, or between two, runs
    on past its limit in that thread.
    """
    if isolated is None:
        return here()
    if whole or ONE_STEP.search(asked.text):
        return isolated.answer(asked, job)
    return isolated.try_answer(asked, job) or here()


# The forms pyoxigraph evaluates before the first row (a word in a string or a
# comment counts too: such a query just runs in a worker).
ONE_STEP = re.compile(
    r"\b(?:COUNT|SUM|AVG|MIN|MAX|GROUP_CONCAT|SAMPLE|GROUP\s+BY|ORDER\s+BY|DISTINCT"
    r"|REDUCED|HAVING)\b",
    re.IGNORECASE,
)
