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

from ..codec import MAX_BLOB
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
    raw: IO[bytes], fmt: ox.RdfFormat, base_iri: str | None, progress: Progress = None
) -> Iterator[ox.Quad]:
    """Stream the quads of a source; a syntax error names its line.

    RDF/XML is read through :class:`_EntityGuard`: pyoxigraph expands the
    entities a DTD declares, nested ones included (a 1.3 KB "billion laughs" file
    became a 10-million-character literal), so only flat, short entities are
    taken, and their expansion is bounded.

    Raises:
        DecodeError: ERR_CORRUPT for malformed input, or RDF/XML whose DTD the
            guard refuses.
    """
    stream: _io.RawIOBase = Counting(raw, progress)
    if fmt == ox.RdfFormat.RDF_XML:
        stream = _EntityGuard(stream)
    try:
        yield from ox.parse(_io.BufferedReader(stream), format=fmt, base_iri=base_iri)
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


ENTITY_VALUE_LIMIT = 1024
"""The longest replacement text an RDF/XML entity may have (bytes)."""
EXPANSION_LIMIT = 1 << 20
"""What RDF/XML entity references may add to a document: this many bytes, plus
four times the bytes of the document read so far."""
_PROLOG_LIMIT = 1 << 20  # the XML declaration, comments and the DOCTYPE, at most
_WS = b" \t\r\n"


class _MoreNeededError(Exception):
    """The prolog goes on past the bytes read so far."""


class _EntityGuard(_io.RawIOBase):
    """An RDF/XML source, refused when its DTD could expand without bound.

    The DOCTYPE before the root element may declare general entities whose text
    holds no reference or markup (``&``, ``%``, ``<``) and is at most
    :data:`ENTITY_VALUE_LIMIT` bytes: the namespace abbreviations OWL tools
    write (``<!ENTITY owl "http://www.w3.org/2002/07/owl#">``). Nothing else is
    taken: nested entities (the "billion laughs"), parameter entities, external
    entities, or a DOCTYPE anywhere after the prolog (pyoxigraph reads one
    anywhere). References are counted as the document streams by, and what
    they expand to may add at most :data:`EXPANSION_LIMIT` plus four times the
    document's size. A refusal is ERR_CORRUPT with the line.
    """

    def __init__(self, raw: _io.RawIOBase) -> None:
        self.raw = raw
        self.entities: dict[bytes, int] = {}  # b"&name;" -> replacement size
        self.head: bytes | None = None  # the prolog, read before anything is given
        self.root = 0  # offset of the root element: a DOCTYPE after it is refused
        self.position = 0  # bytes given to the parser
        self.line = 1  # of the start of what is scanned next
        self.tail = b""  # the end of what was scanned, for matches across reads
        self.expanded = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.head is None:
            self.head = self._prolog()
        if self.head:
            data, self.head = self.head[: len(buffer)], self.head[len(buffer) :]
        else:
            data = self.raw.read(len(buffer)) or b""
        self._scan(data)
        buffer[: len(data)] = data
        return len(data)

    def _refuse(self, why: str, line: int, advice: str = "") -> DecodeError:
        return DecodeError(
            f"RDF/XML with {why}; "
            + (advice or "a DOCTYPE may declare only entities of short text that "
               "refers to no other entity, before the root element"),
            code=ErrorCode.CORRUPT,
            path=f"line {line}",
        )  # fmt: skip

    def _prolog(self) -> bytes:
        """Read up to the root element, taking the DOCTYPE's entity declarations."""
        data, eof = bytearray(), False
        while True:
            goal = len(data) + _CHUNK_PROLOG  # parsed again only every 64 KiB
            while len(data) < goal and not eof:
                chunk = self.raw.read(goal - len(data))
                eof = not chunk
                data += chunk or b""
            try:
                self.root = _Prolog(bytes(data), eof, self).read()
                return bytes(data)
            except _MoreNeededError:
                if eof:  # the parser reports the truncated document
                    self.root = len(data)
                    return bytes(data)
                if len(data) > _PROLOG_LIMIT:
                    raise self._refuse(
                        f"a prolog (XML declaration, comments, DOCTYPE) past "
                        f"{_PROLOG_LIMIT} bytes",
                        1,
                    ) from None

    def _scan(self, data: bytes) -> None:
        """Count the entity references in ``data``; refuse a late DOCTYPE."""
        if not data:
            return
        seen = self.tail + data
        base = self.position - len(self.tail)  # offset of seen[0]
        lowered = seen.lower()
        at = lowered.find(b"<!doctype")
        while at >= 0:
            if base + at >= self.root:
                line = self.line + seen.count(
                    b"\n", len(self.tail), max(at, len(self.tail))
                )
                raise self._refuse("a DOCTYPE after the prolog", line)
            at = lowered.find(b"<!doctype", at + 1)
        for reference, size in self.entities.items():
            count = seen.count(reference) - self.tail.count(reference)
            self.expanded += count * size
        self.position += len(data)
        if self.expanded > EXPANSION_LIMIT + 4 * self.position:
            raise self._refuse(
                f"entity references that expand to {self.expanded} bytes by here, "
                f"in {self.position} bytes of document",
                self.line + data.count(b"\n"),
                f"entities may add at most {EXPANSION_LIMIT} bytes and four times "
                "the document's size",
            )
        self.line += data.count(b"\n")
        # Kept for the next read: a match may run across the two.
        self.tail = seen[-max([9, *map(len, self.entities)]) :]


