"""The W3C SPARQL 1.1 Graph Store HTTP Protocol tests (``sparql11/http-rdf-update``).

The suite is a sequence of requests on one graph store (its ``tests.txt``): PUT,
GET, DELETE, POST and HEAD on graphs. The store's graph store, ``/store``, is read
only: a graph's knowledge changes by belief operations (SPARQL Update's INSERT DATA
and DELETE DATA, the facts API), which keep every grain's history and policies,
not by replacing graphs. So the suite's reads run as written (GET and HEAD of a
graph that exists and of one that does not), and its writes are not applicable:
each is checked to be refused with 405 and an ``Allow: GET, HEAD`` header, leaving
the store unchanged.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import httpx
import pyoxigraph as ox
import pytest

from oms_rdf import GrainStore
from tests.test_http_abuse import ADMIN, bearer, start, stop

PERSON = "http://example.org/person/1"
GRAPH = "http://example.org/person/1.ttl"
TURTLE = (
    "@prefix foaf: <http://xmlns.com/foaf/0.1/> .\n"
    "@prefix v: <http://www.w3.org/2006/vcard/ns#> .\n"
    f'<{PERSON}> a foaf:Person; foaf:businessCard [ a v:VCard; v:fn "John Doe" ] .\n'
)


@pytest.fixture(scope="module")
def graph_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("gsp") / "store"
    store = GrainStore(folder)
    quads = [
        ox.Quad(t.subject, t.predicate, t.object, ox.NamedNode(GRAPH))
        for t in ox.parse(TURTLE, format=ox.RdfFormat.TURTLE)
    ]
    out = io.BytesIO()
    ox.serialize(quads, out, ox.RdfFormat.N_QUADS)
    store.import_(io.BytesIO(out.getvalue()), format="nquads")
    store.close()
    served = start(folder)
    try:
        yield f"{served.base}/store"
    finally:
        stop(served)


def test_get_of_an_existing_graph(graph_store: str) -> None:
    r = httpx.get(
        graph_store,
        params={"graph": GRAPH},
        headers={**bearer(ADMIN), "accept": "text/turtle"},
    )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/turtle")
    got = {
        (t.subject, t.predicate, t.object)
        for t in ox.parse(r.content, format=ox.RdfFormat.TURTLE)
    }
    assert len(got) == 4
    names = [
        o for s, p, o in got if p == ox.NamedNode("http://www.w3.org/2006/vcard/ns#fn")
    ]
    assert names == [ox.Literal("John Doe")]


def test_head_on_an_existing_graph(graph_store: str) -> None:
    r = httpx.head(graph_store, params={"graph": GRAPH}, headers=bearer(ADMIN))
    assert r.status_code == 200
    assert r.content == b""


def test_head_on_a_nonexisting_graph(graph_store: str) -> None:
    r = httpx.head(
        graph_store, params={"graph": GRAPH + "-none"}, headers=bearer(ADMIN)
    )
    assert r.status_code == 404


def test_get_of_a_nonexisting_graph(graph_store: str) -> None:
    r = httpx.get(graph_store, params={"graph": GRAPH + "-none"}, headers=bearer(ADMIN))
    assert r.status_code == 404
    assert r.json()["code"].startswith("ERR_")


@pytest.mark.parametrize(
    ("method", "params"),
    [
        pytest.param(
            "PUT", {"graph": GRAPH}, id="put-initial-state-and-graph-already-in-store"
        ),
        pytest.param("PUT", {"default": ""}, id="put-default-graph"),
        pytest.param("DELETE", {"graph": GRAPH}, id="delete-existing-graph"),
        pytest.param(
            "DELETE", {"graph": GRAPH + "-none"}, id="delete-nonexistent-graph"
        ),
        pytest.param("POST", {"graph": GRAPH}, id="post-existing-graph"),
        pytest.param("POST", {}, id="post-create-new-graph"),
    ],
)
def test_graph_writes_are_not_applicable(
    graph_store: str, method: str, params: dict[str, str]
) -> None:
    before = httpx.get(
        graph_store,
        params={"graph": GRAPH},
        headers={**bearer(ADMIN), "accept": "application/n-triples"},
    )
    r = httpx.request(
        method,
        graph_store,
        params=params,
        headers={**bearer(ADMIN), "content-type": "text/turtle"},
        content=TURTLE.replace("John", "Jane").encode(),
    )
    assert r.status_code == 405
    assert {m.strip() for m in r.headers["allow"].split(",")} == {"GET", "HEAD"}
    after = httpx.get(
        graph_store,
        params={"graph": GRAPH},
        headers={**bearer(ADMIN), "accept": "application/n-triples"},
    )
    assert sorted(after.content.splitlines()) == sorted(before.content.splitlines())
