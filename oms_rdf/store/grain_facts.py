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
terms in the form the store keeps them (:func:`stored_form`). So are its
``oms:confidence``, ``oms:validFrom``, ``oms:systemFrom`` and ``oms:validTo``,
as the in-force rule compares them (:class:`NodeFacts`): a lookup then reads only
the node's index layer, which does change and is always read from the store.

An erased grain's node no longer comes up among a subject's grains, so nothing
kept of it is asked again (and a grain put again is learnt again); once
``KEPT`` are held, the oldest eighth goes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from itertools import islice
from threading import Lock
from typing import Any, NamedTuple

from pyoxigraph import DefaultGraph, Literal, NamedNode, Quad, Store

from ..backends.base import Backend
from ..codec.grain import Grain, namespace_of, system_from
from ..codec.schema import BELIEF
from ..rdf.literals import lexical, literal_value, time_read_back
from ..rdf.mapping import MappingSettings, grain_belief_terms
from ..rdf.vocab import OMS, RDF, XSD

__all__ = [
    "KEPT",
    "GrainFacts",
    "NodeFacts",
    "number",
    "number_text",
    "stored_form",
    "time_of",
]

KEPT = 65_536  # nodes: 29 MB of Python objects when full, and the terms they hold
_DEFAULT = DefaultGraph()
_NONE: tuple[Any, ...] = ()


class NodeFacts(NamedTuple):
    """The values a node has of each predicate (a tuple each, almost always
    one): the terms as the store keeps them; its ``oms:confidence`` values as
    numbers (NaN: none); its ``oms:validFrom``, ``oms:systemFrom`` and
    ``oms:validTo`` values as epoch ms (None: no ``xsd:dateTime`` with a zone,
    so no comparison holds)."""

    subjects: tuple[Any, ...]
    relations: tuple[Any, ...]
    objects: tuple[Any, ...]
    graphs: tuple[Any, ...]
    namespaces: tuple[Any, ...]
    confidences: tuple[float, ...]
    valid_froms: tuple[int | None, ...]
    system_froms: tuple[int | None, ...]
    valid_tos: tuple[int | None, ...]


_FIELD = {
    RDF.subject: "subjects",
    RDF.predicate: "relations",
    RDF.object: "objects",
    OMS.graph: "graphs",
    OMS.namespace: "namespaces",
}
_TIME = {
    OMS.confidence: "confidences",
    OMS.validFrom: "valid_froms",
    OMS.systemFrom: "system_froms",
    OMS.validTo: "valid_tos",
}


def number(term: Any) -> float:
    """A term's value as a number, as the rank compares it (NaN: none)."""
    text = getattr(term, "value", None)
    return number_text(text) if isinstance(text, str) else float("nan")


def number_text(text: str) -> float:
    """A lexical form as a number (NaN: none)."""
    try:
        return float(text)
    except ValueError:
        return float("nan")


def time_of(term: Any) -> int | None:
    """Epoch ms of an ``xsd:dateTime`` with a time zone; None (a type error) otherwise."""
    if not isinstance(term, Literal) or term.datatype.value != _XSD_DATETIME:
        return None
    try:
        millis: int = literal_value(term)
    except (ValueError, TypeError):  # no time zone: not comparable here
        return None
    return millis


_NAMES = (*_FIELD.values(), *_TIME.values())
_XSD_DATETIME = XSD.dateTime.value


_Times = tuple[tuple[float, ...], tuple[int | None, ...], tuple[int | None, ...],
               tuple[int | None, ...]]  # fmt: skip


def _times(fields: Any) -> _Times:
    """What a grain's rows will say of its times and confidence (grain_rows
    writes the effective start times, and a valid_to or confidence when given)."""
    since = system_from(fields)
    confidence = fields.get("confidence")
    end = fields.get("valid_to")
    start = fields.get("valid_from", since)
    system = (time_read_back(since),)
    return (
        # Shared where they can be: a confidence many grains have, and the
        # system time that is the valid start too (the default).
        _NONE if confidence is None else _shared(_rank(confidence)),
        system if start == since else (time_read_back(start),),
        system,
        _NONE if end is None else (time_read_back(end),),
    )


