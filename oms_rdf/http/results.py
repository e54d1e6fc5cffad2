"""Query answers as bytes in the media type a client accepts, read on the thread
that made them and stopped between rows when their time runs out.

>>> negotiate("text/csv;q=0.5, application/sparql-results+json", RESULT_TYPES["solutions"])
'application/sparql-results+json'
>>> serialize_results(True, "*/*")
(b'{"head": {}, "boolean": true}', 'application/sparql-results+json')
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import pyoxigraph as ox

from ..errors import QueryError
from ..rdf.results import NOT_XML, SOLUTION_TYPES, write_boolean, write_solutions
from ..store import GrainStore, Solutions, Triples, time_limit

__all__ = [
    "RDF_FORMATS",
    "RESULT_TYPES",
    "ROWS_PER_CHECK",
    "QueryRequest",
    "QueryResult",
    "Rows",
    "negotiate",
    "polled",
    "rdf_bytes",
    "run_query",
    "serialize_results",
]

QueryResult = bool | Solutions | Triples  # what GrainStore.query answers
Row = TypeVar("Row", covariant=True)
Item = TypeVar("Item")


class Rows(Protocol[Row]):
    """An answer's rows (or triples), read once, let go of with ``close``."""

    def __iter__(self) -> Iterator[Row]: ...

    def close(self) -> None: ...


# Media types by answer kind, the first being the default.
RESULT_TYPES = {
    "solutions": SOLUTION_TYPES,
    # RDF/XML is what SPARQLWrapper and rdflib's SPARQLStore ask for by default.
    "graph": (
        "text/turtle",
        "application/n-triples",
        "application/ld+json",
        "application/rdf+xml",
    ),
}
RDF_FORMATS = {
    "text/turtle": ox.RdfFormat.TURTLE,
    "application/n-triples": ox.RdfFormat.N_TRIPLES,
    "application/ld+json": ox.RdfFormat.JSON_LD,
    "application/rdf+xml": ox.RdfFormat.RDF_XML,
}
ROWS_PER_CHECK = 64  # rows read between two looks at the query's time limit
# What clients (and other stores) take the results formats to be, offered after
# them: a wildcard still gets the default.
_ALIASES = {
    "application/json": "application/sparql-results+json",
    "application/xml": "application/sparql-results+xml",
}


def negotiate(accept: str, offered: Iterable[str]) -> str | None:
    """Return the offered type the Accept header prefers most, or None when it
    accepts none of them.

    Each offered type takes the quality of the most specific range that matches
    it (``text/csv`` over ``text/*`` over ``*/*``; RFC 9110 §12.5.1), so
    ``q=0`` refuses a type a wildcard would take. Ties go to the range written
    first, then to the order offered. Media types are matched case-insensitively.
    """
    ranges: list[tuple[str, float, int]] = []
    for position, part in enumerate(accept.split(",")):
        fields = [f.strip() for f in part.split(";")]
        quality = 1.0
        for field in fields[1:]:
            if field.lower().startswith("q="):
                try:
                    quality = float(field[2:])
                except ValueError:
                    quality = 0.0
        if fields[0]:
            ranges.append((fields[0].lower(), quality, position))
    best: tuple[float, int, int] | None = None
    chosen = None
    for order, media in enumerate(offered):
        major = media.split("/")[0]
        matches = [
            (specificity, quality, position)
            for pattern, quality, position in ranges
            for specificity, form in enumerate(("*/*", f"{major}/*", media))
            if pattern == form
        ]
        if not matches:
            continue
        _specific, quality, position = max(matches, key=lambda m: (m[0], -m[2]))
        rank = (-quality, position, order)
        if quality > 0 and (best is None or rank < best):
            best, chosen = rank, media
    return chosen


def serialize_results(
    result: QueryResult,
    accept: str,
    *,
    check: Callable[[], None] | None = None,
    limit: int | None = None,
) -> tuple[bytes, str]:
    """Return a query result in the media type ``accept`` prefers, and that type.

    ``check`` is called every few rows; what it raises stops the answer (and lets
    go of the result on this thread). ``limit``: at most that many rows (or
    triples), the rest never read.

    Raises:
        QueryError: ERR_QUERY when no type the answer can take is acceptable.
    """
    kind = "graph" if isinstance(result, Triples) else "solutions"
    offered = RESULT_TYPES[kind] if kind == "graph" else (*SOLUTION_TYPES, *_ALIASES)
    media = negotiate(accept, offered)
    media = _ALIASES.get(media, media) if media is not None else None
    if media is None:
        if not isinstance(result, bool):
            result.close()  # pyoxigraph results die on the thread that made them
        raise QueryError(
            f"none of {accept!r} is a type this answer comes in: "
            f"{', '.join(RESULT_TYPES[kind])}",
            path="Accept",  # the request header at fault: HTTP's 406
        )
    if isinstance(result, bool):
        return write_boolean(result, media), media
    check = check or (lambda: None)
    if isinstance(result, Triples):
        return rdf_bytes(polled(result, check, limit), media), media
    names = [v.value for v in result.variables]
    return write_solutions(names, polled(result, check, limit), media), media


