"""Formats, import reports, and the streams import and export share."""

from __future__ import annotations

import base64
import io as _io
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, cast, get_args

import pyoxigraph as ox

from ..errors import DecodeError, ErrorCode, OmsError, SchemaError, StoreError
from ..grain import Grain
from ..mapping import (
    Row,
    expected_header,
)
from ..schema import INDEX_FIELDS

Format = Literal[
    "trig",
    "nquads",
    "turtle",
    "ntriples",
    "jsonld",
    "rdfxml",
    "turtle12",
    "trig12",
    "mg",
    "jsonl",
]


FORMATS: tuple[str, ...] = get_args(Format)


_BY_SUFFIX = {
    ".trig": "trig", ".nq": "nquads", ".nquads": "nquads", ".ttl": "turtle", ".nt": "ntriples",
    ".jsonld": "jsonld", ".mg": "mg", ".jsonl": "jsonl", ".ndjson": "jsonl",
    ".rdf": "rdfxml", ".owl": "rdfxml", ".xml": "rdfxml",
}  # fmt: skip


_RDF_FORMATS = {
    "trig": ox.RdfFormat.TRIG, "nquads": ox.RdfFormat.N_QUADS, "turtle": ox.RdfFormat.TURTLE,
    "ntriples": ox.RdfFormat.N_TRIPLES, "jsonld": ox.RdfFormat.JSON_LD,
    "rdfxml": ox.RdfFormat.RDF_XML,
    "turtle12": ox.RdfFormat.TURTLE, "trig12": ox.RdfFormat.TRIG,
}  # fmt: skip


PREFIXES = {
    "oms": "https://w3id.org/oms-rdf/ns#",
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "prov": "http://www.w3.org/ns/prov#",
}


# Declared in plain knowledge exports: the vocabularies most RDF users share.
TURTLE_PREFIXES = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "owl": "http://www.w3.org/2002/07/owl#",
}


Source = str | os.PathLike[str] | IO[bytes]


Progress = Callable[[int], object] | None


def format_for(path: str | os.PathLike[str], given: str | None = None) -> str:
    """Return the format named, or the one a file name's suffix implies."""
    if given is not None:
        if given not in FORMATS:
            raise SchemaError(
                f"unknown format {given!r}; one of {', '.join(FORMATS)}",
                code=ErrorCode.SCHEMA,
            )
        return given
    suffix = Path(path).suffix.lower()
    if suffix not in _BY_SUFFIX:
        raise SchemaError(
            f"cannot tell the format of {path}; give one of {', '.join(FORMATS)}",
            code=ErrorCode.SCHEMA,
        )
    return _BY_SUFFIX[suffix]


@dataclass
class ImportReport:
    """What an import did: grains added, triples already believed, records skipped."""

    added: int = 0
    believed: int = 0  # adopted triples the namespace already believed
    quads: int = 0  # quads of the grains written (the audit event not counted)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why)


_VERIFICATION_OUT = {
    "verified": "verified",
    "disputed": "disputed",
    "contradicted": "contested",
}


_VERIFICATION_IN = {"verified": "verified", "disputed": "disputed", "contested": "contradicted",
                    "contradicted": "contradicted", "unverified": "unverified"}  # fmt: skip


VOIDED_KEY = (
    "oms_rdf:voided"  # our extension: when a grain was retracted or contradicted
)


