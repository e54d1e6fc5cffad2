"""The endpoint's HTTP manners, as the W3C SPARQL 1.1 Protocol and RFC 9110 have
them, on a real uvicorn server on loopback: the dataset parameters, content
negotiation (406, q=0, Vary), HEAD, 415, media types without case, the methods a
405 lists, simple literals in XML results, a time out of range, escapes that are
not UTF-8, and CORS refusals as JSON.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import httpx
import pytest

from oms_rdf import GrainStore
from oms_rdf.http.app import create_app
from oms_rdf.http.auth import Token
from tests.helpers import running

EX = "http://example.org/"
G1, G2 = EX + "g1", EX + "g2"
NAMES = f"SELECT ?s WHERE {{ ?s <{EX}name> ?o }} ORDER BY ?s"
GRAPHS = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g"


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    store = GrainStore()
    store.import_(io.BytesIO(f"""
        <{EX}carol> <{EX}name> "Carol" .
        <{EX}alice> <{EX}name> "Alice" <{G1}> .
        <{EX}bob> <{EX}name> "Bob" <{G2}> .
    """.encode()), format="nquads")  # fmt: skip
    with running(create_app(store, cors=["https://app.example"])) as url:
        yield url


def values(response: httpx.Response, name: str) -> list[str]:
    assert response.status_code == 200, response.text
    rows = response.json()["results"]["bindings"]
    return [row[name]["value"] for row in rows]


# SPARQL 1.1 Protocol §2.1.4: the parameters are the dataset, as FROM and FROM
# NAMED would be, and they override the query's own.
@pytest.mark.parametrize(
    ("query", "params", "name", "expected"),
    [
        (NAMES, {"named-graph-uri": G2}, "s", []),  # an empty default graph
        (GRAPHS, {"named-graph-uri": G2}, "g", [G2]),
        (GRAPHS, {"default-graph-uri": G1}, "g", []),  # no named graph
        (NAMES, {"default-graph-uri": G1}, "s", [EX + "alice"]),
        (f"SELECT ?s FROM <{G1}> WHERE {{ ?s ?p ?o }}", {"named-graph-uri": G2}, "s", []),
        (f"SELECT ?s FROM <{G1}> WHERE {{ ?s ?p ?o }}", {"default-graph-uri": G2}, "s",
         [EX + "bob"]),
        (f"SELECT ?s FROM <{G1}> WHERE {{ ?s ?p ?o }}", {}, "s", [EX + "alice"]),
    ],
)  # fmt: skip
def test_the_dataset_parameters_are_the_whole_dataset(
    base: str, query: str, params: dict[str, str], name: str, expected: list[str]
) -> None:
    for time in ({}, {"valid_at": "2999"}):  # plain, and at a point
        got = httpx.get(f"{base}/sparql", params={"query": query, **params, **time})
        assert values(got, name) == expected


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        ("application/sparql-results+json;q=0, */*", "application/sparql-results+xml"),
        ("text/*, text/csv;q=0", "text/tab-separated-values"),
        ("TEXT/CSV", "text/csv"),
        ("application/*;q=0.2, text/csv;q=0.1", "application/sparql-results+json"),
        # What other stores take the results formats to be called, as they do.
        ("application/json", "application/sparql-results+json"),
        ("application/xml", "application/sparql-results+xml"),
        ("application/json;q=0.5, application/xml", "application/sparql-results+xml"),
    ],
)
def test_negotiation_takes_the_most_specific_range(
    base: str, accept: str, media: str
) -> None:
    got = httpx.get(
        f"{base}/sparql", params={"query": NAMES}, headers={"accept": accept}
    )
    assert got.status_code == 200 and got.headers["content-type"].startswith(media)
    assert "accept" in got.headers["vary"].lower()


@pytest.mark.parametrize(
    ("query", "accept"),
    [("ASK {}", "text/html"), ("CONSTRUCT WHERE { ?s ?p ?o }", "application/sparql-results+json"),
     ("ASK {}", "application/sparql-results+json;q=0")],
)  # fmt: skip
def test_no_acceptable_type_is_a_406(base: str, query: str, accept: str) -> None:
    got = httpx.get(
        f"{base}/sparql", params={"query": query}, headers={"accept": accept}
    )
    assert got.status_code == 406 and got.json()["code"] == "ERR_QUERY"
    assert "accept" in got.headers["vary"].lower()  # RFC 9110 §12.5.5
    described = httpx.get(f"{base}/sparql", headers={"accept": "text/html"})
    assert described.status_code == 406  # the service description, refused
    assert "accept" in described.headers["vary"].lower()


def test_head_is_get_without_the_body(base: str) -> None:
    described = httpx.get(f"{base}/sparql")
    head = httpx.head(f"{base}/sparql")
    assert described.status_code == head.status_code == 200 and head.content == b""
    assert head.headers["content-type"] == described.headers["content-type"]


def test_a_post_of_another_type_is_a_415_and_types_have_no_case(base: str) -> None:
    for kind in ("text/plain", "application/json", "multipart/form-data; boundary=x"):
        got = httpx.post(
            f"{base}/sparql", content=b"ASK {}", headers={"content-type": kind}
        )
        assert got.status_code == 415 and got.json()["path"] == "Content-Type", kind
    got = httpx.post(f"{base}/sparql", content=b"ASK {}",
                     headers={"content-type": "Application/SPARQL-Query"})  # fmt: skip
    assert got.status_code == 200 and got.json()["boolean"] is True
    got = httpx.post(f"{base}/sparql", content=b"query=ASK+%7B%7D",
                     headers={"content-type": "Application/X-WWW-Form-URLencoded"})  # fmt: skip
    assert got.status_code == 200 and got.json()["boolean"] is True


def test_a_405_lists_every_method_of_the_path(base: str) -> None:
    got = httpx.patch(f"{base}/v1/facts/0123456789abcdef")
    assert got.status_code == 405
    assert set(got.headers["allow"].split(", ")) >= {"GET", "PUT", "DELETE"}
    got = httpx.put(f"{base}/v1/facts")
    assert got.status_code == 405 and {"GET", "POST"} <= set(
        got.headers["allow"].split(", ")
    )
    got = httpx.put(f"{base}/v1/facts/search")  # a route of its own, not a fact
    assert got.status_code == 405 and "GET" in got.headers["allow"]


def test_a_simple_literal_in_xml_results_has_no_datatype(base: str) -> None:
    got = httpx.get(f"{base}/sparql", params={"query": NAMES, "default-graph-uri": G1},
                    headers={"accept": "application/sparql-results+xml"})  # fmt: skip
    assert "<literal>Alice</literal>" not in got.text  # ?s only: the name is not asked
    query = f"SELECT ?o WHERE {{ <{EX}carol> <{EX}name> ?o }}"
    got = httpx.get(f"{base}/sparql", params={"query": query},
                    headers={"accept": "application/sparql-results+xml"})  # fmt: skip
    assert "<literal>Carol</literal>" in got.text and "datatype" not in got.text


def test_a_time_out_of_range_is_the_callers_fault(base: str) -> None:
    for value in ("0000-01-01", "10000-01-01"):
        got = httpx.get(f"{base}/sparql", params={"query": "ASK {}", "valid_at": value})
        assert got.status_code == 400 and got.json()["code"] == "ERR_RANGE", value
    writer = {"secret": Token(write=True)}
    with running(create_app(GrainStore(), tokens=writer)) as url:
        got = httpx.post(f"{url}/sparql?valid_from=2022&valid_to=2021",
                         data={"update": f"INSERT DATA {{ <{EX}a> <{EX}b> <{EX}c> }}"},
                         headers={"authorization": "Bearer secret"})  # fmt: skip
    assert got.status_code == 400 and got.json()["code"] == "ERR_RANGE"


def test_url_escapes_that_are_not_utf8_are_refused(base: str) -> None:
    got = httpx.get(f"{base}/sparql?query=ASK%20%7B%7D%23%FF")
    assert got.status_code == 400 and got.json()["code"] == "ERR_CORRUPT"


def test_a_refused_cors_preflight_is_a_json_error(base: str) -> None:
    asked = {"access-control-request-method": "POST"}
    got = httpx.options(
        f"{base}/sparql", headers={"origin": "https://evil.example", **asked}
    )
    assert got.status_code == 400 and "origin" in got.json()["message"]
    got = httpx.options(
        f"{base}/sparql", headers={"origin": "https://app.example", **asked}
    )
    assert got.status_code == 200
