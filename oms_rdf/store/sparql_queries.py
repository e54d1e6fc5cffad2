"""SPARQL over the knowledge: query(), frame() and snapshot(), now or at a point.

A query of now runs over the knowledge held (``oms:current`` and the adopted
named graphs) when that is the knowledge in force now (:mod:`.now`); a query of
a point is rewritten onto the grain layer (:mod:`.rewrite`), or, where SPARQL
cannot say it so, asked of that point's knowledge built from the grains in force
(:mod:`oms_rdf.rdf.inforce`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox
from pyoxigraph import Variable

from ..codec.grain import Grain
from ..errors import QueryError
from ..rdf.clause import IN_FORCE_CALL, During, GrainClause, grain_clause
from ..rdf.inforce import current_beliefs_query, snapshot_query
from ..rdf.limits import check_query, text_cache
from ..rdf.mapping import belief_terms, millis_literal
from ..rdf.sparql import term_for
from ..rdf.tables import GrainList, query_prefixes
from ..rdf.terms import unskolem
from ..rdf.vocab import NO_GRAPH as _NO_GRAPH
from ..rdf.vocab import OMS
from .blanks import seen_as_blank
from .core import Core
from .intervals import VersionClause
from .knowledge import (
    PREFIXES,
    RESERVED_GRAPHS,
    QueryResult,
    Snapshot,
    Triples,
    check_dataset_args,
    check_held,
    check_range_args,
    check_valid,
    read_whole,
    run_query,
)
from .lookup import in_force_call
from .misread import refuse_misread_range
from .querytext import (
    UnreadableError,
    dataset_clause,
    dataset_start,
    unambiguous_tokens,
)
from .questions import Questions, bound_texts, namespaces_of
from .rewrite import rewrite, why_not
from .state import TimeLike, millis_or_now, spans_of

if TYPE_CHECKING:  # pandas is optional
    import pandas


class SparqlQueries:
    """Any SPARQL query over the knowledge of now or of a point, and snapshots."""

    def __init__(self, core: Core, questions: Questions) -> None:
        self.core = core
        self.questions = questions  # the point of now, the beliefs of a point

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
        valid_during: tuple[TimeLike, TimeLike] | None = None,
        system_during: tuple[TimeLike, TimeLike] | None = None,
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
        now whatever its valid time instead: entered by now and not closed by
        now (:func:`oms_rdf.rdf.inforce.held`; of now only: with a time it is
        refused). ``valid_at``/``as_of`` ask the same
        query of the knowledge of that point (a missing one means now), with the
        semantics of :meth:`beliefs`; ``namespace`` keeps one namespace (or those
        of a list; an empty list, which would keep none, is refused).
        ``grains=True`` queries the store as laid out (grain nodes, index, blobs,
        audit; see ``ontology/README.md``).

        ``valid_during=(start, end)`` asks a range instead of a point: every
        triple in force at some valid time in [start, end) (None: open), as
        known at ``as_of`` (default now), or at some system time in
        ``system_during`` (``(None, None)``: all of system time; without
        ``valid_during``, at valid time ``valid_at``, default now). Each solution
        then binds ``?validFrom ?validTo ?systemFrom ?systemTo``
        (``xsd:dateTime``; an unbound end is open): the extent in which it held,
        the latest start and earliest end of its triples' extents (as known at
        ``as_of``: an end written later is open), which the query may use
        (FILTER, ORDER BY, SELECT); a triple held in two extents gives two
        solutions.

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
                text over the limits of :func:`oms_rdf.rdf.limits.check_query`,
                grains=True with a time or namespace, or held=True with a time.
            TimeRangeError: ERR_RANGE for a range that holds no time.

        >>> from oms_rdf import Belief, GrainStore
        >>> store = GrainStore()
        >>> _ = store.put(Belief("http://example.org/alice", "http://xmlns.com/foaf/0.1/knows",
        ...                      "http://example.org/bob", 0.9, created_at=1_700_000_000_000))
        >>> [r["o"].value for r in store.query("SELECT ?o WHERE { ?s ?p ?o }")]
        ['http://example.org/bob']
        """
        check_query(sparql)  # before any parser: deep nesting crashes them
        check_held(held, valid_at, as_of, valid_during, system_during)
        if valid_during is not None or system_during is not None:
            check_range_args(grains, default_graph_uris, named_graph_uris)
            return self._asked_during(
                sparql,
                (valid_during, system_during, valid_at, as_of),
                namespace,
                [*(substitutions or {}).items(), *bindings.items()],
            )
        timed = valid_at is not None or as_of is not None
        check_dataset_args(grains, timed, namespace)
        if (
            not (grains or timed or held)
            and (now := self.questions.now_point()) is not None
        ):
            valid_at = as_of = now  # the held knowledge is not that of now
            timed = True
        values: dict[str | Variable, Any] = {
            k: term_for(v) for k, v in (substitutions or {}).items()
        }
        values.update((k, term_for(v)) for k, v in bindings.items())
        dataset = _dataset(default_graph_uris, named_graph_uris, grains)
        if grains:
            return run_query(self.core.backend, sparql, values, **dataset)
        sparql = seen_as_blank(sparql, values)  # stored blank nodes are blank
        # The knowledge held now is oms:current, but while a system time lies
        # ahead of the clock (a grain that enters later, or closes later).
        held_at = self.questions.held_point() if held else None
        if timed or namespace is not None or held_at is not None:
            return self._asked_at(
                sparql, values, dataset, valid_at, as_of, namespace, held_at=held_at
            )
        if not dataset:
            sparql, dataset = _own_dataset(sparql)
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

    def _asked_during(
        self,
        sparql: str,
        times: tuple[Any, Any, TimeLike, TimeLike],
        namespace: str | Sequence[str] | None,
        bindings: Sequence[tuple[str | Variable, Any]],
    ) -> QueryResult:
        """A range question (see :meth:`query`), rewritten onto the grain layer."""
        clock = self.core.clock
        valid, system = spans_of(times, clock)
        during = During(
            _literals(valid),
            millis_literal(millis_or_now(times[3], clock, "as_of")),
            None if system is None else _literals(system),
        )
        values = {k: term_for(v) for k, v in bindings}
        sparql = seen_as_blank(sparql, values)
        check_valid(sparql, values)
        clause = GrainClause(
            None, tuple(n for n in namespaces_of(namespace) if n is not None), during
        )
        text = rewrite(sparql, clause, lateral=self.core.backend.lateral_joins)
        if text is None:
            raise QueryError(
                "expected a range question the grain layer can answer; found "
                f"{why_not(sparql, clause)}"
            )
        refuse_misread_range(self.core.backend.exact_optionals, sparql, text)
        return run_query(self.core.backend, text, values)

    def _asked_at(
        self,
        sparql: str,
        values: Mapping[str | Variable, Any],
        dataset: dict[str, Any],
        valid_at: TimeLike,
        as_of: TimeLike,
        namespace: str | Sequence[str] | None,
        *,
        held_at: int | None = None,
    ) -> QueryResult:
        """A query of a point's knowledge (or of the held knowledge: of some
        namespaces, or at ``held_at``): rewritten onto the grain layer, else
        asked of that knowledge, built."""
        if not dataset:  # a reserved graph in FROM is refused at any point too
            _own_dataset(sparql)
        if namespace is None and held_at is None and not dataset:
            found = self._asked_of_intervals(sparql, values, valid_at, as_of)
            if found is not None:
                return found
        answer = self._asked_of_grains(
            sparql, values, dataset, valid_at, as_of, namespace, held_at
        )
        if answer is not None:
            return answer
        if self.core.backend.remote:  # never the point's knowledge copied here
            raise _refused(sparql, dataset)
        view = self._knowledge_store(valid_at, as_of, namespace, held_at)
        if "default_graph" in dataset:  # the knowledge's default graph is the view's
            dataset["default_graph"] = [
                ox.DefaultGraph() if g == OMS.current else g
                for g in dataset["default_graph"]
            ]
        return run_query(view, sparql, values, **dataset)

    def _asked_of_intervals(
        self,
        sparql: str,
        values: Mapping[str | Variable, Any],
        valid_at: TimeLike,
        as_of: TimeLike,
    ) -> QueryResult | None:
        """A query of a point's knowledge asked of the interval layer
        (intervals.py): as written, over the graphs of the versions in force
        there, or (more extents than a dataset should name, and a query the
        rewrite takes) with each triple pattern matched in a graph whose extent
        holds the point, unless the query is one scan that names fewer graphs
        than its predicate has versions (Intervals.scan_graphs). None where the
        layer does not answer (Intervals.ready; a form other than SELECT, ASK
        or CONSTRUCT)."""
        core = self.core
        if _form(sparql) not in _PLAIN_FORMS:
            return None
        valid = millis_or_now(valid_at, core.clock, "valid_at")
        known = millis_or_now(as_of, core.clock, "as_of")
        # Planned under the lock, on the layer as of the store's last write, and
        # asked after it: a write never waits for a long question, and does not
        # change the layer's store meanwhile (Intervals.begin_reading). Read
        # whole: no answer outlives the call to hold a layer store since replaced.
        with core.lock:
            planned = self._on_layer(sparql, values, valid, known)
        if planned is None:
            return None
        layer, text, dataset, as_stored, token = planned
        try:
            answer = run_query(layer, text, values, as_stored=as_stored, **dataset)
            return read_whole(answer)
        finally:
            core.intervals.done_reading(token)

    def _on_layer(
        self, sparql: str, values: Mapping[Any, Any], valid: int, known: int
    ) -> tuple[ox.Store, str, dict[str, Any], bool, object] | None:
        """How a query at (``valid``, ``known``) is asked of the interval layer:
        its store, the text, the dataset, whether the answer is as stored, and
        the token of the store held for reading; None where the layer does not
        answer."""
        intervals = self.core.intervals
        layer = intervals.ready(self.core.backend)
        if layer is None:
            return None
        # No stored blank node to give back, nor one a binding or IRI() brings.
        as_stored = not intervals.blank and not values and not _MINTS.search(sparql)
        graphs, text = None, None  # the graphs named, or a rewrite testing them
        if len(intervals.extents) > intervals.named_at_most:
            if not values:  # a scan: naming the graphs may cost less
                graphs = intervals.scan_graphs(sparql, valid, known)
            if graphs is None:
                clause = VersionClause(None, (), valid_at=valid, as_of=known)
                text = rewrite(sparql, clause, lateral=True)
        dataset: dict[str, Any] = {}
        if text is None:
            graphs = graphs or intervals.graphs_at(valid, known) or [_NO_GRAPH]
            text, dataset = sparql, {"default_graph": graphs, "named_graphs": []}
        return layer, text, dataset, as_stored, intervals.begin_reading()

    def _asked_of_grains(
        self,
        sparql: str,
        values: Mapping[str | Variable, Any],
        dataset: Mapping[str, Any],
        valid_at: TimeLike,
        as_of: TimeLike,
        namespace: str | Sequence[str] | None,
        held_at: int | None,
    ) -> QueryResult | None:
        """A query of a point's knowledge rewritten onto the grain layer
        (rewrite.py), so that the store (a server too) answers it where the data
        is, never building the point's knowledge; None where SPARQL cannot say
        it, or the query names its own dataset."""
        if dataset:
            return None
        check_valid(sparql, values)
        backend, whole = self.core.backend, False
        if valid_at is None and as_of is None:
            at = None if held_at is None else millis_literal(held_at)
            clause = grain_clause(None, None, namespaces_of(namespace), held_at=at)
        else:
            valid = millis_or_now(valid_at, self.core.clock, "valid_at")
            known = millis_or_now(as_of, self.core.clock, "as_of")
            # Beside a question reading the interval layer, not the lookups that
            # hold the lock (below) but the rule in SPARQL, on the snapshot, and
            # its answer read whole here, as every other in process at a point.
            whole = backend.python_functions
            called = whole and not self.core.intervals.reading
            clause = grain_clause(
                millis_literal(valid),
                millis_literal(known),
                namespaces_of(namespace),
                called=called,
            )
        text = rewrite(sparql, clause, lateral=backend.lateral_joins)
        if text is None:
            return None
        if str(IN_FORCE_CALL) not in text:
            answer = run_query(backend, text, values)
            return read_whole(answer) if whole else answer
        call = in_force_call(backend, valid_at=valid, as_of=known)
        # The lookups read the store as it is, the query a state of it: no write
        # may come between, so the answer is read whole here.
        with self.core.lock:
            answer = run_query(
                backend, text, values, custom_functions={IN_FORCE_CALL: call}
            )
            return read_whole(answer)

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
        result = self.query(
            sparql,
            valid_at=valid_at,
            as_of=as_of,
            namespace=namespace,
            grains=grains,
            substitutions=substitutions,
        )
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
        check_held(held, valid_at, as_of)
        grains: list[Grain] = []
        if valid_at is None and as_of is None and not held:
            valid_at = as_of = self.questions.now_point()
        if valid_at is None and as_of is None:
            point: tuple[int | None, int | None] = (None, None)
            held_at = self.questions.held_point() if held else None
            for ns in namespaces_of(namespace):
                grains += self._current_beliefs(ns, held_at)
        else:
            known = millis_or_now(as_of, self.core.clock, "as_of")
            valid = millis_or_now(valid_at, self.core.clock, "valid_at")
            point = (valid, known)
            for ns in namespaces_of(namespace):
                grains += self.questions.beliefs_by_query(None, None, ns, valid, known)
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
        held_at: int | None = None,
    ) -> ox.Store:
        """The knowledge of a point as a store to query, for what the rewrite
        cannot say. Its terms are the stored ones: blank nodes stay skolem IRIs,
        as in the knowledge of now and in a rewritten query, so that ``isBlank``
        answers alike whichever way a query goes (answers give them back)."""
        view = ox.Store()
        for ns in namespaces_of(namespace):
            if valid_at is None and as_of is None:
                view.extend(
                    self._knowledge_quad(g, skolem=True)
                    for g in self._current_beliefs(ns, held_at)
                )
                continue
            texts, bindings = bound_texts(None, None, ns, self.core.settings)
            bindings[Variable("asOf")] = millis_literal(
                millis_or_now(as_of, self.core.clock, "as_of")
            )
            bindings[Variable("validAt")] = millis_literal(
                millis_or_now(valid_at, self.core.clock, "valid_at")
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

    def _current_beliefs(
        self, namespace: str | None, held_at: int | None = None
    ) -> GrainList:
        """The beliefs held now (at ``held_at``: see :func:`.inforce.held`)."""
        texts, bindings = bound_texts(None, None, namespace)
        query = current_beliefs_query(texts, held_at is not None)
        if held_at is not None:
            bindings[Variable("heldAt")] = millis_literal(held_at)
        return self.questions.grains_of(self.core.backend.query(query, bindings))


def _refused(sparql: str, dataset: Mapping[str, Any]) -> QueryError:
    """The refusal of a query of a point that the rewrite cannot take, on a server."""
    if dataset:
        form = "a dataset of the query's own (default_graph_uris, named_graph_uris)"
    else:
        form = why_not(sparql, grain_clause(None, None, ())) or "its form"
    return QueryError(
        "expected a query of a point that can be asked of the grain layer where "
        f"the data is; found {form}, which on a SPARQL server would need the "
        "point's knowledge copied into this process. Ask it without that form "
        "(a fixed path length instead of * or +, SELECT instead of DESCRIBE), "
        "or of an embedded store"
    )


def _own_dataset(sparql: str) -> tuple[str, dict[str, Any]]:
    """The dataset a query names (FROM, FROM NAMED), as the Protocol's parameters
    would give it (the store's own graphs refused there too); none: ``{}``.

    FROM NAMED alone gives an empty default graph, a graph nothing is in; it is
    said in the query too, since Virtuoso lets a query's FROM NAMED override the
    Protocol's default graph (all its graphs then).
    """
    clause = dataset_clause(sparql, PREFIXES)
    if clause is None:
        return sparql, {}
    dataset = _dataset(*clause, grains=False)
    if not clause[0]:
        at = dataset_start(sparql)
        if at is not None:
            sparql = f"{sparql[:at]}FROM {_NO_GRAPH} {sparql[at:]}"
        dataset["default_graph"] = [_NO_GRAPH]
    dataset.setdefault("named_graphs", [])
    return sparql, dataset


def _dataset(
    default: Sequence[str] | None, named: Sequence[str] | None, grains: bool
) -> dict[str, Any]:
    """pyoxigraph's dataset arguments for the Protocol's graph IRIs.

    Given either, they are the whole dataset (SPARQL 1.1 Protocol §2.1.4): the
    other is empty, and the query's own FROM and FROM NAMED give way.

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
    if out:
        out.setdefault("default_graph", [_NO_GRAPH])
        out.setdefault("named_graphs", [])
    return out


_PLAIN_FORMS = frozenset({"SELECT", "ASK", "CONSTRUCT"})


_MINTS = re.compile(r"(?i)\b(IRI|URI)\s*\(|\.well-known/genid")  # a skolem IRI made


@text_cache
def _form(sparql: str) -> str | None:
    """The query form (SELECT, ASK, CONSTRUCT, DESCRIBE), None for one that
    names graphs (GRAPH, FROM) or text this reader cannot read."""
    try:
        tokens = unambiguous_tokens(sparql)
    except UnreadableError:
        return None
    words = [t.text.upper() for t in tokens if t.kind == "word"]
    if "GRAPH" in words or "FROM" in words or "SERVICE" in words:
        return None
    forms = [w for w in words if w in ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")]
    return forms[0] if forms else None


def _literals(span: tuple[int | None, int | None]) -> Any:
    """A range's ends as ``xsd:dateTime`` literals (None: open)."""
    return tuple(None if t is None else millis_literal(t) for t in span)
