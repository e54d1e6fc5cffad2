"""When a belief is in force: the one definition, and the SPARQL built on it.

A belief (a grain node ``g`` of the grain layer) is **in force** at valid time V
as known at system time T when

1. the store had it by T and its valid time had begun by V:
   ``oms:systemFrom <= T`` and ``oms:validFrom <= V``;
2. its valid time had not ended at V: no ``oms:validTo``, or ``V < oms:validTo``;
3. it was not retracted or contradicted by T: no ``oms:voidedAt <= T`` in the
   index (then it answers for no valid time);
4. it was not superseded by T (no ``oms:systemTo <= T`` in the index), or its
   successor is valid only after V: a superseded belief still describes the
   past, up to its successor's ``oms:validFrom``.

A belief is **held** (its triple is in ``oms:current``) when the index gives it
no system end, ``oms:systemTo``: it is not superseded, retracted or
contradicted, whatever its times.

Both are written here once, as SPARQL group patterns (:func:`in_force`,
:func:`held`), and every query that asks them is built from them: the beliefs of
a point, their count, the knowledge of a point (``snapshot``), the beliefs held,
the held beliefs whose valid time has ended (the knowledge of now, see
:mod:`oms_rdf.store.now`) and the rewrite of a query onto the grain layer
(:mod:`oms_rdf.store.rewrite`). :mod:`oms_rdf.store.lookup` evaluates the same
conditions by pattern lookups, and a test holds the two equal.

Terms are written as SPARQL text: pyoxigraph terms through ``str()`` (their
N-Triples syntax) and variables; never a caller's text.

>>> print(held("?g"))
FILTER NOT EXISTS { GRAPH <https://w3id.org/oms-rdf/ns#index> { ?g <https://w3id.org/oms-rdf/ns#systemTo> ?closed } }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from pyoxigraph import Literal, NamedNode

from .vocab import OMS, RDF

__all__ = [
    "BELIEFS_COUNT",
    "NOW_ENDED",
    "TEXTS",
    "GrainClause",
    "beliefs_by_status_query",
    "beliefs_query",
    "current_beliefs_query",
    "grain_clause",
    "held",
    "in_force",
    "node_block",
    "snapshot_query",
]

# A variable's SPARQL text from its local name: "?name", or a name of the caller's.
Namer = Callable[[str], str]

# What a grain node's block holds: (predicate, object as SPARQL text) pairs.
Pairs = Sequence[tuple[NamedNode, str]]


def plain(name: str) -> str:
    """The variable ``?name``."""
    return f"?{name}"


def node_block(g: str, pairs: Pairs) -> str:
    """The triples of one node, ``g p1 o1 ; p2 o2 .``"""
    return f"{g} " + " ;\n     ".join(f"{p} {o}" for p, o in pairs) + " ."


def in_force(
    g: str,
    valid_at: str,
    as_of: str,
    *,
    var: Namer = plain,
    first: Pairs = (),
    then: Pairs = (),
) -> str:
    """The group pattern of a belief ``g`` in force at (``valid_at``, ``as_of``).

    ``valid_at`` and ``as_of`` are variables or ``xsd:dateTime`` literals;
    ``var`` names the pattern's own variables; ``first`` and ``then`` are more
    triples of ``g``, written before and after its times (Oxigraph keeps the
    written order of equally selective patterns).
    """
    vf, sf, vt, void, st, later, later_from = map(
        var, ("vf", "sf", "vt", "void", "st", "next", "nextFrom")
    )
    index = OMS.index
    lines = [
        node_block(g, [*first, (OMS.validFrom, vf), (OMS.systemFrom, sf), *then]),
        f"FILTER ({sf} <= {as_of} && {vf} <= {valid_at})",
        f"OPTIONAL {{ {g} {OMS.validTo} {vt} }}",
        f"FILTER (!BOUND({vt}) || {valid_at} < {vt})",
        # Retracted or contradicted by as_of: in force at no valid time.
        f"FILTER NOT EXISTS {{ GRAPH {index} {{ {g} {OMS.voidedAt} {void} }} "
        f"FILTER ({void} <= {as_of}) }}",
        # Superseded by as_of: still describes the past, up to the successor's
        # validFrom (nested: Oxigraph would otherwise join every validFrom first).
        f"OPTIONAL {{ GRAPH {index} {{ {g} {OMS.systemTo} {st} }} }}",
        f"OPTIONAL {{ GRAPH {index} {{ {g} {OMS.supersededBy} {later} }} "
        f"OPTIONAL {{ {later} {OMS.validFrom} {later_from} }} }}",
        f"FILTER (!BOUND({st}) || {as_of} < {st} || "
        f"(BOUND({later_from}) && {valid_at} < {later_from}))",
    ]
    return "\n  ".join(lines)


def held(g: str, *, var: Namer = plain) -> str:
    """The filter of a belief ``g`` held now: no system end in the index."""
    return (
        f"FILTER NOT EXISTS {{ GRAPH {OMS.index} "
        f"{{ {g} {OMS.systemTo} {var('closed')} }} }}"
    )


# The texts a listing of beliefs may be narrowed by: each is the variable of the
# same name, matched by this predicate of the grain node ?g. A subject is found by
# its text, or by rdf:subject when the text is the IRI itself.
TEXTS = {
    "subject": OMS.subjectText,
    "subjectTerm": RDF.subject,
    "relation": RDF.predicate,
    "namespace": OMS.namespace,
}
_TEXT_VARIABLES = " ".join(f"?{name}" for name in TEXTS)


def _text_patterns(texts: Sequence[str]) -> str:
    """The patterns of the bound texts, in this order (the most selective first).

    Only the bound ones are written: Oxigraph plans before the substitutions are
    known, and pyoxigraph binds only projected variables (so all are projected).
    """
    return "\n  ".join(f"?g {TEXTS[name]} ?{name} ." for name in texts)


def _rank() -> str:
    """?rank: the effective confidence, the blob's adjusted by earned evidence."""
    earned = f"GRAPH {OMS.index} {{ ?g {OMS.effectiveConfidence} ?earned }}"
    return f"OPTIONAL {{ {earned} }}\n  BIND (COALESCE(?earned, ?confidence) AS ?rank)"


