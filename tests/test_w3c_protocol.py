"""The W3C SPARQL 1.1 Protocol tests (``sparql11/protocol``), against the server.

Each test of the W3C suite is one function here, named after its id, sending the
suite's requests to a real ``oms-rdf`` server on loopback and checking what the suite
expects: the status class, the result format and the boolean. The suite's dataset
is three graphs, each holding one ``foaf:Document`` triple about its own name.

Updates are belief operations (INSERT DATA adopts, DELETE DATA retracts): the
suite's updates that rewrite graphs (``CLEAR``, ``DROP``, ``INSERT … WHERE`` with
``USING``) are not applicable, and their tests check the documented refusal, a 400
with ERR_QUERY naming the form, and that nothing changed.

``test_every_w3c_protocol_test_is_here`` (w3c tier) checks the list of ids against
the manifest of the W3C files.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pyoxigraph as ox
import pytest

from oms_rdf import GrainStore
from tests import w3c
from tests.test_http_abuse import ADMIN, bearer, start, stop

DATA = "http://kasei.us/2009/09/sparql/data/"
FOAF_DOCUMENT = "http://xmlns.com/foaf/0.1/Document"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
SPARQL_QUERY = {"content-type": "application/sparql-query"}
SPARQL_UPDATE = {"content-type": "application/sparql-update"}
FORM = {"content-type": "application/x-www-form-urlencoded"}
RDF_TYPES = ("application/rdf+xml", "text/turtle", "application/n-triples", "text/html")
BOOLEAN_TYPES = ("application/sparql-results+xml", "application/sparql-results+json")
TABULAR_TYPES = (*BOOLEAN_TYPES, "text/csv", "text/tab-separated-values")


def graph(n: int) -> str:
    return f"{DATA}data{n}.rdf"


Endpoint = tuple[str, dict[str, str]]  # the endpoint's URL, the writer's headers


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    folder = tmp_path_factory.mktemp("protocol") / "store"
    quads = [
        ox.Quad(
            ox.NamedNode(graph(n)),
            ox.NamedNode(RDF_TYPE),
            ox.NamedNode(FOAF_DOCUMENT),
            ox.NamedNode(graph(n)),
        )
        for n in (1, 2, 3)
    ]
    out = io.BytesIO()
    ox.serialize(quads, out, ox.RdfFormat.N_QUADS)
    store = GrainStore(folder)
    store.import_(io.BytesIO(out.getvalue()), format="nquads")
    store.close()
    served = start(folder)
    try:
        yield f"{served.base}/sparql", bearer(ADMIN)
    finally:
        stop(served)


def send(
    endpoint: Endpoint,
    method: str,
    params: Sequence[tuple[str, str]] = (),
    headers: dict[str, str] | None = None,
    body: bytes | str | None = None,
) -> httpx.Response:
    url = endpoint[0] + ("?" + urlencode(params, quote_via=quote) if params else "")
    content = body.encode() if isinstance(body, str) else body
    return httpx.request(
        method,
        url,
        headers={**endpoint[1], **(headers or {})},
        content=content,
        timeout=30,
    )


def boolean(response: httpx.Response) -> bool:
    assert 200 <= response.status_code < 400, response.text
    media = response.headers["content-type"].split(";")[0]
    assert media in BOOLEAN_TYPES, media
    if media.endswith("json"):
        value: bool = json.loads(response.content)["boolean"]
        return value
    parsed = ox.parse_query_results(response.content, format=ox.QueryResultsFormat.XML)
    assert isinstance(parsed, ox.QueryBoolean)
    return bool(parsed)


def refused(response: httpx.Response, *words: str) -> dict[str, Any]:
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    body: dict[str, Any] = response.json()
    assert body["code"].startswith("ERR_"), body
    for word in words:
        assert word.lower() in body["message"].lower(), body
    return body


def both_graphs_ask(default: bool) -> str:
    if default:
        return f"ASK {{ <{graph(1)}> a ?type . <{graph(2)}> a ?type . }}"
    return f"ASK {{ GRAPH ?g1 {{ <{graph(1)}> a ?type }} GRAPH ?g2 {{ <{graph(2)}> a ?type }} }}"


# Queries


def test_query_post_form(endpoint: Endpoint) -> None:
    r = send(
        endpoint,
        "POST",
        [("default-graph-uri", f"{DATA}data0.rdf")],
        FORM,
        "query=ASK%20%7B%7D",
    )
    assert boolean(r) is True


def test_query_get(endpoint: Endpoint) -> None:
    r = send(
        endpoint,
        "GET",
        [("query", "ASK {}"), ("default-graph-uri", f"{DATA}data0.rdf")],
    )
    assert boolean(r) is True


def test_query_post_direct(endpoint: Endpoint) -> None:
    assert boolean(send(endpoint, "POST", [], SPARQL_QUERY, "ASK {}")) is True


def test_query_dataset_default_graphs_get(endpoint: Endpoint) -> None:
    params = [
        ("query", both_graphs_ask(True)),
        ("default-graph-uri", graph(1)),
        ("default-graph-uri", graph(2)),
    ]
    assert boolean(send(endpoint, "GET", params)) is True


def test_query_dataset_default_graphs_post(endpoint: Endpoint) -> None:
    params = [("default-graph-uri", graph(1)), ("default-graph-uri", graph(2))]
    assert (
        boolean(send(endpoint, "POST", params, SPARQL_QUERY, both_graphs_ask(True)))
        is True
    )


def test_query_dataset_named_graphs_post(endpoint: Endpoint) -> None:
    params = [("named-graph-uri", graph(1)), ("named-graph-uri", graph(2))]
    assert (
        boolean(send(endpoint, "POST", params, SPARQL_QUERY, both_graphs_ask(False)))
        is True
    )


def test_query_dataset_named_graphs_get(endpoint: Endpoint) -> None:
    params = [
        ("query", both_graphs_ask(False)),
        ("named-graph-uri", graph(1)),
        ("named-graph-uri", graph(2)),
    ]
    assert boolean(send(endpoint, "GET", params)) is True


def test_query_dataset_full(endpoint: Endpoint) -> None:
    params = [
        ("default-graph-uri", graph(3)),
        ("named-graph-uri", graph(1)),
        ("named-graph-uri", graph(2)),
    ]
    query = (
        f"ASK {{ <{graph(3)}> a ?type GRAPH ?g1 {{ <{graph(1)}> a ?type }}"
        f" GRAPH ?g2 {{ <{graph(2)}> a ?type }} }}"
    )
    assert boolean(send(endpoint, "POST", params, SPARQL_QUERY, query)) is True


def test_query_multiple_dataset(endpoint: Endpoint) -> None:
    """The protocol's dataset wins over the query's FROM: graph 3 is not the default."""
    params = [("named-graph-uri", graph(1)), ("named-graph-uri", graph(2))]
    query = (
        f"ASK FROM <{graph(3)}> {{ GRAPH ?g1 {{ <{graph(1)}> a ?type }}"
        f" GRAPH ?g2 {{ <{graph(2)}> a ?type }} }}"
    )
    assert boolean(send(endpoint, "POST", params, SPARQL_QUERY, query)) is True


@pytest.mark.parametrize(
    ("query", "accepted"),
    [
        pytest.param("SELECT (1 AS ?value) {}", TABULAR_TYPES, id="select"),
        pytest.param("ASK {}", BOOLEAN_TYPES, id="ask"),
        pytest.param("DESCRIBE <http://example.org/>", RDF_TYPES, id="describe"),
        # Relative IRIs: the endpoint's URL is the query's base IRI.
        pytest.param("CONSTRUCT { <s> <p> 1 } WHERE {}", RDF_TYPES, id="construct"),
    ],
)
def test_query_content_type(
    endpoint: Endpoint, query: str, accepted: tuple[str, ...]
) -> None:
    """query_content_type_select, _ask, _describe and _construct."""
    r = send(
        endpoint,
        "POST",
        [("default-graph-uri", f"{DATA}data0.rdf")],
        SPARQL_QUERY,
        query,
    )
    assert 200 <= r.status_code < 400, r.text
    assert r.headers["content-type"].split(";")[0] in accepted


# Bad queries: each a 4xx


@pytest.mark.parametrize(
    ("method", "params", "headers", "body"),
    [
        pytest.param(
            "PUT",
            [("query", "ASK {}"), ("default-graph-uri", f"{DATA}data0.rdf")],
            FORM,
            None,
            id="bad_query_method",
        ),
        pytest.param(
            "GET",
            [("query", "ASK {}"), ("query", "SELECT * {}")],
            {},
            None,
            id="bad_multiple_queries",
        ),
        pytest.param(
            "POST",
            [],
            {"content-type": "text/plain"},
            "ASK {}",
            id="bad_query_wrong_media_type",
        ),
        pytest.param(
            "POST", [], {}, "query=ASK%20%7B%7D", id="bad_query_missing_form_type"
        ),
        pytest.param("POST", [], {}, "ASK {}", id="bad_query_missing_direct_type"),
        pytest.param(
            "POST",
            [],
            {"content-type": "application/sparql-query; charset=UTF-16"},
            "ASK {}".encode("utf-16"),
            id="bad_query_non_utf8",
        ),
        pytest.param("GET", [("query", "ASK {")], {}, None, id="bad_query_syntax"),
        pytest.param("GET", [("update", "CLEAR ALL")], {}, None, id="bad_update_get"),
        pytest.param(
            "POST",
            [],
            FORM,
            "update=CLEAR%20NAMED&update=CLEAR%20DEFAULT",
            id="bad_multiple_updates",
        ),
        pytest.param(
            "POST",
            [],
            {"content-type": "text/plain"},
            "CLEAR NAMED",
            id="bad_update_wrong_media_type",
        ),
        pytest.param(
            "POST", [], {}, "update=CLEAR%20NAMED", id="bad_update_missing_form_type"
        ),
        pytest.param(
            "POST",
            [],
            {"content-type": "application/sparql-update; charset=UTF-16"},
            "CLEAR NAMED".encode("utf-16"),
            id="bad_update_non_utf8",
        ),
        pytest.param("POST", [], FORM, "update=CLEAR%20XYZ", id="bad_update_syntax"),
        pytest.param(
            "POST",
            [("using-named-graph-uri", "http://example/people")],
            SPARQL_UPDATE,
            "PREFIX foaf: <http://xmlns.com/foaf/0.1/>\nWITH <http://example/addresses>\n"
            "DELETE { ?person foaf:givenName 'Bill' }\nINSERT { ?person foaf:givenName 'William' }\n"
            "WHERE { ?person foaf:givenName 'Bill' }",
            id="bad_update_dataset_conflict",
        ),
    ],
)
def test_bad_requests(
    endpoint: Endpoint,
    method: str,
    params: list[tuple[str, str]],
    headers: dict[str, str],
    body: Any,
) -> None:
    r = send(endpoint, method, params, headers, body)
    assert 400 <= r.status_code < 500, (r.status_code, r.text)


# Updates that rewrite graphs: not applicable to belief operations, refused whole


def held(endpoint: Endpoint) -> int:
    """The number of triples the endpoint's default graph and named graphs hold."""
    query = "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"
    r = send(
        endpoint,
        "POST",
        [],
        {**SPARQL_QUERY, "accept": "application/sparql-results+json"},
        query,
    )
    assert r.status_code == 200, r.text
    return int(r.json()["results"]["bindings"][0]["n"]["value"])


