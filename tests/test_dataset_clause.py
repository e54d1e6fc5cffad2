"""A query that names its dataset (FROM, FROM NAMED) gets that dataset."""

from __future__ import annotations

import io

import pytest

import oms_rdf as oms

TRIG = b"""@prefix ex: <http://example.org/> .
ex:alice ex:knows ex:bob .
ex:g1 { ex:carol ex:knows ex:dan . }
ex:g2 { ex:erin ex:knows ex:frank . }
"""


@pytest.fixture
def store() -> oms.GrainStore:
    store = oms.GrainStore()
    store.import_(io.BytesIO(TRIG), format="trig")
    return store


def subjects(store: oms.GrainStore, sparql: str) -> list[str]:
    return sorted(str(r[0].value) for r in store.query(sparql))


def test_from_makes_a_named_graph_the_default_graph(store: oms.GrainStore) -> None:
    assert subjects(store, "SELECT ?s WHERE { ?s ?p ?o }") == [
        "http://example.org/alice"
    ]
    assert subjects(
        store, "SELECT ?s FROM <http://example.org/g1> WHERE { ?s ?p ?o }"
    ) == ["http://example.org/carol"]
    assert subjects(
        store,
        "PREFIX ex: <http://example.org/> SELECT ?s FROM ex:g1 FROM ex:g2 "
        "WHERE { ?s ?p ?o }",
    ) == ["http://example.org/carol", "http://example.org/erin"]


def test_from_named_alone_leaves_the_default_graph_empty(store: oms.GrainStore) -> None:
    sparql = "SELECT ?s FROM NAMED <http://example.org/g2> WHERE { ?s ?p ?o }"
    assert subjects(store, sparql) == []
    sparql = (
        "SELECT ?g ?s FROM NAMED <http://example.org/g2> "
        "WHERE { GRAPH ?g { ?s ?p ?o } }"
    )
    rows = [(str(r[0].value), str(r[1].value)) for r in store.query(sparql)]
    assert rows == [("http://example.org/g2", "http://example.org/erin")]


def test_the_knowledge_default_graph_can_be_named(store: oms.GrainStore) -> None:
    sparql = "SELECT ?s FROM oms:current WHERE { ?s ?p ?o }"
    assert subjects(store, sparql) == ["http://example.org/alice"]


@pytest.mark.parametrize("graph", ["blobs", "index", "audit"])
def test_a_reserved_graph_in_from_is_refused(store: oms.GrainStore, graph: str) -> None:
    for clause in (f"FROM oms:{graph}", f"FROM NAMED oms:{graph}"):
        with pytest.raises(oms.QueryError) as caught:
            store.query(f"SELECT * {clause} WHERE {{ ?s ?p ?o }}")
        assert caught.value.code == "ERR_QUERY"


def test_from_inside_a_string_or_comment_is_not_a_dataset(
    store: oms.GrainStore,
) -> None:
    sparql = (
        'SELECT ?s WHERE { ?s ?p ?o FILTER (?o != "FROM <http://example.org/g1>") }'
        " # FROM <http://example.org/g2>"
    )
    assert subjects(store, sparql) == ["http://example.org/alice"]


@pytest.mark.parametrize("path", [None, "disk"])
def test_a_named_graph_whose_beliefs_all_left_is_no_graph_now(
    tmp_path: object, path: str | None
) -> None:
    """The engine keeps a graph's name after its last quad goes; a graph that
    holds no knowledge now is not one the query sees (GRAPH ?g {} lists none)."""
    now = [1_700_000_000_000]
    where = None if path is None else f"{tmp_path}/store"
    store = oms.GrainStore(where, clock=lambda: now[0])
    trig = b"@prefix ex: <http://ex.org/> .\nex:g1 { ex:a ex:p ex:b . }\nex:x ex:p ex:y .\n"
    store.import_(io.BytesIO(trig), format="trig")
    ask = "SELECT ?g WHERE { GRAPH ?g { } }"
    assert [r["g"].value for r in store.query(ask)] == ["http://ex.org/g1"]
    now[0] += 1000
    (named,) = [g for g in store.beliefs() if g["subject"] == "http://ex.org/a"]
    store.retract(named, reason="gone")
    for options in ({}, {"held": True}, {"valid_at": now[0], "as_of": now[0]}):
        assert list(store.query(ask, **options)) == []
        assert not store.query("ASK { GRAPH <http://ex.org/g1> { } }", **options)
    assert store.knowledge_graphs() == []
