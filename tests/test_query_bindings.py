"""query() binds Python values to SPARQL variables, as its docstring says.

str → plain literal, int/float/bool → typed literal, datetime → xsd:dateTime,
Grain → its statement node, pyoxigraph terms as they are; by keyword argument or
through ``substitutions``; any other value is refused (ERR_SCHEMA, a ValueError).
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

import pyoxigraph as ox
import pytest

import oms_rdf as oms

EX = "http://example.org/"
TURTLE = b"""@prefix ex: <http://example.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:ann ex:age 41 ; ex:height "1.72"^^xsd:double ; ex:retired false ;
  ex:name "Ann" ; ex:born "2024-01-01T00:00:00Z"^^xsd:dateTime ; ex:knows ex:bo .
"""


@pytest.fixture
def store() -> oms.GrainStore:
    store = oms.GrainStore(clock=lambda: 2_000_000_000_000)
    store.import_(io.BytesIO(TURTLE), format="turtle")
    return store


@pytest.mark.parametrize(
    ("value", "relation"),
    [
        (41, "age"),
        (1.72, "height"),
        (False, "retired"),
        ("Ann", "name"),
        (datetime(2024, 1, 1, tzinfo=UTC), "born"),
        (ox.NamedNode(f"{EX}bo"), "knows"),
    ],
)
def test_a_python_value_binds_to_the_term_it_stands_for(
    store: oms.GrainStore, value: Any, relation: str
) -> None:
    query = "SELECT ?p ?v WHERE { ?s ?p ?v }"
    by_keyword = [str(row["p"]) for row in store.query(query, v=value)]
    by_substitution = [
        str(row["p"]) for row in store.query(query, substitutions={"v": value})
    ]
    assert by_keyword == by_substitution == [f"<{EX}{relation}>"]


def test_a_bound_value_is_its_type_not_its_text(store: oms.GrainStore) -> None:
    # 41 the integer is not "41" the text, nor True the boolean false.
    assert store.query("ASK { ?s ?p ?v }", v=41) is True
    assert store.query("ASK { ?s ?p ?v }", v="41") is False
    assert store.query("ASK { ?s ?p ?v }", v=True) is False
    assert (
        store.query("ASK { ?s ?p ?v }", substitutions={ox.Variable("v"): 42}) is False
    )


def test_a_grain_binds_to_its_statement_node(store: oms.GrainStore) -> None:
    address = store.put(oms.Belief("ann", "works_at", "Acme", 0.9, created_at=1))
    rows = store.query(
        "SELECT ?g ?o WHERE { ?g rdf:object ?o }", grains=True, g=store.get(address)
    )
    assert [(row["g"].value.rsplit(";", 1)[1], row["o"].value) for row in rows] == [
        (address, "Acme")
    ]


def test_a_blank_node_of_an_answer_binds_to_that_node() -> None:
    """A blank node an answer gave is the store's node: binding it asks about
    that node (now, at a point, over a range, of the layout), not a new one."""
    store = oms.GrainStore()
    store.import_(io.BytesIO(b'<http://ex/s> <http://ex/q> _:a .\n_:a <http://ex/p> "x" .\n'),
                  format="ntriples")  # fmt: skip
    [row] = store.query("SELECT ?b WHERE { <http://ex/s> <http://ex/q> ?b }")
    node = row["b"]
    assert isinstance(node, ox.BlankNode)
    ask = 'ASK { ?b <http://ex/p> "x" }'
    assert store.query(ask, b=node) is True
    assert store.query(ask, b=ox.BlankNode("another")) is False
    select = "SELECT ?b ?o WHERE { ?b <http://ex/p> ?o }"
    for asked in ({}, {"valid_at": store.clock(), "as_of": store.clock()},
                  {"valid_during": (None, None)}):  # fmt: skip
        rows = store.query(select, b=node, **asked)
        assert [(r["b"], r["o"].value) for r in rows] == [(node, "x")], asked


def test_a_value_of_another_type_is_refused(store: oms.GrainStore) -> None:
    for value in (None, b"bytes", {"a": 1}):
        with pytest.raises(ValueError) as caught:
            store.query("ASK { ?s ?p ?v }", v=value)
        assert isinstance(caught.value, oms.SchemaError)
        assert caught.value.code == oms.ErrorCode.SCHEMA
        assert type(value).__name__ in str(caught.value)


def test_a_select_binds_only_the_variables_it_projects(store: oms.GrainStore) -> None:
    # pyoxigraph binds a SELECT's projected variables only: one left out of the
    # projection is refused, not silently ignored.
    with pytest.raises(oms.QueryError) as caught:
        store.query("SELECT ?p WHERE { ?s ?p ?v }", v=41)
    assert caught.value.code == oms.ErrorCode.QUERY and "?v" in str(caught.value)
    rows = store.query("SELECT * WHERE { ?s ?p ?v }", v=41)
    assert [str(row["p"]) for row in rows] == [f"<{EX}age>"]
