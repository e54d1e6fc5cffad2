"""The SPARQL endpoint on a real uvicorn server on loopback, asked by real clients."""

from __future__ import annotations

import io
import json
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf import GrainStore
from oms_rdf.http.app import create_app
from tests.helpers import free_port, running

DAY = 86_400_000
T0 = 1_700_000_000_000
EX = "http://example.org/"
WORKS = f"SELECT ?o WHERE {{ <{EX}ann> <{EX}worksAt> ?o }}"


def story() -> GrainStore:
    store = GrainStore(clock=lambda: T0 + 100 * DAY)
    old = store.put({"type": "belief", "subject": EX + "ann", "relation": EX + "worksAt",
                     "object": EX + "acme", "confidence": 0.9, "created_at": T0,
                     "valid_from": T0})  # fmt: skip
    store.supersede(old, {"type": "belief", "subject": EX + "ann", "relation": EX + "worksAt",
                          "object": EX + "initech", "confidence": 0.9,
                          "created_at": T0 + 50 * DAY, "valid_from": T0 + 40 * DAY})  # fmt: skip
    store.import_(io.BytesIO(b"""
        @prefix ex: <http://example.org/> .
        ex:ann ex:name "Ann"@en ; ex:knows [ ex:name "Bo" ] .
        ex:facts { ex:acme ex:partOf ex:globex . }
    """), format="trig")  # fmt: skip
    return store


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, GrainStore]]:
    store = story()
    with running(create_app(store, query_timeout=20)) as base:
        yield base, store


def objects(rows: object) -> list[str]:
    assert isinstance(rows, oms.Solutions)
    return sorted(r["o"].value for r in rows)


def test_select_in_every_format_and_method(served: tuple[str, GrainStore]) -> None:
    base, store = served
    expected = objects(store.query(WORKS))
    assert expected == [EX + "initech"]
    with httpx.Client(base_url=base) as client:
        got = client.get("/sparql", params={"query": WORKS})
        assert got.headers["content-type"].startswith("application/sparql-results+json")
        rows = got.json()["results"]["bindings"]
        assert sorted(r["o"]["value"] for r in rows) == expected
        form = client.post("/sparql", data={"query": WORKS})
        direct = client.post("/sparql", content=WORKS,
                             headers={"content-type": "application/sparql-query"})  # fmt: skip
        assert form.json() == direct.json() == got.json()
        xml = client.get("/sparql", params={"query": WORKS},
                         headers={"accept": "application/sparql-results+xml"})  # fmt: skip
        assert f"<uri>{EX}initech</uri>" in xml.text
        csv = client.get(
            "/sparql", params={"query": WORKS}, headers={"accept": "text/csv"}
        )
        assert csv.text.splitlines() == ["o", EX + "initech"]
        tsv = client.get("/sparql", params={"query": WORKS},
                         headers={"accept": "text/tab-separated-values"})  # fmt: skip
        assert tsv.text.splitlines() == ["?o", f"<{EX}initech>"]
        ask = client.get("/sparql", params={"query": "ASK { ?s ?p ?o }"})
        assert ask.json() == {"head": {}, "boolean": True}


def test_time_travel_parameters(served: tuple[str, GrainStore]) -> None:
    base, store = served
    with httpx.Client(base_url=base) as client:
        for point in ({"valid_at": "2023-11-20"}, {"valid_at": str(T0 + 45 * DAY),
                                                   "as_of": str(T0 + 45 * DAY)}):  # fmt: skip
            got = client.get("/sparql", params={"query": WORKS, **point}).json()
            expected = objects(store.query(WORKS, **point))  # type: ignore[arg-type]
            assert (
                sorted(r["o"]["value"] for r in got["results"]["bindings"]) == expected
            )
            assert expected == [EX + "acme"]
        bad = client.get("/sparql", params={"query": WORKS, "valid_at": "last year"})
        assert bad.status_code == 400 and "ISO 8601" in bad.text


