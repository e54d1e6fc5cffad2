"""What lookups keep of each grain node in process is what its quads say."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from pyoxigraph import DefaultGraph, Literal, NamedNode, RdfFormat, parse

import oms_rdf as oms
from oms_rdf.backends.embedded import LocalBackend
from oms_rdf.rdf.literals import time_nt, time_read_back
from oms_rdf.rdf.mapping import grain_iri, truthy_triple
from oms_rdf.rdf.vocab import OMS, RDF
from oms_rdf.store.grain_facts import GrainFacts, time_of
from tests.strategies import grains

T0 = 1_737_000_000_000
ELSEWHERE = NamedNode("http://example.org/another-relation")


def stored_facts(
    store: oms.GrainStore, node: NamedNode
) -> list[tuple[NamedNode, object]]:
    """The node's rdf:predicate, rdf:object and oms:namespace quads, as the
    store holds them."""
    return [
        (q.predicate, q.object)
        for q in store.backend.quads(node, None, None, DefaultGraph())
        if q.predicate in (RDF.predicate, RDF.object, OMS.namespace)
    ]


def knowledge_graph(store: oms.GrainStore, node: NamedNode) -> object:
    """The belief's graph: its oms:graph, else oms:current."""
    named = store.backend.quads(node, OMS.graph, None, DefaultGraph())
    graphs = [q.object for q in named]
    return graphs[0] if graphs else OMS.current


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=grains())
def test_what_is_learnt_from_a_grain_is_what_its_rows_write(
    fields: dict[str, Any],
) -> None:
    store = oms.GrainStore(clock=lambda: T0)
    address = store.put(oms.Grain.from_dict(fields))
    node = grain_iri(address)
    facts = GrainFacts()
    facts.learn(store.get(address), store.settings)
    nothing = LocalBackend()  # what was learnt is all it may answer from
    pairs = stored_facts(store, node)
    assert sum(p == OMS.namespace for p, _ in pairs) == 1
    for predicate, value in pairs:
        assert facts.has(nothing, node, [(predicate, value)])
    assert not facts.has(nothing, node, [(RDF.predicate, ELSEWHERE)])
    assert not facts.has(nothing, node, [(OMS.namespace, Literal("elsewhere"))])
    values = dict(pairs)
    if RDF.predicate in values:  # a belief: what it asserts, and where
        p, o = values[RDF.predicate], values[RDF.object]
        graph = knowledge_graph(store, node)
        assert facts.asserts(nothing, node, p, o, graph)
        assert not facts.asserts(nothing, node, p, o, ELSEWHERE)
        assert not facts.asserts(nothing, node, p, ELSEWHERE, graph)
        assert GrainFacts().asserts(store.backend, node, p, o, graph)
    read = GrainFacts()  # the same, read from the store
    for predicate, value in pairs:
        assert read.has(store.backend, node, [(predicate, value)])
    assert len(read) == 1
    # The knowledge quad, learnt or read, is the one the mapping makes.
    want = truthy_triple(store.get(address), store.settings)
    assert facts.knowledge(nothing, node) == want
    assert read.knowledge(store.backend, node) == want
    # So are the times and confidence the in-force rule compares (repr: NaN).
    assert repr(facts.of(nothing, node)) == repr(read.of(store.backend, node))


@pytest.mark.parametrize(
    "times",
    [
        {"valid_to": T0 + 1},
        {"valid_to": 253_402_300_799_999},  # the last time the store holds
        {"valid_from": -62_135_596_800_000},  # 0001-01-01, the first
        {"valid_from": -1, "valid_to": 0},
        {"system_valid_from": 253_402_300_799_999},
    ],
)
def test_times_learnt_are_the_times_read_back(times: dict[str, int]) -> None:
    store = oms.GrainStore(clock=lambda: T0)
    fields = {"type": "belief", "subject": "ann", "relation": "likes",
              "object": "tea", "confidence": 1, "created_at": T0, **times}  # fmt: skip
    address = store.put(oms.Grain.from_dict(fields))
    node = grain_iri(address)
    learnt = GrainFacts()
    learnt.learn(store.get(address), store.settings)
    read = GrainFacts().of(store.backend, node)
    assert learnt.of(LocalBackend(), node) == read
    found = read
    assert len(read.subjects) == 1 and found.confidences == (1.0,)
    end = times.get("valid_to")
    assert found.valid_tos == (
        () if end is None else (end if end < 253_402_300_800_000 else None,)
    )


def test_a_node_without_a_grain_is_not_kept_and_is_read_again() -> None:
    store = oms.GrainStore(clock=lambda: T0)
    belief = oms.Belief("alice", "likes", "tea", 0.5, created_at=T0)
    node = grain_iri(belief.address)
    wanted = [(OMS.namespace, Literal("shared"))]
    facts = GrainFacts()
    assert not facts.has(store.backend, node, wanted)
    assert facts.knowledge(store.backend, node) is None
    assert len(facts) == 0
    store.put(belief)  # written without this instance learning it
    assert facts.has(store.backend, node, wanted)
    assert facts.knowledge(store.backend, node) == truthy_triple(belief)


def learnt_past_the_limit(
    count: int, kept: int
) -> tuple[
    oms.GrainStore, list[oms.Belief], GrainFacts, list[tuple[NamedNode, object]]
]:
    """A store of ``count`` beliefs, all learnt by facts keeping ``kept``, and
    what the first one's node says of its relation, object and namespace."""
    store = oms.GrainStore(clock=lambda: T0)
    beliefs = [
        oms.Belief(f"s{i}", "likes", "tea", 0.5, created_at=T0) for i in range(count)
    ]
    store.put_many(beliefs)
    facts = GrainFacts(kept=kept)
    for belief in beliefs:
        facts.learn(belief, store.settings)
    return store, beliefs, facts, stored_facts(store, grain_iri(beliefs[0].address))


