"""The relation and namespace of each grain node, kept in process for lookups.

A lookup of one subject's beliefs with a relation or a namespace
(:func:`.lookup.subject_rows`) tests each grain of the subject for them, and
most are another relation or an older version: a pattern call each, which on
disk costs more than the rest of the lookup. A grain is immutable, so what its
node asserts never changes. Its ``rdf:predicate`` and ``oms:namespace`` values
are kept here by node: from the grain as it is written
(:meth:`GrainFacts.learn`), or read from the store the first time a lookup
meets the node. The test is then a comparison in Python.

An erased grain's node no longer comes up in a subject's grains, so nothing
kept of it is asked again (and a grain put again is learnt again); the oldest
entries go once ``KEPT`` are held.
"""

from __future__ import annotations

from functools import lru_cache

from pyoxigraph import DefaultGraph, Literal, NamedNode

from ..backends.base import Backend
from ..codec.grain import Grain, namespace_of
from ..codec.schema import BELIEF
from ..rdf.mapping import MappingSettings, grain_belief_terms
from ..rdf.vocab import OMS, RDF

__all__ = ["KEPT", "GrainFacts"]

KEPT = 65_536  # nodes; about 15 MB at most (their values are shared)
_DEFAULT = DefaultGraph()
_PREDICATE, _NAMESPACE = RDF.predicate, OMS.namespace
# The values of these predicates a node has, in this order.
_Facts = tuple[tuple[object, ...], tuple[object, ...]]


@lru_cache(maxsize=4_096)
def _one(value: object) -> tuple[object, ...]:
    """One value as a tuple shared by every grain that has it."""
    return (value,)


@lru_cache(maxsize=4_096)
def _namespace(text: str) -> tuple[object, ...]:
    return (Literal(text),)


class GrainFacts:
    """``rdf:predicate`` and ``oms:namespace`` of grain nodes, by node IRI."""

    def __init__(self, kept: int = KEPT) -> None:
        self._facts: dict[str, _Facts] = {}
        self._kept = kept

    def __len__(self) -> int:
        return len(self._facts)

    def learn(self, grain: Grain, settings: MappingSettings) -> None:
        """Keep what a grain's rows will say, as it is written."""
        relations: tuple[object, ...] = ()
        if grain.type_byte == BELIEF.byte:
            relations = _one(grain_belief_terms(grain, settings)[1])
        namespace = _namespace(namespace_of(grain.fields))
        self._keep(f"nih:sha-256;{grain.address}", (relations, namespace))

    def has(
        self, backend: Backend, node: NamedNode, wanted: list[tuple[NamedNode, object]]
    ) -> bool:
        """Whether the node has every (predicate, value) of ``wanted``, each an
        ``rdf:predicate`` or ``oms:namespace`` pair (the store says, as a
        pattern call per pair would)."""
        facts = self._facts.get(node.value)
        if facts is None:
            facts = self._read(backend, node)
        return all(
            value in facts[0 if predicate == _PREDICATE else 1]
            for predicate, value in wanted
        )

    def _read(self, backend: Backend, node: NamedNode) -> _Facts:
        relations: list[object] = []
        namespaces: list[object] = []
        for quad in backend.quads(node, None, None, _DEFAULT):
            if quad.predicate == _PREDICATE:
                relations.append(quad.object)
            elif quad.predicate == _NAMESPACE:
                namespaces.append(quad.object)
        facts = (tuple(relations), tuple(namespaces))
        if namespaces:  # every grain has one: without it, the node holds no grain
            self._keep(node.value, facts)
        return facts

    def _keep(self, node: str, facts: _Facts) -> None:
        held = self._facts
        if len(held) >= self._kept and node not in held:
            del held[next(iter(held))]  # the oldest
        held[node] = facts
