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
   past, up to its successor's ``oms:validFrom``. A belief split by a change
   over a portion of its valid time (``oms:splitInto``) describes none once
   closed: the parts written in its place (its successor and the pieces kept)
   say all it said.

A belief is **held** (its triple is in ``oms:current``) when the index gives it
no system end, ``oms:systemTo``: it is not superseded, retracted or
contradicted, whatever its times. It is **held at** system time T when the store
had it by T (``oms:systemFrom <= T``) and its system end, if any, is after T:
the knowledge held at T whatever its valid time. The two differ only where a
system time lies ahead of T.

The same rules give the **extents** of a belief (:func:`extents`): the
rectangles of (valid time, system time) in which it is in force, at most two:

- from ``oms:systemFrom`` until it was superseded or voided (the earlier),
  valid from ``oms:validFrom`` to ``oms:validTo``;
- once superseded (not split) and until voided, valid from ``oms:validFrom``
  up to its successor's ``oms:validFrom`` (and not after ``oms:validTo``): rule 4.

A belief is in force at (V, T) exactly when one of its extents holds the point,
and a test holds the two definitions equal on random histories.

Both are written here once, as SPARQL group patterns (:func:`in_force`,
:func:`held`), and every query that asks them is built from them: the beliefs of
a point, their count, the knowledge of a point (``snapshot``), the beliefs held,
the held beliefs whose valid time has ended (the knowledge of now, see
:mod:`oms_rdf.store.now`) and the rewrite of a query onto the grain layer
(:mod:`oms_rdf.store.rewrite`). :mod:`oms_rdf.store.lookup` evaluates the same
conditions by pattern lookups, and :mod:`oms_rdf.store.intervals` turns them into
each belief's extents for the interval layer; tests hold each equal to these
(the layer's answers to ``snapshot()``, on random histories).

Terms are written as SPARQL text: pyoxigraph terms through ``str()`` (their
N-Triples syntax) and variables; never a caller's text.

>>> print(held("?g"))
FILTER NOT EXISTS { GRAPH <https://w3id.org/oms-rdf/ns#index> { ?g <https://w3id.org/oms-rdf/ns#systemTo> ?closed } }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

from pyoxigraph import Literal, NamedNode

from .vocab import OMS, RDF

__all__ = [
    "BELIEFS_COUNT",
    "DELTA_POINTS",
    "EXTENT_VARIABLES",
    "NOW_ENDED",
    "TEXTS",
    "beliefs_by_status_query",
    "beliefs_query",
    "bounds_of",
    "current_beliefs_query",
    "delta_query",
    "extents",
    "held",
    "in_force",
    "in_force_at",
    "node_block",
    "snapshot_query",
    "versions_query",
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
    vf, sf, vt, void, st, later, later_from, split = map(
        var, ("vf", "sf", "vt", "void", "st", "next", "nextFrom", "split")
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
        # validFrom. Asked by nested EXISTS, one lookup each, and only of a grain
        # closed by then: an OPTIONAL would have Oxigraph read every validFrom
        # for each grain where the grain is not bound when the group is planned
        # (inside EXISTS), and it gave a row per successor.
        f"OPTIONAL {{ GRAPH {index} {{ {g} {OMS.systemTo} {st} }} }}",
        f"FILTER (!BOUND({st}) || {as_of} < {st} || "
        f"EXISTS {{ GRAPH {index} {{ {g} {OMS.supersededBy} {later} }} "
        f"FILTER EXISTS {{ {later} {OMS.validFrom} {later_from} "
        f"FILTER ({valid_at} < {later_from}) }} "
        f"FILTER NOT EXISTS {{ GRAPH {index} {{ {g} {OMS.splitInto} {split} }} }} }})",
    ]
    return "\n  ".join(lines)


# What :func:`extents` binds: the extent's ends, xsd:dateTime (unbound: open).
EXTENT_VARIABLES = ("validFrom", "validTo", "systemFrom", "systemTo")


def extents(
    g: str,
    *,
    var: Namer = plain,
    first: Pairs = (),
    then: Pairs = (),
    known_at: str | None = None,
) -> str:
    """The group pattern of the extents of a belief ``g``: one solution per
    extent (see the module), its ends bound to ``var`` of
    :data:`EXTENT_VARIABLES` (``validTo``, ``systemTo`` unbound: open-ended);
    ``first`` and ``then`` as for :func:`in_force`; ``known_at``: the extents
    as the store knew them at that system time (see :func:`bounds_of`).

    The conditions are those of :func:`in_force`, each turned into the end of an
    interval: ``oms:validTo`` and the successor's ``oms:validFrom`` end valid
    time, ``oms:systemTo`` and ``oms:voidedAt`` system time.
    """
    vf, sf, vt, void, st, later_from, part, end = map(
        var, ("vf", "sf", "vt", "void", "st", "nextFrom", "part", "end")
    )
    valid_from, valid_to, system_from, system_to = map(var, EXTENT_VARIABLES)
    # Part 1: before any system end; part 2: superseded, its successor valid later.
    superseded_only = f"BOUND({st}) && (!BOUND({void}) || {st} < {void})"
    lines = [
        bounds_of(g, var=var, first=first, then=then, known_at=known_at),
        f"VALUES {part} {{ 1 2 }}",
        f"FILTER ({part} = 1 || (BOUND({later_from}) && {superseded_only}))",
        f"BIND (IF({superseded_only}, {st}, {void}) AS {end})",
        f"BIND ({vf} AS {valid_from})",
        f"BIND (IF({part} = 1 || (BOUND({vt}) && {vt} < {later_from}), {vt}, "
        f"{later_from}) AS {valid_to})",
        f"BIND (IF({part} = 1, {sf}, {st}) AS {system_from})",
        f"BIND (IF({part} = 1, {end}, {void}) AS {system_to})",
        f"FILTER (!BOUND({valid_to}) || {valid_from} < {valid_to})",
        f"FILTER (!BOUND({system_to}) || {system_from} < {system_to})",
    ]
    return "\n  ".join(lines)


@lru_cache(maxsize=16)
def versions_query(texts: tuple[str, ...]) -> str:
    """Every extent of every belief, whatever the times: when each was in force
    (the version query "when was this true"). Bound through substitutions as
    :func:`beliefs_query`; each row has ``?g``, its ``?blob``, the triple's
    ``?o`` and the extent (:data:`EXTENT_VARIABLES`), oldest first."""
    shown = " ".join(f"?{name}" for name in EXTENT_VARIABLES)
    pattern = extents("?g", then=[(RDF.subject, "?entity"), (RDF.object, "?o")])
    return f"""SELECT DISTINCT ?g ?blob ?o {shown} {_TEXT_VARIABLES} WHERE {{
  {_text_patterns(texts)}
  {pattern}
  OPTIONAL {{ GRAPH {OMS.blobs} {{ ?g {OMS.blob} ?blob }} }}
}}
ORDER BY ?systemFrom ?validFrom ?g"""


# The two points of a delta, in this order: each a variable (bound by the
# caller) or an ``xsd:dateTime`` literal written into the query.
DELTA_POINTS = ("validSince", "asOfSince", "validUntil", "asOfUntil")


@lru_cache(maxsize=16)
def delta_query(
    texts: tuple[str, ...],
    points: tuple[Literal, ...] | None = None,
    *,
    lateral: bool = False,
) -> str:
    """What entered and left between two points: the beliefs in force at
    (``validUntil``, ``asOfUntil``) and not at (``validSince``, ``asOfSince``),
    ``?change`` "entered", and the other way, "left".

    The points are ``points`` (``xsd:dateTime`` literals, in the order of
    :data:`DELTA_POINTS`), written into the query; without them they are the
    variables of those names, bound through substitutions (and projected, as
    pyoxigraph binds only projected variables). The ``texts`` are named as for
    :func:`beliefs_query`. Each row has the belief ``?g``, its ``?blob``, its
    triple ``?s ?p ?o`` and ``?change``, the highest rank first.

    Only the beliefs one of whose bounds lies between the two points are asked
    whether they are in force at each: a belief in force at one point and not
    the other has an extent (:func:`extents`) that holds the one and not the
    other, so one end of that extent lies between them, on the valid axis
    (``oms:validFrom``, ``oms:validTo``, its successor's ``oms:validFrom``) or
    on the system axis (``oms:systemFrom``, ``oms:systemTo``, ``oms:voidedAt``).
    Each is asked by :func:`in_force_at` over its bounds, in the query's top
    group: a server binds variables by a ``VALUES`` block there, which a nested
    group would not see, and an ``EXISTS`` per candidate is a scan in Oxigraph.
    Points written in are seen everywhere, so then the candidates are found
    first, each bound tested where it is read (three times faster at 10k
    beliefs than one filter over every bound). With ``lateral`` (an engine
    that takes Oxigraph's ``LATERAL``, and points written in) each candidate's
    bounds are then read with it bound: Oxigraph would otherwise read those of
    every belief and join them with the candidates (half the time at 20k).
    """
    inline = points is not None
    at = dict(zip(DELTA_POINTS, map(str, points or ()), strict=False))
    v_since, k_since, v_until, k_until = (at.get(n, f"?{n}") for n in DELTA_POINTS)
    v_lo, v_hi = _ordered(v_since, v_until)
    k_lo, k_hi = _ordered(k_since, k_until)
    in_range = {
        "valid": f"{v_lo} < ?_b && ?_b <= {v_hi}",
        "system": f"{k_lo} < ?_b && ?_b <= {k_hi}",
    }
    candidates = " UNION ".join(
        f"{{ {pattern} FILTER ({in_range[axis]}) }}"
        if inline
        else f'{{ {pattern} BIND ("{axis}" AS ?_axis) }}'
        for axis, pattern in _delta_bounds()
    )
    if inline:
        candidates = f"{{ SELECT DISTINCT ?g WHERE {{ {candidates} }} }}"
    else:
        candidates += (
            f'\n  FILTER (IF(?_axis = "valid", {in_range["valid"]},\n'
            f"             {in_range['system']}))"
        )
    since = in_force_at(v_since, k_since, var=lambda n: f"?_{n}")
    until = in_force_at(v_until, k_until, var=lambda n: f"?_{n}")
    triple = node_block(
        "?g",
        [
            (RDF.subject, "?s"),
            (RDF.predicate, "?p"),
            (RDF.object, "?o"),
            (OMS.confidence, "?confidence"),
        ],
    )
    times = "" if inline else " ".join(f"?{n}" for n in DELTA_POINTS) + " "
    shown = f"?g ?blob ?s ?p ?o ?change ?sf {times}{_TEXT_VARIABLES}"
    each = f"""{bounds_of("?g", var=lambda n: f"?_{n}")}
  BIND (IF({until}, "entered", "left") AS ?change)
  BIND (IF({since}, "entered", "left") AS ?_before)
  FILTER (?change != ?_before)
  BIND (?_sf AS ?sf)
  {triple}
  {_rank()}
  OPTIONAL {{ GRAPH {OMS.blobs} {{ ?g {OMS.blob} ?blob }} }}"""
    order = "ORDER BY DESC(?rank) DESC(?sf) ?g"
    if lateral and inline:  # DISTINCT there is the GROUP BY below
        inner = "?g ?blob ?s ?p ?o ?change ?sf ?rank"
        return f"""SELECT {shown} WHERE {{
  {_text_patterns(texts)}
  {candidates}
  LATERAL {{ SELECT DISTINCT {inner} WHERE {{
  {each}
  }} }}
}}
{order}"""
    return f"""SELECT {shown} WHERE {{
  {_text_patterns(texts)}
  {candidates}
  {each}
}}
GROUP BY {shown} ?rank
{order}"""


def _delta_bounds() -> list[tuple[str, str]]:
    """Each bound a delta's candidates are found by: its axis, its pattern
    binding ``?_b`` for a belief ``?g``."""
    index = OMS.index
    later = f"GRAPH {index} {{ ?g {OMS.supersededBy} ?_later }}"
    return [
        ("valid", f"?g {OMS.validFrom} ?_b"),
        ("valid", f"?g {OMS.validTo} ?_b"),
        ("valid", f"{later} ?_later {OMS.validFrom} ?_b"),
        ("system", f"?g {OMS.systemFrom} ?_b"),
        ("system", f"GRAPH {index} {{ ?g {OMS.systemTo} ?_b }}"),
        ("system", f"GRAPH {index} {{ ?g {OMS.voidedAt} ?_b }}"),
    ]


def bounds_of(
    g: str,
    *,
    var: Namer = plain,
    first: Pairs = (),
    then: Pairs = (),
    known_at: str | None = None,
) -> str:
    """The group pattern binding the bounds of a belief ``g`` that
    :func:`in_force_at` reads: ``vf``, ``sf``, and where the belief has them
    ``vt``, ``void``, ``st`` and ``nextFrom`` (each named by ``var``);
    ``first`` and ``then`` as for :func:`in_force`.

    With ``known_at`` (a variable or an ``xsd:dateTime`` literal), only the
    system ends recorded by then: a retraction or supersession at a later
    system time was not known, so an answer as of a past time stays the same
    whatever is written after it."""
    vf, sf, vt, void, st, later, later_from, split = map(
        var, ("vf", "sf", "vt", "void", "st", "next", "nextFrom", "split")
    )
    index = OMS.index

    def known(end: str) -> str:
        return "" if known_at is None else f" FILTER ({end} <= {known_at})"

    return "\n  ".join(
        [
            node_block(g, [*first, (OMS.validFrom, vf), (OMS.systemFrom, sf), *then]),
            f"OPTIONAL {{ {g} {OMS.validTo} {vt} }}",
            f"OPTIONAL {{ GRAPH {index} {{ {g} {OMS.voidedAt} {void} }}{known(void)} }}",
            f"OPTIONAL {{ GRAPH {index} {{ {g} {OMS.systemTo} {st} }}{known(st)} }}",
            # A split grain's successor bounds nothing (rule 4): unbound.
            f"OPTIONAL {{ GRAPH {index} {{ {g} {OMS.supersededBy} {later} }} "
            f"FILTER NOT EXISTS {{ GRAPH {index} {{ {g} {OMS.splitInto} {split} }} }} "
            f"OPTIONAL {{ {later} {OMS.validFrom} {later_from} }} }}",
        ]
    )


def in_force_at(valid_at: str, as_of: str, *, var: Namer = plain) -> str:
    """The rules of :func:`in_force` as one boolean expression over the bounds
    :func:`bounds_of` binds (named by the same ``var``): true when the belief
    is in force at (``valid_at``, ``as_of``). A test holds the two equal."""
    vf, sf, vt, void, st, later_from = map(
        var, ("vf", "sf", "vt", "void", "st", "nextFrom")
    )
    # COALESCE, not BOUND: a comparison with an unbound end is an error, so it
    # falls to the default; Virtuoso misreads BOUND beside a FILTER.
    return (
        f"{sf} <= {as_of} && {vf} <= {valid_at}"
        f" && COALESCE({valid_at} < {vt}, true)"
        f" && COALESCE({as_of} < {void}, true)"
        f" && (COALESCE({as_of} < {st}, true)"
        f" || COALESCE({valid_at} < {later_from}, false))"
    )


def _ordered(a: str, b: str) -> tuple[str, str]:
    """The earlier and the later of two times, as SPARQL expressions."""
    return f"IF({a} < {b}, {a}, {b})", f"IF({a} < {b}, {b}, {a})"


def held(g: str, *, var: Namer = plain, at: str | None = None) -> str:
    """The filter of a belief ``g`` held: no system end in the index; with
    ``at`` (a variable or an ``xsd:dateTime`` literal), held at that system
    time: entered by then, and no system end by then."""
    closed = var("closed")
    if at is None:
        return f"FILTER NOT EXISTS {{ GRAPH {OMS.index} {{ {g} {OMS.systemTo} {closed} }} }}"
    since = var("heldFrom")
    return (
        f"{g} {OMS.systemFrom} {since} FILTER ({since} <= {at}) "
        f"FILTER NOT EXISTS {{ GRAPH {OMS.index} {{ {g} {OMS.systemTo} {closed} }} "
        f"FILTER ({closed} <= {at}) }}"
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
def current_beliefs_query(texts: tuple[str, ...], at: bool = False) -> str:
    """The beliefs held now, whatever their valid time: ``?g`` and its ``?blob``;
    with ``at``, those held at the system time bound to ``?heldAt``.

    ``texts``: ``("namespace",)`` when ``?namespace`` is bound, else ``()``.
    """
    return f"""SELECT ?g ?blob ?namespace ?heldAt WHERE {{
  {_text_patterns(texts)}
  ?g {RDF.subject} ?s .
  {held("?g", at="?heldAt" if at else None)}
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
