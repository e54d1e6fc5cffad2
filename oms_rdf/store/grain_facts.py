"""What each grain node asserts, kept in process for lookups.

A lookup of one subject's beliefs with a relation or a namespace
(:func:`.lookup.subject_rows`), or of the beliefs that assert one triple
(:func:`.lookup.believers`), tests each grain of the subject, and most are
another relation or an older version: pattern calls for each, which on disk
cost more than the rest of the lookup. A grain is immutable, so what its node
asserts never changes. Its ``rdf:predicate``, ``rdf:object``, ``oms:graph`` and
``oms:namespace`` values are kept here by node: from the grain as it is written
(:meth:`GrainFacts.learn`), or read from the store the first time a lookup
meets the node. The tests are then comparisons in Python. (The index layer,
which does change, is always read from the store.)

An erased grain's node no longer comes up among a subject's grains, so nothing
kept of it is asked again (and a grain put again is learnt again); the oldest
entries go once ``KEPT`` are held.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from pyoxigraph import DefaultGraph, Literal, NamedNode

from ..backends.base import Backend
from ..codec.grain import Grain, namespace_of
from ..codec.schema import BELIEF
from ..rdf.mapping import MappingSettings, grain_belief_terms
from ..rdf.vocab import OMS, RDF

__all__ = ["KEPT", "GrainFacts"]

KEPT = 65_536  # nodes: 18.5 MB of Python objects when full, and the terms they hold
_DEFAULT = DefaultGraph()
_NONE: tuple[Any, ...] = ()


class _Facts(NamedTuple):
    """The values a node has of each predicate (a tuple each, almost always one)."""

    relations: tuple[Any, ...]
    objects: tuple[Any, ...]
    graphs: tuple[Any, ...]
    namespaces: tuple[Any, ...]


_FIELD = {
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
            facts = _Facts(_NONE, _NONE, _NONE, namespace)
        else:
            _s, p, o, g = grain_belief_terms(grain, settings)
            graphs = _NONE if g is None else _shared(g)
            facts = _Facts(_shared(p), (o,), graphs, namespace)
        self._keep(f"nih:sha-256;{grain.address}", facts)

    def has(
        self, backend: Backend, node: NamedNode, wanted: list[tuple[NamedNode, Any]]
    ) -> bool:
        """Whether the node has every (predicate, value) of ``wanted``, each an
        ``rdf:predicate``, ``rdf:object`` or ``oms:namespace`` pair: what a
        pattern call per pair would say."""
        facts = self._of(backend, node)
        return all(value in getattr(facts, _FIELD[p]) for p, value in wanted)

    def asserts(
        self, backend: Backend, node: NamedNode, relation: Any, obj: Any, graph: Any
    ) -> bool:
        """Whether the node is a belief of this relation and object whose knowledge
        graph is ``graph``: its first ``oms:graph``, else ``oms:current``."""
        facts = self._of(backend, node)
        if relation not in facts.relations or obj not in facts.objects:
            return False
        knowledge: Any = facts.graphs[0] if facts.graphs else OMS.current
        return bool(knowledge == graph)

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
        # grain is there), and a belief both a relation and an object.
        if facts.namespaces and bool(facts.relations) == bool(facts.objects):
            self._keep(node.value, facts)
        return facts

    def _keep(self, node: str, facts: _Facts) -> None:
        held = self._facts
        if len(held) >= self._kept and node not in held:
            del held[next(iter(held))]  # the oldest
        held[node] = facts
