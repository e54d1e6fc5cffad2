"""Time travel from the clients RDF users already have, as the README shows each.

The endpoint takes the point as two query parameters of its URL, ``valid_at`` and
``as_of``, so every SPARQL client reaches the past without knowing this store:
SPARQLWrapper, rdflib's SPARQLStore, curl and YASGUI. Each one is driven here as a
user would, with its own defaults: SPARQLWrapper and SPARQLStore ask CONSTRUCT and
DESCRIBE answers as RDF/XML, YASGUI sends a form from another origin.
"""

from __future__ import annotations

import json
import subprocess
import warnings
from collections.abc import Iterator

import httpx
import pytest
from rdflib import Graph, URIRef

from oms_rdf import GrainStore
from oms_rdf.http.app import create_app
from tests.test_server import EX, WORKS, running, story

CONSTRUCT = (
    f"CONSTRUCT {{ <{EX}ann> <{EX}worksAt> ?o }} WHERE {{ <{EX}ann> <{EX}worksAt> ?o }}"
)
YASGUI = "https://yasgui.example"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[str, GrainStore]]:
    store = story()
    with running(create_app(store, cors=[YASGUI])) as base:
        yield f"{base}/sparql", store


def employers(graph: Graph) -> list[str]:
    return sorted(
        str(o) for o in graph.objects(URIRef(EX + "ann"), URIRef(EX + "worksAt"))
    )


def test_sparqlwrapper_construct_in_its_default_format_at_a_past_point(
    endpoint: tuple[str, GrainStore],
) -> None:
    from SPARQLWrapper import SPARQLWrapper

    client = SPARQLWrapper(endpoint[0])  # CONSTRUCT answers come as RDF/XML by default
    client.setQuery(CONSTRUCT)
    with warnings.catch_warnings():  # rdflib's RDF/XML parser makes a ConjunctiveGraph
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        now = client.queryAndConvert()
        client.addParameter("valid_at", "2023-11-20")
        past = client.queryAndConvert()
    assert employers(now) == [EX + "initech"]
    assert employers(past) == [EX + "acme"]


def test_sparqlwrapper_describe_in_its_default_format(
    endpoint: tuple[str, GrainStore],
) -> None:
    from SPARQLWrapper import SPARQLWrapper

    client = SPARQLWrapper(endpoint[0])
    client.setQuery(f"DESCRIBE <{EX}ann>")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        graph = client.queryAndConvert()
    assert isinstance(graph, Graph)
    assert employers(graph) == [EX + "initech"]


def test_rdflib_sparqlstore_construct_at_a_past_point(
    endpoint: tuple[str, GrainStore],
) -> None:
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        past = Graph(
            store=SPARQLStore(f"{endpoint[0]}?valid_at=2023-11-20", method="POST_FORM")
        )
        answer = past.query(CONSTRUCT)
        assert answer.graph is not None
        assert employers(answer.graph) == [EX + "acme"]
        now = Graph(store=SPARQLStore(endpoint[0]))
        assert [str(row[0]) for row in now.query(WORKS)] == [EX + "initech"]


def test_curl_at_a_past_point(endpoint: tuple[str, GrainStore]) -> None:
    out = subprocess.run(
        [
            "curl",
            "-sS",
            "--fail-with-body",
            f"{endpoint[0]}?valid_at=2023-11-20",
            "-H",
            "Accept: application/sparql-results+json",
            "--data-urlencode",
            f"query={WORKS}",
        ],
        capture_output=True,
        check=True,
        text=True,
        timeout=30,
    )
    rows = json.loads(out.stdout)["results"]["bindings"]
    assert [row["o"]["value"] for row in rows] == [EX + "acme"]


def test_yasgui_from_another_origin_at_a_past_point(
    endpoint: tuple[str, GrainStore],
) -> None:
    """YASGUI posts a form, with a preflight when it sends its Accept list."""
    url = f"{endpoint[0]}?as_of=2023-12-01"
    preflight = httpx.options(
        url,
        headers={
            "origin": YASGUI,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, accept",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == YASGUI
    r = httpx.post(
        url,
        data={"query": WORKS},
        headers={
            "origin": YASGUI,
            "accept": "application/sparql-results+json,*/*;q=0.9",
        },
    )
    assert r.status_code == 200, r.text
    assert r.headers["access-control-allow-origin"] == YASGUI
    assert [b["o"]["value"] for b in r.json()["results"]["bindings"]] == [EX + "acme"]