def _rank(value: Any) -> float:
    """A confidence as :func:`number` reads its literal back."""
    if type(value) is float:  # its literal is its repr, read back as itself
        return value
    return number_text(lexical(value)[0])


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
        self._facts: dict[str, NodeFacts] = {}
        self._kept = kept

    def __len__(self) -> int:
        return len(self._facts)

    def learn(self, grain: Grain, settings: MappingSettings) -> None:
        """Keep what a grain's rows will say, as it is written."""
        fields = grain.fields
        namespace = _namespace(namespace_of(fields))
        times = _times(fields)
        if grain.type_byte != BELIEF.byte:
            facts = NodeFacts(_NONE, _NONE, _NONE, _NONE, namespace, *times)
        else:
            s, p, o, g = grain_belief_terms(grain, settings)
            graphs = _NONE if g is None else _shared(g)
            facts = NodeFacts(
                (s,), _shared(p), (stored_form(o),), graphs, namespace, *times
            )
        self._keep(f"nih:sha-256;{grain.address}", facts)

    def has(
        self, backend: Backend, node: NamedNode, wanted: list[tuple[NamedNode, Any]]
    ) -> bool:
        """Whether the node has every (predicate, value) of ``wanted``, each an
        ``rdf:predicate``, ``rdf:object`` or ``oms:namespace`` pair: what a
        pattern call per pair would say."""
        return self.matcher(wanted)(backend, node) is not None

    def matcher(
        self, wanted: list[tuple[NamedNode, Any]]
    ) -> Callable[[Backend, NamedNode], NodeFacts | None]:
        """A test of many nodes for the pairs of :meth:`has`: a node's facts
        where it has them all, else None."""
        tests = [(_FIELD[p], stored_form(value)) for p, value in wanted]

        def match(backend: Backend, node: NamedNode) -> NodeFacts | None:
            facts = self.of(backend, node)
            for field, value in tests:
                if value not in getattr(facts, field):
                    return None
            return facts

        return match

    def asserts(
        self, backend: Backend, node: NamedNode, relation: Any, obj: Any, graph: Any
    ) -> bool:
        """Whether the node is a belief of this relation and object whose knowledge
        graph is ``graph``: its first ``oms:graph``, else ``oms:current``."""
        facts = self.of(backend, node)
        if relation not in facts.relations or stored_form(obj) not in facts.objects:
            return False
        knowledge: Any = facts.graphs[0] if facts.graphs else OMS.current
        return bool(knowledge == graph)

    def system_start(self, backend: Backend, node: NamedNode) -> int | None:
        """When the node's grain entered the system (epoch ms); None where its
        facts hold no single time (not stored)."""
        starts = self.of(backend, node).system_froms
        return starts[0] if len(starts) == 1 else None

    def knowledge(self, backend: Backend, node: NamedNode) -> Quad | None:
        """The knowledge quad a belief node asserts: its subject, relation and
        object, in its first ``oms:graph``, else ``oms:current``; None when the
        node holds no single triple (not a belief, or not stored)."""
        facts = self.of(backend, node)
        triple = (facts.subjects, facts.relations, facts.objects)
        if any(len(values) != 1 for values in triple):
            return None
        graph = facts.graphs[0] if facts.graphs else OMS.current
        return Quad(facts.subjects[0], facts.relations[0], facts.objects[0], graph)

    def of(self, backend: Backend, node: NamedNode) -> NodeFacts:
        """What the node asserts: kept, or read from ``backend``, which must hold
        every quad of the node's grain layer (the store's own backend)."""
        facts = self._facts.get(node.value)
        if facts is not None:
            return facts
        found: dict[str, list[Any]] = {name: [] for name in _NAMES}
        for quad in backend.quads(node, None, None, _DEFAULT):
            name = _FIELD.get(quad.predicate) or _TIME.get(quad.predicate)
            if name is not None:
                found[name].append(quad.object)
        subjects, relations, objects, graphs, namespaces = (
            tuple(found[name]) for name in _FIELD.values()
        )
        facts = NodeFacts(
            subjects,
            relations,
            objects,
            graphs,
            namespaces,
            tuple(map(number, found["confidences"])),
            tuple(map(time_of, found["valid_froms"])),
            tuple(map(time_of, found["system_froms"])),
            tuple(map(time_of, found["valid_tos"])),
        )
        # Kept only when whole: every grain has a namespace and its start times
        # (without them, no grain is there), and a belief a subject, a relation
        # and an object.
        belief = (bool(facts.subjects), bool(facts.relations), bool(facts.objects))
        whole = facts.namespaces and facts.valid_froms and facts.system_froms
        if whole and len(set(belief)) == 1:
            self._keep(node.value, facts)
        return facts

    def _keep(self, node: str, facts: NodeFacts) -> None:
        held = self._facts
        if len(held) >= self._kept and node not in held:
            # The oldest eighth goes at once: finding a dict's oldest entry walks
            # past every one deleted before it, a walk per entry if one by one.
            for oldest in list(islice(held, max(1, self._kept // 8))):
                del held[oldest]
        held[node] = facts
