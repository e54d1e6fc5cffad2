"""What the interval layer (:mod:`.intervals`) reads of the grain layer: each
belief's triple, times, namespace and rank, from one query, read whole as the
engine's TSV text or, for a few triples, as terms.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pyoxigraph as ox

from ..backends.base import Backend
from ..rdf.vocab import OMS, RDF
from .belief_extents import Extent, Held
from .grain_facts import number_text, time_of

__all__ = ["GrainRead", "Triple", "read", "read_text"]

Triple = tuple[Any, Any, Any]  # subject, predicate, object: terms or N-Triples text

# Each grain with a triple, its times, and what its delta needs (belief_extents):
# versions are made of those without a named graph.
_GRAINS = f"""SELECT ?g ?s ?p ?o ?vf ?vt ?sf ?st ?void ?next ?kg ?ns ?conf ?earned
WHERE {{
  ?g {RDF.subject} ?s ; {RDF.predicate} ?p ; {RDF.object} ?o ;
     {OMS.validFrom} ?vf ; {OMS.systemFrom} ?sf .
  OPTIONAL {{ ?g {OMS.graph} ?kg }}
  OPTIONAL {{ ?g {OMS.namespace} ?ns }}
  OPTIONAL {{ ?g {OMS.confidence} ?conf }}
  OPTIONAL {{ GRAPH {OMS.index} {{ ?g {OMS.effectiveConfidence} ?earned }} }}
  OPTIONAL {{ ?g {OMS.validTo} ?vt }}
  OPTIONAL {{ GRAPH {OMS.index} {{ ?g {OMS.systemTo} ?st }} }}
  OPTIONAL {{ GRAPH {OMS.index} {{ ?g {OMS.voidedAt} ?void }} }}
  OPTIONAL {{ GRAPH {OMS.index} {{ ?g {OMS.supersededBy} ?successor }}
             ?successor {OMS.validFrom} ?next
             FILTER NOT EXISTS {{ GRAPH {OMS.index} {{ ?g {OMS.splitInto} ?part }} }} }}
}}"""


@dataclass(slots=True)
class GrainRead:
    """A belief's triple and times, as the grain layer gives them (several
    values of one time: the one the in-force rules would take)."""

    triple: Triple
    times: dict[str, int | None]
    typed: bool = True  # every time an xsd:dateTime with a time zone
    named: bool = False  # in a named graph: not a version of the default graph
    namespace: str | None = None
    confidence: float | None = None
    earned: float | None = None  # the effective confidence, once evidence moved it

    def take(self, name: str, ms: int | None) -> None:
        """One value of a time (None: not an ``xsd:dateTime`` with a zone)."""
        if ms is None:
            self.typed = False
            return
        old = self.times[name]
        if old is not None:
            ms = min(old, ms) if name in _LEAST else max(old, ms)
        self.times[name] = ms

    def mark(
        self, named: bool, namespace: str | None, confidence: str, earned: str
    ) -> None:
        """What a delta needs (the numbers as their lexical forms; "": none)."""
        self.named = self.named or named
        if self.namespace is None and namespace is not None:
            self.namespace = sys.intern(namespace)  # one text for all its beliefs
        if self.confidence is None and confidence:
            self.confidence = _number(confidence)
        if self.earned is None and earned:
            self.earned = _number(earned)

    def held(self, address: str, extents: list[Extent]) -> Held | None:
        """The belief's record for its delta; None where it is not a belief
        (no confidence)."""
        if self.confidence is None:
            return None
        rank = self.confidence if self.earned is None else self.earned
        sf = self.times["sf"]
        assert sf is not None
        return Held(address, tuple(extents), self.namespace, rank, sf)


@lru_cache(maxsize=4_096)  # one object for a value many beliefs have
def _number(lexical: str) -> float:
    return number_text(lexical)  # NaN is never written: the codec takes numbers


# How several values of one time combine under the in-force rules: a grain is
# in force if any (validFrom, systemFrom) pair and any validTo, systemTo or
# successor lets it, and out of it if any voidedAt puts it out.
_LEAST, _MOST = frozenset({"vf", "sf", "void"}), frozenset({"vt", "st", "next"})


_TIMES = ("vf", "vt", "sf", "st", "void", "next")  # columns 4 to 9 of _GRAINS


def read(backend: Backend, bound: dict[str, Any]) -> Iterable[tuple[str, GrainRead]]:
    """The beliefs of the default knowledge graph (of one triple, if bound),
    each with its times."""
    grains: dict[Any, GrainRead] = {}
    values = {ox.Variable(k): v for k, v in bound.items()}
    millis: dict[Any, int | None] = {}  # a batch's grains share their times
    for row in backend.query(_GRAINS, substitutions=values):
        node = row[0]
        grain = grains.get(node)
        if grain is None:
            triple = (row[1], row[2], row[3])
            grain = grains[node] = GrainRead(triple, dict.fromkeys(_TIMES))
        for i, name in enumerate(_TIMES, 4):
            term = row[i]
            if term is not None:
                ms = millis.get(term, -1)
                if ms == -1:
                    ms = millis[term] = time_of(term)
                grain.take(name, ms)
        kg, ns, confidence, earned = row[10], row[11], row[12], row[13]
        grain.mark(
            kg is not None,
            None if ns is None else ns.value,
            "" if confidence is None else confidence.value,
            "" if earned is None else earned.value,
        )
    return [(str(node), grain) for node, grain in grains.items()]


def read_text(backend: Backend) -> Iterable[tuple[str, GrainRead]] | None:
    """:func:`read` of the whole store from the query's answer as text (TSV,
    written by the engine): its triples as N-Triples text, no term made in
    Python for each of them. None where a term has no N-Triples text here (a
    triple term): then :func:`read` reads it."""
    answer = backend.query(_GRAINS)
    text = answer.serialize(format=ox.QueryResultsFormat.TSV).decode()
    grains: dict[str, GrainRead] = {}
    millis: dict[str, int | None] = {}
    texts: dict[str, str] = {}  # namespaces, as cells and as text
    for line in text.split("\n")[1:]:
        if not line:
            continue
        cells = line.split("\t")
        grain = grains.get(cells[0])
        if grain is None:
            s, p, o = (_nt(cell) for cell in cells[1:4])
            if s is None or p is None or o is None:
                return None
            grain = grains[cells[0]] = GrainRead((s, p, o), dict.fromkeys(_TIMES))
        for i, name in enumerate(_TIMES, 4):
            cell = cells[i]
            if cell:  # else unbound
                ms = millis.get(cell, -1)
                if ms == -1:
                    ms = millis[cell] = _cell_millis(cell)
                grain.take(name, ms)
        kg, ns, confidence, earned = cells[10:14]
        if ns and ns not in texts:  # an empty cell is unbound; "" is a text
            texts[ns] = _cell_text(ns)
        namespace = texts[ns] if ns else None
        grain.mark(bool(kg), namespace, _lexical(confidence), _lexical(earned))
    return grains.items()


_XSD = "http://www.w3.org/2001/XMLSchema#"
_DATETIME_CELL = f'"^^<{_XSD}dateTime>'


def _cell_millis(cell: str) -> int | None:
    """A time as a TSV cell gives it, as :func:`.grain_facts.time_of` reads it."""
    if not (cell.startswith('"') and cell.endswith(_DATETIME_CELL)):
        return None
    lexical = cell[1 : -len(_DATETIME_CELL)]
    return time_of(ox.Literal(lexical, datatype=ox.NamedNode(_XSD + "dateTime")))


def _cell_text(cell: str) -> str:
    """The text of a string literal's TSV cell, read by the engine's parser
    (TSV writes some control characters raw that N-Triples escapes)."""
    line = f"<x:s> <x:p> {cell} .".encode()
    return str(next(iter(ox.parse(line, format=ox.RdfFormat.N_TRIPLES))).object.value)


def _lexical(cell: str) -> str:
    """A number's lexical form from its TSV cell (written short, or typed)."""
    return cell[1 : cell.index('"', 1)] if cell.startswith('"') else cell


def _nt(cell: str) -> str | None:
    """A TSV cell as N-Triples text: TSV writes numbers and booleans short."""
    if cell.startswith("<<"):
        return None
    if cell[:1] in ("<", '"') or cell.startswith("_:"):
        return cell
    if cell in ("true", "false"):
        kind = "boolean"
    elif "e" in cell or "E" in cell:
        kind = "double"
    else:
        kind = "decimal" if "." in cell else "integer"
    return f'"{cell}"^^<{_XSD}{kind}>'
