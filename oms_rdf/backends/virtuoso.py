"""Virtuoso (Open Source 7) as the store's backend: where it differs, made the same.

``GrainStore(backend=VirtuosoBackend("http://127.0.0.1:8890", user="oms",
password="…"))`` keeps the store in Virtuoso, through its SPARQL endpoint only
(``/sparql-auth`` with HTTP digest authentication when a user is given, else
``/sparql``; the user needs the ``SPARQL_UPDATE`` role). What Virtuoso does
differently from the standard, and what this backend does about it:

- **The dataset.** A Virtuoso query's default graph is the union of all graphs,
  and an update cannot write a triple without a graph. The store's own default
  graph (its grain layer) is therefore the named graph ``graph``. Every request
  names its dataset: that graph as the default, and the store's graphs as the
  named ones (the Protocol's ``default-graph-uri``/``named-graph-uri`` for
  queries, Virtuoso's ``DEFINE input:…`` preamble for updates), unless the store
  names another. Both are needed: once a request names its default graph,
  Virtuoso matches ``GRAPH <iri>`` only for the named graphs it lists. The list
  is kept here: a write adds the graphs it names, and one that may write a graph
  it does not name (a variable graph) has it read again. A graph another client
  adds is seen once this client next reads the list (``named_graphs()``).
- **Virtuoso's own graphs** (its RDF views schema and the ontologies it loads at
  start) are not the store's: named graphs, counts and whole-store reads skip them.
- **Answers.** ASK comes back as a one-row table of ``__ASK_RETVAL``, and blank
  nodes as ``nodeID://…``: both are given back in the standard form. Queries are
  sent as form posts (7.2 does not read a query posted as
  ``application/sparql-query``). Virtuoso keeps literals by value: ``"1"^^xsd:double``
  reads back as ``"1.0"``, ``"007"^^xsd:integer`` as ``"7"``. The store never relies
  on a lexical form it reads back (a grain's terms come from its blob). It writes
  a double in any answer with 6 significant digits: the store's own reads of
  quads ask for all 17 (``_extra``), an answer to the user's query keeps the
  rounding. It answers in the first media type a request accepts whatever the
  query's form, so each query asks for the one type its form answers in.
- **Whole-store reads** (exports): Virtuoso's Graph Store has no dataset ``GET``, so
  the store is read graph by graph, each checked against its count: an answer
  cut short by the server raises instead of losing quads. Virtuoso answers at
  most ``[SPARQL] ResultSetMaxRows`` rows (``max_rows`` here; 2**20 at most) and
  refuses pages by ORDER BY and OFFSET past 10,000 rows, so a larger graph is
  read in shares of its subjects (by the first hex digits of their MD5), which
  also bounds the memory an export takes (``share_rows``).
- **Time limits.** A query sent within :func:`~oms_rdf.backends.deadline.time_limit`
  carries Virtuoso's ``timeout`` parameter (ms). Virtuoso then stops the
  evaluation and answers what it had found, marked ``X-SQL-State: S1TAT`` (its
  "anytime" answer): that part is never taken for the answer, the query raises
  :class:`~oms_rdf.backends.deadline.QueryTimeoutError` (so does one its own
  ``MaxQueryExecutionTime`` cut short).
- **Transactions.** Virtuoso commits each operation of an update request on its
  own: when the third of three operations fails, the first two stay. The store's
  single writes (put, supersede, retract, …) are one operation each, guarded on
  shared backends; bulk writes keep their journal ahead of their data, so a failed
  or killed import is undone on the next opening, as on any backend.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import httpx
import pyoxigraph as ox

from ..errors import ErrorCode, StoreError
from ..rdf.sparql import update_request
from ..rdf.vocab import NO_GRAPH, OMS
from .protocol import WHERE_OPENS, SparqlBackend

__all__ = ["VirtuosoBackend"]

# The graph that holds the store's default graph (its grain layer) in Virtuoso.
GRAIN_GRAPH = OMS.grains.value

# Graphs Virtuoso 7 makes and keeps for itself.
SYSTEM_GRAPHS = frozenset(
    ox.NamedNode(iri)
    for iri in (
        "http://www.openlinksw.com/schemas/virtrdf#",
        "http://www.w3.org/ns/ldp#",
        "http://localuriqaserver/sparql",
        "http://www.w3.org/2002/07/owl#",
    )
)

# The store's own named graphs: always in a request's dataset, even while empty.
_STORE_GRAPHS = frozenset(
    g.value for g in (OMS.blobs, OMS.index, OMS.current, OMS.audit)
)

# Quads in one INSERT DATA operation: Virtuoso 7.2's compiler runs out of memory
# near 5,000 (sooner with long literals).
DATA_QUADS = 2000

_DOUBLE = ox.NamedNode("http://www.w3.org/2001/XMLSchema#double")
_SELECT = re.compile(r"\bSELECT\b", re.IGNORECASE)
# An update that may write to a graph it does not name: one whose graph is a
# variable, or that names its target another way. (A match in a literal only
# costs a new read of the graphs.)
_SOME_GRAPH = re.compile(
    r"\bGRAPH\s*[?$]|\b(?:WITH|LOAD|CREATE|COPY|MOVE|ADD)\s", re.IGNORECASE
)
_GRAPH = re.compile(r"\bGRAPH\s+<([^<>\s]*)>\s*\{")
_NAN = re.compile(r'"NaN"\^\^<http://www\.w3\.org/2001/XMLSchema#(?:double|float)>')
_BNODE = re.compile(rb'("type"\s*:\s*"bnode"\s*,\s*"value"\s*:\s*")nodeID://')
_BOOLEAN = re.compile(
    rb'("datatype"\s*:\s*"http://www\.w3\.org/2001/XMLSchema#boolean"\s*,\s*'
    rb'"value"\s*:\s*")([01])(?=")'
)
_MILLIS = re.compile(
    rb'("datatype"\s*:\s*"http://www\.w3\.org/2001/XMLSchema#dateTime"\s*,\s*'
    rb'"value"\s*:\s*"[^"]*?:\d\d)\.(\d*?)0+(Z|[+-]\d\d:\d\d)(?=")'
)


def _canonical_millis(m: re.Match[bytes]) -> bytes:
    """A time's seconds without trailing zeros (and without a bare point)."""
    return m[1] + (b"." + m[2] if m[2] else b"") + m[3]


