"""The worker processes of :mod:`.isolation`, seen from the server: the zygote
they are forked from, each worker's socket, and the pool of them kept for one
on-disk store (idle ones opened again soon after each write).

>>> store_version(Path("/nonexistent"))
''
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .lanes import Cancelled, Job
from .zygote import REPLY, REQUEST

__all__ = ["BOOT", "POLL", "Pool", "store_version"]

POLL = 0.05  # seconds between two looks at a job while its worker evaluates
_REAP = 10.0  # seconds the zygote is given to end
BOOT = 60.0  # seconds the zygote may take to start and answer a fork
_REFRESH = 0.01  # seconds between two looks for a write idle workers have not seen
_WARMING = 1  # idle workers opening the store again at once, at most
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
        with os.scandir(path) as found:
            listed = [e for e in found if not e.name.startswith("LOG")]
    except OSError:
        return ""
    entries = []
    for entry in listed:
        try:
            entries.append((entry.name, entry.stat()))
        except FileNotFoundError:  # a table compacted away as it was listed
            continue
    entries.sort()
    digest.update(f"{folder.st_dev}:{folder.st_ino}\n".encode())
    for name, info in entries:
        digest.update(f"{name}:{info.st_size}:{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


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
                stdout=subprocess.DEVNULL,  # an MCP server's stdout is its protocol
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
        ours.settimeout(BOOT)
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
        self.version = ""  # the store's version its last request named

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
        self.version = str(request["version"])

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


class Pool:
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
        # Idle workers open the store again soon after each write, off any
        # query's time: a query then mostly finds one whose opening is current.
        threading.Thread(target=self._refresh, daemon=True).start()

    def _refresh(self) -> None:
        """Every :data:`_REFRESH` seconds, send a warm-up of the store's version
        now to idle workers whose opening is of another (at most
        :data:`_WARMING` at once), until the pool closes."""
        while True:
            time.sleep(_REFRESH)
            version = store_version(self.path)
            with self.lock:
                if self.closed:
                    return
                warming = sum(1 for w in self.idle if w.owed)
                for worker in self.idle:
                    if warming >= _WARMING:
                        break
                    if worker.owed or worker.version == version or not version:
                        continue
                    try:
                        worker.send({"version": version, "now": 0, "asked": None}, None)
                    except _GoneError:
                        continue  # take() finds it dead and replaces it
                    warming += 1

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

    def take(
        self, job: Job, version: str = "", *, fresh_only: bool = False
    ) -> _Worker | None:
        """An idle worker (one whose opening is of ``version`` first), or a new
        one; waits (polling ``job``) when all are busy. With ``fresh_only``, only
        an idle worker whose opening is of ``version`` (or under way: a new
        worker, or one the pool refreshes), or None at once."""
        with self.lock:
            while True:
                if self.closed:
                    raise Cancelled
                # One whose opening is of ``version``, else one opening it now.
                for owed in (False, True):
                    for n, worker in enumerate(self.idle):
                        if worker.version == version and bool(worker.owed) == owed:
                            if worker.alive:
                                return self.idle.pop(n)
                if fresh_only:
                    return None
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

    def ask(
        self, request: dict[str, Any], job: Job, *, fresh_only: bool = False
    ) -> tuple[dict[str, Any], bytes] | None:
        """Send ``request`` to a worker and return its reply (None: ``fresh_only``
        and no idle worker's opening is of the request's version).

        Raises:
            Cancelled: when ``job`` was cancelled (the worker is killed).
            StoreError: ERR_STORE when the worker ended without answering.
        """
        for _attempt in range(2):
            version = str(request["version"])
            if fresh_only:
                taken = self.take(job, version, fresh_only=True) if version else None
                if taken is None:
                    return None
            else:
                taken = self._taken(job, version)
            worker, sent = taken, False
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

    def _taken(self, job: Job, version: str) -> _Worker:
        """A worker, once the zygote has started (polling ``job`` meanwhile)."""
        while True:
            try:
                worker = self.take(job, version)
                assert worker is not None  # not fresh_only
                return worker
            except _StartingError:
                if not self.zygote.wait_ready(POLL) and self.zygote.closed:
                    time.sleep(
                        POLL
                    )  # it ended as it started: the next take restarts it
                job.check()

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