def test_graphs_and_constructs(served: tuple[str, GrainStore]) -> None:
    base, _ = served
    with httpx.Client(base_url=base) as client:
        named = client.get("/sparql", params={
            "query": "SELECT ?g ?o WHERE { GRAPH ?g { ?s ?p ?o } }"}).json()  # fmt: skip
        assert [
            (r["g"]["value"], r["o"]["value"]) for r in named["results"]["bindings"]
        ] == [(EX + "facts", EX + "globex")]
        only = client.get("/sparql", params={
            "query": "SELECT ?o WHERE { ?s ?p ?o }", "default-graph-uri": EX + "facts"}).json()  # fmt: skip
        assert [r["o"]["value"] for r in only["results"]["bindings"]] == [EX + "globex"]
        reserved = client.get("/sparql", params={
            "query": "SELECT * WHERE { ?s ?p ?o }",
            "default-graph-uri": "https://w3id.org/oms-rdf/ns#index"})  # fmt: skip
        assert reserved.status_code == 400
        construct = f"CONSTRUCT WHERE {{ <{EX}ann> ?p ?o }}"
        for media, fmt in (("text/turtle", ox.RdfFormat.TURTLE),
                           ("application/n-triples", ox.RdfFormat.N_TRIPLES),
                           ("application/ld+json", ox.RdfFormat.JSON_LD)):  # fmt: skip
            got = client.get(
                "/sparql", params={"query": construct}, headers={"accept": media}
            )
            assert got.headers["content-type"].startswith(media)
            triples = list(ox.parse(got.content, format=fmt))
            assert len(triples) == 3  # worksAt initech, name, knows: not the old job
        refused = client.get("/sparql", params={"query": construct},
                             headers={"accept": "application/sparql-results+json"})  # fmt: skip
        assert refused.status_code == 406 and "text/turtle" in refused.text


def test_errors_follow_the_protocol(served: tuple[str, GrainStore]) -> None:
    base, store = served
    before = {str(q) for q in store.backend.quads()}
    with httpx.Client(base_url=base) as client:
        syntax = client.get("/sparql", params={"query": "SELECT ?s WHERE {\n ?s ?p }"})
        assert (
            syntax.status_code == 400
            and "ERR_QUERY" in syntax.text
            and "2:" in syntax.text
        )
        assert client.post("/sparql").status_code == 400  # GET: the description
        update = client.post(
            "/sparql", data={"update": f"INSERT DATA {{ <{EX}a> <{EX}b> <{EX}c> }}"}
        )
        assert update.status_code == 403
        raw = client.post("/sparql", content=f"DELETE DATA {{ <{EX}ann> <{EX}worksAt> <{EX}initech> }}",
                          headers={"content-type": "application/sparql-update"})  # fmt: skip
        assert raw.status_code == 403
    assert {str(q) for q in store.backend.quads()} == before


def test_graph_store_protocol_reads(served: tuple[str, GrainStore]) -> None:
    base, _ = served
    with httpx.Client(base_url=base) as client:
        default = client.get(
            "/store",
            params={"default": ""},
            headers={"accept": "application/n-triples"},
        )
        triples = {
            (q.subject.value, q.predicate.value, q.object.value)
            for q in ox.parse(default.content, format=ox.RdfFormat.N_TRIPLES)
        }
        assert (EX + "ann", EX + "worksAt", EX + "initech") in triples
        assert (EX + "ann", EX + "worksAt", EX + "acme") not in triples  # superseded
        then = client.get("/store", params={"default": "", "valid_at": "2023-11-20"},
                          headers={"accept": "application/n-triples"})  # fmt: skip
        assert f"<{EX}acme>" in then.text and f"<{EX}initech>" not in then.text
        named = client.get("/store", params={"graph": EX + "facts"})
        assert named.headers["content-type"].startswith("text/turtle")
        assert len(list(ox.parse(named.content, format=ox.RdfFormat.TURTLE))) == 1
        assert client.get("/store", params={"graph": EX + "nothing"}).status_code == 404
        assert client.get("/store").status_code == 400
        assert client.get("/store", params={"default": ""},
                          headers={"accept": "image/png"}).status_code == 406  # fmt: skip
        page = client.get("/")
        assert page.status_code == 200 and 'id="query"' in page.text


