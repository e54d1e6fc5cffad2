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
  once. Until the zygote has started, queries run in the server's thread
  (:func:`~oms_rdf.http.app.serve` waits for it before it listens).
- **Where a worker cannot read.** While an import or bulk load runs, a read-only
  opening is refused (the mark of :mod:`oms_rdf.backends.embedded`): the query
  runs in the server's thread as before, stoppable only between rows.
- **Lifetime.** When the server's end of the zygote's socket closes (it ends, or
  :meth:`QueryProcesses.close`), the zygote kills its workers; a worker dies with
  the zygote, and ends by itself when its own socket closes.

In-memory stores and server backends are not isolated: a worker could not see the
first, and the second evaluates elsewhere.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..backends.embedded import LocalBackend
from ..codec.grain import now_ms
from ..errors import ErrorCode, OmsError, StoreError
from ..store import GrainStore
from .lanes import Cancelled, Job
from .results import QueryRequest
from .zygote import REPLY, REQUEST

__all__ = [
    "POLL",
    "QueryProcesses",
    "isolated_answer",
    "store_version",
]

POLL = 0.05  # seconds between two looks at a job while its worker evaluates
_REAP = 10.0  # seconds the zygote is given to end
_BOOT = 60.0  # seconds the zygote may take to start and answer a fork
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # where oms_rdf is


