"""Queries over an in-memory store in a child forked for each, killed at its limit.

A worker process cannot see a store that lives in this process's memory, and
pyoxigraph 0.5 cannot interrupt a query inside one step of its evaluation. A child
forked from this process can: it has the store as it was at the fork (the memory
copied on write), evaluates the query there with the endpoint's own
:func:`~oms_rdf.http.results.run_query`, writes the answer to a pipe and ends
(``os._exit``: no handler of the parent's runs in it). When the query's job is
cancelled (its time limit, a stop), the child is killed (SIGKILL) and reaped.

**Forking beside threads.** Only the forking thread goes on in the child; a lock
another thread held at the fork stays held there. So:

- the fork is made holding the store's write lock
  (:meth:`~oms_rdf.store.GrainStore.writes_held`): no write of this process is
  half made in the child's copy, and no writer holds a lock of pyoxigraph's;
- the child touches only the store, the answer's serialisation and its pipe: no
  logging, no import of a new module (CPython resets its import lock at a fork),
  no I/O but the pipe; it closes every other descriptor it inherited (the
  server's sockets stay the server's alone; its standard output becomes its
  standard error, since an MCP server's is the protocol), and takes back the
  default signal handlers;
- glibc's allocator is made safe across fork by glibc itself (Rust's allocations
  go through it);
- a reader on another thread may be inside pyoxigraph at the fork (it lets go of
  the GIL while it evaluates), holding the mutex of one of the in-memory store's
  quads for an instant. A child that comes to that quad waits for ever: no
  thread of it will let go. Such a child sleeps while it owes its answer (a
  child that evaluates runs; one whose pipe is full has bytes waiting in it), so
  where the system shows a process's state (Linux: ``/proc``) a child seen
  asleep three looks in a row with nothing in its pipe is killed at once and the
  query forked again, at most :data:`FORKS` times. Elsewhere it is killed at the
  query's limit like any slow query: a 503, never a wrong answer, and nothing
  left running.

The cost is the fork (the page tables of the process, not its memory: some
milliseconds for a server of a few hundred MB) and the answer's copy through the
pipe; only a query that needs it is forked (:func:`.isolation.isolated_answer`).
"""

from __future__ import annotations

import json
import os
import select
import signal
import threading
from typing import Any

from ..errors import StoreError
from ..store import GrainStore
from .lanes import Cancelled, Job
from .results import QueryRequest
from .zygote import REPLY, answer_of, rebuilt, reply_frame

__all__ = ["ForkedQueries"]

_POLL = 0.05  # seconds between two looks at a job while its child evaluates
_ASLEEP = 3  # looks in a row that find a child asleep, its pipe empty: stuck
FORKS = 5  # children forked for one query, each found stuck, before it fails


class _StuckError(Exception):
    """The child waits on a lock that no thread of it will let go of."""