def test_sparqlwrapper_and_rdflib_get_the_same_answers(
    served: tuple[str, GrainStore],
) -> None:
    from rdflib import Graph
    from rdflib.plugins.stores.sparqlstore import SPARQLStore
    from SPARQLWrapper import JSON, SPARQLWrapper

    base, store = served
    client = SPARQLWrapper(f"{base}/sparql")
    client.setQuery(WORKS)
    client.setReturnFormat(JSON)
    got = client.queryAndConvert()
    assert isinstance(got, dict)
    assert sorted(b["o"]["value"] for b in got["results"]["bindings"]) == objects(
        store.query(WORKS)
    )
    client.addParameter("valid_at", "2023-11-20")
    then = client.queryAndConvert()
    assert isinstance(then, dict)
    assert [b["o"]["value"] for b in then["results"]["bindings"]] == [EX + "acme"]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        graph = Graph(store=SPARQLStore(f"{base}/sparql"))
        rows = list(
            graph.query("SELECT ?name WHERE { ?x <http://example.org/name> ?name }")
        )
    assert sorted(str(r[0]) for r in rows) == ["Ann", "Bo"]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        # Time travel: the endpoint URL carries the point, the form carries the query.
        past = SPARQLStore(f"{base}/sparql?valid_at=2023-11-20", method="POST_FORM")
        rows = list(Graph(store=past).query(WORKS))
    assert [str(r[0]) for r in rows] == objects(
        store.query(WORKS, valid_at="2023-11-20")
    )
    stored = store.query("SELECT ?name WHERE { ?x <http://example.org/name> ?name }")
    assert isinstance(stored, oms.Solutions)
    assert sorted(r["name"].value for r in stored) == ["Ann", "Bo"]


def test_serve_command_answers_and_stops_cleanly_on_sigterm(tmp_path: object) -> None:
    import signal
    import subprocess
    import sys
    from pathlib import Path

    path = Path(str(tmp_path)) / "db"
    store = GrainStore(path)
    store.put(oms.Belief(EX + "ann", EX + "worksAt", EX + "acme", 0.9, created_at=T0))
    store.flush()
    del store
    import gc

    gc.collect()
    port = free_port()
    command = [sys.executable, "-m", "oms_rdf", "serve", "--store", str(path),
               "--port", str(port)]  # fmt: skip
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as server:
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    got = httpx.get(
                        f"http://127.0.0.1:{port}/sparql", params={"query": WORKS}
                    )
                    break
                except httpx.TransportError:
                    assert server.poll() is None, (
                        server.stderr.read() if server.stderr else ""
                    )
                    assert time.monotonic() < deadline, "the server did not start"
                    time.sleep(0.1)
            assert [b["o"]["value"] for b in got.json()["results"]["bindings"]] == [
                EX + "acme"
            ]
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=20) == 0
        finally:
            if server.poll() is None:
                server.kill()
    again = GrainStore(path)  # the lock was released: the store was closed
    assert [g["object"] for g in again.beliefs(EX + "ann")] == [EX + "acme"]


READER, WRITER, ADMIN, ERASER = (
    "crm-reader-0000000001",
    "crm-writer-0000000001",
    "admin-000000000000001",
    "crm-eraser-0000000001",
)


@pytest.fixture
def guarded() -> Iterator[tuple[str, GrainStore]]:
    from oms_rdf.http.app import Token

    store = GrainStore(clock=lambda: T0 + DAY)
    store.put(oms.Belief(EX + "ann", EX + "worksAt", EX + "acme", 0.9, created_at=T0,
                         namespace="crm"))  # fmt: skip
    store.put(oms.Belief(EX + "ann", EX + "salary", "90000", 0.9, created_at=T0,
                         namespace="hr", context={"rdf:graph": EX + "payroll"}))  # fmt: skip
    store.put(oms.Belief(EX + "ann", EX + "role", "admin", 1.0, created_at=T0,
                         namespace="crm", invalidation_policy={"mode": "locked"}))  # fmt: skip
    tokens = {
        READER: Token(namespaces=("crm",)),
        WRITER: Token(namespaces=("crm",), write=True),
        ADMIN: Token(namespaces=None, write=True),
        ERASER: Token(namespaces=("crm",), write=True, erase=True),
    }
    with running(create_app(store, tokens=tokens)) as base:
        yield base, store


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_every_route_needs_a_known_token(guarded: tuple[str, GrainStore]) -> None:
    base, _ = guarded
    with httpx.Client(base_url=base) as client:
        for route, params in (
            ("/sparql", {"query": "ASK {}"}),
            ("/store", {"default": ""}),
        ):
            assert client.get(route, params=params).status_code == 401
            assert (
                client.get(route, params=params, headers=bearer("x" * 21)).status_code
                == 401
            )
            assert (
                client.get(route, params=params, headers=bearer(READER)).status_code
                == 200
            )


