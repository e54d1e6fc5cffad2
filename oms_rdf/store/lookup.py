"""Questions about one subject or one chain by pattern lookups, without a query.

The commonest question an agent asks is about one subject ("what do we hold
about alice now?"). A subject has a handful of grains, and reading each one's
quads (one pattern call, every graph) is several times cheaper than parsing,
planning and running the general query. This module answers with exactly the
semantics of ``queries/beliefs.rq``: the same filters in SPARQL's three-valued
logic (a comparison with a non-time value is an error, and an error filters the
row out), one row per belief when imported index state forks a supersession,
the same order. A test compares the two on bi-temporal stories. A supersession
chain is walked the same way, as ``queries/history.rq`` would.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator
from itertools import product
from typing import Any, NamedTuple

from pyoxigraph import DefaultGraph, Literal, NamedNode, Quad

from ..backends.base import Backend
from ..rdf.mapping import (
    MappingSettings,
    address_of,
    grain_iri,
    relation_pattern,
    subject_pattern,
)
from ..rdf.sparql import load_query
from ..rdf.vocab import OMS, RDF
from .grain_facts import GrainFacts, NodeFacts, number, time_of

_DEFAULT = DefaultGraph()
_INDEX, _BLOBS, _BLOB = OMS.index, OMS.blobs, OMS.blob  # looked up once, not per quad
_VERSION_LINKS = (OMS.supersededBy, OMS.splitInto)  # what history follows
_UNBOUND = -1 << 64  # an OPTIONAL time the grain does not have (none is so early)


class Solution(NamedTuple):
    """One solution of the beliefs query: what the store needs to build the grain."""

    rank: float
    system_from: int
    node: NamedNode
    blob: Literal | None


GRAIN_TOTAL = load_query("grain_total")
HELD_COUNT = load_query("held_count")


def count_grains(backend: Backend) -> int:
    """The number of grains held (``queries/grain_total.rq``): one COUNT the
    engine answers from its index, instead of a Python pass over every blob."""
    rows = list(backend.query(GRAIN_TOTAL))
    return int(rows[0]["count"].value) if rows else 0


def count_held(backend: Backend) -> int:
    """The number of beliefs held now, closed ones left out (``queries/held_count.rq``)."""
    rows = list(backend.query(HELD_COUNT))
    return int(rows[0]["count"].value) if rows else 0


def subject_rows(
    backend: Backend,
    settings: MappingSettings,
    subject: str,
    relation: str | None,
    namespace: str | None,
    *,
    valid_at: int,
    as_of: int,
    facts: GrainFacts | None = None,
    known: Container[str] = (),
) -> list[Solution]:
    """Return the solutions of ``beliefs.rq`` for a bound subject, in its order.

    With ``facts`` (what grain nodes assert, kept in process), each grain's
    relation, namespace, times and confidence are compared in Python, and only
    its index layer is read; its blob too unless its address is ``known`` (the
    grain is at hand: a solution then has no blob)."""
    rows: list[Solution] = []
    # The bound texts are checked first: most candidates fail them.
    wanted: list[tuple[NamedNode, Any]] = []
    if relation is not None:
        wanted.append(relation_pattern(relation, settings))
    if namespace is not None:
        wanted.append((OMS.namespace, Literal(namespace)))
    by, term = subject_pattern(subject)
    match = None if facts is None else facts.matcher(wanted)
    for quad in backend.quads(None, by, term, _DEFAULT):
        node = quad.subject
        if not isinstance(node, NamedNode):
            continue
        if match is None:
            if all(_has(backend, node, p, value, _DEFAULT) for p, value in wanted):
                rows += _solutions(backend, node, valid_at, as_of)
        elif (found := match(backend, node)) is not None:
            rows += _known_solutions(backend, node, found, valid_at, as_of, known)
    # ORDER BY DESC(?rank) DESC(?sf) ?g
    rows.sort(key=lambda r: (-r.rank, -r.system_from, r.node.value))
    return rows


def in_force(backend: Backend, node: NamedNode, *, valid_at: int, as_of: int) -> bool:
    """Whether ``beliefs.rq`` would answer with this grain at (``valid_at``, ``as_of``):
    the conditions of :func:`_solutions`, each asked once, no solution built."""
    fields: dict[str, list[Any]] = {}
    for quad in backend.quads(node, None, None, _DEFAULT):
        fields.setdefault(quad.predicate.value, []).append(quad.object)
    if not fields.get(RDF.subject.value) or not fields.get(OMS.confidence.value):
        return False
    begun = any(
        _begun(valid_from, system_from, valid_at, as_of)
        for system_from in fields.get(OMS.systemFrom.value, ())
        for valid_from in fields.get(OMS.validFrom.value, ())
    )
    ends = fields.get(OMS.validTo.value, [])
    return begun and _not_ended(backend, node, ends, valid_at, as_of)


def in_force_call(
    backend: Backend, *, valid_at: int, as_of: int
) -> Callable[[Any, Any, Any, Any], Literal]:
    """The function :data:`~oms_rdf.rdf.clause.IN_FORCE_CALL` stands for in a
    query at (``valid_at``, ``as_of``): true for a grain node, with its
    ``oms:validFrom`` and ``oms:systemFrom``, in force there as :func:`in_force`
    says, and, when its last argument is true, of the default graph (no
    ``oms:graph``). pyoxigraph calls it for each grain the query reaches."""
    yes, no = Literal(True), Literal(False)

    def call(node: Any, valid_from: Any, system_from: Any, default: Any) -> Literal:
        if not isinstance(node, NamedNode) or not _begun(
            valid_from, system_from, valid_at, as_of
        ):
            return no
        if default == yes and _has(backend, node, OMS.graph, None, _DEFAULT):
            return no
        ends = [q.object for q in backend.quads(node, OMS.validTo, None, _DEFAULT)]
        return yes if _not_ended(backend, node, ends, valid_at, as_of) else no

    return call


def _begun(valid_from: Any, system_from: Any, valid_at: int, as_of: int) -> bool:
    # FILTER (?sf <= ?asOf && ?vf <= ?validAt)
    return (
        _and(_le(time_of(system_from), as_of), _le(time_of(valid_from), valid_at))
        is True
    )


def _not_ended(
    backend: Backend, node: NamedNode, ends: list[Any], valid_at: int, as_of: int
) -> bool:
    """The rest of the rules, for a grain whose times have begun, with these
    ``oms:validTo``: its valid time has not ended, and the index has not voided
    it or superseded it for that valid time."""
    # OPTIONAL { ?g oms:validTo ?vt } FILTER (!BOUND(?vt) || ?validAt < ?vt)
    if ends and not any(_lt(valid_at, time_of(end)) for end in ends):
        return False
    index: dict[str, list[Any]] = {}
    for quad in backend.quads(node, None, None, _INDEX):
        index.setdefault(quad.predicate.value, []).append(quad.object)
    return (
        not _voided(index, as_of) and _system_ends(backend, index, valid_at, as_of) > 0
    )


def _voided(index: dict[str, list[Any]], as_of: int) -> bool:
    # FILTER NOT EXISTS { GRAPH oms:index { ?g oms:voidedAt ?void } FILTER (?void <= ?asOf) }
    return any(_le(time_of(v), as_of) for v in index.get(OMS.voidedAt.value, ()))


def _solutions(
    backend: Backend,
    node: NamedNode,
    valid_at: int,
    as_of: int,
) -> list[Solution]:
    fields: dict[str, list[Any]] = {}
    index: dict[str, list[Any]] = {}
    blobs: list[Any] = []
    for quad in backend.quads(node, None, None, None):
        graph = quad.graph_name
        if graph == _DEFAULT:
            fields.setdefault(quad.predicate.value, []).append(quad.object)
        elif graph == _INDEX:
            index.setdefault(quad.predicate.value, []).append(quad.object)
        elif graph == _BLOBS and quad.predicate == _BLOB:
            blobs.append(quad.object)

    def values(p: NamedNode) -> list[Any]:
        return fields.get(p.value, [])

    facts = NodeFacts(
        tuple(values(RDF.subject)),
        (),  # what the rows need of the node: not its relation, object, ...
        (),
        (),
        (),
        tuple(map(number, values(OMS.confidence))),
        tuple(map(time_of, values(OMS.validFrom))),
        tuple(map(time_of, values(OMS.systemFrom))),
        tuple(map(time_of, values(OMS.validTo))),
    )
    return _rows(backend, node, facts, index, blobs, valid_at, as_of)


def _known_solutions(
    backend: Backend,
    node: NamedNode,
    facts: NodeFacts,
    valid_at: int,
    as_of: int,
    known: Container[str],
) -> list[Solution]:
    """:func:`_solutions`, with what never changes of the grain taken from its
    ``facts``: a pattern call for the index layer, and one for the blob unless
    the grain is ``known``."""
    if not facts.subjects or not facts.confidences:
        return []
    index: dict[str, list[Any]] = {}
    for quad in backend.quads(node, None, None, _INDEX):
        index.setdefault(quad.predicate.value, []).append(quad.object)
    blobs: list[Any] = []
    if address_of(node) not in known:
        blobs = [q.object for q in backend.quads(node, _BLOB, None, _BLOBS)]
    return _rows(backend, node, facts, index, blobs, valid_at, as_of)


def _rows(
    backend: Backend,
    node: NamedNode,
    facts: NodeFacts,
    index: dict[str, list[Any]],
    blobs: list[Any],
    valid_at: int,
    as_of: int,
) -> list[Solution]:
    """The solutions of one grain node, from its values (each of its subjects
    makes a solution, and its times), its index layer and its blobs."""
    if not facts.subjects or _voided(index, as_of):
        return []
    ends = _system_ends(backend, index, valid_at, as_of)
    if not ends:
        return []
    earned = [number(t) for t in index.get(OMS.effectiveConfidence.value, ())]
    out = []
    for _entity, confidence, valid_from, system_from in product(
        facts.subjects, facts.confidences, facts.valid_froms, facts.system_froms
    ):
        # FILTER (?sf <= ?asOf && ?vf <= ?validAt)
        if (
            system_from is None
            or _and(_le(system_from, as_of), _le(valid_from, valid_at)) is not True
        ):
            continue
        # OPTIONAL { ?g oms:validTo ?vt } FILTER (!BOUND(?vt) || ?validAt < ?vt)
        for valid_to in facts.valid_tos or [_UNBOUND]:
            if valid_to != _UNBOUND and _lt(valid_at, valid_to) is not True:
                continue
            # BIND (COALESCE(?earned, ?confidence) AS ?rank)
            for _end, rank, blob in product(
                range(ends), earned or [confidence], blobs or [None]
            ):
                out.append(Solution(rank, system_from, node, blob))
    return out


def _system_ends(
    backend: Backend, index: dict[str, list[Any]], valid_at: int, as_of: int
) -> int:
    """How many systemTo solutions keep the grain (none: one, unbound).

    A superseded grain still describes the past, up to its successor's validFrom:
    FILTER (!BOUND(?st) || ?asOf < ?st || EXISTS { a successor valid after ?validAt }).
    """
    ends = index.get(OMS.systemTo.value)
    if not ends:
        return 1
    later = OMS.splitInto.value not in index and any(  # a split grain: none
        _lt(valid_at, time_of(q.object)) is True
        for successor in index.get(OMS.supersededBy.value, ())
        if isinstance(successor, NamedNode)
        for q in backend.quads(successor, OMS.validFrom, None, _DEFAULT)
    )
    return sum(1 for end in ends if _or(_lt(as_of, time_of(end)), later))


def believers(
    backend: Backend,
    knowledge: Quad,
    ignoring: Container[str] = (),
    facts: GrainFacts | None = None,
) -> Iterator[NamedNode]:
    """The beliefs held now (:func:`oms_rdf.rdf.inforce.held`) whose triple is
    this knowledge quad, in its graph (``oms:current`` or a named graph): what
    keeps the triple in the knowledge while one of them leaves it. Grains whose
    addresses are in ``ignoring`` are passed over unread (those leaving).

    Pattern lookups from the subject: a handful of grains, not a query; with
    ``facts``, what each grain asserts is compared in process.
    """
    s, p, o = knowledge.subject, knowledge.predicate, knowledge.object
    graph = knowledge.graph_name
    for quad in backend.quads(None, RDF.subject, s, _DEFAULT):
        node = quad.subject
        if not isinstance(node, NamedNode) or (
            ignoring and address_of(node) in ignoring
        ):
            continue
        if facts is not None:
            asserts = facts.asserts(backend, node, p, o, graph)
        else:
            asserts = (
                _has(backend, node, RDF.predicate, p, _DEFAULT)
                and _has(backend, node, RDF.object, o, _DEFAULT)
                and _graph_of(backend, node) == graph
            )
        if asserts and not _has(backend, node, OMS.systemTo, None, OMS.index):
            yield node


def _has(backend: Backend, s: Any, p: Any, o: Any, graph: Any) -> bool:
    # (No local keeps the lookup's iterator: pyoxigraph refuses to drop one on the
    # thread the garbage collector runs, should an error hold it in a cycle.)
    return next(backend.quads(s, p, o, graph), None) is not None


def _graph_of(backend: Backend, node: NamedNode) -> Any:
    """The knowledge graph of a belief node: its ``oms:graph``, else ``oms:current``."""
    named = next(backend.quads(node, OMS.graph, None, _DEFAULT), None)
    return OMS.current if named is None else named.object


def kept_past_until(backend: Backend, address: str) -> int | None:
    """Up to when in valid time a superseded belief still describes the past, as
    the in-force rule reads it (:func:`_system_ends`): its successors' latest
    ``oms:validFrom``; None when it has no successor with one (an erased
    successor's is gone with it, and the belief then describes none) or was
    split over a portion of its valid time (its parts say what it said)."""
    node, starts = grain_iri(address), []
    if next(backend.quads(node, OMS.splitInto, None, _INDEX), None) is not None:
        return None
    for link in list(backend.quads(node, OMS.supersededBy, None, _INDEX)):
        if isinstance(link.object, NamedNode):
            found = backend.quads(link.object, OMS.validFrom, None, _DEFAULT)
            starts += [time_of(q.object) for q in found]
    return max((s for s in starts if s is not None), default=None)


def earlier_versions(backend: Backend, node: Any) -> Iterator[Any]:
    """The grains a grain node replaced: those it superseded, and those a change
    over a portion of valid time split into it (``oms:splitInto``)."""
    for link in _VERSION_LINKS:
        yield from (q.subject for q in backend.quads(None, link, node, OMS.index))


def later_versions(backend: Backend, node: Any) -> Iterator[Any]:
    """The grains that replaced a grain node, as :func:`earlier_versions`."""
    for link in _VERSION_LINKS:
        yield from (q.object for q in backend.quads(node, link, None, OMS.index))


def chain_rows(backend: Backend, target: NamedNode) -> list[tuple[Any, Any, Any]]:
    """Return the ``(?g, ?sf, ?blob)`` solutions of ``history.rq`` for ``target``.

    The first versions are the grains that ``target`` descends from and that no
    other replaced (:func:`earlier_versions`); the chain is every grain they lead
    to (forks and portions included). Under a cycle
    in imported index state there is no first version, and no chain.
    """
    roots: list[Any] = []
    seen: set[Any] = {target}
    todo: list[Any] = [target]
    while todo:
        node = todo.pop()
        earlier = list(earlier_versions(backend, node))
        if not earlier:
            roots.append(node)
        for grain in earlier:
            if grain not in seen:
                seen.add(grain)
                todo.append(grain)
    chain: set[Any] = set(roots)
    todo = list(roots)
    while todo:
        for later in later_versions(backend, todo.pop()):
            if later not in chain:
                chain.add(later)
                todo.append(later)
    rows: list[tuple[Any, Any, Any]] = []
    for grain in chain:
        starts: list[Any] = [
            q.object for q in backend.quads(grain, OMS.systemFrom, None, _DEFAULT)
        ]
        blobs: list[Any] = [
            q.object for q in backend.quads(grain, OMS.blob, None, OMS.blobs)
        ]
        rows += [
            (grain, start, blob)
            for start in starts or [None]
            for blob in blobs or [None]
        ]
    return rows


# SPARQL's three-valued logic: None is an error, and only True keeps a row.
def _le(a: int | None, b: int | None) -> bool | None:
    return None if a is None or b is None else a <= b


def _lt(a: int | None, b: int | None) -> bool | None:
    return None if a is None or b is None else a < b


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False