def store_version(path: Path) -> str:
    """Return a digest of an on-disk store's folder that changes with every commit.

    The names, sizes and modification times of its files (RocksDB's logs, tables,
    manifests; the bulk-write mark) and the folder's identity (a vacuum swaps it).
    RocksDB's own text log is left out: it changes with no write. An unreadable
    folder has the empty version, which no opening records.
    """
    digest = hashlib.blake2b(digest_size=16)
    try:
        folder = os.stat(path)
        entries = sorted(
            (e.name, e.stat()) for e in os.scandir(path) if not e.name.startswith("LOG")
        )
    except OSError:
        return ""
    digest.update(f"{folder.st_dev}:{folder.st_ino}\n".encode())
    for name, info in entries:
        digest.update(f"{name}:{info.st_size}:{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


class QueryProcesses:
    """Worker processes that answer queries over one on-disk store.

    >>> QueryProcesses.serving(GrainStore(), workers=2) is None  # in memory
    True
    """

    def __init__(
        self, path: Path, *, workers: int, clock: Callable[[], int] = now_ms
    ) -> None:
        self.path, self.clock = path, clock
        self._pool = _Pool(path, workers)
        # The workers go with the pool, however it goes (an app dropped unclosed).
        self._finalizer = weakref.finalize(self, self._pool.close)
        # The first worker is forked once the zygote has started, off this thread.
        threading.Thread(target=self.ready, args=(_BOOT,), daemon=True).start()

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
        backend = store.backend
        if not isinstance(backend, LocalBackend) or backend.path is None:
            return None
        if store.read_only or os.name != "posix":
            return None
        return cls(backend.path, workers=workers, clock=lambda: store.clock())

    @property
    def pids(self) -> list[int]:
        """The process ids of the workers now alive (idle, busy or starting)."""
        return self._pool.pids()

    def answer(self, asked: QueryRequest, job: Job) -> tuple[bytes, str] | None:
        """Return the answer to ``asked`` as the endpoint serialises it, and its
        media type, from a worker; None when no worker can read the store now (a
        bulk write runs, or the zygote is starting), and the caller answers in
        its own thread.

        The knowledge of now is asked at the store's clock reading here. The
        worker is killed as soon as ``job`` is cancelled.

        Raises:
            Cancelled: when ``job`` was cancelled (the worker is killed).
            OmsError: what the query raised in the worker, rebuilt (same class,
                code, message and path).
            StoreError: ERR_STORE when the worker ended without answering.
        """
        header, body = self._pool.ask(
            {
                "version": store_version(self.path),
                "now": self.clock(),
                "asked": dataclasses.asdict(asked),
            },
            job,
        )
        if "media" in header:
            return body, str(header["media"])
        if "unavailable" in header:
            return None
        raise _rebuilt(header)

    def close(self) -> None:
        """Kill every worker (busy ones too) and reap them; later queries are
        cancelled."""
        self._finalizer()


class _GoneError(Exception):
    """A worker's socket closed: it ended (killed, crashed, or its server closed)."""


class _StartingError(Exception):
    """The zygote has not started yet: no worker can be forked for a while."""


def _child_env() -> dict[str, str]:
    """The environment of the zygote: this one, with this package importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p
    )
    return env


class _Zygote:
    """The process the workers are forked from: started once, with the package
    imported, and single-threaded, so that a fork is safe and takes milliseconds.

    It forks on request and reaps a worker only when asked, after the server
    killed it: until then the pid stays the worker's (a zombie holds it), so a
    SIGKILL never reaches another process. When the server's end of the control
    socket closes, it kills its workers, reaps them and ends.
    """

    def __init__(self, path: Path) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        code = "from oms_rdf.http.zygote import zygote_main; zygote_main()"
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", code, str(path), str(theirs.fileno())],
                stdin=subprocess.DEVNULL,
                env=_child_env(),
                pass_fds=[theirs.fileno()],
            )
        except OSError as exc:
            ours.close()
            raise StoreError(
                f"cannot start the process queries run from: {exc}"
            ) from exc
        finally:
            theirs.close()
        ours.settimeout(_BOOT)
        self.control, self.lock = ours, threading.Lock()
        self.closed = self.ready = False

    def wait_ready(self, timeout: float) -> bool:
        """Whether it has started (imported the package), waiting up to ``timeout``
        seconds for it, without holding its lock meanwhile."""
        deadline = time.monotonic() + timeout
        poller = select.poll()
        poller.register(self.control.fileno(), select.POLLIN)
        while not (self.ready or self.closed):  # another thread may read it first
            if poller.poll(min(POLL, max(0.0, deadline - time.monotonic())) * 1000):
                with self.lock:
                    if not (self.ready or self.closed):
                        message = self.control.recv(64)
                        self.ready = message == b"ready"
                        self.closed = not message  # it ended: never ready
            elif time.monotonic() >= deadline:
                break
        return self.ready

    def fork(self) -> tuple[socket.socket, int]:
        """A new worker: the server's end of its socket, and its pid."""
        if not self.wait_ready(0):
            raise _StartingError
        mine, its = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self.lock:
                if self.closed:
                    raise _GoneError
                socket.send_fds(self.control, [b"fork"], [its.fileno()])
                pid = int(self.control.recv(64) or b"0")
        except (OSError, ValueError):
            mine.close()
            raise _GoneError from None
        finally:
            its.close()
        if not pid:
            mine.close()
            raise _GoneError
        return mine, pid

    def kill(self, pid: int, *, reap: bool) -> None:
        """SIGKILL a worker (and, with ``reap``, have it reaped); a no-op once the
        zygote is closed or gone (it killed them all)."""
        with self.lock:
            if self.closed or self.proc.poll() is not None:
                return
            os.kill(pid, signal.SIGKILL)  # its zombie holds the pid: never another's
            if reap:
                try:
                    self.control.send(b"reap %d" % pid)
                except OSError:  # pragma: no cover - it just ended: it reaps all
                    pass

    @property
    def alive(self) -> bool:
        return not self.closed and self.proc.poll() is None

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.control.close()  # its end: it kills and reaps the workers, and ends
        try:
            self.proc.wait(timeout=_REAP)
        except subprocess.TimeoutExpired:  # pragma: no cover - stuck in the kernel
            self.proc.kill()
            self.proc.wait()


class _Worker:
    """One worker process, seen from the server: its socket and the replies owed."""

    def __init__(self, zygote: _Zygote) -> None:
        self.zygote = zygote
        self.sock, self.pid = zygote.fork()
        self.sock.setblocking(False)  # a read or write waits in poll(), never in it
        self.fd = self.sock.fileno()
        self.owed = 0  # replies to requests sent before this one (a warm-up)
        self.ended = False

    def send(self, request: dict[str, Any], job: Job | None) -> None:
        """Write one request; :class:`Cancelled` as soon as ``job`` is cancelled."""
        data = json.dumps(request).encode()
        frame = memoryview(REQUEST.pack(len(data)) + data)
        while frame:
            self._wait(select.POLLOUT, job)
            try:
                frame = frame[self.sock.send(frame) :]
            except BlockingIOError:
                continue
            except OSError:  # its end closed: it ended
                raise _GoneError from None
        self.owed += 1

    def receive(self, job: Job | None) -> tuple[dict[str, Any], bytes]:
        """Read the next reply; :class:`Cancelled` as soon as ``job`` is cancelled."""
        header_size, body_size = REPLY.unpack(self._read(REPLY.size, job))
        header = json.loads(self._read(header_size, job))
        body = self._read(body_size, job)
        self.owed -= 1
        return header, body

    def _read(self, size: int, job: Job | None) -> bytes:
        chunks: list[bytes] = []
        while size:
            self._wait(select.POLLIN, job)
            try:
                chunk = self.sock.recv(min(size, 1 << 20))
            except BlockingIOError:
                continue
            except OSError:
                raise _GoneError from None
            if not chunk:
                raise _GoneError
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _wait(self, event: int, job: Job | None) -> None:
        """Return once the socket is ready (or closed at the other end), looking
        at ``job`` every :data:`POLL` seconds (poll(): no limit on descriptors)."""
        poller = select.poll()
        poller.register(self.fd, event)
        while not poller.poll(POLL * 1000):
            if job is not None:
                job.check()
        if job is not None:
            job.check()

    @property
    def alive(self) -> bool:
        """Whether it can take a request: an idle worker's socket is readable
        only once it has ended."""
        if self.ended or not self.zygote.alive:
            return False
        if self.owed:
            return True  # its warm-up's reply may be waiting: receive() tells
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        return not poller.poll(0)

    def signal_kill(self) -> None:
        """SIGKILL only: the thread reading its socket reaps it (:meth:`kill`)."""
        if not self.ended:
            self.zygote.kill(self.pid, reap=False)

    def kill(self) -> None:
        """SIGKILL, reap, and close the socket: no zombie, no descriptor left."""
        if not self.ended:
            self.ended = True
            self.zygote.kill(self.pid, reap=True)
            self.sock.close()


class _Pool:
    """The workers of one store: at most ``cap``, idle ones kept warm.

    A worker is in ``every`` from its fork to its reaping, and in ``idle`` when no
    thread uses it. Only the thread using a worker reads its socket, and closes
    it: :meth:`close` only signals a busy worker.
    """

    def __init__(self, path: Path, cap: int) -> None:
        self.path, self.cap = path, max(1, cap)
        self.lock = threading.Condition()
        self.idle: list[_Worker] = []
        self.every: set[_Worker] = set()
        self.closed = False
        self.zygote = _Zygote(path)

    def pids(self) -> list[int]:
        with self.lock:
            return sorted(w.pid for w in self.every if not w.ended)

    def _fork(self) -> _Worker:
        """A new worker (the zygote started again if it ended); under the lock."""
        if not self.zygote.alive:
            self.zygote.close()
            self.zygote = _Zygote(self.path)
        try:
            worker = _Worker(self.zygote)
        except _GoneError:
            raise StoreError(
                "the process queries run from ended; see the server's standard error"
            ) from None
        self.every.add(worker)
        return worker

    def start_spare(self) -> None:
        """Fork a worker, which opens the store, if none is idle and there is
        room (its warm-up request is sent before any other can be)."""
        with self.lock:
            if self.closed or self.idle or len(self.every) >= self.cap:
                return
            try:
                worker = self._fork()
                request = {"version": store_version(self.path), "now": 0, "asked": None}
                worker.send(request, None)  # small: the new socket takes it at once
            except (StoreError, _GoneError, _StartingError):
                return  # the next query that needs one says why
            self.idle.append(worker)
            self.lock.notify()

    def take(self, job: Job) -> _Worker:
        """An idle worker, or a new one; waits (polling ``job``) when all are busy."""
        with self.lock:
            while True:
                if self.closed:
                    raise Cancelled
                while self.idle:
                    worker = self.idle.pop()
                    if worker.alive:
                        return worker
                    self.every.discard(worker)
                    worker.kill()
                if len(self.every) < self.cap:
                    return self._fork()
                self.lock.wait(POLL)
                job.check()

    def ask(self, request: dict[str, Any], job: Job) -> tuple[dict[str, Any], bytes]:
        """Send ``request`` to a worker and return its reply.

        Raises:
            Cancelled: when ``job`` was cancelled (the worker is killed).
            StoreError: ERR_STORE when the worker ended without answering.
        """
        for _attempt in range(2):
            try:
                worker, sent = self.take(job), False
            except _StartingError:
                return {"unavailable": "the worker processes are starting"}, b""
            try:
                while worker.owed:  # a warm-up's reply, after the worker started
                    worker.receive(job)
                worker.send(request, job)
                sent = True
                reply = worker.receive(job)
            except _GoneError:
                self.drop(worker)
                if not sent:
                    continue  # it had ended before it was asked: ask another
                raise StoreError(
                    "the worker process answering the query ended without an answer"
                ) from None
            except BaseException:  # cancelled (or worse): the query dies with it
                self.drop(worker)
                raise
            with self.lock:
                if not self.closed:
                    self.idle.append(worker)
                    self.lock.notify()
                    return reply
            worker.kill()
            return reply
        raise StoreError(
            "the worker processes for queries keep ending; see the "
            "server's standard error"
        )

    def drop(self, worker: _Worker) -> None:
        """Kill and reap a worker, and fork one in its place."""
        worker.kill()
        with self.lock:
            self.every.discard(worker)
            self.lock.notify()
        self.start_spare()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            idle, busy = self.idle, self.every.difference(self.idle)
            self.idle, self.every = [], busy
            self.lock.notify_all()
        for worker in idle:
            worker.kill()
        for worker in busy:  # its thread is polling the socket: it closes it
            worker.signal_kill()
        self.zygote.close()


def _rebuilt(header: dict[str, Any]) -> BaseException:
    """The exception a worker reported, as it was raised there."""
    error = header.get("error") or {}
    kind = error.get("kind")
    message = str(error.get("message", "the worker gave no reason"))
    if kind == "oms":
        cls = _error_class(str(error["class"]))
        return cls(message, code=ErrorCode(error["code"]), path=error.get("path"))
    if kind == "recursion":
        return RecursionError(message)
    if kind == "lookup":
        return LookupError(message)
    return StoreError(f"the query failed in its worker process: {message}")


def _error_class(name: str) -> type[OmsError]:
    """The OmsError subclass of that name (StoreError if none is)."""
    stack: list[type[OmsError]] = [OmsError]
    while stack:
        cls = stack.pop()
        if cls.__name__ == name:
            return cls
        stack.extend(cls.__subclasses__())
    return StoreError


def isolated_answer(
    isolated: QueryProcesses | None,
    asked: QueryRequest,
    job: Job,
    here: Callable[[], tuple[bytes, str]],
) -> tuple[bytes, str]:
    """Return the answer to ``asked`` from a worker of ``isolated``, or from
    ``here()`` (the caller's thread) when there is none or none can read now.

    Only a query pyoxigraph may evaluate in one step goes to a worker: one that
    aggregates, groups, orders or removes duplicates. Any other answer streams,
    and the caller's thread stops it between two rows at its limit, without the
    worker's reopening of the store after each write (20-25 ms, more under load).
    """
    if isolated is None or not ONE_STEP.search(asked.text):
        return here()
    found = isolated.answer(asked, job)
    return here() if found is None else found


# The forms pyoxigraph evaluates before the first row (a word in a string or a
# comment counts too: such a query just runs in a worker).
ONE_STEP = re.compile(
    r"\b(?:COUNT|SUM|AVG|MIN|MAX|GROUP_CONCAT|SAMPLE|GROUP\s+BY|ORDER\s+BY|DISTINCT"
    r"|REDUCED|HAVING)\b",
    re.IGNORECASE,
)