def test_a_namespace_token_sees_only_its_namespace(
    guarded: tuple[str, GrainStore],
) -> None:
    base, store = guarded
    everything = "SELECT ?p ?o WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"
    with httpx.Client(base_url=base) as client:

        def ask(query: str, token: str) -> list[str]:
            got = client.get(
                "/sparql", params={"query": query}, headers=bearer(token)
            ).json()
            return sorted(b["p"]["value"] for b in got["results"]["bindings"])

        assert ask(everything, READER) == [EX + "role", EX + "worksAt"]
        assert ask(everything, ADMIN) == [EX + "role", EX + "salary", EX + "worksAt"]
        graphs = "SELECT ?p WHERE { GRAPH ?g { ?s ?p ?o } }"
        assert ask(graphs, READER) == [] and ask(graphs, ADMIN) == [EX + "salary"]
        described = client.get("/sparql", params={"query": f"DESCRIBE <{EX}ann>"},
                               headers={**bearer(READER), "accept": "application/n-triples"})  # fmt: skip
        assert "salary" not in described.text and "worksAt" in described.text
        named = client.get("/sparql", params={"query": "SELECT * WHERE { ?s ?p ?o }",
                                              "named-graph-uri": EX + "payroll"},
                           headers=bearer(READER))  # fmt: skip
        assert named.status_code == 200 and "salary" not in named.text
        hidden = client.get(
            "/store", params={"graph": EX + "payroll"}, headers=bearer(READER)
        )
        assert hidden.status_code == 404
        shown = client.get(
            "/store", params={"graph": EX + "payroll"}, headers=bearer(ADMIN)
        )
        assert shown.status_code == 200 and "90000" in shown.text
    assert len(store.beliefs(EX + "ann")) == 3


def test_updates_need_a_write_token_for_their_namespace(
    guarded: tuple[str, GrainStore],
) -> None:
    base, store = guarded
    insert = f"INSERT DATA {{ <{EX}bo> <{EX}worksAt> <{EX}acme> }}"
    with httpx.Client(base_url=base) as client:
        assert (
            client.post(
                "/sparql", data={"update": insert}, headers=bearer(READER)
            ).status_code
            == 403
        )
        other = client.post("/sparql", params={"namespace": "hr"}, data={"update": insert},
                            headers=bearer(WRITER))  # fmt: skip
        assert other.status_code == 403
        done = client.post("/sparql", content=insert, headers={
            **bearer(WRITER), "content-type": "application/sparql-update"})  # fmt: skip
        assert done.status_code == 200 and done.json()["added"] == 1
        (bo,) = store.beliefs(EX + "bo")
        assert bo.get("namespace") == "crm"
        # A writer of crm cannot retract what hr believes: nothing of hr is its to see.
        salary = f'DELETE DATA {{ GRAPH <{EX}payroll> {{ <{EX}ann> <{EX}salary> "90000" }} }}'
        untouched = client.post(
            "/sparql", data={"update": salary}, headers=bearer(WRITER)
        )
        assert untouched.json() == {
            "added": 0,
            "believed": 0,
            "retracted": [],
            "not_believed": 1,
            "superseded": [],
        }
        assert len(store.beliefs(EX + "ann", namespace="hr")) == 1
        before = {str(q) for q in store.backend.quads()}
        locked = f'DELETE DATA {{ <{EX}ann> <{EX}role> "admin" }}'
        refused = client.post("/sparql", data={"update": locked}, headers=bearer(ADMIN))
        assert refused.status_code == 403 and "ERR_INVALIDATION_DENIED" in refused.text
        other_form = client.post(
            "/sparql", data={"update": "CLEAR ALL"}, headers=bearer(ADMIN)
        )
        assert other_form.status_code == 400 and "refused" in other_form.text
        assert {str(q) for q in store.backend.quads()} == before
        gone = client.post("/sparql", data={"update": f"DELETE DATA {{ <{EX}bo> <{EX}worksAt> <{EX}acme> }}"},
                           headers=bearer(WRITER))  # fmt: skip
        assert gone.json()["retracted"] == [bo.address]
        assert store.status(bo).status == "retracted"