@pytest.mark.parametrize(
    ("params", "headers", "body", "form"),
    [
        pytest.param([], FORM, "update=CLEAR+ALL", "CLEAR", id="update_post_form"),
        pytest.param([], SPARQL_UPDATE, "CLEAR ALL", "CLEAR", id="update_post_direct"),
        pytest.param(
            [],
            SPARQL_UPDATE,
            "CLEAR SILENT GRAPH <http://example.org/protocol-base-test/> ;\n"
            "INSERT DATA { GRAPH <http://example.org/protocol-base-test/> "
            "{ <http://example.org/s> <http://example.org/p> <test> } }",
            "CLEAR",
            id="update_base_uri",
        ),
        pytest.param(
            [("using-graph-uri", graph(1))],
            SPARQL_UPDATE,
            "INSERT { GRAPH <http://example.org/t/> { ?s a ?o } } WHERE { ?s a ?o }",
            "INSERT",
            id="update_dataset_default_graph",
        ),
        pytest.param(
            [("using-graph-uri", graph(1)), ("using-graph-uri", graph(2))],
            SPARQL_UPDATE,
            "DROP ALL",
            "DROP",
            id="update_dataset_default_graphs",
        ),
        pytest.param(
            [("using-named-graph-uri", graph(1)), ("using-named-graph-uri", graph(2))],
            SPARQL_UPDATE,
            "DROP ALL",
            "DROP",
            id="update_dataset_named_graphs",
        ),
        pytest.param(
            [("using-graph-uri", graph(1)), ("using-named-graph-uri", graph(2))],
            SPARQL_UPDATE,
            "DROP ALL",
            "DROP",
            id="update_dataset_full",
        ),
    ],
)
def test_graph_rewriting_updates_are_refused(
    endpoint: Endpoint,
    params: list[tuple[str, str]],
    headers: dict[str, str],
    body: str,
    form: str,
) -> None:
    before = held(endpoint)
    refused(send(endpoint, "POST", params, headers, body), form)
    assert held(endpoint) == before