_CHUNK_PROLOG = 64 << 10


class _Prolog:
    """A parse of an XML prolog; raises :class:`_MoreNeededError` when it runs past ``data``."""

    def __init__(self, data: bytes, eof: bool, guard: _EntityGuard) -> None:
        self.data, self.eof, self.guard = data, eof, guard

    def read(self) -> int:
        """Take the prolog's DOCTYPE; return the offset of the root element."""
        data, i = self.data, 0
        if data.startswith(b"\xef\xbb\xbf"):
            i = 3
        doctype = False
        while True:
            i = self._space(i)
            if len(data) - i < 9 and not self.eof:
                raise _MoreNeededError
            if data.startswith(b"<?", i):
                i = self._past(b"?>", i + 2)
            elif data.startswith(b"<!--", i):
                i = self._past(b"-->", i + 4)
            elif data[i : i + 9].lower() == b"<!doctype":
                if doctype:
                    raise self.guard._refuse("a second DOCTYPE", self._line(i))
                doctype = True
                i = self._doctype(i + 9)
            else:
                return i  # the root element, or what the parser will refuse

    def _line(self, i: int) -> int:
        return self.data.count(b"\n", 0, i) + 1

    def _space(self, i: int) -> int:
        while i < len(self.data) and self.data[i] in _WS:
            i += 1
        return i

    def _past(self, end: bytes, i: int) -> int:
        at = self.data.find(end, i)
        if at < 0:
            raise _MoreNeededError
        return at + len(end)

    def _markup(self, i: int) -> int:
        """The offset after the ``>`` that ends a declaration (quotes skipped)."""
        quote = 0
        while i < len(self.data):
            c = self.data[i]
            if quote:
                quote = 0 if c == quote else quote
            elif c in b"\"'":
                quote = c
            elif c == ord("["):
                return -i - 1  # an internal subset opens here
            elif c == ord(">"):
                return i + 1
            i += 1
        raise _MoreNeededError

    def _doctype(self, i: int) -> int:
        end = self._markup(i)
        if end > 0:
            return end  # no internal subset (an external one is never read)
        i = -end
        data = self.data
        while True:
            i = self._space(i)
            if len(data) - i < 9 and not self.eof:
                raise _MoreNeededError  # "<!ENTITY " or "<!--" may be cut
            if i >= len(data):
                raise _MoreNeededError
            if data[i] == ord("]"):
                j = self._space(i + 1)
                if j >= len(data):
                    raise _MoreNeededError
                if data[j] != ord(">"):
                    raise self.guard._refuse(
                        "a DOCTYPE not closed by ]>", self._line(j)
                    )
                return j + 1
            if data.startswith(b"<!--", i):
                i = self._past(b"-->", i + 4)
            elif data.startswith(b"<?", i):
                i = self._past(b"?>", i + 2)
            elif data[i : i + 8].lower() == b"<!entity":
                i = self._entity(i + 8)
            elif data[i] == ord("%"):
                raise self.guard._refuse("a parameter-entity reference", self._line(i))
            elif data.startswith(b"<!", i):  # ELEMENT, ATTLIST, NOTATION: unused
                end = self._markup(i + 2)
                if end < 0:
                    raise self.guard._refuse(
                        "a '[' inside a DTD declaration", self._line(i)
                    )
                i = end
            else:
                raise self.guard._refuse("a DTD it cannot read", self._line(i))

    def _entity(self, i: int) -> int:
        data, line = self.data, self._line(i)
        j = self._space(i)
        if j >= len(data):
            raise _MoreNeededError
        if data[j] == ord("%"):
            raise self.guard._refuse("a parameter entity", line)
        k = j
        while k < len(data) and data[k] not in _WS and data[k] not in b"\"'>":
            k += 1
        name = data[j:k]
        k = self._space(k)
        if k >= len(data):
            raise _MoreNeededError
        if data[k] not in b"\"'":
            raise self.guard._refuse(
                f"an external entity {name.decode(errors='replace')!r}", line
            )
        end = data.find(data[k : k + 1], k + 1)
        if end < 0:
            raise _MoreNeededError
        value = data[k + 1 : end]
        shown = name.decode(errors="replace")
        if any(c in value for c in b"&%<"):
            raise self.guard._refuse(
                f"an entity {shown!r} whose text refers to other entities or holds markup",
                line,
            )
        if len(value) > ENTITY_VALUE_LIMIT:
            raise self.guard._refuse(
                f"an entity {shown!r} of {len(value)} bytes (at most {ENTITY_VALUE_LIMIT})",
                line,
            )
        close = self._space(end + 1)
        if close >= len(data):
            raise _MoreNeededError
        if data[close] != ord(">"):
            raise self.guard._refuse(f"an entity {shown!r} it cannot read", line)
        reference = b"&" + name + b";"
        sizes = self.guard.entities
        sizes[reference] = max(sizes.get(reference, 0), len(value))
        return close + 1


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