@lru_cache(maxsize=16)
def beliefs_query(texts: tuple[str, ...]) -> str:
    """The beliefs in force at (``?validAt``, ``?asOf``), highest rank first.

    Bound through substitutions: ``?validAt``, ``?asOf`` (``xsd:dateTime``) and
    the ``texts`` named (see :data:`TEXTS`). Each row has the belief ``?g``, its
    ``?blob`` (so that the store does not look it up again) and ``?sf``.
    """
    first, then = [(OMS.confidence, "?confidence")], [(RDF.subject, "?entity")]
    pattern = in_force("?g", "?validAt", "?asOf", first=first, then=then)
    return f"""SELECT ?g ?blob ?confidence ?sf ?asOf ?validAt {_TEXT_VARIABLES} WHERE {{
  {_text_patterns(texts)}
  {pattern}
  {_rank()}
  OPTIONAL {{ GRAPH {OMS.blobs} {{ ?g {OMS.blob} ?blob }} }}
}}
ORDER BY DESC(?rank) DESC(?sf) ?g"""


@lru_cache(maxsize=16)
def snapshot_query(texts: tuple[str, ...]) -> str:
    """The knowledge in force at (``?validAt``, ``?asOf``): each belief's triple
    ``?s ?p ?o`` and its named graph ``?kg`` (unbound: the default graph).

    The same patterns and filters as :func:`beliefs_query`, so that time-travel
    SPARQL and ``beliefs()`` cannot drift apart; no rank, no blob.
    """
    triple = [(RDF.subject, "?s"), (RDF.predicate, "?p"), (RDF.object, "?o")]
    pattern = in_force(
        "?g", "?validAt", "?asOf", first=[(OMS.confidence, "?confidence")], then=triple
    )
    return f"""SELECT ?s ?p ?o ?kg ?asOf ?validAt {_TEXT_VARIABLES} WHERE {{
  {_text_patterns(texts)}
  {pattern}
  OPTIONAL {{ ?g {OMS.graph} ?kg }}
}}"""


# How many beliefs are in force at (?validAt, ?asOf): a snapshot's size.
BELIEFS_COUNT = f"""SELECT (COUNT(?g) AS ?count) ?asOf ?validAt WHERE {{
  {in_force("?g", "?validAt", "?asOf", first=[(RDF.subject, "?entity")])}
}}
GROUP BY ?asOf ?validAt"""