def _json_bytes(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$base64": base64.b64encode(value).decode()}
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _json_object(pairs: list[tuple[str, Any]]) -> Any:
    if len(pairs) == 1 and pairs[0][0] == "$base64" and isinstance(pairs[0][1], str):
        return base64.b64decode(pairs[0][1])
    return dict(pairs)


INDEX_KEY = "$index"  # a JSON line's index state, in the .mg manifest's shape


def loads_json_grain(text: str) -> tuple[Any, dict[str, Any] | None]:
    """Read one grain written by :func:`dumps_jsonl`: its fields or blob, and index state.

    ``{"$base64": ...}`` values become bytes and ``{"$blob": ...}`` the blob itself;
    this is the one reader of the format (the CLI's ``put`` uses it too).

    Raises:
        DecodeError: ERR_CORRUPT for text that is not JSON, or a malformed
            ``$blob`` or ``$index``.
    """
    try:
        value = json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError as exc:
        raise DecodeError(f"not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, dict):
        return value, None
    index = value.pop(INDEX_KEY, None)
    if index is not None and not isinstance(index, dict):
        raise DecodeError(f"{INDEX_KEY} must be a JSON object, not {index!r}")
    for key in ("$blob", "$envelope"):  # a blob, or a signed grain's COSE_Sign1
        if set(value) == {key}:
            data = value[key]
            try:
                return base64.b64decode(data, validate=True), index
            except (TypeError, ValueError):
                raise DecodeError(f"{key} must be base64 text, not {data!r}") from None
    return value, index


def dumps_jsonl(
    grain: Grain, index: Mapping[str, Any] | None = None, envelope: bytes | None = None
) -> str:
    """Return a grain as one JSON line with full names; bytes as ``{"$base64": ...}``.

    A grain whose header the fields do not determine (an application type byte, a
    foreign writer's header hints), or that carries index-layer fields a foreign
    writer put in its blob, is written as ``{"$blob": "<base64>"}`` so that
    its bytes, and so its address, survive. A signed grain is written as its
    COSE_Sign1 envelope, ``{"$envelope": "<base64>"}``, so that it comes back
    signed and verified. ``index`` (the grain's index state as a ``.mg`` manifest
    entry) goes under ``"$index"``, so an import brings nothing back as current
    that was not.
    """
    line: dict[str, Any]
    if envelope is not None:
        line = {"$envelope": base64.b64encode(envelope).decode()}
    elif (
        expected_header(grain) != grain.blob[:9]
        or INDEX_FIELDS.keys() & grain.fields.keys()
    ):
        line = {"$blob": base64.b64encode(grain.blob).decode()}
    else:
        line = dict(grain.fields)
    if index:
        line[INDEX_KEY] = dict(index)
    return json.dumps(
        line, ensure_ascii=False, separators=(",", ":"), default=_json_bytes
    )


Item = Row | ox.Quad  # grain sources build rows; RDF sources pass parsed quads on


def _row_of(quad: ox.Quad) -> Row:
    g = "" if isinstance(quad.graph_name, ox.DefaultGraph) else str(quad.graph_name)
    return str(quad.subject), str(quad.predicate), str(quad.object), g


@contextmanager
def _reopenable(src: Source) -> Iterator[tuple[Callable[[], IO[bytes]], int]]:
    """Yield a function that opens the source afresh (imports read it twice), and its size."""
    if hasattr(src, "read"):
        stream: Any = src
        if stream.seekable():
            start = stream.tell()
            size = stream.seek(0, os.SEEK_END) - start
            stream.seek(start)

            def rewind() -> IO[bytes]:
                stream.seek(start)
                return cast(IO[bytes], _Unclosed(stream))

            yield rewind, size
            return
        with tempfile.TemporaryFile() as spool:  # a pipe: keep a copy to read again
            while chunk := stream.read(1 << 20):
                spool.write(chunk)

            def respool() -> IO[bytes]:
                spool.seek(0)
                return cast(IO[bytes], _Unclosed(spool))

            yield respool, spool.tell()
        return
    path = Path(src)
    if not path.exists():
        raise StoreError(f"no such file: {path}", code=ErrorCode.NOT_FOUND)
    yield (lambda: open(path, "rb")), path.stat().st_size


class _Unclosed(_io.RawIOBase):
    """A view of a caller's stream that the importer may close without closing it."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.stream.read(len(buffer))
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


def _fail_or_skip(report: ImportReport, skip: bool, where: str, exc: OmsError) -> None:
    if not skip:
        raise type(exc)(
            f"{where}: {exc.message}",
            code=exc.code,
            path=where if exc.path is None else f"{where} {exc.path}",
        ) from exc
    report.skipped.append((where, str(exc)))


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


def _text(term: Any) -> str:
    """The lexical value of an IRI, blank node or literal term."""
    return str(term.value)
