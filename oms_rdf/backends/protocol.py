"""A SPARQL 1.1 server as the store's backend (Query, Update, Graph Store Protocol).

``GrainStore(backend=SparqlBackend.oxigraph("http://127.0.0.1:7878"))`` keeps the
store in an Oxigraph server, or in any server that speaks the three standard
protocols (``SparqlBackend(query_url, update_url, store_url)``). The store's logic
is the same: it reaches storage only through the narrow interface of
:class:`oms_rdf.backends.base.Backend`, and this class implements it over HTTP with
pooled connections (httpx):

- ``query`` sends the query with the dataset as protocol parameters and parses the
  answer with pyoxigraph, so the store sees the same result objects as in process;
  bound variables go in as a ``VALUES`` block at the start of the query's ``WHERE``;
- ``update`` is one SPARQL Update request (one transaction on Oxigraph server);
- ``add`` is one ``INSERT DATA``; ``load`` one Graph Store ``POST`` of N-Quads;
- ``quads`` is a ``SELECT`` over the pattern; ``dump`` a Graph Store ``GET``.

A query sent inside :func:`~oms_rdf.backends.deadline.time_limit` (the SPARQL
endpoint and the MCP tool send each within their limit) is aborted at the limit,
however slowly its answer comes, and raises
:class:`~oms_rdf.backends.deadline.QueryTimeoutError` (ERR_QUERY). The standard
protocol cannot tell the server the limit, and Oxigraph server 0.5 evaluates on
after its client has gone (measured: a core's worth of CPU in each second after);
started with ``--timeout-s``, it stops at its own limit and ends its answer with a
message, which raises the same error instead of being read as half an answer.

Several processes may write to one server. ``shared = True`` tells the store so:
each write then re-makes, in its own ``WHERE``, the checks the store made before it
(the grains it changes are still current; the audit chain's head is the one it
links to), so of two clients superseding one grain exactly one wins and the other
gets ERR_CONFLICT.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import IO, Any

import httpx
import pyoxigraph as ox

from ..errors import DecodeError, ErrorCode, StoreError
from ..rdf.sparql import update_request
from .base import grains_query
from .deadline import QueryTimeoutError, remaining

__all__ = ["SparqlBackend"]

_RESULTS = "application/sparql-results+json"
_NQUADS = "application/n-quads"
_CONSTRUCT = "application/n-triples"
_MEDIA = {
    ox.RdfFormat.N_QUADS: _NQUADS,
    ox.RdfFormat.N_TRIPLES: _CONSTRUCT,
    ox.RdfFormat.TRIG: "application/trig",
    ox.RdfFormat.TURTLE: "text/turtle",
}
_ACCEPT = f"{_RESULTS}, {_CONSTRUCT};q=0.9"
# Where a query's WHERE clause opens: its bound variables go in there.
WHERE_OPENS = re.compile(r"\bWHERE\s*\{", re.IGNORECASE)


class SparqlBackend:
    """The store's backend over a SPARQL 1.1 server; see the module docstring."""

    path: Path | None = None  # not a local directory: no bulk loader, no compaction
    shared: bool = True  # other processes write here too: writes re-check themselves
    remote: bool = True  # every call is a round trip: one query rather than lookups
    exact_optionals: bool = True  # a standard server: SPARQL as written
    python_functions: bool = False  # the engine is another process
    intervals: bool = False  # queries run where the data is, never copied here

    def __init__(
        self,
        query_url: str,
        update_url: str | None = None,
        store_url: str | None = None,
        *,
        auth: Any = None,
        timeout: float = 30.0,
        lateral_joins: bool = False,
    ) -> None:
        self.query_url = query_url
        self.update_url = update_url or query_url
        self.store_url = store_url
        self.client = httpx.Client(auth=auth, timeout=timeout)
        self.lateral_joins = lateral_joins  # the server takes Oxigraph's LATERAL

    @classmethod
    def oxigraph(cls, base_url: str, **options: Any) -> SparqlBackend:
        """The layout of Oxigraph server: ``/query``, ``/update`` and ``/store``;
        its engine is pyoxigraph's, LATERAL included."""
        base = base_url.rstrip("/")
        options.setdefault("lateral_joins", True)
        return cls(f"{base}/query", f"{base}/update", f"{base}/store", **options)

    # --- writes -----------------------------------------------------------------

    def add(self, quads: Iterable[ox.Quad]) -> None:
        data = update_request([], list(quads))
        if data:
            self.update(data)

    def update(self, sparql: str) -> None:
        self._send(
            "update",
            self.update_url,
            content=sparql.encode(),
            headers={"content-type": "application/sparql-update"},
        )

    def load(self, data: bytes | IO[bytes] | Path, fmt: ox.RdfFormat) -> None:
        """Load serialised quads in one Graph Store request (one transaction)."""
        if isinstance(data, Path):
            body = data.read_bytes()
        else:
            body = data if isinstance(data, bytes) else data.read()
        if self.store_url is None:  # no Graph Store: the same quads as INSERT DATA
            try:
                quads = list(ox.parse(body, fmt))
            except SyntaxError as exc:
                raise DecodeError(
                    f"load: not valid RDF: {exc}", code=ErrorCode.CORRUPT
                ) from exc
            self.add(quads)
            return
        self._send(
            "load",
            self.store_url,
            content=body,
            headers={"content-type": _MEDIA.get(fmt, _NQUADS)},
        )

    def bulk_load(self, data: bytes | IO[bytes] | Path, fmt: ox.RdfFormat) -> None:
        """The same as :meth:`load`: a server has no faster, non-atomic loader."""
        self.load(data, fmt)

    def load_pieces(self, pieces: Iterable[bytes], fmt: ox.RdfFormat) -> None:
        """The pieces joined, in one :meth:`load` (one request)."""
        self.load(b"".join(pieces), fmt)

    def bulk_writing(self) -> AbstractContextManager[None]:
        """No mark: a server's readers see only its committed transactions."""
        return nullcontext()

    def optimize(self) -> None:
        """Nothing to do: the server compacts its storage itself."""

    def flush(self) -> None:
        """Nothing to do: each request is committed when it is answered."""

    def vacuum(
        self,
        progress: Callable[[int], object] | None = None,
        *,
        reading: Callable[[], int] = lambda: 0,
    ) -> None:
        """Refuse: a server's files are the server's to rewrite.

        Raises:
            StoreError: ERR_STORE always.
        """
        raise StoreError(
            f"this backend cannot be vacuumed: the store at {self.query_url} is a "
            "server's, which rewrites its own files",
            code=ErrorCode.STORE,
        )

    # --- reads ------------------------------------------------------------------

    def grains_query(self, nodes: list[str]) -> str:
        """The standard query (:func:`oms_rdf.backends.base.grains_query`)."""
        return grains_query(nodes)

    def query(
        self,
        sparql: str,
        substitutions: Mapping[ox.Variable, Any] | None = None,
        **dataset: Any,
    ) -> Any:
        text = self._bind(sparql, substitutions or {})
        prefixes = dataset.pop("prefixes", None) or {}
        if prefixes:
            text = (
                "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in prefixes.items()) + text
            )
        response = self._post_query(text, self._dataset_params(dataset))
        kind = response.headers.get("content-type", "").split(";")[0].strip()
        if kind == _CONSTRUCT or kind == "text/turtle":
            fmt = ox.RdfFormat.N_TRIPLES if kind == _CONSTRUCT else ox.RdfFormat.TURTLE
            return iter(
                [
                    ox.Triple(q.subject, q.predicate, q.object)
                    for q in ox.parse(response.content, fmt)
                ]
            )
        return self._results(response.content)

    def _bind(self, sparql: str, substitutions: Mapping[ox.Variable, Any]) -> str:
        """The query with its bound variables given their terms (a VALUES block)."""
        return _bind(sparql, substitutions)

    def _dataset_params(self, dataset: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The Protocol's ``default-graph-uri``/``named-graph-uri`` for a dataset."""
        params: list[tuple[str, str]] = []
        default = dataset.get("default_graph")
        for graph in default if isinstance(default, list | tuple) else [default]:
            if isinstance(graph, ox.NamedNode):
                params.append(("default-graph-uri", graph.value))
        for graph in dataset.get("named_graphs") or ():
            if isinstance(graph, ox.NamedNode):
                params.append(("named-graph-uri", graph.value))
        return params

    def _post_query(self, text: str, params: list[tuple[str, str]]) -> httpx.Response:
        """Send a query (the Protocol's POST of the query itself); its response."""
        return self._send(
            "query",
            self.query_url,
            params=params,
            content=text.encode(),
            headers={"content-type": "application/sparql-query", "accept": _ACCEPT},
        )

    def _results(self, body: bytes) -> Any:
        """Parse a SPARQL JSON results document."""
        return ox.parse_query_results(body, ox.QueryResultsFormat.JSON)

    # Graphs that are the server's, not the store's (none on a standard server).
    hidden_graphs: frozenset[ox.NamedNode] = frozenset()

    def _named_filter(self, variable: str) -> str:
        """A FILTER keeping ``variable`` off the hidden graphs ('' when none)."""
        if not self.hidden_graphs:
            return ""
        return f"FILTER ({variable} NOT IN ({', '.join(map(str, self.hidden_graphs))}))"

    def named_graphs(self) -> Iterator[Any]:
        rows = self.query(
            f"SELECT DISTINCT ?g WHERE {{ GRAPH ?g {{ ?s ?p ?o }} {self._named_filter('?g')} }}"
        )
        return iter([row["g"] for row in rows])

    def quads(
        self, s: Any = None, p: Any = None, o: Any = None, g: Any = None
    ) -> Iterator[ox.Quad]:
        if s is None and p is None and o is None and g is None:
            return self._everything()  # a whole-store read streams (exports)
        return self._select(s, p, o, g)

    def _select(self, s: Any, p: Any, o: Any, g: Any) -> Iterator[ox.Quad]:
        """The quads matching a pattern, read with one SELECT."""
        terms = [_term(t, name) for t, name in ((s, "?s"), (p, "?p"), (o, "?o"))]
        pattern = " ".join(terms)
        if isinstance(g, ox.DefaultGraph):
            where = f"{{ {pattern} }}"
        elif g is None:
            where = (
                f"{{ {pattern} }} UNION "
                f"{{ GRAPH ?g {{ {pattern} }} {self._named_filter('?g')} }}"
            )
        else:
            where = f"GRAPH {_term(g, '?g')} {{ {pattern} }}"
        rows = self.query(f"SELECT ?s ?p ?o ?g {self._extra} WHERE {{ {where} }}")
        found = []
        for row in rows:
            graph = (
                g if g is not None and not isinstance(g, ox.DefaultGraph) else row["g"]
            )
            subject = s if s is not None else row["s"]
            predicate = p if p is not None else row["p"]
            obj = o if o is not None else self._object(row)
            if subject is None or predicate is None or obj is None:
                continue  # a row a server left unbound (Virtuoso, racing a write)
            named = ox.DefaultGraph() if graph is None else graph
            found.append(ox.Quad(subject, predicate, obj, named))
        return iter(found)

    def quads_of(
        self, sparql: str, substitutions: Mapping[ox.Variable, Any] | None = None
    ) -> list[ox.Quad]:
        """The quads named by the ``?g ?p ?o ?graph`` solutions of a query (no
        ``?graph``: the default graph), read with one request; ``#EXACT`` in the
        query's SELECT clause is where the backend may add columns."""
        rows = self.query(sparql.replace("#EXACT", self._extra), substitutions)
        return [
            ox.Quad(r["g"], r["p"], self._object(r), r["graph"] or ox.DefaultGraph())
            for r in rows
        ]

    _extra = ""  # more columns for _object to read

    def _object(self, row: Any) -> Any:
        """The object term of a row read by :meth:`_select`."""
        return row["o"]

    def _everything(self) -> Iterator[ox.Quad]:
        """Every quad: streamed from a Graph Store ``GET`` of the whole dataset."""
        if self.store_url is None:
            return self._select(None, None, None, None)
        return self._streamed(self.store_url)

    def _streamed(self, url: str) -> Iterator[ox.Quad]:
        try:
            with self.client.stream(
                "GET", url, headers={"accept": _NQUADS}
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    raise StoreError(
                        f"reading the store at {url} failed with "
                        f"HTTP {response.status_code}: {response.text[:300]}"
                    )
                body = io.BufferedReader(_Stream(response.iter_bytes()))
                yield from ox.parse(body, ox.RdfFormat.N_QUADS)
        except httpx.HTTPError as exc:
            raise StoreError(f"reading the store at {url} failed: {exc}") from exc

    def dump(self, output: IO[bytes], fmt: ox.RdfFormat, graph: Any = None) -> None:
        quads = self.quads(None, None, None, graph)
        ox.serialize(
            quads
            if fmt.supports_datasets
            else (ox.Triple(q.subject, q.predicate, q.object) for q in quads),
            output,
            fmt,
        )

    def __len__(self) -> int:
        named = f"GRAPH ?g {{ ?s ?p ?o }} {self._named_filter('?g')}"
        rows = self.query(
            f"SELECT (COUNT(*) AS ?n) WHERE {{ {{ ?s ?p ?o }} UNION {{ {named} }} }}"
        )
        return int(next(iter(rows))["n"].value)

    def close(self) -> None:
        self.client.close()

    def _send(self, what: str, url: str, **request: Any) -> httpx.Response:
        left = remaining() if what == "query" else None
        if left is not None:
            return self._checked(what, url, self._send_within(url, left, request))
        try:
            response = self.client.post(url, **request)
        except httpx.HTTPError as exc:
            raise StoreError(f"{what} at {url} failed: {exc}") from exc
        return self._checked(what, url, response)

    def _send_within(
        self, url: str, left: float, request: dict[str, Any]
    ) -> httpx.Response:
        """Send a query that must answer within ``left`` seconds: the server is
        told the limit where it can be (:meth:`_limit_params`), and the request is
        aborted at it, however slowly the answer comes.

        Raises:
            QueryTimeoutError: ERR_QUERY at the limit (or when it had passed).
        """
        if left <= 0:
            raise QueryTimeoutError(
                f"the query was not sent to {url}: its time had run out"
            )
        deadline = time.monotonic() + left
        params = [*request.pop("params", []), *self._limit_params(left)]
        asked = self.client.build_request(
            "POST", url, params=params, timeout=httpx.Timeout(left), **request
        )
        try:
            response = self.client.send(asked, stream=True)
            try:
                chunks = []
                for chunk in response.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("past the limit", request=asked)
            finally:
                response.close()
        except httpx.TimeoutException:
            raise QueryTimeoutError(
                f"the query at {url} ran past its time limit of {left:.3g} s; "
                "the request was aborted"
            ) from None
        except httpx.HTTPError as exc:
            raise StoreError(f"query at {url} failed: {exc}") from exc
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            content=b"".join(chunks),
            request=asked,
        )

    def _limit_params(self, left: float) -> list[tuple[str, str]]:
        """The request parameters that tell the server a query's time limit: none
        in the standard protocol (Oxigraph server has only its start option
        ``--timeout-s``, and evaluates on after its client has gone)."""
        return []

    def _cancelled(self, response: httpx.Response) -> bool:
        """Whether the server stopped the query at its own time limit: Oxigraph
        server (``--timeout-s``) then ends a 200 answer with its message."""
        return response.content.rstrip().endswith(_OXIGRAPH_CANCELLED)

    def _checked(self, what: str, url: str, response: httpx.Response) -> httpx.Response:
        if what == "query" and self._cancelled(response):
            raise QueryTimeoutError(
                f"the server at {url} stopped the query at its own time limit"
            )
        if response.status_code >= 400:
            message = response.text.strip()[:500]
            if response.status_code == 400 and what == "query":
                raise StoreError(
                    f"SPARQL query failed: {message}", code=ErrorCode.STORE
                ) from SyntaxError(message)
            raise StoreError(
                f"{what} at {url} failed with HTTP {response.status_code}: {message}"
            )
        return response


_OXIGRAPH_CANCELLED = b"The SPARQL operation has been cancelled"


class _Stream(io.RawIOBase):
    """An HTTP body as a readable binary stream, for pyoxigraph's parser."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks, self.pending = chunks, b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.pending:
            chunk = next(self.chunks, None)
            if chunk is None:
                return 0
            self.pending = chunk
        size = min(len(buffer), len(self.pending))
        buffer[:size], self.pending = self.pending[:size], self.pending[size:]
        return size


def _term(term: Any, variable: str) -> str:
    if term is None:
        return variable
    if isinstance(term, ox.DefaultGraph):
        raise ValueError("the default graph is not a term")
    return str(term)


def _bind(sparql: str, substitutions: Mapping[ox.Variable, Any]) -> str:
    """The query with its bound variables as a VALUES block opening its WHERE."""
    if not substitutions:
        return sparql
    names = " ".join(f"?{v.value}" for v in substitutions)
    values = " ".join(str(t) for t in substitutions.values())
    block = f"VALUES ({names}) {{ ({values}) }}\n"
    match = WHERE_OPENS.search(sparql)
    if match is None:
        raise StoreError("a query with bound variables needs a WHERE clause here")
    return sparql[: match.end()] + "\n  " + block + sparql[match.end() :]