def test_facts_api_round(guarded: tuple[str, GrainStore]) -> None:
    base, _ = guarded
    belief = {"type": "belief", "subject": "rate limiter", "relation": "uses",
              "object": "leaky bucket", "confidence": 0.7, "created_at": T0 + 1000,
              "namespace": "crm", "source_type": "llm_generated"}  # fmt: skip
    with httpx.Client(base_url=base, headers=bearer(WRITER)) as client:
        made = client.post("/v1/facts", json=belief)
        assert made.status_code == 201, made.text
        fact = made.json()
        assert fact["status"] == "active" and fact["fields"]["object"] == "leaky bucket"
        assert fact["valid_from"] == "2023-11-14T22:13:21.000Z"
        got = client.get(f"/v1/facts/{fact['id'][:8]}").json()
        assert got["id"] == fact["id"]
        raw = client.get(
            f"/v1/facts/{fact['id']}", headers={"accept": "application/vnd.oms.grain"}
        )
        assert oms.content_address(raw.content) == fact["id"]
        listed = client.get(
            "/v1/facts", params={"subject": "rate limiter", "namespace": "crm"}
        ).json()
        assert [f["id"] for f in listed["facts"]] == [fact["id"]]
        found = client.get("/v1/facts/search", params={"q": "limiter bucket"}).json()
        assert [f["id"] for f in found["facts"]] == [fact["id"]]
        newer = {**belief, "object": "token bucket", "created_at": T0 + 2000}
        put = client.put(f"/v1/facts/{fact['id']}", json=newer)
        assert (
            put.status_code == 200 and put.json()["fields"]["object"] == "token bucket"
        )
        new_id = put.json()["id"]
        assert client.get(f"/v1/facts/{fact['id']}").json()["superseded_by"] == new_id
        ancestors = client.get(f"/v1/facts/{new_id}/ancestors").json()
        assert [f["id"] for f in ancestors["facts"]] == [fact["id"]]
        assert (
            client.get("/v1/facts/search", params={"q": "leaky"}).json()["facts"] == []
        )
        # As of before the supersession, the old wording is what was believed.
        then = {"q": "leaky", "valid_at": T0 + 1500, "as_of": T0 + 1500}
        found = client.get("/v1/facts/search", params=then).json()["facts"]
        assert [f["id"] for f in found] == [fact["id"]]
        bad = client.get("/v1/facts/search", params={"q": "leaky", "as_of": "soon"})
        assert bad.status_code == 422 and "as_of" in bad.json()["message"]
        evidence = client.post(f"/v1/facts/{new_id}/evidence",
                               json={"kind": "supporting", "strength": 0.9}).json()  # fmt: skip
        assert evidence["status"] == "accumulating" and evidence["log_ratio"] > 0
        weaker = {**newer, "object": "fixed window", "created_at": T0 + 3000,
                  "source_type": "llm_generated"}  # fmt: skip
        revised = client.post(f"/v1/facts/{new_id}/revise", json={"fields": weaker})
        assert revised.status_code == 200  # same tier: allowed
        latest = revised.json()["id"]
        assert (
            client.delete(f"/v1/facts/{latest}").status_code == 422
        )  # a reason is needed
        gone = client.delete(f"/v1/facts/{latest}", params={"reason": "wrong"})
        assert gone.status_code == 200 and gone.json()["status"] == "retracted"
        retracted = client.get("/v1/facts", params={"status": "retracted"}).json()
        assert latest in [f["id"] for f in retracted["facts"]]


