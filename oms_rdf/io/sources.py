"""Reading sources and writing destinations: reopenable streams, progress, parsing, lines."""

from __future__ import annotations

import io as _io
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import IO, Any, cast

import pyoxigraph as ox

from ..codec import MAX_BLOB
from ..errors import DecodeError, ErrorCode, SchemaError, StoreError
from ..rdf.mapping import Row
from ..rdf.vocab import OMS
from ..store import PREFIXES as STORE_PREFIXES
from ..store import GrainStore
from .entity_guard import EntityGuard

Source = str | os.PathLike[str] | IO[bytes]


Progress = Callable[[int], object] | None


@contextmanager
def reopenable(src: Source) -> Iterator[tuple[Callable[[], IO[bytes]], int]]:
    """Yield a function that opens the source afresh (imports read it twice), and its size.

    Raises:
        SchemaError: ERR_SCHEMA for a text stream (open the file with "rb").
    """
    if hasattr(src, "read"):
        _binary(src, "read from")
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
def open_output(dest: Source, mode: str) -> Iterator[IO[bytes]]:
    """Open ``dest`` to write: a stream as it is; a file (or none yet) through a
    ``.partial`` file that replaces it only once it is whole, beside the file a
    link names; anything else (a pipe, a device, ``/dev/stdout``) written as it is.
    """
    if hasattr(dest, "write"):
        _binary(dest, "write to")
        yield dest  # type: ignore[misc]
        return
    path = Path(dest)
    try:
        kind = os.stat(path).st_mode
    except FileNotFoundError:
        kind = stat.S_IFREG  # nothing there yet (or a link to nothing): made whole
    if not stat.S_ISREG(kind):
        with open(path, mode) as out:  # a pipe's reader, a device: no file to swap
            yield out
        return
    path = Path(os.path.realpath(path))  # a link keeps pointing at the new file
    tmp = path.with_name(path.name + ".partial")
    try:
        with open(tmp, mode) as out:
            yield out
        os.replace(tmp, path)  # a finished file or none: never a half-written one
    finally:
        tmp.unlink(missing_ok=True)


def _binary(stream: object, doing: str) -> None:
    """Refuse a text stream where bytes are read or written."""
    if isinstance(stream, _io.TextIOBase):
        raise SchemaError(
            f"cannot {doing} a text stream ({type(stream).__name__}): give a binary "
            'one (io.BytesIO, or open(path, "rb") / "wb") or a path',
            code=ErrorCode.SCHEMA,
        )


class Counting(_io.RawIOBase):
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
    raw: IO[bytes],
    fmt: ox.RdfFormat,
    base_iri: str | None,
    progress: Progress = None,
    prefixes: dict[str, str] | None = None,
) -> Iterator[ox.Quad]:
    """Stream the quads of a source; a syntax error names its line.

    ``prefixes``, when given, takes the prefixes the source declares (Turtle's and
    TriG's ``@prefix``, a JSON-LD context's), once the source is read to its end.

    RDF/XML is read through :class:`~.entity_guard.EntityGuard`: pyoxigraph expands the
    entities a DTD declares, nested ones included (a 1.3 KB "billion laughs" file
    became a 10-million-character literal), so only flat, short entities are
    taken, and their expansion is bounded.

    Raises:
        DecodeError: ERR_CORRUPT for malformed input, or RDF/XML whose DTD the
            guard refuses.
    """
    stream: _io.RawIOBase = Counting(raw, progress)
    if fmt == ox.RdfFormat.RDF_XML:
        stream = EntityGuard(stream)
    try:
        parser = ox.parse(_io.BufferedReader(stream), format=fmt, base_iri=base_iri)
        yield from parser
        if prefixes is not None:
            prefixes.update(parser.prefixes)
    except DecodeError:
        raise  # the entity guard's refusal, raised from inside the parser's read
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


# The prefixes adopted sources declared, kept on the store's settings node as
# "name namespace" (a prefix name and an IRI hold no space).
PREFIX = ox.NamedNode("https://w3id.org/oms-rdf/ns#prefix")


def recorded_prefixes(store: GrainStore) -> dict[str, str]:
    """The store's own prefixes, then those its adopted sources declared.

    A name is never given two namespaces: the store's own come first, then each
    recorded one (one name that two merged stores recorded differently: the
    namespace first in IRI order).
    """
    found = list(store.backend.quads(OMS.settings, PREFIX, None, OMS.index))
    pairs = sorted(
        q.object.value.split(" ") for q in found if isinstance(q.object, ox.Literal)
    )
    merged = dict(STORE_PREFIXES)
    for pair in pairs:
        if len(pair) == 2 and declarable(*pair):  # else no record of ours
            merged.setdefault(pair[0], pair[1])
    return merged


@lru_cache(maxsize=1024)
def declarable(name: str, iri: str) -> bool:
    """Whether Turtle can declare this prefix, as its parser reads it: a JSON-LD
    context's terms need be no PN_PREFIX (``1x``, ``µ``), and a declaration
    Turtle refuses would make every later plain Turtle export unreadable."""
    if " " in name + iri or ":" not in iri:
        return False
    declaration = f"@prefix {name}: <{iri}> .".encode()
    try:
        list(ox.parse(declaration, format=ox.RdfFormat.TURTLE))
    except (SyntaxError, ValueError):
        return False
    return True


def prefix_rows(store: GrainStore, declared: dict[str, str]) -> list[Row]:
    """The rows recording the prefixes a source declared that the store has no
    name for yet: a name the store already has keeps its first namespace."""
    known = recorded_prefixes(store)
    return [
        (
            str(OMS.settings),
            str(PREFIX),
            str(ox.Literal(f"{name} {iri}")),
            str(OMS.index),
        )
        for name, iri in sorted(declared.items())
        if name not in known and declarable(name, iri)
    ]


def line_of(reopen: Callable[[], IO[bytes]], quad: ox.Quad) -> str:
    """Where a quad sits in its source, for errors: the first line holding its
    subject and predicate as N-Triples (a line of N-Quads), else the first naming
    its graph (or its triple term, or its subject), else the quad itself.

    Parsers do not report a quad's position, so the source is searched; it is read
    again only on the way to an error.
    """
    exact = f"{quad.subject} {quad.predicate} {quad.object}".encode()
    with reopen() as raw:
        for number, line in enumerate(raw, 1):
            if exact in line:
                return f"line {number}"
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
    shown = str(quad)  # its literal may be a megabyte long: named, not quoted whole
    return f"quad {shown[:200]}…" if len(shown) > 200 else f"quad {shown}"


# A JSON Lines line: one grain of at most MAX_BLOB bytes, written with every byte
# escaped (a control character as \u0001 in JSON) and base64 for bytes.
MAX_LINE = 8 * MAX_BLOB


def bounded_lines(stream: IO[bytes], limit: int = MAX_LINE) -> Iterator[bytes]:
    """The lines of a stream, none read past ``limit`` + 1 bytes: a longer line
    is given cut there (for the reader to refuse), then skipped to its end."""
    while line := stream.readline(limit + 1):
        if len(line) > limit and not line.endswith(b"\n"):
            while (rest := stream.readline(limit)) and not rest.endswith(b"\n"):
                pass
        yield line
