"""Blank nodes are blank nodes to every query: isBlank, isIRI, isURI and ORDER BY
see them as SPARQL does, plainly and at a point, in process and on a server.

The store keeps blank nodes as skolem IRIs (see ``oms_rdf.rdf.terms``); answers
give them back as blank nodes, and so must the expressions a query evaluates.
"""

from __future__ import annotations

import io
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from tests.servers import clear, start_oxigraph

T1 = 1_700_000_000_000
T2 = T1 + 86_400_000
EX = "http://example.org/"

# Subjects: two blank nodes, three IRIs; ?v a literal, a blank node or unbound.
DATA = f"""
@prefix ex: <{EX}> .
_:b1 ex:p ex:x ; ex:v 3 .
_:b2 ex:p ex:x .
ex:i1 ex:p ex:x ; ex:v 1 .
ex:i2 ex:p ex:x ; ex:v _:b1 .
ex:i3 ex:p "text" .
"""

# A small OWL ontology: each class has one named superclass and one restriction
# (a blank node); Leaf's named superclass has a named superclass of its own.
ONTOLOGY = """
@prefix : <http://example.org/onto#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
:Top a owl:Class .
:Mid a owl:Class ; rdfs:subClassOf :Top ,
    [ a owl:Restriction ; owl:onProperty :p ; owl:someValuesFrom :Top ] .
:Leaf a owl:Class ; rdfs:subClassOf :Mid ,
    [ a owl:Restriction ; owl:onProperty :q ; owl:allValuesFrom :Mid ] .
[ a owl:Class ; owl:unionOf ( :Mid :Leaf ) ] rdfs:subClassOf :Top .
"""
SUPERS = """SELECT ?c ?super WHERE {
  ?c rdfs:subClassOf+ ?super FILTER(isIRI(?super))
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    process: subprocess.Popen[bytes]
    process, base = start_oxigraph(tmp_path_factory.mktemp("oxigraph"))
    yield base
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture(params=["memory", "disk", "oxigraph"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    opened: list[oms.GrainStore] = []

    def make(text: str) -> oms.GrainStore:
        clock = [T1]
        options: dict[str, Any] = {"clock": lambda: clock[0]}
        if request.param == "disk":
            options["path"] = tmp_path / f"store{len(opened)}"
        elif request.param == "oxigraph":
            backend = oms.SparqlBackend.oxigraph(request.getfixturevalue("server"))
            clear(backend)
            options["backend"] = backend
        store = oms.GrainStore(**options)
        opened.append(store)
        store.import_(io.BytesIO(text.encode()), format="turtle")
        clock[0] = T2  # a point in the past exists: T1
        store.put(oms.Belief(f"{EX}later", f"{EX}q", f"{EX}x", 0.9, created_at=T2))
        return store

    yield make
    for store in opened:
        store.close()


WAYS = {"plainly": {}, "at a point": {"valid_at": T1, "as_of": T1}}


def terms(result: Any, name: str) -> list[Any]:
    return [row[name] for row in result]


@pytest.mark.parametrize("way", WAYS)
def test_is_blank_finds_the_blank_nodes(make_store: Any, way: str) -> None:
    store = make_store(DATA)
    query = f"SELECT ?s WHERE {{ ?s <{EX}p> <{EX}x> FILTER(isBlank(?s)) }}"
    found = terms(store.query(query, **WAYS[way]), "s")
    assert sorted(type(t).__name__ for t in found) == ["BlankNode", "BlankNode"]
    assert len(set(found)) == 2


@pytest.mark.parametrize("way", WAYS)
def test_is_iri_and_is_uri_leave_them_out(make_store: Any, way: str) -> None:
    store = make_store(DATA)
    want = {f"{EX}i1", f"{EX}i2"}
    for test in ("isIRI", "isURI"):
        query = f"SELECT ?s WHERE {{ ?s <{EX}p> <{EX}x> FILTER({test}(?s)) }}"
        found = terms(store.query(query, **WAYS[way]), "s")
        assert {t.value for t in found} == want, test
        assert {type(t) for t in found} == {ox.NamedNode}
    ask = f"ASK {{ ?s <{EX}p> <{EX}x> FILTER(isIRI(?s) && isBlank(?s)) }}"
    assert store.query(ask, **WAYS[way]) is False


@pytest.mark.parametrize("way", WAYS)
def test_a_blank_node_bound_by_bind_is_blank(make_store: Any, way: str) -> None:
    store = make_store(DATA)
    query = f"""SELECT ?kind WHERE {{ ?s <{EX}v> 3
      BIND(IF(isBlank(?s), "blank", IF(isIRI(?s), "iri", "other")) AS ?kind) }}"""
    assert [t.value for t in terms(store.query(query, **WAYS[way]), "kind")] == [
        "blank"
    ]


@pytest.mark.parametrize("way", WAYS)
def test_order_by_sorts_them_as_blank_nodes(make_store: Any, way: str) -> None:
    # SPARQL 1.1 §15.1: unbound < blank nodes < IRIs < literals.
    store = make_store(DATA)
    query = f"""SELECT ?s ?v WHERE {{ ?s <{EX}p> ?x OPTIONAL {{ ?s <{EX}v> ?v }} }}
      ORDER BY ?s"""
    kinds = [type(t).__name__ for t in terms(store.query(query, **WAYS[way]), "s")]
    assert kinds == ["BlankNode", "BlankNode", "NamedNode", "NamedNode", "NamedNode"]
    # ?v descending: the literals 3 then 1, b1 (a blank node), unbound twice.
    query = f"""SELECT ?s ?v WHERE {{ ?s <{EX}p> ?x OPTIONAL {{ ?s <{EX}v> ?v }} }}
      ORDER BY DESC(?v) ?s"""
    rows = list(store.query(query, **WAYS[way]))
    shown = [None if r["v"] is None else type(r["v"]).__name__ for r in rows]
    assert shown == ["Literal", "Literal", "BlankNode", None, None]
    assert [r["v"].value for r in rows[:2]] == ["3", "1"]
    assert rows[2]["v"] == rows[0]["s"]  # b1, the same blank node both ways
    query = f"""SELECT ?o WHERE {{ ?s <{EX}p> ?o0 BIND(?s AS ?o) }}
      ORDER BY DESC(?o)"""
    kinds = [type(t).__name__ for t in terms(store.query(query, **WAYS[way]), "o")]
    assert kinds[-2:] == ["BlankNode", "BlankNode"]


def test_the_owl_idiom_answers_as_plain_pyoxigraph(make_store: Any) -> None:
    store = make_store(ONTOLOGY)
    onto = "http://example.org/onto#"
    # By hand: Mid ⊑ Top; Leaf ⊑ Mid ⊑ Top; the union ⊑ Top. No restriction.
    want = {("Mid", "Top"), ("Leaf", "Mid"), ("Leaf", "Top"), ("union", "Top")}
    plain = ox.Store()
    plain.load(ONTOLOGY.encode(), format=ox.RdfFormat.TURTLE)
    prefixed = "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n" + SUPERS

    def named(rows: Any) -> set[tuple[str, str]]:
        return {
            (
                "union"
                if isinstance(r["c"], ox.BlankNode)
                else r["c"].value.removeprefix(onto),
                r["super"].value.removeprefix(onto),
            )
            for r in rows
        }

    assert named(plain.query(prefixed)) == want
    assert named(store.query(SUPERS)) == want
    if store.backend.remote:  # a repeating path at a point: see test_server_refusals
        return
    assert named(store.query(SUPERS, valid_at=T1, as_of=T1)) == want


def test_the_owl_idiom_over_a_shipped_ontology() -> None:
    pyshacl = pytest.importorskip("pyshacl")
    path = Path(pyshacl.__file__).parent / "assets" / "dash.ttl"
    plain = ox.Store()
    plain.load(path=str(path), format=ox.RdfFormat.TURTLE)
    store = oms.GrainStore(clock=lambda: T1)
    store.import_(path, format="turtle")
    prefixed = "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n" + SUPERS
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o FILTER(isBlank(?s)) }"

    def pairs(rows: Any) -> set[tuple[str, str]]:
        return {(str(r["c"]), str(r["super"])) for r in rows}

    assert pairs(store.query(SUPERS)) == pairs(plain.query(prefixed))
    assert pairs(store.query(SUPERS, valid_at=T1, as_of=T1)) == pairs(
        plain.query(prefixed)
    )
    blank = next(iter(store.query(count)))["n"].value
    assert blank == next(iter(plain.query(count)))["n"].value != "0"


def test_every_form_of_order_by_is_kept() -> None:
    # Data without blank nodes: the rewritten orderings must answer as written.
    store = oms.GrainStore(clock=lambda: T1)
    text = "".join(f"<{EX}s{i}> <{EX}v> {i % 3} .\n" for i in range(6))
    store.import_(io.BytesIO(text.encode()), format="turtle")
    plain = ox.Store()
    plain.load(text.encode(), format=ox.RdfFormat.TURTLE)
    queries = [
        "SELECT ?s ?v WHERE { ?s ?p ?v } ORDER BY DESC(?v) STR(?s) LIMIT 4 OFFSET 1",
        "SELECT ?s WHERE { ?s ?p ?v } ORDER BY (?v * -1) ?s",
        "SELECT ?s WHERE { { SELECT ?s WHERE { ?s ?p ?v } ORDER BY ?v ?s LIMIT 2 } }"
        " ORDER BY DESC(?s)",
        "SELECT (COUNT(*) AS ?n) ?v WHERE { ?s ?p ?v } GROUP BY ?v ORDER BY ASC(?n)"
        " DESC(?v)",
        "SELECT ?s WHERE { ?s ?p ?v FILTER(isIRI(?s) && !isBlank(?s)) } ORDER BY ?s",
    ]
    for query in queries:
        want = [tuple(row) for row in plain.query(query)]
        for way in WAYS.values():
            assert [tuple(row) for row in store.query(query, **way)] == want, query


def test_a_malformed_query_is_worded_for_its_own_text() -> None:
    store = oms.GrainStore(clock=lambda: T1)
    bad = "SELECT ?s WHERE { ?s ?p ?o FILTER(isIRI(?s)) } ORDER BY ?s LIMT 3"
    with pytest.raises(oms.QueryError) as caught:
        store.query(bad)
    assert caught.value.code == "ERR_QUERY"
    with pytest.raises(SyntaxError) as plain:
        ox.Store().query(bad)
    assert str(plain.value).startswith("error at 1:")
    assert str(plain.value) in str(caught.value)


def test_describe_follows_blank_nodes_as_the_engine_does() -> None:
    """A stored blank node is a skolem IRI, at which the engine's DESCRIBE stops;
    the store describes it on, as the engine describes a blank node."""
    text = b'@prefix ex: <http://example.org/> .\nex:a ex:p [ ex:q "x" ; ex:r [ ex:s "y" ] ] .\n'
    store = oms.GrainStore()
    store.import_(io.BytesIO(text), format="turtle")
    plain = ox.Store()
    plain.load(text, format=ox.RdfFormat.TURTLE)
    for query in ("DESCRIBE <http://example.org/a>",
                  "PREFIX ex: <http://example.org/> DESCRIBE ?x WHERE { ?x ex:q ?v }"):  # fmt: skip
        want = len(list(plain.query(query)))
        assert want in (3, 4)
        assert len(list(store.query(query))) == want
        assert len(list(store.query(query, valid_at="2999"))) == want


def test_a_blank_node_test_the_reader_cannot_read_is_refused_not_misanswered() -> None:
    store = oms.GrainStore()
    store.import_(io.BytesIO(b'@prefix ex: <http://example.org/> .\nex:a ex:p ex:z , [ ex:q "x" ] .\n'),
                  format="turtle")  # fmt: skip
    escaped = (
        "SELECT ?o WHERE { ?s <http://example.org/\\u0070> ?o FILTER isBlank(?o) }"
    )
    with pytest.raises(oms.QueryError, match="blank nodes"):
        store.query(escaped)
    written = "SELECT ?o WHERE { ?s <http://example.org/p> ?o FILTER isBlank(?o) }"
    assert len(list(store.query(written))) == 1
