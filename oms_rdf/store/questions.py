"""The temporal questions: beliefs, history, derived grains."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox
from pyoxigraph import (
    Literal,
    QuerySolutions,
    Variable,
)

from ..backends.embedded import LocalBackend
from ..codec.grain import Grain, system_from
from ..codec.schema import BELIEF
from ..errors import QueryError, SchemaError
from ..rdf.inforce import (
    BELIEFS_COUNT,
    beliefs_by_status_query,
    beliefs_query,
    current_beliefs_query,
    grain_clause,
    snapshot_query,
)
from ..rdf.limits import check_query
from ..rdf.mapping import (
    DEFAULT_SETTINGS,
    MappingSettings,
    address_of,
    belief_terms,
    grain_iri,
    literal_value,
    millis_literal,
    relation_pattern,
    subject_pattern,
)
from ..rdf.sparql import QUERIES, term_for
from ..rdf.tables import GrainList, query_prefixes
from ..rdf.terms import unskolem
from ..rdf.vocab import OMS, RDF
from .audit import current_head
from .core import Core
from .knowledge import (
    PREFIXES,
    RESERVED_GRAPHS,
    QueryResult,
    Snapshot,
    Triples,
    check_dataset_args,
    run_query,
)
from .lookup import chain_rows, in_force, subject_rows
from .querytext import dataset_clause, dataset_start
from .rewrite import rewrite
from .search import SearchIndex, search_texts
from .state import STATUSES, TimeLike, millis_or_now

# Beliefs another client added that a search looks up one by one (on a server, a
# round trip each); more are read with every blob at once.
_LOOKUPS = 64

if TYPE_CHECKING:  # pandas is optional
    import pandas


class Questions:
    """What is believed, was true, was believed; how beliefs evolved; recall."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self._head_seen: object = None  # the audit head, on a shared backend

    def now_point(self) -> int | None:
        """The time at which the knowledge of now is asked, or None when the
        knowledge held (``oms:current``) is exactly it, so queries take it as is.

        Now means now on both axes (design §3): a belief whose valid time has
        ended, or not begun, is not in it, with no write in between (see
        :mod:`.now`). Where other clients write too, their writes move the audit
        chain's head, and the answer is read again.
        """
        core = self.core
        now = core.clock()
        if core.backend.shared:
            head = current_head(core.backend)
            if head != self._head_seen:
                core.now_watch.forget()
                self._head_seen = head
        return None if core.now_watch.same(core.backend, now) else now

    def beliefs(
        self,
        subject: str | None = None,
        relation: str | None = None,
        *,
        namespace: str | None = None,
        valid_at: TimeLike = None,
        as_of: TimeLike = None,
        status: str | None = None,
    ) -> GrainList:
        """Return the beliefs true at ``valid_at`` as known at ``as_of``.

        Both default to now (design §5). "What did we believe at T" about the world
        at T is ``beliefs(valid_at=T, as_of=T)``; ``beliefs(as_of=T)`` asks what we
        believed at T about now. Ordered by effective confidence (earned by
        evidence), highest first.

        With ``status`` ("active", "superseded" or "retracted") the beliefs are
        listed by their index status instead, whatever their times (the listing
        semantics of REST memory APIs); it does not combine with the times.

        Raises:
            SchemaError: ERR_SCHEMA for an unknown status, or status with a time.
        """
        if status is not None:
            if status not in STATUSES or valid_at is not None or as_of is not None:
                raise SchemaError(
                    f"status lists by index status, one of {list(STATUSES)}, without "
                    f"valid_at/as_of; found status={status!r}",
                    path="status",
                )
            texts, bindings = _bound_texts(
                subject, relation, namespace, self.core.settings
            )
            bindings[Variable("statusNode")] = getattr(OMS, status)
            query = beliefs_by_status_query(texts)
            return self._grains(self.core.backend.query(query, bindings))
        known = millis_or_now(as_of, self.core.clock)
        valid = millis_or_now(valid_at, self.core.clock)
        if subject is None:
            return self._beliefs_query(subject, relation, namespace, valid, known)
        # One subject has a handful of grains: reading them by pattern is several
        # times faster than the query, with the same answer (see lookup.py).
        # Several pattern reads: under the writers' lock, so that they all see the
        # store before a write or after it, never between (a torn read).
        with self.core.lock:
            backend = self._subject_copy(subject) or self.core.backend
            rows = subject_rows(backend, self.core.settings, subject, relation,
                                namespace, valid_at=valid, as_of=known)  # fmt: skip
            return GrainList(
                [self.core.grain_of(address_of(r.node), r.blob) for r in rows],
                self.core.status,
            )

    def _subject_copy(self, subject: str) -> LocalBackend | None:
        """Over a network, a copy in memory of what the lookups of one subject
        read, brought in one request (a round trip per lookup would cost more
        than the general query); None in process."""
        remote = self.core.backend
        if not remote.remote:
            return None
        by, term = subject_pattern(subject)
        bindings = {Variable("by"): by, Variable("term"): term}
        copy = LocalBackend()
        copy.add(remote.quads_of(QUERIES["subject_grains"], bindings))
        return copy

    def _beliefs_query(
        self,
        subject: str | None,
        relation: str | None,
        namespace: str | None,
        valid: int,
        known: int,
    ) -> GrainList:
        """:meth:`beliefs` by the general query (:func:`.inforce.beliefs_query`)."""
        texts, bindings = _bound_texts(subject, relation, namespace, self.core.settings)
        bindings[Variable("asOf")] = millis_literal(known)
        bindings[Variable("validAt")] = millis_literal(valid)
        query = beliefs_query(texts)
        return self._grains(self.core.backend.query(query, bindings))

    # --- SPARQL over the knowledge ------------------------------------------------

    def query(
        self,
        sparql: str,
        /,
        *,
        valid_at: TimeLike = None,
        as_of: TimeLike = None,
        namespace: str | Sequence[str] | None = None,
        grains: bool = False,
        substitutions: Mapping[str | Variable, Any] | None = None,
        default_graph_uris: Sequence[str] | None = None,
        named_graph_uris: Sequence[str] | None = None,
        held: bool = False,
        **bindings: Any,
    ) -> QueryResult:
        """Run any SPARQL query over the knowledge, now or at a bi-temporal point.

        By default the query sees the knowledge in force now on both axes: the
        plain triples of every belief held now (not superseded, retracted or
        contradicted) whose valid time holds now; the default graph is that
        knowledge and adopted named graphs keep their names, so SPARQL over your
        own vocabulary works as written. It is exactly
        ``query(q, valid_at=now, as_of=now)``, and it follows the clock: a belief
        leaves when its valid time ends. ``held=True`` asks the knowledge held
        now whatever its valid time instead. ``valid_at``/``as_of`` ask the same
        query of the knowledge of that point (a missing one means now), with the
        semantics of :meth:`beliefs`; ``namespace`` keeps one namespace (or those
        of a list).
        ``grains=True`` queries the store as laid out (grain nodes, index, blobs,
        audit; see ``ontology/README.md``).

        ``default_graph_uris`` and ``named_graph_uris`` narrow the dataset as the
        SPARQL Protocol's parameters of the same names do: the default graph is the
        merge of the graphs named (the knowledge's own default graph is
        ``oms:current``), and only the named graphs given are visible to GRAPH.

        Variables are bound through ``substitutions`` (or keyword arguments);
        Python values become terms: str → literal, int/float/bool → typed literal,
        datetime → xsd:dateTime, Grain → its statement node. The prefixes rdf,
        rdfs, xsd, owl, prov and oms need no declaration.

        Returns:
            :class:`Solutions` for SELECT, a bool for ASK, an iterator of
            ``pyoxigraph.Triple`` for CONSTRUCT and DESCRIBE.

        Raises:
            QueryError: ERR_QUERY for malformed SPARQL (with its line and column),
                text over the limits of :func:`oms_rdf.rdf.limits.check_query`, or
                grains=True with a time or namespace.

        >>> from oms_rdf import Belief, GrainStore
        >>> store = GrainStore()
        >>> _ = store.put(Belief("http://example.org/alice", "http://xmlns.com/foaf/0.1/knows",
        ...                      "http://example.org/bob", 0.9, created_at=1_700_000_000_000))
        >>> [r["o"].value for r in store.query("SELECT ?o WHERE { ?s ?p ?o }")]
        ['http://example.org/bob']
        """
        check_query(sparql)  # before any parser: deep nesting crashes them
        timed = valid_at is not None or as_of is not None
        check_dataset_args(grains, timed, namespace)
        if not (grains or timed or held) and (now := self.now_point()) is not None:
            valid_at = as_of = now  # the held knowledge is not that of now
            timed = True
        values: dict[str | Variable, Any] = {
            k: term_for(v) for k, v in (substitutions or {}).items()
        }
        values.update((k, term_for(v)) for k, v in bindings.items())
        dataset = _dataset(default_graph_uris, named_graph_uris, grains)
        if grains:
            return run_query(self.core.backend, sparql, values, **dataset)
        if timed or namespace is not None:
            answer = self._asked_of_grains(
                sparql, values, dataset, valid_at, as_of, namespace
            )
            if answer is not None:
                return answer
            view = self._knowledge_store(valid_at, as_of, namespace)
            if (
                "default_graph" in dataset
            ):  # the knowledge's default graph is the view's
                dataset["default_graph"] = [
                    ox.DefaultGraph() if g == OMS.current else g
                    for g in dataset["default_graph"]
                ]
            return run_query(view, sparql, values, **dataset)
        if not dataset:
            # A query that names its dataset (FROM, FROM NAMED) gets that dataset,
            # as the Protocol's parameters would give it; the store's own graphs
            # are refused there too.
            clause = dataset_clause(sparql, PREFIXES)
            if clause is not None:
                dataset = _dataset(*clause, grains)
                if not clause[0]:
                    # FROM NAMED alone: an empty default graph, a graph nothing is
                    # in. Said in the query too: Virtuoso lets a query's FROM NAMED
                    # override the Protocol's default graph (all its graphs then).
                    at = dataset_start(sparql)
                    if at is not None:
                        sparql = f"{sparql[:at]}FROM <{_NO_GRAPH.value}> {sparql[at:]}"
                    dataset["default_graph"] = [_NO_GRAPH]
                dataset.setdefault("named_graphs", [])
        return run_query(
            self.core.backend,
            sparql,
            values,
            **{
                "default_graph": OMS.current,
                "named_graphs": self.knowledge_graphs(),
                **dataset,
            },
        )

    def _asked_of_grains(
        self,
        sparql: str,
        values: Mapping[str | Variable, Any],
        dataset: Mapping[str, Any],
        valid_at: TimeLike,
        as_of: TimeLike,
        namespace: str | Sequence[str] | None,
    ) -> QueryResult | None:
        """A query of a point's knowledge rewritten onto the grain layer
        (rewrite.py), so that the store (a server too) answers it where the data
        is, never building the point's knowledge; None where SPARQL cannot say
        it, or the query names its own dataset."""
        if dataset:
            return None
        run_query(ox.Store(), sparql, values)  # its own faults, worded as in process
        point: tuple[Literal | None, Literal | None] = (None, None)
        if valid_at is not None or as_of is not None:
            clock = self.core.clock
            point = (millis_literal(millis_or_now(valid_at, clock)),
                     millis_literal(millis_or_now(as_of, clock)))  # fmt: skip
        text = rewrite(sparql, grain_clause(*point, _namespaces(namespace)))
        if text is None:
            return None
        return run_query(self.core.backend, text, values)

    def frame(
        self,
        sparql: str,
        /,
        *,
        valid_at: TimeLike = None,
        as_of: TimeLike = None,
        namespace: str | Sequence[str] | None = None,
        grains: bool = False,
        substitutions: Mapping[str | Variable, Any] | None = None,
        compact: bool = False,
    ) -> pandas.DataFrame:
        """Run a query as :meth:`query` does and return its answer as a DataFrame.

        A SELECT gives one typed column per variable (numbers, aware datetimes,
        booleans, IRIs as text; unbound is missing; see :mod:`oms_rdf.rdf.tables`), a
        CONSTRUCT or DESCRIBE the columns ``subject``, ``predicate`` and ``object``.
        With ``compact``, IRIs are written ``prefix:local`` with the query's own
        prefixes and those every query may use. Needs pandas (``[notebooks]``).

        Raises:
            QueryError: ERR_QUERY for an ASK query (its answer is not a table), and
                as :meth:`query`.
        """
        result = self.query(sparql, valid_at=valid_at, as_of=as_of, namespace=namespace,
                            grains=grains, substitutions=substitutions)  # fmt: skip
        if isinstance(result, bool):
            raise QueryError(
                f"an ASK query answers {str(result).lower()}, not a table; "
                "use query() for it"
            )
        if isinstance(result, Triples):
            return result.frame(
                prefixes=(PREFIXES | query_prefixes(sparql)) if compact else None
            )
        return result.frame(compact=compact)

    def knowledge_graphs(self) -> list[Any]:
        """Return the names of the adopted named graphs that hold knowledge now."""
        return [g for g in self.core.backend.named_graphs() if g not in RESERVED_GRAPHS]

    def snapshot(
        self,
        *,
        valid_at: TimeLike = None,
        as_of: TimeLike = None,
        namespace: str | Sequence[str] | None = None,
        held: bool = False,
    ) -> Snapshot:
        """Return the knowledge of one bi-temporal point as a dataset.

        With no time, the knowledge in force now on both axes (as :meth:`query`
        sees it; ``held=True``: held now, whatever its valid time); with
        ``valid_at`` and/or ``as_of`` (a missing one means now), the triples of the
        beliefs :meth:`beliefs` would return for that point. The terms are exactly
        those the grains record: lexical forms, language tags, blank nodes.
        ``namespace`` keeps one namespace, or those of a list.
        """
        grains: list[Grain] = []
        if valid_at is None and as_of is None and not held:
            valid_at = as_of = self.now_point()
        if valid_at is None and as_of is None:
            point: tuple[int | None, int | None] = (None, None)
            for ns in _namespaces(namespace):
                grains += self._current_beliefs(ns)
        else:
            known = millis_or_now(as_of, self.core.clock)
            valid = millis_or_now(valid_at, self.core.clock)
            point = (valid, known)
            for ns in _namespaces(namespace):
                grains += self._beliefs_query(None, None, ns, valid, known)
        return Snapshot(
            (self._knowledge_quad(g) for g in grains),
            valid_at=point[0],
            as_of=point[1],
            namespace=namespace
            if isinstance(namespace, str | None)
            else tuple(namespace),
        )

    def _knowledge_store(
        self,
        valid_at: TimeLike,
        as_of: TimeLike,
        namespace: str | Sequence[str] | None,
    ) -> ox.Store:
        """The knowledge of a point as a store to query, for what the rewrite
        cannot say. Its terms are the stored ones: blank nodes stay skolem IRIs,
        as in the knowledge of now and in a rewritten query, so that ``isBlank``
        answers alike whichever way a query goes (answers give them back)."""
        view = ox.Store()
        for ns in _namespaces(namespace):
            if valid_at is None and as_of is None:
                view.extend(
                    self._knowledge_quad(g, skolem=True)
                    for g in self._current_beliefs(ns)
                )
                continue
            texts, bindings = _bound_texts(None, None, ns, self.core.settings)
            bindings[Variable("asOf")] = millis_literal(
                millis_or_now(as_of, self.core.clock)
            )
            bindings[Variable("validAt")] = millis_literal(
                millis_or_now(valid_at, self.core.clock)
            )
            rows = self.core.backend.query(snapshot_query(texts), bindings)
            default = ox.DefaultGraph()
            view.extend(
                ox.Quad(r["s"], r["p"], r["o"], r["kg"] or default) for r in rows
            )
        return view

    def _knowledge_quad(self, grain: Grain, *, skolem: bool = False) -> ox.Quad:
        s, p, o, g = belief_terms(grain.fields, self.core.settings)
        if skolem:
            return ox.Quad(s, p, o, ox.DefaultGraph() if g is None else g)
        graph = ox.DefaultGraph() if g is None else unskolem(g)
        return ox.Quad(unskolem(s), p, unskolem(o), graph)

    def _current_beliefs(self, namespace: str | None) -> GrainList:
        texts, bindings = _bound_texts(None, None, namespace)
        query = current_beliefs_query(texts)
        return self._grains(self.core.backend.query(query, bindings))

    # --- recall ---------------------------------------------------------------------

    def search(
        self,
        text: str,
        /,
        *,
        namespace: str | Sequence[str] | None = None,
        limit: int = 10,
        valid_at: TimeLike = None,
        as_of: TimeLike = None,
        held: bool = False,
    ) -> GrainList:
        """Return the beliefs whose subject, relation or object best match ``text``.

        Ranked by BM25 over the words of the three texts. With no time, only the
        beliefs in force now on both axes (a superseded or retracted wording, or
        one whose valid time has ended, never comes back; ``held=True`` keeps
        those held now whatever their valid time); with ``valid_at``/``as_of``,
        those :meth:`beliefs` answers for that point.

        >>> from oms_rdf import Belief, GrainStore
        >>> store = GrainStore()
        >>> _ = store.put(Belief("rate limiter", "uses", "token bucket", 0.9, created_at=1))
        >>> _ = store.put(Belief("cache", "uses", "LRU eviction", 0.9, created_at=2))
        >>> [g["subject"] for g in store.search("which rate limiter")]
        ['rate limiter']
        """
        if limit < 1:
            raise SchemaError(f"limit must be at least 1, not {limit}", path="limit")
        if valid_at is None and as_of is None and not held:
            valid_at = as_of = self.now_point()
        timed = valid_at is not None or as_of is not None
        valid = millis_or_now(valid_at, self.core.clock) if timed else 0
        known = millis_or_now(as_of, self.core.clock) if timed else 0
        wanted = None if namespace is None else set(_namespaces(namespace))
        index = self._search_index()
        found: list[Grain] = []
        ranked = (address for address, _score in index.ranked(text))
        while len(found) < limit and (batch := list(islice(ranked, limit))):
            stored = self._stored(batch)
            for address in batch:
                if address not in stored:
                    continue  # indexed by a write that failed, or erased since
                blob, closed = stored[address]
                if timed:
                    node = grain_iri(address)
                    if not in_force(
                        self.core.backend, node, valid_at=valid, as_of=known
                    ):
                        continue
                elif closed:
                    continue
                grain = self.core.grain_of(address, blob)
                if (
                    wanted is not None
                    and grain.get("namespace", "shared") not in wanted
                ):
                    continue
                found.append(grain)
                if len(found) == limit:
                    break
        return GrainList(found, self.core.status)

    def _stored(self, addresses: Sequence[str]) -> dict[str, tuple[Any, bool]]:
        """The blob of each of these grains the store holds, and whether the grain
        has left the knowledge (superseded, retracted or contradicted): one query."""
        nodes = " ".join(str(grain_iri(a)) for a in addresses)
        rows = self.core.backend.query(
            f"SELECT ?g ?blob ?closed WHERE {{ VALUES ?g {{ {nodes} }} "
            f"GRAPH {OMS.blobs} {{ ?g {OMS.blob} ?blob }} "
            f"OPTIONAL {{ GRAPH {OMS.index} {{ ?g {OMS.systemTo} ?closed }} }} }}"
        )
        return {
            address_of(row["g"]): (row["blob"], row["closed"] is not None)
            for row in rows
        }

    def reindex(self) -> None:
        """Rebuild the search index from the grain layer (done on the next search)."""
        self.core.search_index = None

    def _search_index(self) -> SearchIndex:
        """The search index, holding every belief the store holds.

        Where other processes write too (``backend.shared``), it is brought up to
        date whenever the audit chain's head moved since it was last: every write,
        by any client, moves it. Reading the head first means a write that lands
        during the update moves it again, for the next search to see.
        """
        core = self.core
        with core.lock:
            index = core.search_index
            shared = core.backend.shared
            head = current_head(core.backend) if shared else None
            if index is None or (shared and index.head != head):
                index = index or SearchIndex()
                self._index_missing(index)
                index.head = head
                core.search_index = index
            return index

    def _index_missing(self, index: SearchIndex) -> None:
        """Add the beliefs the store holds that ``index`` lacks: each by its own
        lookup when they are few, else from one read of every blob."""
        backend = self.core.backend
        if len(index):
            missing = dict.fromkeys(
                address_of(q.subject)
                for q in backend.quads(None, RDF.subject, None, ox.DefaultGraph())
                if isinstance(q.subject, ox.NamedNode)
                and address_of(q.subject) not in index
            )
            if len(missing) <= _LOOKUPS:
                for address in missing:
                    index.add(address, search_texts(self.core.get(address)))
                return
        for quad in backend.quads(None, OMS.blob, None, OMS.blobs):
            address = address_of(quad.subject)  # type: ignore[arg-type]
            if address not in index:
                blob = base64.b64decode(quad.object.value)  # type: ignore[union-attr]
                grain = Grain.stored(blob, address)
                if grain.type_byte == BELIEF.byte:
                    index.add(address, search_texts(grain))

    def count_beliefs(
        self, *, valid_at: TimeLike = None, as_of: TimeLike = None
    ) -> int:
        """Count the beliefs :meth:`beliefs` would return for these times (a snapshot size)."""
        if valid_at is None and as_of is None and self.now_point() is None:
            # The beliefs of now are those held: two counts the engine keeps cheap.
            backend = self.core.backend
            held, closed = (
                int(next(iter(backend.query(QUERIES[name])))["count"].value)
                for name in ("grains_count", "closed_count")
            )
            return held - closed
        known = millis_or_now(as_of, self.core.clock)
        valid = millis_or_now(valid_at, self.core.clock)
        bindings = {
            Variable("asOf"): millis_literal(known),
            Variable("validAt"): millis_literal(valid),
        }
        rows = list(self.core.backend.query(BELIEFS_COUNT, bindings))
        return int(rows[0]["count"].value) if rows else 0

    def history(self, address: str | Grain) -> GrainList:
        """Return the supersession chain through a grain, oldest first (forks included)."""
        address = self.core.resolve(address)
        # A chain is a few grains: walking it by pattern beats the query (lookup.py).
        with self.core.lock:  # one view of the chain (see beliefs)
            return self._chronological(
                chain_rows(self.core.backend, grain_iri(address))
            )

    def ancestors(self, address: str | Grain) -> GrainList:
        """Return the versions before a grain, oldest first (not the grain itself).

        Every predecessor is followed: a grain that superseded two (a merge) has
        both lines before it, each back to its first version.
        """
        address = self.core.resolve(address)
        # Breadth first over oms:supersededBy, backwards; ``depth`` (hops from the
        # grain) orders versions with the same system time, the farther first.
        depth: dict[str, int] = {}
        frontier, seen = [address], {address}
        with self.core.lock:  # one view of the chain (see beliefs)
            while frontier:
                earlier = []
                for later in frontier:
                    node = grain_iri(later)
                    for quad in list(
                        self.core.backend.quads(None, OMS.supersededBy, node, OMS.index)
                    ):
                        found = address_of(quad.subject)  # type: ignore[arg-type]
                        if found not in seen:  # a diamond, or a cycle imported
                            seen.add(found)
                            depth[found] = depth.get(later, 0) + 1
                            earlier.append(found)
                frontier = earlier
            grains = [self.core.get(a) for a in depth]
        grains.sort(key=lambda g: (system_from(g), -depth[g.address], g.address))
        return GrainList(grains, self.core.status)

    def derived(self, address: str | Grain) -> GrainList:
        """Return the grains derived from a grain, transitively, oldest first."""
        address = self.core.resolve(address)
        solutions = self.core.backend.query(
            QUERIES["derived"], {Variable("target"): grain_iri(address)}
        )
        return self._chronological(_triples(solutions))

    def _chronological(self, rows: Iterable[tuple[Any, Any, Any]]) -> GrainList:
        """The grains of ``(?g, ?sf, ?blob)`` rows, oldest system time first."""
        # Compare times as values: lexical forms differ ("…00Z" vs "…00.5Z").
        ordered = sorted(
            (literal_value(start), address_of(node), blob)
            for node, start, blob in rows
            if start is not None  # an erased grain: only its address is left
        )
        return GrainList(
            (self.core.grain_of(address, blob) for _, address, blob in ordered),
            self.core.status,
        )

    def _grains(self, solutions: QuerySolutions) -> GrainList:
        """The grains of query solutions; a projected ``?blob`` spares a lookup."""
        names = {v.value for v in solutions.variables}
        return GrainList(
            (
                self.core.grain_of(
                    address_of(row["g"]), row["blob"] if "blob" in names else None
                )
                for row in solutions
            ),
            self.core.status,
        )


