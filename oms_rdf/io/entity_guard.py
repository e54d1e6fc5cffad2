"""A guard on RDF/XML sources: only flat, short DTD entities, their expansion bounded.

pyoxigraph expands the entities a DTD declares, nested ones included (a 1.3 KB
"billion laughs" file became a 10-million-character literal), so an RDF/XML
source is read through :class:`EntityGuard`, which refuses any other DTD before
the parser sees it.
"""

from __future__ import annotations

import io as _io
from typing import Any

from ..errors import DecodeError, ErrorCode

__all__ = ["ENTITY_VALUE_LIMIT", "EXPANSION_LIMIT", "EntityGuard"]

ENTITY_VALUE_LIMIT = 1024
"""The longest replacement text an RDF/XML entity may have (bytes)."""
EXPANSION_LIMIT = 1 << 20
"""What RDF/XML entity references may add to a document: this many bytes, plus
four times the bytes of the document read so far."""
_PROLOG_LIMIT = 1 << 20  # the XML declaration, comments and the DOCTYPE, at most
_WS = b" \t\r\n"
_RULE = (
    "a DOCTYPE may declare only entities of short text that refers to no other "
    "entity, before the root element"
)


class _MoreNeededError(Exception):
    """The prolog goes on past the bytes read so far."""


class EntityGuard(_io.RawIOBase):
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

    def refusal(self, why: str, line: int, advice: str = "") -> DecodeError:
        """The error that refuses the source: ``why``, at ``line``, and the rule."""
        rule = advice or _RULE
        return DecodeError(
            f"RDF/XML with {why}; {rule}", code=ErrorCode.CORRUPT, path=f"line {line}"
        )

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
                    raise self.refusal(
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
                raise self.refusal("a DOCTYPE after the prolog", line)
            at = lowered.find(b"<!doctype", at + 1)
        for reference, size in self.entities.items():
            count = seen.count(reference) - self.tail.count(reference)
            self.expanded += count * size
        self.position += len(data)
        if self.expanded > EXPANSION_LIMIT + 4 * self.position:
            raise self.refusal(
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

    def __init__(self, data: bytes, eof: bool, guard: EntityGuard) -> None:
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
                    raise self.guard.refusal("a second DOCTYPE", self._line(i))
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
                    raise self.guard.refusal(
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
                raise self.guard.refusal("a parameter-entity reference", self._line(i))
            elif data.startswith(b"<!", i):  # ELEMENT, ATTLIST, NOTATION: unused
                end = self._markup(i + 2)
                if end < 0:
                    raise self.guard.refusal(
                        "a '[' inside a DTD declaration", self._line(i)
                    )
                i = end
            else:
                raise self.guard.refusal("a DTD it cannot read", self._line(i))

    def _entity(self, i: int) -> int:
        data, line = self.data, self._line(i)
        j = self._space(i)
        if j >= len(data):
            raise _MoreNeededError
        if data[j] == ord("%"):
            raise self.guard.refusal("a parameter entity", line)
        k = j
        while k < len(data) and data[k] not in _WS and data[k] not in b"\"'>":
            k += 1
        name = data[j:k]
        k = self._space(k)
        if k >= len(data):
            raise _MoreNeededError
        if data[k] not in b"\"'":
            raise self.guard.refusal(
                f"an external entity {name.decode(errors='replace')!r}", line
            )
        end = data.find(data[k : k + 1], k + 1)
        if end < 0:
            raise _MoreNeededError
        value = data[k + 1 : end]
        shown = name.decode(errors="replace")
        if any(c in value for c in b"&%<"):
            raise self.guard.refusal(
                f"an entity {shown!r} whose text refers to other entities or holds markup",
                line,
            )
        if len(value) > ENTITY_VALUE_LIMIT:
            raise self.guard.refusal(
                f"an entity {shown!r} of {len(value)} bytes (at most {ENTITY_VALUE_LIMIT})",
                line,
            )
        close = self._space(end + 1)
        if close >= len(data):
            raise _MoreNeededError
        if data[close] != ord(">"):
            raise self.guard.refusal(f"an entity {shown!r} it cannot read", line)
        reference = b"&" + name + b";"
        sizes = self.guard.entities
        sizes[reference] = max(sizes.get(reference, 0), len(value))
        return close + 1
