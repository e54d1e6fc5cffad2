"""The rewrite's clause: what a grain node holding a triple of the queried
knowledge matches (:mod:`oms_rdf.store.rewrite`), built from the definitions of
:mod:`oms_rdf.rdf.inforce` so that the rewrite and ``beliefs()`` cannot drift
apart: in force at a point, held now, or in force somewhere in a range.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyoxigraph import Literal, NamedNode

from .inforce import (
    EXTENT_VARIABLES,
    Namer,
    Pairs,
    extents,
    held,
    in_force,
    node_block,
)
from .vocab import OMS, RDF

__all__ = ["IN_FORCE_CALL", "During", "GrainClause", "grain_clause", "overlaps"]


# A range of time: its start and end (xsd:dateTime literals; None: open).
Span = tuple[Literal | None, Literal | None]


def overlaps(start: str, end: str, span: Span) -> str:
    """The filter of an extent [``start``, ``end``) (``end`` unbound: open)
    meeting ``span``; empty when nothing is asked of it."""
    tests = []
    if span[0] is not None:
        tests.append(f"(!BOUND({end}) || {span[0]} < {end})")
    if span[1] is not None:
        tests.append(f"{start} < {span[1]}")
    return f"FILTER ({' && '.join(tests)})" if tests else ""


@dataclass(frozen=True, slots=True)
class During:
    """A range question: the beliefs in force at some point of ``valid``, as
    known at ``as_of`` (a point) or at some point of ``system``."""

    valid: Span
    as_of: Literal | None = None
    system: Span | None = None

    def pattern(self, g: str, var: Namer, triple: Pairs) -> str:
        """The extents of ``g`` that meet the range, bound to ``var`` of
        :data:`EXTENT_VARIABLES` (the same rules as :func:`in_force`)."""
        first = [(OMS.confidence, var("confidence"))]
        # As known at a point: the system ends written after it are not read.
        known_at = None if self.system is not None else str(self.as_of)
        parts = [extents(g, var=var, first=first, then=triple, known_at=known_at)]
        vf, vt, sf, st = map(var, EXTENT_VARIABLES)
        parts.append(overlaps(vf, vt, self.valid))
        if self.system is not None:
            parts.append(overlaps(sf, st, self.system))
        else:
            t = str(self.as_of)
            parts.append(f"FILTER ({sf} <= {t} && (!BOUND({st}) || {t} < {st}))")
        return " ".join(p for p in parts if p)


# A function the store gives an engine that runs in its process (pyoxigraph's
# custom functions): true for a grain node in force at the query's point, by
# lookups (store/lookup.py). Oxigraph plans each OPTIONAL of in_force() at about
# 40 us, more than a selective pattern's whole evaluation.
IN_FORCE_CALL = NamedNode("https://w3id.org/oms-rdf/fn#inForce")


@dataclass(frozen=True, slots=True)
class GrainClause:
    """What a grain node holding a triple of the knowledge matches: in force at
    a point (``valid_at``, ``as_of``: ``xsd:dateTime`` literals), or held now
    when there is no point, or in force somewhere in a range (``during``); of
    some namespaces (none: every one). With ``called``, a triple with a bound
    subject is tested in force at the point by :data:`IN_FORCE_CALL`: a subject
    has a few grains, each cheaper to look up than the patterns are to plan (an
    object may have thousands, each cheaper for the engine to test itself)."""

    point: tuple[Literal, Literal] | None
    namespaces: tuple[str, ...]
    during: During | None = None
    called: bool = False
    held_at: Literal | None = None  # with no point: held at this system time

    def pattern(
        self,
        s: str,
        p: str,
        o: str,
        graph: str | None,
        atom: int,
        *,
        lead: int | None = None,
    ) -> str:
        """The pattern of a grain node whose triple is ``s p o`` (SPARQL text of
        the query's terms) in ``graph`` (None: the default graph). Its own
        variables end with ``_{atom}``, so that those of two atoms never meet.

        With ``lead`` (0: the subject, 1: the object, 2: the relation; an engine
        that takes Oxigraph's ``LATERAL``), the grain nodes are found by that end
        first and the rest is evaluated for each of them: inside ``EXISTS``,
        Oxigraph plans a group without the outer bindings, and would join every
        grain's times with the triple's nodes for each outer solution."""

        def var(name: str) -> str:
            return f"?_oms{name}_{atom}"

        g = var("g")
        # Only a belief's node has rdf:subject (rdf/mapping.py), and always its
        # oms:confidence: asking for that too would cost a lookup per grain.
        # Oxigraph takes equally selective patterns in the written order: a
        # bound subject or object narrows more than a relation does.
        triple = [(RDF.subject, s), (RDF.object, o), (RDF.predicate, p)]
        called_default = False  # the call tests for the default graph itself
        if self.during is not None:
            parts = [self.during.pattern(g, var, triple)]
        elif self.point is None:
            blob = f"GRAPH {OMS.blobs} {{ {g} {OMS.blob} {var('blob')} }}"
            at = None if self.held_at is None else str(self.held_at)
            parts = [node_block(g, triple), held(g, var=var, at=at), blob]
        elif self.called and not _variable(s):
            vf, sf = var("vf"), var("sf")
            times = [(OMS.validFrom, vf), (OMS.systemFrom, sf)]
            default = "true" if graph is None else "false"
            parts = [
                node_block(g, [*triple, *times]),
                f"FILTER ({IN_FORCE_CALL}({g}, {vf}, {sf}, {default}))",
            ]
            called_default = graph is None
        else:
            valid_at, as_of = (str(t) for t in self.point)
            parts = [in_force(g, valid_at, as_of, var=var, then=triple)]
        if self.namespaces:
            values = " ".join(str(Literal(n)) for n in self.namespaces)
            ns = var("ns")
            parts.append(f"{g} {OMS.namespace} {ns} . VALUES {ns} {{ {values} }}")
        if graph is not None:
            parts.append(f"{g} {OMS.graph} {graph} .")
        elif not called_default:
            parts.append(f"FILTER NOT EXISTS {{ {g} {OMS.graph} {var('anyg')} }}")
        if lead is None:
            return " ".join(parts)
        found_by, end = triple[lead]
        return f"{{ {g} {found_by} {end} }} LATERAL {{ {' '.join(parts)} }}"

    def extent_of(self, atom: int) -> list[str]:
        """The variables of an atom's extent, projected in a range question."""
        if self.during is None:
            return []
        return [f"?_oms{name}_{atom}" for name in EXTENT_VARIABLES]

    def joined(self, atoms: Sequence[int]) -> str:
        """In a range question, the extent in which a solution held, bound to
        ``?validFrom ?validTo ?systemFrom ?systemTo``: the latest start and the
        earliest end of its atoms' extents (an atom unmatched, as in an
        OPTIONAL, bounds nothing), kept only when it is not empty and meets
        the range; empty otherwise."""
        if self.during is None:
            return ""
        parts = []
        for name, latest in zip(
            EXTENT_VARIABLES, (True, False, True, False), strict=True
        ):
            values = [f"?_oms{name}_{a}" for a in atoms]
            current = values[0] if values else "?_omsnone"
            for i, value in enumerate(values[1:], 1):
                pick = ">" if latest else "<"
                nxt = f"?_omsacc{name}_{i}"
                parts.append(
                    f"BIND (COALESCE(IF({current} {pick} {value}, {current}, {value}), "
                    f"{current}, {value}) AS {nxt})"
                )
                current = nxt
            parts.append(f"BIND ({current} AS ?{name})")
        parts.append("FILTER (!BOUND(?validTo) || ?validFrom < ?validTo)")
        parts.append("FILTER (!BOUND(?systemTo) || ?systemFrom < ?systemTo)")
        parts.append(overlaps("?validFrom", "?validTo", self.during.valid))
        if self.during.system is not None:
            parts.append(overlaps("?systemFrom", "?systemTo", self.during.system))
        return " ".join(p for p in parts if p)


def _variable(text: str) -> bool:
    return text[:1] in ("?", "$")


def grain_clause(
    valid_at: Literal | None,
    as_of: Literal | None,
    namespaces: Sequence[str | None],
    *,
    called: bool = False,
    held_at: Literal | None = None,
) -> GrainClause:
    """The clause of the knowledge at (``valid_at``, ``as_of``), or of the
    knowledge held when both are None (at ``held_at``, or for good), in these
    namespaces (None is every one): the definitions of :func:`in_force` and
    :func:`held`, so that the rewrite and ``beliefs()`` cannot drift apart;
    ``called`` as for :class:`GrainClause`."""
    wanted = tuple(n for n in namespaces if n is not None)
    if valid_at is None or as_of is None:
        return GrainClause(None, wanted, held_at=held_at)
    return GrainClause((valid_at, as_of), wanted, called=called)