def test_facts_api_errors_and_scopes(guarded: tuple[str, GrainStore]) -> None:
    base, store = guarded
    (salary,) = store.beliefs(EX + "ann", namespace="hr")
    (locked,) = [
        g
        for g in store.beliefs(EX + "ann", namespace="crm")
        if g["relation"] == EX + "role"
    ]
    with httpx.Client(base_url=base) as client:
        assert client.get("/v1/facts").status_code == 401
        hidden = client.get(f"/v1/facts/{salary.address}", headers=bearer(READER))
        assert hidden.status_code == 404 and hidden.json()["code"] == "ERR_NOT_FOUND"
        assert (
            client.get(f"/v1/facts/{salary.address}", headers=bearer(ADMIN)).status_code
            == 200
        )
        listed = client.get("/v1/facts", headers=bearer(READER)).json()
        assert salary.address not in [f["id"] for f in listed["facts"]]
        assert client.get("/v1/facts/zz", headers=bearer(READER)).status_code == 422
        assert (
            client.get("/v1/facts/" + "0" * 64, headers=bearer(READER)).status_code
            == 404
        )
        post = client.post("/v1/facts", headers=bearer(READER), json={"type": "belief"})
        assert post.status_code == 403
        bad = client.post(
            "/v1/facts",
            headers=bearer(WRITER),
            json={"type": "belief", "subject": "x", "namespace": "crm"},
        )
        assert bad.status_code == 422 and bad.json()["code"] == "ERR_SCHEMA"
        refused = client.delete(f"/v1/facts/{locked.address}", params={"reason": "x"},
                                headers=bearer(WRITER))  # fmt: skip
        assert (
            refused.status_code == 409
            and refused.json()["code"] == "ERR_INVALIDATION_DENIED"
        )
        spec = client.get("/openapi.json").json()
        assert spec["openapi"].startswith("3.") and "/v1/facts/{id}" in spec["paths"]
        # Every point in time a route takes is written down (search's were not).
        for path in ("/v1/facts", "/v1/facts/search"):
            named = {p["name"] for p in spec["paths"][path]["get"]["parameters"]}
            assert {"valid_at", "as_of"} <= named, path


@pytest.mark.servers("chromium")
def test_the_page_runs_a_query_in_headless_chromium(
    served: tuple[str, GrainStore], tmp_path: object
) -> None:
    import shutil
    import subprocess
    from urllib.parse import urlencode

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser is not None, "Debian's chromium is needed; .ci/run installs it"
    base, _ = served
    link = f"{base}/?" + urlencode({"query": WORKS, "valid_at": "2023-11-20"})
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path}", "--virtual-time-budget=15000", "--dump-dom"]  # fmt: skip
    page = subprocess.run(
        [browser, *flags, link], capture_output=True, text=True, timeout=90
    )
    assert "1 rows" in page.stdout, page.stderr[-2000:]
    assert f'title="{EX}acme"' in page.stdout  # the answer of that point, in the DOM


# The default tier tries each operation a few times; the soak tier many more.
@pytest.mark.parametrize("examples", [8, pytest.param(60, marks=pytest.mark.soak)])
def test_schemathesis_finds_no_server_error(
    guarded: tuple[str, GrainStore], tmp_path: object, examples: int
) -> None:
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    base, _ = guarded
    st = shutil.which("st", path=str(Path(sys.executable).parent))
    assert st is not None, "schemathesis is installed by the [test] extra"
    result = subprocess.run(
        [st, "run", f"{base}/openapi.json", "--checks", "not_a_server_error",
         "--max-examples", str(examples), "--header", f"Authorization: Bearer {ADMIN}",
         "--phases", "examples,fuzzing", "--no-color", "--seed", "20261201"],
        capture_output=True, text=True, timeout=600, cwd=str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:]


@pytest.mark.parametrize(
    ("method", "route", "body"),
    [
        ("GET", "/v1/facts/{id}", None),
        ("PUT", "/v1/facts/{id}", {"type": "belief", "subject": "s", "relation": "r",
                                   "object": "o", "confidence": 0.5, "created_at": T0 + 5}),
        ("DELETE", "/v1/facts/{id}?reason=x", None),
        ("GET", "/v1/facts/{id}/ancestors", None),
        ("POST", "/v1/facts/{id}/evidence", {"kind": "supporting", "strength": 0.9}),
        ("POST", "/v1/facts/{id}/revise", {"fields": {"type": "belief", "subject": "s",
                                                      "relation": "r", "object": "o",
                                                      "confidence": 0.5, "created_at": T0 + 5}}),
    ],
)  # fmt: skip
def test_no_fact_route_reaches_another_namespace(
    guarded: tuple[str, GrainStore], method: str, route: str, body: object
) -> None:
    base, store = guarded
    (salary,) = store.beliefs(EX + "ann", namespace="hr")
    before = {str(q) for q in store.backend.quads()}
    with httpx.Client(base_url=base) as client:
        for token in (READER, WRITER):
            got = client.request(method, route.format(id=salary.address), json=body,
                                 headers=bearer(token))  # fmt: skip
            assert got.status_code in (403, 404), (token, got.status_code, got.text)
        found = client.get(
            "/v1/facts/search", params={"q": "salary"}, headers=bearer(WRITER)
        )
        assert found.json()["facts"] == []
    assert {str(q) for q in store.backend.quads()} == before


