"""The knowledge layer as SPARQL sees it: the dataset of now, and bi-temporal snapshots.

By default a query runs over the plain triples the store believes now: the default
graph is ``oms:current`` and the named graphs are those of adopted datasets, so
SPARQL written against the user's own vocabulary works unchanged. The knowledge of
one (valid time, system time) point has the semantics of :meth:`GrainStore.beliefs`:
a query of it is rewritten onto the grain layer (:mod:`.rewrite`), or, where SPARQL
cannot say it so, run over that knowledge built from the grains in force. A
:class:`Snapshot` is that knowledge as a dataset of its own, with exact terms.

Stored blank nodes are skolem IRIs (see :mod:`oms_rdf.rdf.terms`); every answer gives
them back as blank nodes.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import IO, TYPE_CHECKING, Any

import pyoxigraph as ox

from ..errors import ErrorCode, QueryError, StoreError
from ..rdf.limits import CACHED_TEXT_CHARS
from ..rdf.results import media_type, term_text, write_solutions
from ..rdf.tables import SHOWN, frame, html_table, query_prefixes
from ..rdf.terms import GENID, unskolem
from ..rdf.vocab import OMS

if TYPE_CHECKING:  # pandas is optional
    import pandas

__all__ = [
    "COMMON_PREFIXES",
    "PREFIXES",
    "RESERVED_GRAPHS",
    "QueryResult",
    "QueryRow",
    "Snapshot",
    "Solutions",
    "Triples",
    "read_whole",
    "run_query",
]

# The graphs only the store writes (design §3, "Reserved graphs").
RESERVED_GRAPHS = frozenset({OMS.blobs, OMS.index, OMS.current, OMS.audit})

# Prefixes every query may use without declaring them (its own declarations win).
PREFIXES = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "prov": "http://www.w3.org/ns/prov#",
    "oms": "https://w3id.org/oms-rdf/ns#",
}

# Vocabularies people query with, beside the store's own: what the explorer
# completes and a notebook's titles shorten without being told.
COMMON_PREFIXES = {
    "schema": "http://schema.org/",
    "foaf": "http://xmlns.com/foaf/0.1/",
    "skos": "http://www.w3.org/2004/02/skos/core#",
    "dcterms": "http://purl.org/dc/terms/",
    "dc": "http://purl.org/dc/elements/1.1/",
    "sh": "http://www.w3.org/ns/shacl#",
    "void": "http://rdfs.org/ns/void#",
    "dcat": "http://www.w3.org/ns/dcat#",
    "time": "http://www.w3.org/2006/time#",
    "geo": "http://www.opengis.net/ont/geosparql#",
}


class QueryRow:
    """One solution of a SELECT: terms by variable name, position or ``Variable``.

    Unbound variables read as None, as in pyoxigraph.
    """

    __slots__ = ("_index", "_values")

    def __init__(self, index: Mapping[str, int], values: Any) -> None:
        # values: the terms in the variables' order, a tuple or the engine's row
        self._index = index
        self._values = values

    def __getitem__(self, key: str | int | ox.Variable) -> Any:
        position = self._index.get(key)  # type: ignore[arg-type]
        if position is not None:  # a name: the common case, one lookup
            return self._values[position]
        if isinstance(key, int):  # as a tuple does, for an engine's row too
            return self._values[range(len(self._values))[key]]
        name = key.value if isinstance(key, ox.Variable) else key
        try:
            return self._values[self._index[name]]
        except KeyError:
            raise KeyError(f"no variable ?{name} in this result") from None

    def get(self, key: str, default: Any = None) -> Any:
        """Return the term bound to ``key``, or ``default`` when unbound or unknown."""
        position = self._index.get(key)
        value = None if position is None else self._values[position]
        return default if value is None else value

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __reduce__(self) -> tuple[Any, ...]:  # the engine's row does not pickle
        return QueryRow, (dict(self._index), tuple(self._values))

    def __repr__(self) -> str:
        pairs = ", ".join(
            f"{name}={self._values[i]}" for name, i in self._index.items()
        )
        return f"<QueryRow {pairs}>"


# The answers still holding the engine's result, by the store that gave them: an
# on-disk store is not rewritten under them (see open_answers).
_OPEN: weakref.WeakKeyDictionary[Any, weakref.WeakSet[Any]] = (
    weakref.WeakKeyDictionary()
)


def open_answers(target: Any) -> int:
    """How many answers of ``target`` (a backend) are still being read: each
    keeps the engine's store open until it is read to its end or let go."""
    return sum(1 for answer in _OPEN.get(target, ()) if answer.reading)


