"""The processes SPARQL queries run in (the other side of :mod:`.isolation`).

The *zygote* is started once per store by the server, imports the package and
stays single-threaded; it forks a *worker* for each socket the server sends it,
and reaps one only when the server asks (after killing it), so that a worker's pid
is never another process's while the server may signal it. A worker holds a
read-only opening of the store, answers one request at a time on its socket, and
ends when the socket closes, or with the zygote (Linux: its parent-death signal).

A request is a 4-byte length and a JSON object ``{"version", "now", "asked"}``
(``asked`` null: only open the store); a reply is the 4-byte length of a JSON
header, the 8-byte length of a body, the header and the body (the serialised
answer, when the header holds ``media``).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
import threading
from pathlib import Path
from typing import Any

from ..errors import ErrorCode, OmsError, StoreError
from ..store import GrainStore
from .results import QueryRequest, run_query

__all__ = ["REPLY", "REQUEST", "answer_of", "rebuilt", "reply_frame", "zygote_main"]

REQUEST = struct.Struct(">I")  # a request: the length of its JSON text
REPLY = struct.Struct(">IQ")  # a reply: the lengths of its JSON header and body


class _Reader:
    """The worker's store: a read-only opening of one version, opened again when
    the server asks of another."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.version: str | None = None
        self.store: GrainStore | None = None
        self.refusal, self.code = "", str(ErrorCode.STORE)
        self.now = 0  # the server's clock reading for the query under way

    def clock(self) -> int:
        return self.now

    def open(self, version: str) -> None:
        """Open the store as it is now, unless the opening is of ``version``."""
        if version == self.version and self.store is not None:
            return
        if self.store is not None:
            self.store.close()
            self.store = None
        self.version = None
        try:
            self.store = GrainStore(self.path, read_only=True, clock=self.clock)
        except OmsError as exc:  # a bulk write runs (ERR_CONFLICT), or no store
            self.refusal, self.code = exc.message, str(exc.code)
            return
        self.version = version or None  # an unreadable folder is never current

    def reply(self, request: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        """The reply to one request: the answer, an error, or why none can be."""
        self.open(str(request["version"]))
        if self.store is None:
            return {"unavailable": self.refusal, "code": self.code}, b""
        if request["asked"] is None:
            return {"ready": True}, b""
        self.now = int(request["now"])
        return answer_of(self.store, QueryRequest(**request["asked"]))


def answer_of(store: GrainStore, asked: QueryRequest) -> tuple[dict[str, Any], bytes]:
    """A reply's header and body: the answer to ``asked`` over ``store``, or the
    error it raised, told so that :func:`rebuilt` raises it again."""
    try:
        body, media = run_query(store, asked)
    except OmsError as exc:
        error: dict[str, str | None] = {"kind": "oms", "path": exc.path}
        error |= {"class": type(exc).__name__, "code": str(exc.code)}
        error["message"] = exc.message
        return {"error": error}, b""
    except RecursionError as exc:
        return {"error": {"kind": "recursion", "message": str(exc)}}, b""
    except LookupError as exc:
        return {"error": {"kind": "lookup", "message": str(exc)}}, b""
    except Exception as exc:  # reported, not lost: the server answers a 500
        message = f"{type(exc).__name__}: {exc}"
        return {"error": {"kind": "other", "message": message}}, b""
    return {"media": media}, body


def reply_frame(header: dict[str, Any], body: bytes) -> bytes:
    """A reply as it goes on the wire: the two lengths, the header, the body."""
    data = json.dumps(header).encode()
    return REPLY.pack(len(data), len(body)) + data + body


def rebuilt(header: dict[str, Any]) -> BaseException:
    """The exception a reply reports, as it was raised where it was made."""
    error = header.get("error") or {}
    kind = error.get("kind")
    message = str(error.get("message", "the process gave no reason"))
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


def _read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``, or None at its end."""
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _watch(fd: int, busy: threading.Event) -> None:
    """End the worker when its pipe closes while it evaluates: its server is gone.

    No request comes while one is under way (the server waits for the reply), so
    once the request is read, a readable pipe is a closed one. A wait that began
    before may have seen the next request arrive: it looks again.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        busy.wait()
        if poller.poll(1000) and busy.is_set() and poller.poll(0):
            os._exit(3)


def _serve(fd: int, path: Path) -> None:
    """Answer the server's requests on the socket ``fd`` until it closes."""
    reader = _Reader(path)
    busy = threading.Event()
    threading.Thread(target=_watch, args=(fd, busy), daemon=True).start()
    while True:
        sizes = _read_exactly(fd, REQUEST.size)
        text = None if sizes is None else _read_exactly(fd, REQUEST.unpack(sizes)[0])
        if text is None:
            return
        busy.set()
        header, body = reader.reply(json.loads(text))
        busy.clear()  # before the reply: the next request may follow it at once
        reply = memoryview(reply_frame(header, body))
        while reply:
            reply = reply[os.write(fd, reply) :]


def _forked(fd: int, zygote: int, path: Path) -> None:
    """A worker's life, in the zygote's fork; it never returns into the zygote."""
    status = 0
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if sys.platform == "linux":  # killed with the zygote (the server's end)
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == zygote:
            _serve(fd, path)
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    finally:
        os._exit(status)


def zygote_main() -> None:
    """Fork workers for the server until its control socket closes, then kill
    them (the zygote's entry point: ``python -c ... STORE_PATH CONTROL_FD``)."""
    # The server stops its workers: a Ctrl-C sent to the whole group is its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    path, control = Path(sys.argv[1]), socket.socket(fileno=int(sys.argv[2]))
    try:
        control.send(b"ready")
    except OSError:  # the server ended before its zygote was up: nothing to serve
        return
    children: set[int] = set()
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 64, 1)
        except OSError:
            break
        if not message:
            break
        if message == b"fork" and fds:
            pid = os.fork()
            if pid == 0:
                control.close()
                _forked(fds[0], os.getppid(), path)
            os.close(fds[0])
            children.add(pid)
            control.send(str(pid).encode())
        elif message.startswith(b"reap ") and int(message[5:]) in children:
            os.waitpid(int(message[5:]), 0)
            children.discard(int(message[5:]))
        else:
            for fd in fds:
                os.close(fd)
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # pragma: no cover - already reaped by init
            pass
        os.waitpid(pid, 0)