def test_rdflib_sparql_update_store_adds_and_removes(
    guarded: tuple[str, GrainStore],
) -> None:
    from rdflib import Graph, Literal, URIRef
    from rdflib.graph import DATASET_DEFAULT_GRAPH_ID
    from rdflib.plugins.stores.sparqlstore import SPARQLUpdateStore

    base, store = guarded
    remote = SPARQLUpdateStore(f"{base}/sparql", f"{base}/sparql",
                               headers={"Authorization": f"Bearer {WRITER}"})  # fmt: skip
    graph = Graph(store=remote, identifier=DATASET_DEFAULT_GRAPH_ID)
    triple = (URIRef(EX + "zed"), URIRef(EX + "likes"), Literal("tea"))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        graph.add(triple)
        (zed,) = store.beliefs(EX + "zed")
        assert zed.get("namespace") == "crm" and zed["object"] == "tea"
        assert graph.query(f'ASK {{ <{EX}zed> <{EX}likes> "tea" }}').askAnswer is True
        graph.remove(triple)
    assert store.status(zed).status == "retracted"
    assert store.beliefs(EX + "zed") == []


def test_a_query_over_the_time_limit_is_a_503() -> None:
    store = GrainStore(clock=lambda: T0)
    store.put_many(oms.Belief(EX + f"n{i}", EX + "next", EX + f"n{i + 1}", 0.5, created_at=T0)
                   for i in range(400))  # fmt: skip
    heavy = (f"SELECT (COUNT(*) AS ?n) WHERE {{ ?a <{EX}next>* ?b . ?b <{EX}next>* ?c . "
             f"?c <{EX}next>* ?d }}")  # fmt: skip
    with running(create_app(store, query_timeout=0.2)) as base:
        got = httpx.get(f"{base}/sparql", params={"query": heavy}, timeout=60)
        assert got.status_code == 503 and "limit" in got.text
        assert (
            httpx.get(f"{base}/sparql", params={"query": "ASK {}"}).status_code == 200
        )
        docs = httpx.get(f"{base}/docs")
        assert docs.status_code == 200 and "/v1/facts/{id}/evidence" in docs.text


def test_federated_queries_are_refused(served: tuple[str, GrainStore]) -> None:
    base, store = served
    federated = "SELECT * WHERE { SERVICE <http://127.0.0.1:1/sparql> { ?s ?p ?o } }"
    got = httpx.get(f"{base}/sparql", params={"query": federated})
    assert got.status_code == 400 and "SERVICE" in got.text
    # In the library the failure is ours too, when the results are read.
    with pytest.raises(oms.OmsError):
        list(store.query(federated))  # type: ignore[arg-type]


def test_token_files(tmp_path: object) -> None:
    from pathlib import Path

    from oms_rdf.http.app import Token, load_tokens

    path = Path(str(tmp_path)) / "tokens.json"
    path.write_text(json.dumps({READER: {"namespaces": ["crm"]},
                                ADMIN: {"namespaces": "*", "write": True}}))  # fmt: skip
    assert load_tokens(path) == {
        READER: Token(namespaces=("crm",)),
        ADMIN: Token(namespaces=None, write=True),
    }
    for bad in ({"short": {"namespaces": "*"}}, {READER: {"namespaces": []}},
                {READER: {"namespaces": ["crm"], "write": "yes"}}, ["not", "a", "map"]):  # fmt: skip
        path.write_text(json.dumps(bad))
        with pytest.raises(oms.SchemaError):
            load_tokens(path)