class Solutions:
    """The rows of a SELECT query, with blank nodes given back.

    Rows stream as they are read. :meth:`rows`, :meth:`frame`, :meth:`serialize`
    and the notebook table read them all once and keep them, so the answer can
    then be read again.
    """

    def __init__(
        self,
        solutions: Any,
        prefixes: Mapping[str, str] | None = None,
        *,
        as_stored: bool = False,
    ) -> None:
        self._solutions: Any = solutions
        self._as_stored = as_stored  # no stored blank node to give back
        self.variables: list[ox.Variable] = list(solutions.variables)
        self._index = {v.value: i for i, v in enumerate(self.variables)}
        self._kept: list[QueryRow] | None = None
        self._prefixes = dict(prefixes or {})

    def __iter__(self) -> Iterator[QueryRow]:
        if self._kept is not None:
            yield from self._kept
            return
        index = self._index
        with _evaluating():
            if self._as_stored:  # the engine's row: its terms made when read
                for row in self._solutions or ():
                    yield QueryRow(index, row)
            else:
                for row in self._solutions or ():
                    yield QueryRow(index, tuple(map(unskolem, row)))
        self._solutions = None  # read to its end: the engine's result goes

    @property
    def reading(self) -> bool:
        """Whether the engine's result is still held (not read to its end)."""
        return self._solutions is not None

    def rows(self) -> list[QueryRow]:
        """Every row, read once and kept."""
        if self._kept is None:
            self._kept = list(self)
            self._solutions = None
        return self._kept

    def frame(self, *, compact: bool = False) -> pandas.DataFrame:
        """The rows as a pandas DataFrame with typed columns (:mod:`oms_rdf.rdf.tables`).

        With ``compact``, IRIs are written ``prefix:local`` with the query's own
        ``PREFIX`` declarations and the prefixes every query may use.
        """
        names = [v.value for v in self.variables]
        return frame(names, self.rows(), self._prefixes if compact else None)

    def serialize(
        self, output: IO[bytes] | None = None, format: str = "json"
    ) -> bytes | None:
        """Write the rows as SPARQL results: ``json``, ``xml``, ``csv`` or ``tsv``.

        Returns the bytes when no ``output`` is given.
        """
        body = write_solutions(
            [v.value for v in self.variables], self.rows(), media_type(format)
        )
        if output is None:
            return body
        output.write(body)
        return None

    def _repr_html_(self) -> str:
        names = [v.value for v in self.variables]
        rows = self.rows()
        cells = [[term_text(t) for t in row] for row in rows[:SHOWN]]
        return html_table(names, cells, total=len(rows))

    def close(self) -> None:
        """Let go of the underlying pyoxigraph result (it must die on its thread)."""
        self._solutions = None


class Triples:
    """The triples a CONSTRUCT or DESCRIBE query builds, with blank nodes given back.

    Iterating streams them (once); :meth:`to_rdflib`, :meth:`serialize`,
    :meth:`frame` and the notebook table read them all once and keep them.
    """

    def __init__(self, triples: Iterable[ox.Triple]) -> None:
        self._triples: Iterable[ox.Triple] | None = triples
        self._kept: list[ox.Triple] | None = None

    def __iter__(self) -> Iterator[ox.Triple]:
        if self._kept is not None:
            yield from self._kept
            return
        with _evaluating():
            for t in self._triples or ():
                yield ox.Triple(
                    unskolem(t.subject), unskolem(t.predicate), unskolem(t.object)
                )
        self._triples = None  # read to its end: the engine's result goes

    @property
    def reading(self) -> bool:
        """Whether the engine's result is still held (not read to its end)."""
        return self._triples is not None

    def triples(self) -> list[ox.Triple]:
        """Every triple, read once and kept."""
        if self._kept is None:
            self._kept = list(self)
            self._triples = None
        return self._kept

    def serialize(
        self,
        output: IO[bytes] | None = None,
        format: ox.RdfFormat = ox.RdfFormat.TURTLE,
    ) -> bytes | None:
        """Write the triples in an RDF format (Turtle by default).

        Returns the bytes when no ``output`` is given.
        """
        return ox.serialize(self.triples(), output, format=format)

    def to_rdflib(self) -> Any:
        """Return the triples as an ``rdflib.Graph`` (a copy)."""
        from ..rdf.bridge import rdflib_graph  # rdflib imported only when asked for

        return rdflib_graph(self.triples())

    def frame(self, *, prefixes: Mapping[str, str] | None = None) -> pandas.DataFrame:
        """The triples as a DataFrame of ``subject``, ``predicate`` and ``object``."""
        rows = [(t.subject, t.predicate, t.object) for t in self.triples()]
        return frame(["subject", "predicate", "object"], rows, prefixes)

    def _repr_html_(self) -> str:
        kept = self.triples()
        cells = [
            [term_text(t.subject), term_text(t.predicate), term_text(t.object)]
            for t in kept[:SHOWN]
        ]
        return html_table(["subject", "predicate", "object"], cells, total=len(kept))

    def close(self) -> None:
        """Let go of the underlying pyoxigraph result (it must die on its thread)."""
        self._triples = None


