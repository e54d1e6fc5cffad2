"""SPARQL Update beyond the DATA forms: relative IRIs and their base, the
parser's word on a malformed request (without running what is refused), and
CREATE GRAPH, which real clients send."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf import GrainStore
from oms_rdf.http.app import Token, create_app
from oms_rdf.io.update_syntax import _check_syntax
from tests.test_server import running

T0 = 1_700_000_000_000
EX = "http://example.org/"
PREFIX = "PREFIX ex: <http://example.org/>\n"
WRITER = "update-writer-00000003"


def quads(store: GrainStore) -> set[str]:
    return {str(q) for q in store.backend.quads()}


@contextmanager
def served(
    store: GrainStore, namespaces: tuple[str, ...] | None = None
) -> Iterator[httpx.Client]:
    tokens = {WRITER: Token(namespaces=namespaces, write=True)}
    auth = {"authorization": f"Bearer {WRITER}"}
    with (
        running(create_app(store, tokens=tokens)) as base,
        httpx.Client(base_url=base, headers=auth) as client,
    ):
        yield client


def test_relative_iris_resolve_against_the_base_given_and_the_requests_own() -> None:
    store = GrainStore(clock=lambda: T0)
    with pytest.raises(oms.QueryError) as info:
        store.update("INSERT DATA { <ann> <likes> <tea> }")  # no base: refused
    assert "relative IRI" in str(info.value) and "line 1" in str(info.value)
    store.update("INSERT DATA { <ann> <likes> <tea> }", base_iri=EX)
    store.update(
        "BASE <http://elsewhere.org/> INSERT DATA { <bob> <likes> <tea> }",
        base_iri=EX,
    )
    assert store.query(f"ASK {{ <{EX}ann> <{EX}likes> <{EX}tea> }}") is True
    assert store.query("ASK { <http://elsewhere.org/bob> ?p ?o }") is True
    store.update("DELETE DATA { <ann> <likes> <tea> }", base_iri=EX)
    assert store.query(f"ASK {{ <{EX}ann> ?p ?o }}") is False
    with pytest.raises(oms.SchemaError) as bad:
        store.update("INSERT DATA { <a> <b> <c> }", base_iri="no scheme")
    assert bad.value.path == "base_iri"


@pytest.mark.parametrize(
    "text",
    [
        # A stray brace made an operation of its own, named as a refused form.
        f"INSERT DATA {{ <{EX}a> <{EX}b> <{EX}c> . }}}}",
        f"DELETE DATA {{ <{EX}a> <{EX}b> <{EX}c> }} }}",
        PREFIX + "INSERT DATA { ex:a ex:b ex:c } ;\n CLEAR ALL }",
        PREFIX + "CLEAR ALL ; INSERT DATA { ex:a ex:b ex:c } }",
    ],
)
def test_a_malformed_request_is_reported_where_the_parser_says(text: str) -> None:
    """At the line and column pyoxigraph's parser gives for the request as sent."""
    with pytest.raises(SyntaxError) as parsed:
        ox.Store().update(text)
    at = str(parsed.value).removeprefix("error at ").split(":")  # "error at L:C: why"
    line, column = at[0], at[1]
    store = GrainStore(clock=lambda: T0)
    with pytest.raises(oms.QueryError) as info:
        store.update(text)
    assert f"(line {line}, column {column})" in str(info.value), str(info.value)
    assert "refused" not in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        f"LOAD <{EX}data.ttl> }}",
        f"INSERT {{ <{EX}a> <{EX}b> ?o }} WHERE {{ SERVICE <{EX}s> {{ ?s ?p ?o }} }} }}",
    ],
)
def test_a_request_that_would_fetch_is_never_run_to_find_its_error(text: str) -> None:
    store = GrainStore(clock=lambda: T0)
    with pytest.raises(oms.QueryError, match="is refused"):
        store.update(text)


@pytest.mark.parametrize(
    "text",
    [
        f"INSERT DATA {{ <{EX}a> <{EX}b> <{EX}c> }}",
        f"INSERT {{ <{EX}a> <{EX}b> ?n }} WHERE {{ VALUES ?n {{ 1 2 3 }} }}",
        PREFIX + "DELETE WHERE { ?s ?p ?o } ; INSERT DATA { ex:a ex:b ex:c }",
    ],
)
def test_a_refused_request_is_parsed_and_never_run(text: str) -> None:
    """Its syntax is asked of a scratch store, with two operations ahead of its
    own that stop the run: a short ``... WHERE`` of many VALUES cost 40 s."""
    scratch = ox.Store()
    start = len(PREFIX) if text.startswith(PREFIX) else 0  # its first operation
    _check_syntax(text, {}, None, stop_at=start, scratch=scratch)
    assert len(scratch) == 0  # nothing of the request ran


def test_post_sparql_resolves_an_updates_relative_iris_as_a_querys() -> None:
    store = GrainStore(clock=lambda: T0)
    with served(store) as client:
        done = client.post("/sparql", data={"update": "INSERT DATA { <s> <p> <o> }"})
        asked = client.post(
            "/sparql",
            data={"query": "ASK { <s> <p> <o> }"},
            headers={"accept": "application/sparql-results+json"},
        )
        base = str(client.base_url).rstrip("/")
    assert done.status_code == 200, done.text
    assert asked.json()["boolean"] is True
    assert store.query(f"ASK {{ <{base}/s> <{base}/p> <{base}/o> }}") is True


