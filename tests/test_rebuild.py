"""KnowledgeCheck says 'as rebuilt' exactly when rebuild_current.rq changes nothing."""

from __future__ import annotations

import pyoxigraph as ox
from hypothesis import given, settings
from hypothesis import strategies as st

from oms_rdf.rdf.sparql import load_query
from oms_rdf.rdf.vocab import OMS, RDF
from oms_rdf.store.rebuild import KnowledgeCheck

EX = "http://example.org/"
NODES = [ox.NamedNode(f"nih:sha-256;{c * 64}") for c in "abc"] + [
    ox.NamedNode(EX + "n")
]
SUBJECTS = [
    ox.NamedNode(EX + "s"),
    ox.NamedNode(EX + "t"),
    ox.BlankNode("b"),
    ox.Literal("s"),
]
PREDICATES = [ox.NamedNode(EX + "p"), ox.NamedNode(EX + "q"), ox.Literal("p")]
OBJECTS = [ox.NamedNode(EX + "s"), ox.Literal("1", datatype=ox.NamedNode(
    "http://www.w3.org/2001/XMLSchema#integer")), ox.Literal("o", language="en")]  # fmt: skip
GRAPHS = [
    ox.NamedNode(EX + "g"),
    ox.NamedNode(EX + "h"),
    ox.BlankNode("bg"),
    ox.Literal("g"),
]
KNOWLEDGE_GRAPHS = [OMS.current, ox.NamedNode(EX + "g"), ox.NamedNode(EX + "other")]
CLOSED = ox.Literal("2020-01-01T00:00:00Z", datatype=ox.NamedNode(
    "http://www.w3.org/2001/XMLSchema#dateTime"))  # fmt: skip


@st.composite
def grain_layers(draw: st.DrawFn) -> list[ox.Quad]:
    """Grain nodes with zero to two of each part, graphs named or not, some closed."""
    quads = []
    for node in draw(st.lists(st.sampled_from(NODES), min_size=1, unique=True)):
        for predicate, pool in ((RDF.subject, SUBJECTS), (RDF.predicate, PREDICATES),
                                (RDF.object, OBJECTS), (OMS.graph, GRAPHS)):  # fmt: skip
            most = 1 if predicate == OMS.graph and draw(st.booleans()) else 2
            for value in draw(
                st.lists(st.sampled_from(pool), max_size=most, unique=True)
            ):
                quads.append(ox.Quad(node, predicate, value))
        if draw(st.booleans()):
            quads.append(ox.Quad(node, OMS.systemTo, CLOSED, OMS.index))
    return quads


def rebuilt(quads: list[ox.Quad]) -> set[ox.Quad]:
    store = ox.Store()
    store.extend(quads)
    store.update(load_query("rebuild_current"))
    return set(store)


@settings(max_examples=100, deadline=None)
@given(grain_layers(), st.data())
def test_the_check_agrees_with_the_rebuild(
    layer: list[ox.Quad], data: st.DataObject
) -> None:
    knowledge = sorted(rebuilt(layer) - set(layer), key=str)
    change = data.draw(st.sampled_from(["none", "drop", "add", "move"]))
    if change == "drop" and knowledge:
        knowledge.pop(data.draw(st.integers(0, len(knowledge) - 1)))
    elif change in ("add", "move"):
        extra = ox.Quad(data.draw(st.sampled_from(SUBJECTS[:3])),
                        data.draw(st.sampled_from(PREDICATES[:2])),
                        data.draw(st.sampled_from(OBJECTS)),
                        data.draw(st.sampled_from(KNOWLEDGE_GRAPHS)))  # fmt: skip
        if change == "move" and knowledge:
            knowledge.pop(0)
        knowledge.append(extra)
    dataset = [*layer, *knowledge]
    check = KnowledgeCheck()
    for quad in dataset:
        check.see(quad)
    assert check.as_rebuilt() == (rebuilt(dataset) == set(dataset))
