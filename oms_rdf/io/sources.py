"""Reading sources and writing destinations: reopenable streams, progress, parsing, lines."""

from __future__ import annotations

import io as _io
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, cast

import pyoxigraph as ox

from ..errors import DecodeError, ErrorCode, StoreError

Source = str | os.PathLike[str] | IO[bytes]


Progress = Callable[[int], object] | None


@contextmanager
def _reopenable(src: Source) -> Iterator[tuple[Callable[[], IO[bytes]], int]]:
    """Yield a function that opens the source afresh (imports read it twice), and its size."""
    if hasattr(src, "read"):
        stream: Any = src
        if stream.seekable():
            start = stream.tell()
            size = stream.seek(0, os.SEEK_END) - start
            stream.seek(start)

            lock = threading.Lock()
            yield (lambda: cast(IO[bytes], _Unclosed(stream, start, lock))), size
            return
        with tempfile.TemporaryFile() as spool:  # a pipe: keep a copy to read again
            while chunk := stream.read(1 << 20):
                spool.write(chunk)
            size, lock = spool.tell(), threading.Lock()
            yield (lambda: cast(IO[bytes], _Unclosed(spool, 0, lock))), size
        return
    path = Path(src)
    if not path.exists():
        raise StoreError(f"no such file: {path}", code=ErrorCode.NOT_FOUND)
    yield (lambda: open(path, "rb")), path.stat().st_size


class _Unclosed(_io.RawIOBase):
    """A view of a seekable stream from ``start``, with a position of its own.

    The importer may close it without closing the stream, and read two views at
    once from two threads (the fast restore does); ``lock`` is the stream's.
    """

    def __init__(self, stream: IO[bytes], start: int, lock: threading.Lock) -> None:
        self.stream, self.position, self.lock = stream, start, lock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        with self.lock:
            self.stream.seek(self.position)
            data = self.stream.read(len(buffer))
        self.position += len(data)
        buffer[: len(data)] = data
        return len(data)


@contextmanager
def _open(dest: Source, mode: str) -> Iterator[IO[bytes]]:
    if hasattr(dest, "write"):
        yield dest  # type: ignore[misc]
        return
    path = Path(dest)
    tmp = path.with_name(path.name + ".partial")
    try:
        with open(tmp, mode) as out:
            yield out
        os.replace(tmp, path)  # a finished file or none: never a half-written one
    finally:
        tmp.unlink(missing_ok=True)


class _Counting(_io.RawIOBase):
    """Reports bytes read to a progress callback."""

    def __init__(self, stream: IO[bytes], progress: Progress) -> None:
        self.stream, self.progress = stream, progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.stream.read(len(buffer))
        buffer[: len(data)] = data
        if self.progress is not None and data:
            self.progress(len(data))
        return len(data)


def parse_source(
    raw: IO[bytes], fmt: ox.RdfFormat, base_iri: str | None, progress: Progress = None
) -> Iterator[ox.Quad]:
    """Stream the quads of a source; a syntax error names its line.

    Raises:
        DecodeError: ERR_CORRUPT for malformed input.
    """
    try:
        yield from ox.parse(
            _io.BufferedReader(_Counting(raw, progress)), format=fmt, base_iri=base_iri
        )
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else None
        raise DecodeError(
            f"not valid {fmt.name}: {exc}", code=ErrorCode.CORRUPT, path=where
        ) from None
    except (ValueError, OSError) as exc:
        raise DecodeError(f"cannot read the {fmt.name} source: {exc}") from None
    except MemoryError as exc:
        # pyoxigraph's parsers keep a line (a JSON-LD token) in a buffer of at most
        # 16 MiB and raise MemoryError past it: a malformed file, not a lack of memory.
        if "buffer maximal size" not in str(exc):
            raise
        raise DecodeError(
            f"not valid {fmt.name}: a line or token is longer than the parser's "
            "16 MiB buffer (no grain of at most 1 MiB needs one so long)",
            code=ErrorCode.CORRUPT,
        ) from None


def line_of(reopen: Callable[[], IO[bytes]], quad: ox.Quad) -> str:
    """Where a quad sits in its source, for errors: the first line naming its graph
    (or its triple term, or its subject), else the quad itself.

    Parsers do not report a quad's position, so the source is searched; it is read
    again only on the way to an error.
    """
    needles: list[bytes] = []
    if isinstance(quad.object, ox.Triple) or isinstance(quad.subject, ox.Triple):
        needles.append(b"<<")
    for term in (quad.graph_name, quad.subject):
        if isinstance(term, ox.NamedNode):
            local = term.value.rsplit("#", 1)[-1].rsplit(";", 1)[-1].encode()
            needles.append(term.value.encode())
            if local and term.value.startswith("https://w3id.org/oms-rdf/ns#"):
                needles.append(b"oms:" + local)
    with reopen() as raw:
        for number, line in enumerate(raw, 1):
            if any(n in line for n in needles):
                return f"line {number}"
    return f"quad {quad}"