@lru_cache(maxsize=8)
def current_beliefs_query(texts: tuple[str, ...]) -> str:
    """The beliefs held now, whatever their valid time: ``?g`` and its ``?blob``.

    ``texts``: ``("namespace",)`` when ``?namespace`` is bound, else ``()``.
    """
    return f"""SELECT ?g ?blob ?namespace WHERE {{
  {_text_patterns(texts)}
  ?g {RDF.subject} ?s .
  {held("?g")}
  GRAPH {OMS.blobs} {{ ?g {OMS.blob} ?blob }}
}}"""


@lru_cache(maxsize=16)
def beliefs_by_status_query(texts: tuple[str, ...]) -> str:
    """The beliefs of index status ``?statusNode`` (``oms:active``,
    ``oms:superseded``, ``oms:retracted``) whatever their times, highest rank
    first: the listing semantics of REST memory APIs. Active is the absence of
    a status row."""
    status = f"GRAPH {OMS.index} {{ ?g {OMS.status} ?status }}"
    fields = [(OMS.confidence, "?confidence"), (OMS.systemFrom, "?sf")]
    block = node_block("?g", [*fields, (RDF.subject, "?entity")])
    return f"""SELECT ?g ?rank ?sf ?statusNode {_TEXT_VARIABLES} WHERE {{
  {_text_patterns(texts)}
  {block}
  OPTIONAL {{ {status} }}
  FILTER (COALESCE(?status, {OMS.active}) = ?statusNode)
  {_rank()}
}}
ORDER BY DESC(?rank) DESC(?sf) ?g"""


# A belief held whose valid time ended by ?now: it is in oms:current but not in
# the knowledge in force at ?now (store/now.py).
NOW_ENDED = f"""SELECT ?now ?g WHERE {{
  ?g {OMS.validTo} ?t FILTER (?t <= ?now)
  {held("?g")}
}}
LIMIT 1"""


# --- the rewrite's clause (store/rewrite.py) -------------------------------------


@dataclass(frozen=True, slots=True)
class GrainClause:
    """What a grain node holding a triple of the knowledge matches: in force at
    a point (``valid_at``, ``as_of``: ``xsd:dateTime`` literals), or held now
    when there is no point; of some namespaces (none: every one)."""

    point: tuple[Literal, Literal] | None
    namespaces: tuple[str, ...]

    def pattern(self, s: str, p: str, o: str, graph: str | None, atom: int) -> str:
        """The pattern of a grain node whose triple is ``s p o`` (SPARQL text of
        the query's terms) in ``graph`` (None: the default graph). Its own
        variables end with ``_{atom}``, so that those of two atoms never meet."""

        def var(name: str) -> str:
            return f"?_oms{name}_{atom}"

        g = var("g")
        triple = [(RDF.subject, s), (RDF.predicate, p), (RDF.object, o)]
        if self.point is None:
            blob = f"GRAPH {OMS.blobs} {{ {g} {OMS.blob} {var('blob')} }}"
            parts = [node_block(g, triple), held(g, var=var), blob]
        else:
            valid_at, as_of = (str(t) for t in self.point)
            first = [(OMS.confidence, var("confidence"))]
            parts = [in_force(g, valid_at, as_of, var=var, first=first, then=triple)]
        if self.namespaces:
            values = " ".join(str(Literal(n)) for n in self.namespaces)
            ns = var("ns")
            parts.append(f"{g} {OMS.namespace} {ns} . VALUES {ns} {{ {values} }}")
        if graph is None:
            parts.append(f"FILTER NOT EXISTS {{ {g} {OMS.graph} {var('anyg')} }}")
        else:
            parts.append(f"{g} {OMS.graph} {graph} .")
        return " ".join(parts)


def grain_clause(
    valid_at: Literal | None, as_of: Literal | None, namespaces: Sequence[str | None]
) -> GrainClause:
    """The clause of the knowledge at (``valid_at``, ``as_of``), or of now when
    both are None, in these namespaces (None is every one): the definitions of
    :func:`in_force` and :func:`held`, so that the rewrite and ``beliefs()`` cannot
    drift apart."""
    wanted = tuple(n for n in namespaces if n is not None)
    if valid_at is None or as_of is None:
        return GrainClause(None, wanted)
    return GrainClause((valid_at, as_of), wanted)