def test_an_insert_data_update_over_the_protocol_is_a_belief(
    endpoint: Endpoint,
) -> None:
    """What the suite's updates do where belief operations can: INSERT DATA adopts."""
    triple = "<http://example.org/s> <http://example.org/p> <http://example.org/o>"
    r = send(endpoint, "POST", [], SPARQL_UPDATE, f"INSERT DATA {{ {triple} }}")
    assert 200 <= r.status_code < 400, r.text
    assert (
        boolean(send(endpoint, "POST", [], SPARQL_QUERY, f"ASK {{ {triple} }}")) is True
    )


IDS = {
    "query_post_form",
    "query_get",
    "query_post_direct",
    "query_dataset_default_graphs_get",
    "query_dataset_default_graphs_post",
    "query_dataset_named_graphs_post",
    "query_dataset_named_graphs_get",
    "query_dataset_full",
    "query_multiple_dataset",
    "query_content_type_select",
    "query_content_type_ask",
    "query_content_type_describe",
    "query_content_type_construct",
    "bad_query_method",
    "bad_multiple_queries",
    "bad_query_wrong_media_type",
    "bad_query_missing_form_type",
    "bad_query_missing_direct_type",
    "bad_query_non_utf8",
    "bad_query_syntax",
    "bad_update_get",
    "bad_multiple_updates",
    "bad_update_wrong_media_type",
    "bad_update_missing_form_type",
    "bad_update_non_utf8",
    "bad_update_syntax",
    "bad_update_dataset_conflict",
    "update_post_form",
    "update_post_direct",
    "update_base_uri",
    "update_dataset_default_graph",
    "update_dataset_default_graphs",
    "update_dataset_named_graphs",
    "update_dataset_full",
}


@pytest.mark.w3c
def test_every_w3c_protocol_test_is_here() -> None:
    folder = w3c.root()
    assert folder is not None
    manifest = folder / "sparql11" / "protocol" / "manifest.ttl"
    graph_ = ox.Store()
    graph_.load(
        path=str(manifest), format=ox.RdfFormat.TURTLE, base_iri=manifest.as_uri()
    )
    kind = ox.NamedNode(w3c.MF + "ProtocolTest")
    listed = {
        q.subject.value.rsplit("#", 1)[-1]
        for q in graph_.quads_for_pattern(None, ox.NamedNode(RDF_TYPE), kind)
    }
    assert listed == IDS