def test_erasure_needs_the_erase_scope(guarded: tuple[str, GrainStore]) -> None:
    base, store = guarded
    (works,) = [
        g
        for g in store.beliefs(EX + "ann", namespace="crm")
        if g["relation"] == EX + "worksAt"
    ]
    (salary,) = store.beliefs(EX + "ann", namespace="hr")
    body = {"reason": "GDPR Art. 17 request", "by": "did:web:dpo"}
    with httpx.Client(base_url=base) as client:
        for token in (WRITER, ADMIN):  # writing is not erasing
            refused = client.post(
                f"/v1/facts/{works.address}/erase", json=body, headers=bearer(token)
            )
            assert (
                refused.status_code == 403
                and "erase scope" in refused.json()["message"]
            )
        assert works.address in store
        hidden = client.post(
            f"/v1/facts/{salary.address}/erase", json=body, headers=bearer(ERASER)
        )
        assert (
            hidden.status_code == 404 and salary.address in store
        )  # not its namespace
        done = client.post(
            f"/v1/facts/{works.address}/erase", json=body, headers=bearer(ERASER)
        )
        assert done.status_code == 200 and done.json()["erased"] == [works.address]
        assert not done.json()["complete"] and "vacuum" in done.json()["remaining"][0]
        assert works.address not in store
        everywhere = client.post("/v1/erasures", json={"subject": EX + "ann", **body},
                                 headers=bearer(ERASER))  # fmt: skip
        assert everywhere.status_code == 403  # a crm token must name its namespace
        held = client.post("/v1/erasures", json={"subject": EX + "ann", "namespace": "crm", **body},
                           headers=bearer(ERASER))  # fmt: skip
        assert (
            held.status_code == 200
            and held.json()["erased"]
            and salary.address in store
        )


def test_cross_origin_pages_are_let_in_only_when_named() -> None:
    store = story()
    origin = {"origin": "https://app.example"}
    with running(create_app(store)) as base:
        got = httpx.get(f"{base}/sparql", params={"query": "ASK {}"}, headers=origin)
        assert got.status_code == 200
        assert "access-control-allow-origin" not in got.headers
    with running(create_app(store, cors=["https://app.example"])) as base:
        got = httpx.get(f"{base}/sparql", params={"query": "ASK {}"}, headers=origin)
        assert got.headers["access-control-allow-origin"] == "https://app.example"
        other = httpx.get(f"{base}/sparql", params={"query": "ASK {}"},
                          headers={"origin": "https://evil.example"})  # fmt: skip
        assert "access-control-allow-origin" not in other.headers
        preflight = httpx.options(f"{base}/v1/facts", headers={
            **origin, "access-control-request-method": "POST",
            "access-control-request-headers": "authorization"})  # fmt: skip
        assert preflight.status_code == 200
        assert "authorization" in preflight.headers["access-control-allow-headers"]


# --- the parts of the server, one by one -------------------------------------------


def test_a_token_file_that_cannot_be_read_is_err_schema(tmp_path: Path) -> None:
    from oms_rdf.errors import NotFoundError, SchemaError
    from oms_rdf.http.auth import load_tokens

    with pytest.raises(NotFoundError, match="no token file"):
        load_tokens(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_bytes(b"\xff")
    with pytest.raises(SchemaError, match="cannot read the token file"):
        load_tokens(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(
        SchemaError, match="expected a JSON object of one token or more"
    ):
        load_tokens(tmp_path / "list.json")


def test_a_body_of_several_grains_or_a_cursor_of_wrong_types_is_refused() -> None:
    import base64

    from oms_rdf.errors import SchemaError
    from oms_rdf.http.bodies import grain_body
    from oms_rdf.http.listing import Listing

    with pytest.raises(SchemaError, match="one grain"):
        grain_body("application/json", b"[1, 2]")
    forged = base64.urlsafe_b64encode(json.dumps({
        "subject": 5, "relation": None, "namespace": None, "status": None,
        "valid_at": None, "as_of": None, "offset": 0}).encode()).decode()  # fmt: skip
    with pytest.raises(SchemaError, match="next_cursor"):
        Listing.read(forged)


def test_an_accept_quality_that_is_no_number_accepts_nothing() -> None:
    from oms_rdf.http.results import negotiate

    assert negotiate("text/csv;q=high", ("text/csv",)) is None
    assert negotiate("text/csv;q=0.1, */*;q=0", ("text/csv",)) == "text/csv"


def test_a_closed_lane_cancels_the_jobs_still_queued() -> None:
    from oms_rdf.http.lanes import Lane

    lane = Lane("test", workers=1, backlog=4)
    release = threading.Event()
    running, _ = lane.submit(lambda job: release.wait(10))
    time.sleep(0.05)
    _, queued = lane.submit(lambda job: "never")
    threading.Timer(0.1, release.set).start()
    assert lane.close(grace=5.0)
    assert queued.cancelled() and running.cancelled