def polled(
    result: Rows[Item], check: Callable[[], None], limit: int | None = None
) -> Iterator[Item]:
    """Yield the rows of ``result`` (at most ``limit``), calling ``check`` every
    few; the result is let go of here, on its own thread, however the reading
    ends."""
    rows = iter(result)
    try:
        for n, row in enumerate(rows):
            if n == limit:
                break
            if n % ROWS_PER_CHECK == 0:
                check()
            yield row
    finally:
        if isinstance(rows, Generator):
            rows.close()
        result.close()
        del rows, result


def rdf_bytes(triples: Iterable[ox.Triple], media: str) -> bytes:
    """Return ``triples`` serialized in the RDF media type ``media``.

    Raises:
        QueryError: ERR_QUERY (a 406) for RDF/XML of what XML cannot write.
    """
    out = io.BytesIO()
    fmt = RDF_FORMATS[media]
    ox.serialize(
        map(_xml_safe, triples) if fmt == _RDF_XML else triples, out, format=fmt
    )
    return out.getvalue()


_RDF_XML = ox.RdfFormat.RDF_XML
# RDF/XML writes a predicate as a qualified name: its IRI must end in an XML
# name (a letter or _, then letters, digits, _, - and .), and its text must be
# characters XML 1.0 carries.
_XML_LOCAL_NAME = re.compile(r"[^\W\d][\w.\-]*\Z")


def _xml_safe(triple: ox.Triple) -> ox.Triple:
    """A triple RDF/XML can write, checked: pyoxigraph writes the others as XML
    that no parser reads, and says nothing.

    Raises:
        QueryError: ERR_QUERY naming what cannot be written, at path Accept.
    """
    predicate, obj = triple.predicate.value, triple.object
    if _XML_LOCAL_NAME.search(predicate) is None:
        why = f"the predicate <{predicate}> does not end in an XML name"
    elif isinstance(obj, ox.Literal) and NOT_XML.search(obj.value):
        why = "a literal holds a control character that XML 1.0 cannot carry"
    else:
        return triple
    raise QueryError(
        f"RDF/XML cannot write this answer: {why}; ask for Turtle (text/turtle), "
        "N-Triples or JSON-LD instead",
        path="Accept",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryRequest:
    """One SPARQL query as the endpoint evaluates it (plain values only, so that
    a query worker is sent it as JSON)."""

    text: str
    accept: str = "*/*"  # the request's Accept header
    valid_at: int | None = None
    as_of: int | None = None
    # Ranges (start, end), epoch ms, None: open; a range question when either is given.
    valid_during: Sequence[int | None] | None = None
    system_during: Sequence[int | None] | None = None
    namespaces: Sequence[str] | None = None  # the token's; None: every one
    default_graph_uris: list[str] | None = None
    named_graph_uris: list[str] | None = None
    limit: int | None = None  # the most rows (or triples) answered
    timeout: float | None = None  # seconds a server backend is given for it
    # Characters the server put before the caller's text on its first line (a
    # BASE): taken off the columns its syntax errors give.
    added: int = 0


def run_query(
    store: GrainStore, asked: QueryRequest, check: Callable[[], None] = lambda: None
) -> tuple[bytes, str]:
    """Evaluate ``asked`` over ``store``; return its answer's bytes and media type.

    The one place a SPARQL endpoint query is evaluated: on a thread of the query
    lane, or in a query worker; ``check`` raises once the request's time is up
    (called between rows). A query sent to a server is given ``asked.timeout``
    (:func:`~oms_rdf.store.time_limit`): the request is aborted at it.

    Raises:
        QueryError: ERR_QUERY for a query the parser refuses, or an answer no
            accepted type can carry.
    """
    check()
    with time_limit(asked.timeout):
        try:
            result = store.query(
                asked.text,
                valid_at=asked.valid_at,
                as_of=asked.as_of,
                valid_during=_span(asked.valid_during),
                system_during=_span(asked.system_during),
                namespace=asked.namespaces,
                default_graph_uris=asked.default_graph_uris,
                named_graph_uris=asked.named_graph_uris,
            )
        except QueryError as exc:
            raise _in_callers_text(exc, asked.added) from None
    return serialize_results(result, asked.accept, check=check, limit=asked.limit)


def _span(span: Sequence[int | None] | None) -> tuple[int | None, int | None] | None:
    """A range as the store takes it (a worker is sent it as a JSON list)."""
    return None if span is None else (span[0], span[1])


def _in_callers_text(exc: QueryError, added: int) -> QueryError:
    """A syntax error with its column on line 1 counted in the caller's text."""
    found = _FIRST_LINE_ERROR.search(exc.message)
    if not added or found is None or int(found.group(1)) <= added:
        return exc
    column = int(found.group(1)) - added
    message = _FIRST_LINE_ERROR.sub(f"error at 1:{column}:", exc.message, count=1)
    return QueryError(message, code=exc.code, path=exc.path)


_FIRST_LINE_ERROR = re.compile(r"error at 1:(\d+):")