_ASK = re.compile(rb'"vars"\s*:\s*\[\s*"__ASK_RETVAL"\s*\]')
_ASK_VALUE = re.compile(rb'"__ASK_RETVAL"\s*:\s*\{[^}]*"value"\s*:\s*"(\d+)"')


class VirtuosoBackend(SparqlBackend):
    """The store's backend over Virtuoso's SPARQL endpoint; see the module docstring."""

    # Beside a FILTER, Virtuoso reads an unbound OPTIONAL variable of the same
    # group as bound (BOUND is true, COALESCE skips its default).
    exact_optionals = False

    def __init__(
        self,
        base_url: str,
        *,
        user: str | None = None,
        password: str | None = None,
        graph: str = GRAIN_GRAPH,
        timeout: float = 60.0,
        max_rows: int = 1_000_000,
        share_rows: int = 250_000,
    ) -> None:
        """``max_rows``: the most rows the server answers at once, its ``[SPARQL]
        ResultSetMaxRows`` (at most 2**20, whatever the ini says). ``share_rows``:
        the most quads a whole-store read (an export) holds at once."""
        base = base_url.rstrip("/")
        endpoint = f"{base}/sparql-auth" if user is not None else f"{base}/sparql"
        auth = httpx.DigestAuth(user, password or "") if user is not None else None
        super().__init__(endpoint, endpoint, None, auth=auth, timeout=timeout)
        self.graph = ox.NamedNode(graph)
        self.hidden_graphs = SYSTEM_GRAPHS | {self.graph}
        # big-data-const: INSERT DATA of thousands of quads (else 1,000 at most).
        self._preamble = f"DEFINE sql:big-data-const 1\nDEFINE input:default-graph-uri {self.graph}\n"
        self._graphs: set[str] = set()  # see _named
        self.max_rows = max_rows
        self.share_rows = share_rows

    def add(self, quads: Iterable[ox.Quad]) -> None:
        """INSERT DATA requests of ``DATA_QUADS`` quads each, in order.

        Each request commits by itself: Virtuoso takes no more in one (its SPARQL
        compiler and its string limit give out), and commits a request's
        operations one by one anyway. The store writes more than that only
        through its journal, whose records come first.
        """
        batch: list[ox.Quad] = []
        for quad in quads:
            batch.append(quad)
            if len(batch) == DATA_QUADS:
                self.update(update_request([], batch))
                batch = []
        if batch:
            self.update(update_request([], batch))

    def update(self, sparql: str) -> None:
        if _NAN.search(sparql):
            raise StoreError(
                "Virtuoso 7.2 breaks its quad index on NaN doubles and floats (a "
                "request holding one is written in part, and every later write then "
                "fails): refused, nothing written",
                code=ErrorCode.STORE,
            )
        named = "".join(f"DEFINE input:named-graph-uri <{g}>\n" for g in self._named())
        super().update(f"{self._preamble}{named}{sparql}")
        if _SOME_GRAPH.search(sparql):
            self._graphs.clear()  # it may have made a graph it does not name: read again
        else:  # it wrote to the graphs it names, and no other
            self._graphs.update(m.group(1) for m in _GRAPH.finditer(sparql))

    def _named(self) -> set[str]:
        """The graphs a request names: the store's own, and every other one
        the server holds (read once, then kept up to date by :meth:`update`)."""
        if not self._graphs:
            self.named_graphs()
        return self._graphs

    def named_graphs(self) -> Iterator[Any]:
        # GROUP BY, not DISTINCT: Virtuoso answers it 3 times faster (17 against
        # 5.6 ms at 20k beliefs).
        rows = self._query_as_is(
            "SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } "
            f"{self._named_filter('?g')} }} GROUP BY ?g",
            [("default-graph-uri", self.graph.value)],
        )
        found = sorted(row["g"].value for row in rows)
        self._graphs = {*found, *_STORE_GRAPHS}
        return iter(ox.NamedNode(g) for g in found)

    def _bind(self, sparql: str, substitutions: Mapping[ox.Variable, Any]) -> str:
        """Bound variables written as their terms in the query's body: Virtuoso
        plans a VALUES block badly (its cost estimate can pass the server's limit
        and refuse the query). A body with a nested SELECT, where a variable may
        be projected, keeps the VALUES block; so does what follows the body (a
        GROUP BY names variables, not terms)."""
        match = WHERE_OPENS.search(sparql)
        if not substitutions or match is None or _SELECT.search(sparql, match.end()):
            return super()._bind(sparql, substitutions)
        end = _group_end(sparql, match.end())
        body = sparql[match.end() : end]
        for variable, term in substitutions.items():
            text = str(term).replace("\\", "\\\\")  # a replacement template
            body = re.sub(rf"[?$]{variable.value}\b", text, body)
        return sparql[: match.end()] + body + sparql[end:]

    def grains_query(self, nodes: list[str]) -> str:
        """Which of these grain nodes the store holds (store/presence.py): as a
        FILTER IN, which Virtuoso answers from its index (a batch of 1,000 in
        about 0.06 s, against 0.28 s for the VALUES join, measured inside a
        put_many of 20k; Oxigraph scans every blob for it, so the default stays
        a VALUES join)."""
        return (
            f"SELECT ?g WHERE {{ GRAPH <{OMS.blobs.value}> {{ ?g <{OMS.blob.value}> "
            f"?blob }} FILTER (?g IN ({', '.join(nodes)})) }}"
        )

    def _dataset_params(self, dataset: Mapping[str, Any]) -> list[tuple[str, str]]:
        params = super()._dataset_params(dataset)
        if not any(name == "default-graph-uri" for name, _ in params):
            params.append(("default-graph-uri", self.graph.value))
        if any(name == "named-graph-uri" for name, _ in params):
            return params
        if "named_graphs" in dataset:  # none asked for: Virtuoso would open all
            params.append(("named-graph-uri", NO_GRAPH.value))
        else:  # the store's own question, of its own graphs
            params += [("named-graph-uri", g) for g in sorted(self._named())]
        return params

    def _post_query(self, text: str, params: list[tuple[str, str]]) -> httpx.Response:
        form: dict[str, list[str]] = {"query": [text]}
        for name, value in params:
            form.setdefault(name, []).append(value)
        # Virtuoso answers in the first type of Accept it can write, whatever the q
        # values: results asked of a CONSTRUCT come as JSON bindings with doubles
        # as bare numbers, and triples asked of a SELECT as a graph. So each query
        # asks for the one type its form answers in.
        accept = _TRIPLES if _answers_triples(text) else _RESULTS
        # Over a kept-alive connection, Virtuoso holds back an answer past some
        # 32 KB for about 40 ms; it sends one it closes the connection after at
        # once (measured on loopback: 56 ms against 16 ms for a 36 KB answer).
        return self._send(
            "query",
            self.query_url,
            data=form,
            headers={"accept": accept, "connection": "close"},
        )

    def _limit_params(self, left: float) -> list[tuple[str, str]]:
        """Virtuoso's ``timeout`` (ms): at it, the server stops the evaluation."""
        return [("timeout", str(max(1, math.ceil(left * 1000))))]

    def _cancelled(self, response: httpx.Response) -> bool:
        """Whether Virtuoso stopped the query at a time limit: its "anytime" answer
        (SQL state S1TAT) is then the part it had, which is never given as the
        answer."""
        state = response.headers.get("x-sql-state", "")
        return state == "S1TAT" or super()._cancelled(response)

    def _query_as_is(self, text: str, params: list[tuple[str, str]]) -> Any:
        return self._results(self._post_query(text, params).content)

    def _results(self, body: bytes) -> Any:
        if _ASK.search(body):
            value = _ASK_VALUE.search(body)
            truth = value is not None and value.group(1) != b"0"
            body = b'{"head": {}, "boolean": %s}' % (b"true" if truth else b"false")
        # Virtuoso keeps literals by value and writes a boolean as 1 or 0 and a
        # time with every digit of its milliseconds: given back in the canonical
        # forms Oxigraph writes ("true", "...20.01Z").
        body = _BOOLEAN.sub(
            lambda m: m[1] + (b"true" if m[2] == b"1" else b"false"), body
        )
        body = _MILLIS.sub(_canonical_millis, body)
        return super()._results(_BNODE.sub(rb"\1", body))

    # Virtuoso writes a double in its answers with 6 digits ("-1.7346"), and as a
    # string with 16: every stored double is read back with all 17 here.
    _extra = (
        "(IF(DATATYPE(?o) = <http://www.w3.org/2001/XMLSchema#double>, "
        'bif:sprintf("%.17g", ?o), "") AS ?exact)'
    )

    def _object(self, row: Any) -> Any:
        exact = row["exact"]
        value = float(exact.value) if exact is not None and exact.value else math.nan
        if math.isfinite(value):  # written as Python does: shortest exact form
            return ox.Literal(repr(value), datatype=_DOUBLE)
        return row["o"]

    def _everything(self) -> Iterator[ox.Quad]:
        """Every quad of the store, graph by graph, each checked against its count.

        Virtuoso has no dataset dump over HTTP, so each graph is read by SELECT:
        in one answer when it holds at most ``share_rows`` quads, else in shares
        of its subjects, each yielded as it comes (memory holds one share). A
        graph whose shares do not add up to its count raises after its last.
        """
        graphs: list[Any] = [ox.DefaultGraph(), *self.named_graphs()]
        for graph in graphs:
            where = (
                "{ ?s ?p ?o }"
                if isinstance(graph, ox.DefaultGraph)
                else f"GRAPH {graph} {{ ?s ?p ?o }}"
            )
            [row] = self.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ {where} }}")
            count, read = int(row["n"].value), 0
            saved = self.client.timeout  # a graph of millions takes minutes to read
            self.client.timeout = httpx.Timeout(saved.connect, read=None)
            try:
                for quads in self._shares(where, graph, count):
                    read += len(quads)
                    yield from quads
            finally:
                self.client.timeout = saved
            if read != count:
                raise StoreError(
                    f"Virtuoso answered {read} of the {count} quads of "
                    f"{'the grain layer' if isinstance(graph, ox.DefaultGraph) else graph}: "
                    "raise [SPARQL] ResultSetMaxRows in virtuoso.ini above that count"
                )

    def _shares(self, where: str, graph: Any, count: int) -> Iterator[list[ox.Quad]]:
        """A graph's quads: one SELECT, or one per share of the subjects when the
        graph holds more than one answer may (``share_rows``, and Virtuoso's
        ``max_rows``). Shares go by the first hex digits of MD5(subject): every
        quad falls in exactly one, and they come out even. (Pages by ORDER BY and
        OFFSET are refused past 10,000 rows.) Each share is a scan of the graph,
        so they are no smaller than they need to be."""
        limit = min(self.share_rows, self.max_rows)
        if count <= limit:
            yield list(self._select(None, None, None, graph))
            return
        digits = 1
        while count / 16**digits > limit / 2:  # room for an uneven share
            digits += 1
        named = None if isinstance(graph, ox.DefaultGraph) else graph
        for share in itertools.product("0123456789abcdef", repeat=digits):
            rows = self.query(
                f"SELECT ?s ?p ?o {self._extra} WHERE {{ {where} "
                f'FILTER (STRSTARTS(MD5(STR(?s)), "{"".join(share)}")) }}'
            )
            yield [
                ox.Quad(r["s"], r["p"], self._object(r), named or ox.DefaultGraph())
                for r in rows
            ]