class ForkedQueries:
    """Each query over an in-memory store in a child forked for it.

    >>> from oms_rdf import GrainStore
    >>> forked = ForkedQueries.serving(GrainStore())
    >>> forked.answer(QueryRequest(text="ASK {}"), Job())
    (b'{"head": {}, "boolean": true}', 'application/sparql-results+json')
    >>> forked.close()
    """

    def __init__(self, store: GrainStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._children: set[int] = set()
        self._closed = False

    @classmethod
    def serving(cls, store: GrainStore) -> ForkedQueries | None:
        """Children for ``store`` if it lives in this process's memory and this
        system forks; else None."""
        if store.folder is not None or store.backend.remote:
            return None
        if not hasattr(os, "fork"):  # pragma: no cover - not POSIX
            return None
        return cls(store)

    @property
    def pids(self) -> list[int]:
        """The children now evaluating a query."""
        with self._lock:
            return sorted(self._children)

    def ready(self, timeout: float) -> bool:
        """Always ready: nothing is started ahead of a query."""
        return not self._closed

    def answer(self, asked: QueryRequest, job: Job) -> tuple[bytes, str]:
        """Return the answer to ``asked`` as the endpoint serialises it, and its
        media type, from a child forked for it (killed once ``job`` is cancelled).

        Raises:
            Cancelled: when ``job`` was cancelled, or the queries were closed.
            OmsError: what the query raised in the child, rebuilt.
            StoreError: ERR_STORE when the child ended without answering.
        """
        for _ in range(FORKS):
            try:
                header, body = self._forked(asked, job)
            except _StuckError:
                continue
            if "media" in header:
                return body, str(header["media"])
            raise rebuilt(header)
        raise StoreError(
            f"each of the {FORKS} processes forked to evaluate the query waited on "
            "a lock another thread held at its fork; ask again"
        )

    def _forked(self, asked: QueryRequest, job: Job) -> tuple[dict[str, Any], bytes]:
        """The reply of a child forked for ``asked``, killed and reaped after it."""
        job.check()
        theirs, ours = os.pipe()
        try:
            with self._lock:
                if self._closed:
                    raise Cancelled
                with self.store.writes_held():
                    pid = os.fork()
                if pid == 0:  # the child: it never returns from here
                    _child(self.store, asked, ours)
                self._children.add(pid)
        finally:
            os.close(ours)
        try:
            return _reply(theirs, pid, job)
        finally:
            os.close(theirs)
            self._end(pid)

    def try_answer(self, asked: QueryRequest, job: Job) -> tuple[bytes, str] | None:
        """None: a fork costs more than an answer that streams (10 ms and more
        for a server of 100 MB, many times that beside writers, who hold the
        fork back), so such an answer is the caller's to make."""
        return None

    def _end(self, pid: int) -> None:
        """Kill the child (whether or not it has ended) and reap it."""
        try:
            os.kill(pid, signal.SIGKILL)  # not reaped yet: the pid is still its
        except ProcessLookupError:  # pragma: no cover - reaped by close()
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # reaped by close()
            pass
        with self._lock:
            self._children.discard(pid)

    def close(self) -> None:
        """Kill the children running (their queries end Cancelled); later
        queries are cancelled."""
        with self._lock:
            self._closed = True
            children = list(self._children)
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover - reaped meanwhile
                pass


def _child(store: GrainStore, asked: QueryRequest, out: int) -> None:
    """The child's life: answer, write the reply to ``out``, end."""
    status = 0
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.dup2(2, 1)  # an MCP server's stdout is its protocol: never written here
        os.closerange(3, out)
        os.closerange(out + 1, os.sysconf("SC_OPEN_MAX"))
        reply = memoryview(reply_frame(*answer_of(store, asked)))
        while reply:
            reply = reply[os.write(out, reply) :]
    except BaseException:  # its parent sees the pipe close without a reply
        status = 1
    finally:
        os._exit(status)


def _reply(fd: int, pid: int, job: Job) -> tuple[dict[str, Any], bytes]:
    """The reply of the child ``pid`` on the pipe ``fd``, polling ``job`` while
    it comes."""
    header_size, body_size = REPLY.unpack(_read(fd, REPLY.size, pid, job))
    header = json.loads(_read(fd, header_size, pid, job))
    return header, _read(fd, body_size, pid, job)


def _read(fd: int, size: int, pid: int, job: Job) -> bytes:
    """``size`` bytes from the pipe ``fd``.

    Raises:
        _StuckError: the child ``pid`` was found asleep, the pipe empty, :data:`_ASLEEP`
            looks in a row.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    chunks: list[bytes] = []
    while size:
        asleep = 0
        while not poller.poll(_POLL * 1000):
            job.check()
            asleep = asleep + 1 if _asleep(pid) and not poller.poll(0) else 0
            if asleep == _ASLEEP:
                raise _StuckError
        job.check()
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise StoreError("the process evaluating the query ended without an answer")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _asleep(pid: int) -> bool:
    """Whether the process ``pid`` sleeps (Linux; False where it cannot be seen).

    The child has one thread and waits on nothing but its pipe: asleep with the
    pipe empty, it waits on a lock that no thread of it will let go of.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            line = stat.read()
    except OSError:  # pragma: no cover - no /proc here, or the child has ended
        return False
    # pid (comm) state ...: comm may hold spaces and parentheses, so from the last ")"
    return line[line.rindex(b")") + 2 : line.rindex(b")") + 3] == b"S"