QueryResult = Solutions | bool | Triples


@contextmanager
def _evaluating() -> Iterator[None]:
    """Results are computed as they are read: their failures become ours too."""
    try:
        yield
    except RuntimeError as exc:
        raise _query_error(exc) from None
    except (OSError, ValueError) as exc:
        raise StoreError(
            f"SPARQL evaluation failed: {exc}", code=ErrorCode.STORE
        ) from exc


def check_valid(sparql: str, substitutions: Mapping[Any, Any]) -> None:
    """Raise the query's own faults (its syntax, a binding it does not project)
    as :func:`run_query` words them, by asking it of an empty store: before it is
    rewritten, so that they are those of the text written. A query found valid
    with the same bindings is not asked again.

    Raises:
        QueryError: ERR_QUERY for a malformed query, with its line and column.
    """
    if len(sparql) > CACHED_TEXT_CHARS:
        run_query(ox.Store(), sparql, substitutions)
        return
    try:
        _checked(sparql, tuple(substitutions.items()))
    except TypeError:  # a binding that cannot be a key: ask it anyway
        run_query(ox.Store(), sparql, substitutions)


@lru_cache(maxsize=256)
def _checked(sparql: str, substitutions: tuple[tuple[Any, Any], ...]) -> None:
    run_query(ox.Store(), sparql, dict(substitutions))


def read_whole(answer: QueryResult) -> QueryResult:
    """The answer with every row or triple read, kept to be read again."""
    if isinstance(answer, Solutions):
        answer.rows()
    elif isinstance(answer, Triples):
        answer.triples()
    return answer


def run_query(
    target: Any,
    sparql: str,
    substitutions: Mapping[str | ox.Variable, Any] | None = None,
    *,
    as_stored: bool = False,
    **dataset: Any,
) -> QueryResult:
    """Run a query on a pyoxigraph store (or backend) and give plain results back.

    ``as_stored``: the target holds no skolem IRI, so the rows of a SELECT are
    given as the engine reads them, not looked through for blank nodes.

    Raises:
        QueryError: ERR_QUERY for a malformed query, with its line and column.
    """
    bound = {
        (k if isinstance(k, ox.Variable) else ox.Variable(k)): v
        for k, v in (substitutions or {}).items()
    }
    try:
        result = target.query(sparql, substitutions=bound, prefixes=PREFIXES, **dataset)
    except StoreError as exc:
        cause = exc.__cause__
        if isinstance(cause, SyntaxError | RuntimeError):
            raise _query_error(cause) from None
        raise
    except (SyntaxError, RuntimeError) as exc:
        raise _query_error(exc) from None
    except (OSError, ValueError) as exc:
        raise StoreError(f"SPARQL query failed: {exc}", code=ErrorCode.STORE) from exc
    if isinstance(result, ox.QueryBoolean):
        return bool(result)
    answer: Solutions | Triples
    if isinstance(result, ox.QuerySolutions):
        prefixes = PREFIXES | query_prefixes(sparql)
        answer = Solutions(result, prefixes, as_stored=as_stored)
    elif _DESCRIBE.match(sparql):
        answer = Triples(_described(target, result, dataset.get("default_graph")))
    else:
        answer = Triples(result)
    if not isinstance(target, ox.Store):  # a backend of ours; a bare engine is scratch
        _OPEN.setdefault(target, weakref.WeakSet()).add(answer)
    return answer


# A DESCRIBE query: its prologue (space, comments, PREFIX, BASE), then the keyword.
_DESCRIBE = re.compile(
    r"(?:[\x20\t\r\n]+|\#[^\n\r]*|PREFIX\s+[^\s:]*:\s*<[^>]*>|BASE\s*<[^>]*>)*"
    r"DESCRIBE\b",
    re.IGNORECASE,
)


def _described(target: Any, triples: Any, graphs: Any) -> Iterator[ox.Triple]:
    """A DESCRIBE's triples, and the blank nodes they reach described in turn, as
    the engine describes a blank node (its concise bounded description): a
    stored blank node is a skolem IRI, at which the engine stops. ``graphs``:
    the query's default graph(s); none, the engine's own default graph."""
    if graphs is None:
        graphs = [ox.DefaultGraph()]
    elif not isinstance(graphs, list):
        graphs = [graphs]
    lookup = target.quads_for_pattern if isinstance(target, ox.Store) else target.quads
    given: set[ox.Triple] = set()
    waiting: list[ox.NamedNode] = []
    described: set[ox.NamedNode] = set()

    def add(triple: ox.Triple) -> bool:
        if triple in given:
            return False
        given.add(triple)
        node = triple.object
        if isinstance(node, ox.NamedNode) and node.value.startswith(GENID):
            if node not in described:
                described.add(node)
                waiting.append(node)
        return True

    for triple in triples:
        if add(triple):
            yield triple
    while waiting:
        node = waiting.pop()
        for graph in graphs:
            for quad in list(lookup(node, None, None, graph)):
                triple = ox.Triple(quad.subject, quad.predicate, quad.object)
                if add(triple):
                    yield triple