_RESULTS, _TRIPLES = "application/sparql-results+json", "application/n-triples"
# What may hide a keyword from the query's form: comments, strings and IRIs.
_NOISE = re.compile(
    r"#[^\n\r]*"
    r"|\"\"\"(?:[^\"\\]|\\.|\"(?!\"\"))*\"\"\"|'\'\'(?:[^'\\]|\\.|'(?!''))*'\'\'"
    r"|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'"
    r"|<[^<>\"{}|^`\\\s]*>"
)
_EOL = re.compile(r"[\n\r]")
_FORM = re.compile(r"\b(SELECT|ASK|CONSTRUCT|DESCRIBE)\b", re.IGNORECASE)


def _answers_triples(query: str) -> bool:
    """Whether a query is a CONSTRUCT or a DESCRIBE: its first form keyword that
    is not in a comment, a string or an IRI (a SELECT after it is a subquery)."""
    form = _FORM.search(_NOISE.sub(" ", query))
    return form is not None and form.group(1).upper() in ("CONSTRUCT", "DESCRIBE")


# SPARQL's IRIREF; a < not starting one is the less-than operator.
_IRI = re.compile(r"<[^<>\"{}|^`\\\x00-\x20]*>")


def _group_end(text: str, start: int) -> int:
    """The place of the brace closing the group opened just before ``start``
    (braces inside string literals, IRIs and comments do not count)."""
    depth, i = 1, start
    while i < len(text):
        char = text[i]
        if char in "\"'":
            i = _string_end(text, i)
            continue
        if char == "<" and (iri := _IRI.match(text, i)):  # a # in it is no comment
            i = iri.end()
            continue
        if char == "#":  # a comment, to the end of its line (a CR ends one too)
            eol = _EOL.search(text, i)
            i = len(text) if eol is None else eol.start()
            continue
        depth += (char == "{") - (char == "}")
        if depth == 0:
            return i
        i += 1
    return len(text)


def _string_end(text: str, i: int) -> int:
    """The place just after the string literal opening at ``i``."""
    quote = text[i] * 3 if text.startswith(text[i] * 3, i) else text[i]
    i += len(quote)
    while i < len(text) and not text.startswith(quote, i):
        i += 2 if text[i] == "\\" else 1
    return i + len(quote)
