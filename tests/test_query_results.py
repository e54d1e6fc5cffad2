"""What a query gives back (rows, triples, snapshots) and how a query's own dataset is read."""

from __future__ import annotations

import io

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.store.querytext import (
    UnreadableError,
    dataset_clause,
    dataset_start,
    tokenize,
)

EX = "http://example.org/"
T0 = 1_700_000_000_000


@pytest.fixture
def store() -> oms.GrainStore:
    store = oms.GrainStore(clock=lambda: T0 + 1000)
    store.put(oms.Belief(f"{EX}ann", f"{EX}knows", f"{EX}bo", 0.9, created_at=T0))
    return store


def test_a_row_reads_by_name_position_and_variable(store: oms.GrainStore) -> None:
    query = f"SELECT ?o ?none WHERE {{ ?s ?p ?o OPTIONAL {{ ?s <{EX}no> ?none }} }}"
    (row,) = store.query(query)
    assert row["o"] == row[0] == row[ox.Variable("o")] == ox.NamedNode(f"{EX}bo")
    assert row.get("none") is None and row.get("none", 7) == 7 and row.get("x") is None
    assert list(row) == [ox.NamedNode(f"{EX}bo"), None] and len(row) == 2
    assert repr(row) == f"<QueryRow o=<{EX}bo>, none=None>"
    with pytest.raises(KeyError, match=r"no variable \?x"):
        row["x"]


def test_solutions_are_kept_once_read(store: oms.GrainStore) -> None:
    solutions = store.query("SELECT ?o WHERE { ?s ?p ?o }")
    assert isinstance(solutions, oms.Solutions)
    out = io.BytesIO()
    assert solutions.serialize(out, "csv") is None
    assert out.getvalue().decode().split() == ["o", f"{EX}bo"]
    assert solutions.serialize(format="tsv") == f"?o\n<{EX}bo>\n".encode()
    assert [r["o"] for r in solutions] == [ox.NamedNode(f"{EX}bo")]  # read again
    solutions.close()
    assert len(solutions.rows()) == 1  # kept: closing drops only the engine's result


def test_triples_are_kept_once_read(store: oms.GrainStore) -> None:
    triples = store.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    assert isinstance(triples, oms.Triples)
    html = triples._repr_html_()
    assert "bo" in html and "knows" in html
    assert [t.object for t in triples] == [ox.NamedNode(f"{EX}bo")]  # read again
    assert b"knows" in (triples.serialize() or b"")
    assert len(triples.to_rdflib()) == 1
    other = store.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    assert isinstance(other, oms.Triples)
    other.close()
    assert list(other) == []  # closed before it was read


def test_a_snapshot_serializes_its_exact_terms(store: oms.GrainStore) -> None:
    snapshot = store.snapshot(valid_at=T0, as_of=T0)
    assert repr(snapshot) == (
        f"<Snapshot 1 quads valid_at={T0} as_of={T0} namespace=None>"
    )
    turtle, quads = io.BytesIO(), io.BytesIO()
    snapshot.serialize(turtle, ox.RdfFormat.N_TRIPLES)
    snapshot.serialize(quads, ox.RdfFormat.N_QUADS)
    line = f"<{EX}ann> <{EX}knows> <{EX}bo> ."
    assert turtle.getvalue().decode().strip() == quads.getvalue().decode().strip()
    assert turtle.getvalue().decode().strip() == line
    assert len(snapshot.to_rdflib()) == 1
    assert snapshot.query("ASK { ?s ?p ?o }") is True


def test_grains_with_a_time_is_refused(store: oms.GrainStore) -> None:
    with pytest.raises(oms.QueryError, match="grains=True"):
        store.query("ASK { ?s ?p ?o }", grains=True, valid_at=T0)
    with pytest.raises(oms.QueryError, match="grains=True"):
        store.query("ASK { ?s ?p ?o }", grains=True, namespace="work")


def test_a_query_that_fails_while_it_runs_is_err_query(store: oms.GrainStore) -> None:
    # A substitution of a variable the SELECT does not project: pyoxigraph refuses.
    with pytest.raises(oms.QueryError, match="cannot be answered"):
        store.query("SELECT ?s WHERE { ?s ?p ?o }", o="x")


def test_the_dataset_a_query_names() -> None:
    prefixes = {"ex": EX}
    query = (
        "BASE <http://base.org/> PREFIX my: <dir/> SELECT * FROM <g1> FROM my:g2 "
        "FROM NAMED ex:g3 WHERE { ?s ?p ?o }"
    )
    assert dataset_clause(query, prefixes) == (
        ["http://base.org/g1", "http://base.org/dir/g2"],
        [f"{EX}g3"],
    )
    assert dataset_start(query) == query.index("FROM")
    assert dataset_clause("SELECT * WHERE { ?s ?p ?o }", prefixes) is None
    assert dataset_start("SELECT * WHERE { ?s ?p ?o }") is None
    # What cannot be read as a dataset is left to the query's own parser.
    assert dataset_clause("SELECT * FROM nope:g { }", prefixes) is None
    assert dataset_clause("SELECT * FROM ?g { }", prefixes) is None
    assert dataset_clause("SELECT * FROM", prefixes) is None
    assert dataset_clause("SELECT * FROM NAMED", prefixes) is None
    assert dataset_clause('SELECT * { "unclosed }', prefixes) is None
    assert dataset_start('SELECT * { "unclosed }') is None


def test_text_no_token_starts_is_unreadable() -> None:
    assert [t.kind for t in tokenize("?a <= 1.5e3")] == ["var", "punct", "number"]
    with pytest.raises(UnreadableError, match="no token at 3"):
        tokenize('?a "unclosed')
