"""What each grain node asserts, kept in process for lookups.

A lookup of one subject's beliefs with a relation or a namespace
(:func:`.lookup.subject_rows`), or of the beliefs that assert one triple
(:func:`.lookup.believers`), tests each grain of the subject, and most are
another relation or an older version: pattern calls for each, which on disk
cost more than the rest of the lookup. A grain is immutable, so what its node
asserts never changes. Its ``rdf:subject``, ``rdf:predicate``, ``rdf:object``,
``oms:graph`` and ``oms:namespace`` values are kept here by node: from the grain
as it is written (:meth:`GrainFacts.learn`), or read from the store the first
time a lookup meets the node. The tests are then comparisons in Python, of
terms in the form the store keeps them (:func:`stored_form`). (The index layer,
which does change, is always read from the store.)

An erased grain's node no longer comes up among a subject's grains, so nothing
kept of it is asked again (and a grain put again is learnt again); the oldest
entries go once ``KEPT`` are held.
"""

from __future__ import annotations

from functools import lru_cache
from threading import Lock
from typing import Any, NamedTuple

from pyoxigraph import DefaultGraph, Literal, NamedNode, Quad, Store

from ..backends.base import Backend
from ..codec.grain import Grain, namespace_of
from ..codec.schema import BELIEF
from ..rdf.mapping import MappingSettings, grain_belief_terms
from ..rdf.vocab import OMS, RDF, XSD

__all__ = ["KEPT", "GrainFacts", "stored_form"]

KEPT = 65_536  # nodes: 18.5 MB of Python objects when full, and the terms they hold
_DEFAULT = DefaultGraph()
_NONE: tuple[Any, ...] = ()


class _Facts(NamedTuple):
    """The values a node has of each predicate (a tuple each, almost always one)."""

    subjects: tuple[Any, ...]
    relations: tuple[Any, ...]
    objects: tuple[Any, ...]
    graphs: tuple[Any, ...]
    namespaces: tuple[Any, ...]


_FIELD = {
    RDF.subject: "subjects",
    RDF.predicate: "relations",
    RDF.object: "objects",
    OMS.graph: "graphs",
    OMS.namespace: "namespaces",
}


@lru_cache(maxsize=4_096)
def _shared(value: Any) -> tuple[Any, ...]:
    """One value as a tuple shared by every grain that has it (relations, graphs)."""
    return (value,)


@lru_cache(maxsize=4_096)
def _namespace(text: str) -> tuple[Any, ...]:
    return (Literal(text),)


# Oxigraph keeps a typed literal by its value ("01"^^xsd:integer reads back as
# "1", xsd:byte as xsd:integer), so a term as a grain writes it and as the store
# reads it back may differ where the store's own lookups find them equal. Terms
# are kept and compared in the form the store keeps, learnt from a store of
# their own.
_ENGINE, _ENGINE_LOCK = Store(), Lock()
_HERE = NamedNode("urn:oms:stored-form")


def stored_form(term: Any) -> Any:
    """The term as the store keeps it: a typed literal other than a string in
    the engine's form, anything else as it is."""
    if type(term) is not Literal or term.language is not None:
        return term
    return term if term.datatype == XSD.string else _engine_form(term)


@lru_cache(maxsize=4_096)
def _engine_form(term: Literal) -> Any:
    with _ENGINE_LOCK:
        _ENGINE.add(Quad(_HERE, _HERE, term, _DEFAULT))
        try:
            return next(_ENGINE.quads_for_pattern(_HERE, _HERE, None)).object
        finally:
            _ENGINE.clear()


class GrainFacts:
    """What grain nodes assert, by node IRI."""

    def __init__(self, kept: int = KEPT) -> None:
        self._facts: dict[str, _Facts] = {}
        self._kept = kept

    def __len__(self) -> int:
        return len(self._facts)

    def learn(self, grain: Grain, settings: MappingSettings) -> None:
        """Keep what a grain's rows will say, as it is written."""
        namespace = _namespace(namespace_of(grain.fields))
        if grain.type_byte != BELIEF.byte:
            facts = _Facts(_NONE, _NONE, _NONE, _NONE, namespace)
        else:
            s, p, o, g = grain_belief_terms(grain, settings)
            graphs = _NONE if g is None else _shared(g)
            facts = _Facts((s,), _shared(p), (stored_form(o),), graphs, namespace)
        self._keep(f"nih:sha-256;{grain.address}", facts)

    def has(
        self, backend: Backend, node: NamedNode, wanted: list[tuple[NamedNode, Any]]
    ) -> bool:
        """Whether the node has every (predicate, value) of ``wanted``, each an
        ``rdf:predicate``, ``rdf:object`` or ``oms:namespace`` pair: what a
        pattern call per pair would say."""
        facts = self._of(backend, node)
        return all(
            stored_form(value) in getattr(facts, _FIELD[p]) for p, value in wanted
        )

    def asserts(
        self, backend: Backend, node: NamedNode, relation: Any, obj: Any, graph: Any
    ) -> bool:
        """Whether the node is a belief of this relation and object whose knowledge
        graph is ``graph``: its first ``oms:graph``, else ``oms:current``."""
        facts = self._of(backend, node)
        if relation not in facts.relations or stored_form(obj) not in facts.objects:
            return False
        knowledge: Any = facts.graphs[0] if facts.graphs else OMS.current
        return bool(knowledge == graph)

    def knowledge(self, backend: Backend, node: NamedNode) -> Quad | None:
        """The knowledge quad a belief node asserts: its subject, relation and
        object, in its first ``oms:graph``, else ``oms:current``; None when the
        node holds no single triple (not a belief, or not stored)."""
        facts = self._of(backend, node)
        triple = (facts.subjects, facts.relations, facts.objects)
        if any(len(values) != 1 for values in triple):
            return None
        graph = facts.graphs[0] if facts.graphs else OMS.current
        return Quad(facts.subjects[0], facts.relations[0], facts.objects[0], graph)

    def _of(self, backend: Backend, node: NamedNode) -> _Facts:
        """What the node asserts: kept, or read from ``backend``, which must hold
        every quad of the node's grain layer (the store's own backend)."""
        facts = self._facts.get(node.value)
        if facts is not None:
            return facts
        found: dict[str, list[Any]] = {name: [] for name in _Facts._fields}
        for quad in backend.quads(node, None, None, _DEFAULT):
            name = _FIELD.get(quad.predicate)
            if name is not None:
                found[name].append(quad.object)
        facts = _Facts(*(tuple(found[name]) for name in _Facts._fields))
        # Kept only when whole: every grain has a namespace (without one, no
        # grain is there), and a belief a subject, a relation and an object.
        belief = (bool(facts.subjects), bool(facts.relations), bool(facts.objects))
        if facts.namespaces and len(set(belief)) == 1:
            self._keep(node.value, facts)
        return facts

    def _keep(self, node: str, facts: _Facts) -> None:
        held = self._facts
        if len(held) >= self._kept and node not in held:
            del held[next(iter(held))]  # the oldest
        held[node] = facts