def test_create_graph_writes_nothing_and_is_taken_as_silent() -> None:
    store = GrainStore(clock=lambda: T0)
    before = quads(store)
    store.update(PREFIX + "CREATE GRAPH ex:g ; CREATE SILENT GRAPH ex:h")
    assert quads(store) == before  # no graph is kept empty: nothing to write
    store.update(PREFIX + "INSERT DATA { GRAPH ex:g { ex:a ex:b ex:c } }")
    held = quads(store)
    for text in (
        "CREATE GRAPH ex:g",  # stored knowledge
        "CREATE GRAPH ex:m ; CREATE GRAPH ex:m",
        "INSERT DATA { GRAPH ex:g { ex:a ex:b ex:c } } ; CREATE GRAPH ex:g",
    ):
        store.update(PREFIX + text)
        assert quads(store) == held, text
    with pytest.raises(oms.SchemaError) as info:
        store.update("CREATE GRAPH <https://w3id.org/oms-rdf/ns#index>")
    assert info.value.code == "ERR_SCHEMA" and quads(store) == held


def test_create_graph_tells_a_token_nothing_of_other_namespaces() -> None:
    """Refusing a graph that holds knowledge told a token of one namespace
    what another namespace's beliefs held, which its queries hide."""
    store = GrainStore(clock=lambda: T0)
    store.update(PREFIX + 'INSERT DATA { GRAPH ex:hr { ex:bob ex:status "fired" } }',
                 namespace="hr")  # fmt: skip
    with served(store, namespaces=("crm",)) as client:
        answers = [
            client.post("/sparql", data={"update": f"CREATE GRAPH <{EX}{g}>"})
            for g in ("hr", "none")
        ]
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]


def _update_store(client: Any) -> Any:
    """rdflib's SPARQLUpdateStore on the served endpoint, as the writer."""
    from rdflib.plugins.stores.sparqlstore import SPARQLUpdateStore

    endpoint = f"{str(client.base_url).rstrip('/')}/sparql"
    return SPARQLUpdateStore(endpoint, endpoint, method="POST_FORM",
                             headers={"Authorization": f"Bearer {WRITER}"})  # fmt: skip


def test_rdflibs_dataset_makes_a_graph_and_writes_in_it_over_http() -> None:
    from rdflib import Dataset, Literal, URIRef

    store = GrainStore(clock=lambda: T0)
    with served(store) as client:
        remote = _update_store(client)
        dataset = Dataset(store=remote)
        graph = dataset.graph(URIRef(EX + "g"))  # sends CREATE GRAPH
        graph.add((URIRef(EX + "ann"), URIRef(EX + "name"), Literal("Ann")))
    asked = f'ASK {{ GRAPH <{EX}g> {{ <{EX}ann> <{EX}name> "Ann" }} }}'
    assert store.query(asked) is True


def test_the_callers_reason_is_the_update_events_reason() -> None:
    """The event gave the operations' names (put_many, retract) as its reason;
    the caller's words were in the index only."""
    from oms_rdf.rdf.vocab import OMS

    store = GrainStore(clock=lambda: T0)
    store.update(PREFIX + 'INSERT DATA { ex:a ex:p "v" }', reason="adopted from HR")
    store.update(PREFIX + 'DELETE DATA { ex:a ex:p "v" }', reason="HR corrected it")
    store.update(PREFIX + 'INSERT DATA { ex:b ex:p "w" }')  # none given: what it did
    reasons = {
        q.object.value for q in store.backend.quads(None, OMS.reason, None, OMS.audit)
    }
    assert {"adopted from HR", "HR corrected it"} <= reasons
    assert any(
        "put_many" in r for r in reasons - {"adopted from HR", "HR corrected it"}
    )
    with pytest.raises(oms.SchemaError), store.transaction(reason=b"bytes"):  # type: ignore[arg-type]
        pass


def test_rdflibs_default_graph_written_over_http_is_the_default_graph() -> None:
    """rdflib's SPARQLUpdateStore writes a Graph's ``addN`` and ``update`` into
    ``GRAPH <urn:x-rdflib:default>`` for the dataset's default graph, which its
    reads name as a default-graph-uri: over HTTP both are the default graph. In
    the library a graph is the graph its update names."""
    from rdflib import Graph, Literal, URIRef
    from rdflib.graph import DATASET_DEFAULT_GRAPH_ID

    store = GrainStore(clock=lambda: T0)
    names = f"SELECT ?s WHERE {{ ?s <{EX}name> ?n }}"
    with served(store) as client:
        remote = _update_store(client)
        graph = Graph(store=remote, identifier=DATASET_DEFAULT_GRAPH_ID)
        graph.addN([(URIRef(EX + "ann"), URIRef(EX + "name"), Literal("Ann"), graph)])
        graph.update(f'INSERT DATA {{ <{EX}bo> <{EX}name> "Bo" }}')
        seen = {
            str(s) for s, _p, _o in graph.triples((None, URIRef(EX + "name"), None))
        }
        assert seen == {EX + "ann", EX + "bo"}
        assert store.query("ASK { GRAPH <urn:x-rdflib:default> { ?s ?p ?o } }") is False
        graph.update(f'DELETE DATA {{ <{EX}bo> <{EX}name> "Bo" }}')
        assert [str(r["s"].value) for r in store.query(names)] == [EX + "ann"]
    store.update(
        f'INSERT DATA {{ GRAPH <urn:x-rdflib:default> {{ <{EX}cy> <{EX}name> "Cy" }} }}'
    )
    assert store.query("ASK { GRAPH <urn:x-rdflib:default> { ?s ?p ?o } }") is True