def _query_error(exc: Exception) -> QueryError:
    """The query's own fault: its syntax, or what it asks (a binding it does not project)."""
    if isinstance(exc, SyntaxError):
        return QueryError(f"not valid SPARQL: {exc}")
    return QueryError(f"the query cannot be answered: {exc}")


class Snapshot:
    """The knowledge of one bi-temporal point (or of now), as an RDF dataset.

    Holds the exact terms the grains record (lexical forms, blank nodes); a
    pyoxigraph store is built on the first query. Iterating gives the quads.
    """

    def __init__(
        self,
        quads: Iterable[ox.Quad],
        *,
        valid_at: int | None = None,
        as_of: int | None = None,
        namespace: str | tuple[str, ...] | None = None,
    ) -> None:
        self.quads: list[ox.Quad] = list(dict.fromkeys(quads))
        self.valid_at, self.as_of, self.namespace = valid_at, as_of, namespace
        self._store: ox.Store | None = None

    def __len__(self) -> int:
        return len(self.quads)

    def __iter__(self) -> Iterator[ox.Quad]:
        return iter(self.quads)

    def __repr__(self) -> str:
        return (
            f"<Snapshot {len(self.quads)} quads valid_at={self.valid_at} "
            f"as_of={self.as_of} namespace={self.namespace!r}>"
        )

    @property
    def store(self) -> ox.Store:
        """The snapshot as a pyoxigraph store (built once, then reused)."""
        if self._store is None:
            self._store = ox.Store()
            self._store.extend(self.quads)
        return self._store

    def query(
        self,
        sparql: str,
        /,
        *,
        substitutions: Mapping[str | ox.Variable, Any] | None = None,
    ) -> QueryResult:
        """Run any SPARQL query over the snapshot (default graph: its plain triples)."""
        return run_query(self.store, sparql, substitutions)

    def serialize(self, output: IO[bytes], format: ox.RdfFormat) -> None:
        """Write the snapshot with its exact terms (triple formats: the default graph)."""
        if format.supports_datasets:
            items: Iterable[Any] = self.quads
        else:
            items = (
                ox.Triple(q.subject, q.predicate, q.object)
                for q in self.quads
                if isinstance(q.graph_name, ox.DefaultGraph)
            )
        ox.serialize(items, output, format=format, prefixes=None)

    def to_rdflib(self) -> Any:
        """Return the snapshot as an ``rdflib.Dataset`` (a copy)."""
        from ..rdf.bridge import rdflib_dataset  # rdflib imported only when asked for

        return rdflib_dataset(self.quads)


def check_dataset_args(grains: bool, timed: bool, namespace: object) -> None:
    """Refuse a query that asks for the raw layout and a snapshot at once."""
    if grains and (timed or namespace is not None):
        raise QueryError(
            "grains=True queries the store as laid out, which already holds every "
            "time and namespace; leave out valid_at, as_of and namespace, or grains",
            code=ErrorCode.QUERY,
        )


def check_held(held: bool, *times: object) -> None:
    """Refuse ``held=True`` beside a time (a point or a range): it is the
    knowledge held now.

    Raises:
        QueryError: ERR_QUERY, naming the range question that asks what was
            held at a past system time whatever its valid time.
    """
    if held and any(t is not None for t in times):
        raise QueryError(
            "expected held=True alone or a time (valid_at, as_of, valid_during, "
            "system_during); found both: "
            "held=True is the knowledge held now, whatever its valid time. For what "
            "the store held at a system time T whatever the valid time, ask "
            "query(q, valid_during=(None, None), as_of=T)",
            code=ErrorCode.QUERY,
        )


def check_range_args(grains: bool, *graph_uris: Sequence[str] | None) -> None:
    """Refuse a range question with ``grains=True`` or a dataset narrowed by
    graph IRIs: a range is asked of the knowledge's own dataset, rewritten
    onto the grain layer, and neither could be honoured there (answering
    without them would answer another question).

    Raises:
        QueryError: ERR_QUERY.
    """
    if grains or any(uris is not None for uris in graph_uris):
        given = "grains=True" if grains else "default_graph_uris or named_graph_uris"
        raise QueryError(
            "expected a range question (valid_during, system_during) over the "
            f"knowledge's own dataset; found {given} beside it: ask the range of "
            "the whole knowledge, or a point (valid_at, as_of) of a narrowed one",
            code=ErrorCode.QUERY,
        )
