"""Terms and values as written, wherever an answer goes: to rdflib, to a table, to
XML results, to a picture. Each case a probe of these promises found broken.
"""

from __future__ import annotations

import io

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.rdf.results import write_solutions
from oms_rdf.rdf.tables import frame, python_value, query_prefixes

XSD = "http://www.w3.org/2001/XMLSchema#"
LEXICAL = [("2024-03-01+14:00", "date"), ("01", "integer"), ("00FF", "hexBinary"),
           ("NaN", "double"), ("-INF", "double"), ("1", "boolean"), ("1.0E0", "double"),
           ("2024-03-01T09:00:00.1234567Z", "dateTime")]  # fmt: skip


@pytest.fixture(scope="module")
def store() -> oms.GrainStore:
    store = oms.GrainStore()
    lines = "".join(
        f'<http://ex.org/s> <http://ex.org/p{i}> "{text}"^^<{XSD}{kind}> .\n'
        for i, (text, kind) in enumerate(LEXICAL)
    )
    store.import_(io.BytesIO(lines.encode()), format="ntriples")
    return store


def test_rdflib_is_given_every_literal_as_written(store: oms.GrainStore) -> None:
    """rdflib_dataset's promise: both libraries read and write the terms exactly."""
    written = sorted(
        str(q[2]) for q in store.to_rdflib().quads((None, None, None, None))
    )
    assert written == sorted(text for text, _kind in LEXICAL)


def test_the_whole_layout_goes_through_rdflib_and_back(store: oms.GrainStore) -> None:
    again = oms.GrainStore.from_rdflib(store.to_rdflib(grains=True))
    assert len(again) == len(store)
    assert sorted(map(str, again.snapshot())) == sorted(map(str, store.snapshot()))


@pytest.mark.parametrize(
    ("text", "kind"),
    [("1_000", "integer"), ("\u0663", "integer"), ("\uff11\uff12", "integer"),
     ("1e5", "decimal"), ("Infinity", "decimal"), ("2024-03-01garbage", "date"),
     ("2024-03-01", "dateTime")],
)  # fmt: skip
def test_a_form_its_datatype_does_not_allow_stays_text(text: str, kind: str) -> None:
    assert python_value(ox.Literal(text, datatype=ox.NamedNode(XSD + kind))) == text


def test_integers_past_64_bits_stay_exact() -> None:
    big = ox.Literal(
        "123456789012345678901234567890", datatype=ox.NamedNode(XSD + "integer")
    )
    small = ox.Literal("1", datatype=ox.NamedNode(XSD + "integer"))
    column = frame(["n"], [[big], [small]])["n"]
    assert list(column) == [123456789012345678901234567890, 1]


def test_xml_results_keep_a_carriage_return_and_refuse_what_xml_cannot_carry() -> None:
    import xml.dom.minidom

    body = write_solutions(
        ["a"], [[ox.Literal("x\ry")]], "application/sparql-results+xml"
    )
    parsed = xml.dom.minidom.parseString(body)
    assert parsed.getElementsByTagName("literal")[0].firstChild.data == "x\ry"  # type: ignore[union-attr]
    with pytest.raises(oms.QueryError):
        write_solutions(
            ["a"], [[ox.Literal("bell\x07")]], "application/sparql-results+xml"
        )


def test_only_the_prologue_declares_prefixes() -> None:
    query = ('PREFIX ex: <http://ex.org/> # a comment\nBASE <http://b.org/> '
             'SELECT * { FILTER(?x != "PREFIX evil: <http://example.org/al>") }')  # fmt: skip
    assert query_prefixes(query) == {"ex": "http://ex.org/"}


def test_a_drawn_answer_can_be_read_again_and_keeps_entities_apart() -> None:
    from oms_rdf.notebook.graph import entity_graph

    store = oms.GrainStore()
    for a, b in (("x", "x"), ("y", "y")):
        store.put(oms.Belief(f"http://a.org/{a}", "http://p.org/p", f"http://b.org/{b}", 0.9,
                             created_at=1))  # fmt: skip
    answer = store.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    chart = entity_graph(answer)
    assert "4 nodes and 2 edges" in chart.alt
    assert len(answer.triples()) == 2
    with pytest.raises(oms.SchemaError):
        entity_graph(store.query("SELECT ?s ?p WHERE { ?s ?p ?o }"))


def test_a_dollar_in_a_belief_is_drawn_as_text() -> None:
    from oms_rdf.notebook.plot import timeline

    store = oms.GrainStore()
    store.put(oms.Belief("price", "is", "$5 to $10, $\\frac{$", 0.9, created_at=1))
    assert timeline(store, "price", "is").png().startswith(b"\x89PNG")


def test_a_belief_valid_to_the_last_day_is_drawn() -> None:
    from oms_rdf.notebook.plot import timeline

    store = oms.GrainStore()
    store.put(oms.Belief("lease", "ends", "never", 0.9, created_at=1,
                         valid_to=253_402_214_400_000))  # 9999-12-31  # fmt: skip
    assert timeline(store, "lease", "ends").png().startswith(b"\x89PNG")