def _namespaces(namespace: str | Sequence[str] | None) -> tuple[str | None, ...]:
    """The namespaces to gather knowledge from: None is every namespace."""
    if namespace is None or isinstance(namespace, str):
        return (namespace,)
    return tuple(dict.fromkeys(namespace))


def _dataset(
    default: Sequence[str] | None, named: Sequence[str] | None, grains: bool
) -> dict[str, Any]:
    """pyoxigraph's dataset arguments for the Protocol's graph IRIs.

    Raises:
        QueryError: ERR_QUERY for an IRI that is not one, or a reserved graph asked
            for outside ``grains=True``.
    """
    out: dict[str, Any] = {}
    for key, uris in (("default_graph", default), ("named_graphs", named)):
        if uris is None:
            continue
        graphs = []
        for uri in uris:
            try:
                graph = ox.NamedNode(uri)
            except ValueError:
                raise QueryError(f"{key}: {uri!r} is not an IRI") from None
            reserved = graph in RESERVED_GRAPHS and not (
                key == "default_graph" and graph == OMS.current
            )
            if reserved and not grains:
                raise QueryError(
                    f"{uri} is one of the store's own graphs; ask for it with grains=True"
                )
            graphs.append(graph)
        out[key] = graphs
    return out


def _bound_texts(
    subject: str | None,
    relation: str | None,
    namespace: str | None,
    settings: MappingSettings = DEFAULT_SETTINGS,
) -> tuple[tuple[str, ...], dict[Variable, Any]]:
    """The patterns to write for the bound texts, most selective first, and bindings.

    Oxigraph keeps the written order of equally selective patterns, and binds only
    what the query projects, so only the bound texts are written. A subject is
    found by its text, or by ``rdf:subject`` when the text is the IRI itself; a
    relation by its ``rdf:predicate``.
    """
    bindings: dict[Variable, Any] = {}
    texts = []
    if subject is not None:
        by, term = subject_pattern(subject)
        name = "subjectTerm" if by == RDF.subject else "subject"
        bindings[Variable(name)] = term
        texts.append(name)
    if relation is not None:
        bindings[Variable("relation")] = relation_pattern(relation, settings)[1]
        texts.append("relation")
    if namespace is not None:
        bindings[Variable("namespace")] = Literal(namespace)
        texts.append("namespace")
    return tuple(texts), bindings


def _triples(solutions: QuerySolutions) -> Iterator[tuple[Any, Any, Any]]:
    return ((row["g"], row["sf"], row["blob"]) for row in solutions)


# A graph the store never writes: the default graph of a query with FROM NAMED only.
_NO_GRAPH = ox.NamedNode("https://w3id.org/oms-rdf/ns#noGraph")
