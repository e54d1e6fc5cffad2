"""Answers as tables: typed values, DataFrames, notebook HTML, result exports."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime

import pandas as pd
import pyoxigraph as ox
import pytest

from oms_rdf import Belief, GrainStore, QueryError
from oms_rdf.rdf.tables import GrainList, python_value

EX = "http://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
DAY = 86_400_000
T0 = 1_700_000_000_000


@pytest.fixture
def store() -> GrainStore:
    store = GrainStore()
    store.import_(
        io.BytesIO(
            b"""
@prefix ex: <http://example.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
ex:a a owl:Class ; ex:n 3 ; ex:x 2.5 ; ex:ok true ; ex:born "1990-04-01"^^xsd:date ;
     ex:seen "2024-03-01T09:00:00+01:00"^^xsd:dateTime ; ex:name "A"@en ; ex:odd "abc"^^xsd:integer .
ex:b a owl:Class ; ex:n 4 ; ex:x 1.0E3 ; ex:ok false ; ex:seen "2024-03-02T00:00:00Z"^^xsd:dateTime ;
     ex:knows [ ex:n 5 ] .
"""
        ),
        format="turtle",
    )
    return store


def test_a_select_becomes_a_frame_with_typed_columns(store: GrainStore) -> None:
    frame = store.frame(
        """PREFIX ex: <http://example.org/>
        SELECT ?s ?n ?x ?ok ?seen ?born ?name WHERE {
          ?s a owl:Class ; ex:n ?n ; ex:x ?x ; ex:ok ?ok ; ex:seen ?seen
          OPTIONAL { ?s ex:born ?born } OPTIONAL { ?s ex:name ?name }
        } ORDER BY ?s"""
    )
    assert list(frame.columns) == ["s", "n", "x", "ok", "seen", "born", "name"]
    assert list(frame["s"]) == [EX + "a", EX + "b"]
    assert str(frame["n"].dtype) == "Int64" and list(frame["n"]) == [3, 4]
    assert frame["x"].dtype == "float64" and list(frame["x"]) == [2.5, 1000.0]
    assert str(frame["ok"].dtype) == "boolean" and list(frame["ok"]) == [True, False]
    assert isinstance(frame["seen"].dtype, pd.DatetimeTZDtype)
    assert frame["seen"][0] == pd.Timestamp("2024-03-01T08:00:00Z")
    assert frame["born"][0] == date(1990, 4, 1) and pd.isna(frame["born"][1])
    assert frame["name"][0] == "A" and pd.isna(frame["name"][1])


def test_a_value_not_valid_for_its_datatype_stays_text(store: GrainStore) -> None:
    frame = store.frame(
        "SELECT ?o WHERE { <http://example.org/a> <http://example.org/odd> ?o }"
    )
    assert list(frame["o"]) == ["abc"]


def test_compact_writes_iris_with_the_query_prefixes(store: GrainStore) -> None:
    sparql = (
        "PREFIX ex: <http://example.org/> SELECT ?s ?c WHERE { ?s a ?c } ORDER BY ?s"
    )
    compact = store.frame(sparql, compact=True)
    assert list(compact["s"]) == ["ex:a", "ex:b"]
    assert set(compact["c"]) == {"owl:Class"}
    assert list(store.frame(sparql)["s"]) == [EX + "a", EX + "b"]


def test_blank_nodes_and_times_in_a_frame(store: GrainStore) -> None:
    frame = store.frame(
        "PREFIX ex: <http://example.org/> SELECT ?k ?n WHERE { ?s ex:knows ?k . ?k ex:n ?n }"
    )
    assert frame["k"][0].startswith("_:") and frame["n"][0] == 5
    past = store.frame("SELECT (COUNT(*) AS ?c) WHERE { ?s ?p ?o }", valid_at=T0 - DAY)
    assert list(past["c"]) == [0]  # nothing was true before the import


def test_construct_answers_as_a_frame_an_rdflib_graph_and_turtle(
    store: GrainStore,
) -> None:
    sparql = (
        "PREFIX ex: <http://example.org/> CONSTRUCT { ?s ex:n ?n } WHERE { ?s ex:n ?n }"
    )
    assert list(store.frame(sparql).columns) == ["subject", "predicate", "object"]
    result = store.query(sparql)
    graph = result.to_rdflib()
    assert len(graph) == 3
    again = ox.Store()
    again.load(result.serialize(), format=ox.RdfFormat.TURTLE)
    assert len(again) == 3  # the same triples, read a second time from the kept answer


def test_ask_is_not_a_table(store: GrainStore) -> None:
    with pytest.raises(QueryError, match="ASK"):
        store.frame("ASK { ?s ?p ?o }")


def test_solutions_serialize_and_render_and_can_be_read_again(
    store: GrainStore,
) -> None:
    result = store.query(
        "PREFIX ex: <http://example.org/> SELECT ?s ?n WHERE { ?s ex:n ?n } ORDER BY ?n"
    )
    html = result._repr_html_()
    assert "<table>" in html and "http://example.org/a" in html and "3 rows" in html
    body = json.loads(result.serialize(format="json"))
    assert [b["n"]["value"] for b in body["results"]["bindings"]] == ["3", "4", "5"]
    assert result.serialize(format="csv").splitlines()[0] == b"s,n"
    assert [r["n"].value for r in result] == ["3", "4", "5"]
    with pytest.raises(ValueError, match="result format"):
        result.serialize(format="yaml")


def test_beliefs_history_and_search_are_grain_lists_with_frames() -> None:
    store = GrainStore()
    first = store.put(Belief("alice", "works_at", "Acme", 0.8, created_at=T0))
    second = store.supersede(
        first, Belief("alice", "works_at", "<Initech>", 0.9, created_at=T0 + DAY)
    )
    beliefs = store.beliefs("alice")
    assert isinstance(beliefs, GrainList) and [g.address for g in beliefs] == [second]
    history = store.history(second)
    frame = history.frame()
    assert list(frame["object"]) == ["Acme", "<Initech>"]
    assert list(frame["status"]) == ["superseded", "active"]
    assert frame["superseded_by"][0] == second and pd.isna(frame["superseded_by"][1])
    assert frame["system_from"][1] == pd.Timestamp(T0 + DAY, unit="ms", tz="UTC")
    assert frame["system_to"][0] == pd.Timestamp(T0 + DAY, unit="ms", tz="UTC")
    assert pd.isna(frame["system_to"][1]) and pd.isna(frame["valid_to"][0])
    html = history._repr_html_()
    assert "&lt;Initech&gt;" in html and "<Initech>" not in html and "2 rows" in html
    assert isinstance(store.search("Initech"), GrainList)
    assert list(store.beliefs_by_status("superseded").frame()["object"]) == ["Acme"]
    assert isinstance(history[:1], GrainList) and history[:1].frame().shape[0] == 1
    assert history == [store.get(first), store.get(second)]  # still a list


def test_long_lists_say_how_many_rows_they_leave_out() -> None:
    store = GrainStore()
    store.put_many(Belief(f"s{i}", "r", "o", 0.5, created_at=T0 + i) for i in range(60))
    assert "50 of 60 rows" in store.beliefs()._repr_html_()


@pytest.mark.parametrize(
    ("term", "value"),
    [
        (ox.Literal("2024-01-01T00:00:00"), "2024-01-01T00:00:00"),  # a string stays one
        (ox.Literal("2024-01-01T10:00:00", datatype=ox.NamedNode(XSD + "dateTime")),
         datetime(2024, 1, 1, 10, tzinfo=UTC)),  # no offset: read as UTC
        (ox.Literal("-0", datatype=ox.NamedNode(XSD + "decimal")), 0.0),
        (ox.Literal("INF", datatype=ox.NamedNode(XSD + "double")), float("inf")),
        (ox.Literal("1", datatype=ox.NamedNode(XSD + "boolean")), True),
        (ox.Literal("yes", datatype=ox.NamedNode(XSD + "boolean")), "yes"),
        (ox.Literal("25:00:00", datatype=ox.NamedNode(XSD + "dateTime")), "25:00:00"),
        (ox.BlankNode("b0"), "_:b0"),
        (None, None),
    ],
)  # fmt: skip
def test_python_values(term: object, value: object) -> None:
    assert python_value(term) == value


def test_evidence_log_replays_the_test_in_order() -> None:
    store = GrainStore()
    address = store.put(Belief("a", "r", "x", 0.7, created_at=T0))
    for _ in range(2):
        store.evidence(address, "supporting", 0.9, at=T0 + DAY)  # the same millisecond
    store.evidence(address, "refuting", 0.6, at=T0 + 2 * DAY, note="doubt", by="did:x")
    log = store.evidence_log(address)
    assert [e.kind for e in log] == ["supporting", "supporting", "refuting"]
    assert [e.status for e in log] == ["accumulating", "promoted", "promoted"]
    assert log[-1].effective_confidence == pytest.approx(
        store.effective_confidence(address)
    )
    assert (log[-1].note, log[-1].by, log[-1].at) == ("doubt", "did:x", T0 + 2 * DAY)
    assert log[0].log_ratio < log[1].log_ratio


def test_every_time_column_of_a_grain_frame_is_an_aware_datetime_column() -> None:
    store = GrainStore()
    store.put(Belief("a", "b", "c", 0.5, created_at=1768471200000))
    store.put(
        Belief("x", "b", "c", 0.5, created_at=1768471200000,
                   valid_from=1768000000000, valid_to=4102444800000)
    )  # fmt: skip
    frame = store.beliefs().frame()
    for name in ("valid_from", "valid_to", "system_from", "system_to"):
        assert isinstance(frame[name].dtype, pd.DatetimeTZDtype), name
        assert str(frame[name].dt.tz) == "UTC", name
    rows = {r.subject: r for r in frame.itertuples()}
    assert pd.isna(rows["a"].valid_to) and pd.isna(rows["a"].system_to)
    assert rows["x"].valid_to == pd.Timestamp("2100-01-01T00:00:00Z")
    # Without a valid_from of its own a belief is valid from its system time,
    # as the lookups and the grain layer read it: not an open start (NaT).
    assert rows["a"].valid_from == rows["a"].system_from
    assert rows["a"].valid_from == pd.Timestamp(1768471200000, unit="ms", tz="UTC")
    assert store.versions("a")[0].valid_from == 1768471200000


def test_a_wide_table_scrolls_and_wraps_instead_of_being_clipped() -> None:
    store = GrainStore()
    long = "a long object " * 40
    store.put(Belief("ann", "said", long, 0.9, created_at=1_700_000_000_000))
    shown = store.beliefs()._repr_html_()
    # One box that scrolls sideways when the table is wider than the page.
    assert shown.startswith('<div style="overflow-x: auto')
    assert shown.endswith("</div>")
    # Long cells wrap within their column, and nothing is cut: all of the text is there.
    assert "overflow-wrap: anywhere" in shown and long.strip() in shown
    rows = store.query("SELECT ?o WHERE { ?s ?p ?o }")
    assert rows._repr_html_().startswith('<div style="overflow-x: auto')