def test_the_oldest_go_past_the_limit_and_are_read_again() -> None:
    store, beliefs, facts, likes = learnt_past_the_limit(5, kept=3)
    assert len(facts) == 3
    assert facts.has(store.backend, grain_iri(beliefs[0].address), likes)  # read again
    assert not facts.has(LocalBackend(), grain_iri(beliefs[1].address), likes)
    assert facts.has(LocalBackend(), grain_iri(beliefs[4].address), likes)


def test_past_the_limit_the_oldest_eighth_goes_at_once() -> None:
    _, beliefs, facts, likes = learnt_past_the_limit(17, kept=16)
    assert len(facts) == 15  # 16 held, then two went for the seventeenth
    nothing = LocalBackend()  # only what is kept answers
    kept = [facts.has(nothing, grain_iri(b.address), likes) for b in beliefs]
    assert kept == [False, False] + [True] * 15


def test_lookups_on_disk_answer_the_same_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = oms.GrainStore(path, clock=lambda: T0 + 100)
    for i in range(4):
        store.put(oms.Belief("alice", f"r{i}", f"o{i}", 0.5, created_at=T0 + i))
    store.put(oms.Belief("alice", "r1", "x", 0.5, created_at=T0 + 9, namespace="work"))
    want = [g.address for g in store.beliefs("alice", "r1")]
    store.close()
    again = oms.GrainStore(path, clock=lambda: T0 + 100)  # nothing kept: read as met
    assert [g.address for g in again.beliefs("alice", "r1")] == want
    assert len(again.core.facts) == 5  # each of alice's grains, read once
    assert [g["object"] for g in again.beliefs("alice", "r1", namespace="work")] == [
        "x"
    ]
    assert again.beliefs("alice", "r9") == []


def test_a_node_read_in_part_is_not_kept() -> None:
    """A copy of some of a node's quads (what a lookup over a network brings)
    answers for itself, and what it lacks is not kept for the store's lookups."""
    store = oms.GrainStore(clock=lambda: T0)
    belief = oms.Belief("alice", "likes", "tea", 0.5, created_at=T0)
    store.put(belief)
    node = grain_iri(belief.address)
    part = LocalBackend()
    part.add(q for q in store.backend.quads(node) if q.predicate != RDF.object)
    facts = GrainFacts()
    (likes,) = [o for p, o in stored_facts(store, node) if p == RDF.predicate]
    assert facts.has(part, node, [(RDF.predicate, likes)])
    assert len(facts) == 0
    (tea,) = [o for p, o in stored_facts(store, node) if p == RDF.object]
    assert facts.asserts(store.backend, node, likes, tea, OMS.current)
    assert len(facts) == 1


XSD_INTEGER = NamedNode("http://www.w3.org/2001/XMLSchema#integer")
TYPED = (
    b'<http://e/s> <http://e/p> "01"^^<http://www.w3.org/2001/XMLSchema#integer> .\n'
)
ON_S = "SELECT ?o WHERE { <http://e/s> <http://e/p> ?o }"


def test_a_typed_literal_is_compared_in_the_form_the_store_keeps() -> None:
    """The engine keeps "01"^^xsd:integer as "1": what is learnt from the grain
    and what is read from the store answer alike, for either spelling."""
    store = oms.GrainStore(clock=lambda: T0)
    store.import_(io.BytesIO(TYPED), format="turtle")
    (belief,) = store.beliefs("http://e/s")
    node, p = grain_iri(belief.address), NamedNode("http://e/p")
    learnt, read = GrainFacts(), GrainFacts()
    learnt.learn(belief, store.settings)
    for spelling in ("01", "1", "+1"):
        o = Literal(spelling, datatype=XSD_INTEGER)
        assert learnt.asserts(LocalBackend(), node, p, o, OMS.current)
        assert read.asserts(store.backend, node, p, o, OMS.current)
        assert learnt.has(LocalBackend(), node, [(RDF.object, o)])
    two = Literal("2", datatype=XSD_INTEGER)
    assert not learnt.asserts(LocalBackend(), node, p, two, OMS.current)


@pytest.mark.parametrize("reopen", [False, True])
def test_a_triple_held_by_another_belief_stays_whatever_was_kept(
    tmp_path: Path, reopen: bool
) -> None:
    """Two beliefs (two namespaces) assert a typed literal the engine keeps in
    another form; erasing one leaves the triple, learnt or read back alike."""
    path = tmp_path / "store"
    store = oms.GrainStore(path, clock=lambda: T0)
    store.import_(io.BytesIO(TYPED), format="turtle")
    store.import_(io.BytesIO(TYPED), format="turtle", namespace="work")
    first, _second = store.beliefs("http://e/s")
    if reopen:  # nothing kept: each node read back from the store
        store.close()
        store = oms.GrainStore(path, clock=lambda: T0)
    store.erase(first.address, reason="asked")
    assert [r["o"].value for r in store.query(ON_S)] == ["1"]
    (left,) = store.beliefs("http://e/s")
    store.retract(left.address, reason="wrong")
    assert list(store.query(ON_S)) == []


@pytest.mark.parametrize(
    "ms",
    [
        -62_135_596_800_001,  # the day before 0001-01-01: written as an integer
        -62_135_596_800_000,
        0,
        253_402_300_799_999,
        253_402_300_800_000,  # year 10000: an integer again
    ],
)
def test_a_time_read_back_is_what_its_literal_compares_as(ms: int) -> None:
    (quad,) = parse(f"<urn:s> <urn:p> {time_nt(ms)} .", format=RdfFormat.N_TRIPLES)
    assert time_read_back(ms) == time_of(quad.object)
