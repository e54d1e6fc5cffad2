"""``GET /sparql`` with no query: the SPARQL 1.1 Service Description of the endpoint,
with VoID statistics of the knowledge, read with rdflib and checked against the
store's own contents."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pandas as pd
import pyoxigraph as ox
import pytest
import rdflib
from rdflib import RDF, RDFS, Literal, Namespace, URIRef

import oms_rdf as oms
from oms_rdf import GrainStore
from oms_rdf.http.app import Token, create_app
from oms_rdf.http.results import RESULT_TYPES
from tests.test_server import running

SD = Namespace("http://www.w3.org/ns/sparql-service-description#")
VOID = Namespace("http://rdfs.org/ns/void#")
DCT = Namespace("http://purl.org/dc/terms/")
DCAT = Namespace("http://www.w3.org/ns/dcat#")
OMS = Namespace("https://w3id.org/oms-rdf/ns#")
FORMATS = Namespace("http://www.w3.org/ns/formats/")
EX = "http://example.org/"
T0 = 1_700_000_000_000
DAY = 86_400_000
A_READER = "a-reader-000000000001"
ADMIN = "the-admin-00000000001"

# The W3C name of each media type the endpoint answers in.
FORMAT_OF = {
    "application/sparql-results+json": FORMATS.SPARQL_Results_JSON,
    "application/sparql-results+xml": FORMATS.SPARQL_Results_XML,
    "text/csv": FORMATS.SPARQL_Results_CSV,
    "text/tab-separated-values": FORMATS.SPARQL_Results_TSV,
    "text/turtle": FORMATS.Turtle,
    "application/n-triples": FORMATS["N-Triples"],
    "application/ld+json": FORMATS["JSON-LD"],
    "application/rdf+xml": FORMATS.RDF_XML,
}


def fact(
    subject: str, relation: str, obj: str, at: int, ns: str, **more: Any
) -> oms.Grain:
    relation = relation if ":" in relation else EX + relation
    return oms.Belief(EX + subject, relation, EX + obj, 0.8, created_at=at,
                      valid_from=at - 10 * DAY, namespace=ns, **more)  # fmt: skip


@pytest.fixture
def served() -> Iterator[tuple[str, GrainStore]]:
    now = [T0 + 30 * DAY]
    store = GrainStore(clock=lambda: now[0])
    store.put_many([
        fact("ann", "knows", "bob", T0, "a"),
        fact("bob", "knows", "cy", T0 + DAY, "a"),
        fact("cy", "worksAt", "acme", T0 + 2 * DAY, "b"),
    ])  # fmt: skip
    store.put(fact("ann", str(RDF.type), "Person", T0 + 3 * DAY, "a"))
    old = store.put(fact("dee", "worksAt", "acme", T0 + 4 * DAY, "b"))
    store.supersede(old, fact("dee", "worksAt", "initech", T0 + 5 * DAY, "b"))
    store.put(fact("eve", "knows", "ann", T0 + 6 * DAY, "a", valid_to=T0 + 7 * DAY))
    trig = (
        f'<{EX}g1> {{ <{EX}x> a <{EX}Thing> ; <{EX}label> "x" . }}\n'
        f'<{EX}g2> {{ <{EX}y> <{EX}label> "y" . }}\n'
    )
    store.import_(io.BytesIO(trig.encode()), format="trig")
    tokens = {A_READER: Token(namespaces=("a",)), ADMIN: Token(namespaces=None)}
    with running(create_app(store, tokens=tokens)) as base:
        yield base, store


def auth(token: str = ADMIN) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def described(base: str, accept: str = "text/turtle", **params: Any) -> rdflib.Graph:
    got = httpx.get(
        f"{base}/sparql", params=params, headers={"accept": accept, **auth()}
    )
    assert got.status_code == 200, got.text
    media = got.headers["content-type"].split(";")[0]
    assert media == accept
    fmt = {"text/turtle": "turtle", "application/n-triples": "nt",
           "application/ld+json": "json-ld", "application/rdf+xml": "xml"}[media]  # fmt: skip
    return rdflib.Graph().parse(data=got.content, format=fmt)


def the(graph: rdflib.Graph, subject: Any, predicate: URIRef) -> Any:
    values = list(graph.objects(subject, predicate))
    assert len(values) == 1, (subject, predicate, values)
    return values[0]


def statistics(quads: list[ox.Quad]) -> dict[URIRef, int]:
    """The VoID figures of some quads, counted here in Python."""
    rdf_type = ox.NamedNode(str(RDF.type))
    return {
        VOID.triples: len(quads),
        VOID.distinctSubjects: len({q.subject for q in quads}),
        VOID.distinctObjects: len({q.object for q in quads}),
        VOID.properties: len({q.predicate for q in quads}),
        VOID.classes: len({q.object for q in quads if q.predicate == rdf_type}),
    }


def figures(graph: rdflib.Graph, node: Any) -> dict[URIRef, int]:
    return {p: int(the(graph, node, p)) for p in statistics([])}


def test_the_endpoint_describes_itself(served: tuple[str, GrainStore]) -> None:
    base, store = served
    g = described(base)
    service = next(g.subjects(RDF.type, SD.Service))
    assert the(g, service, SD.endpoint) == URIRef(f"{base}/sparql")
    assert set(g.objects(service, SD.supportedLanguage)) == {
        SD.SPARQL11Query,
        SD.SPARQL11Update,
    }
    offered = {FORMAT_OF[m] for kind in RESULT_TYPES.values() for m in kind}
    assert set(g.objects(service, SD.resultFormat)) == offered
    # Only what is true: the default graph is not the union of the named graphs,
    # and SERVICE is refused.
    features = set(g.objects(service, SD.feature))
    assert SD.UnionDefaultGraph not in features
    assert SD.BasicFederatedQuery not in features
    seen = store.query(f"ASK {{ <{EX}y> <{EX}label> ?v }}")
    assert seen is False  # a named graph's triple is not in the default graph
    refused = httpx.get(f"{base}/sparql", headers=auth(), params={
        "query": f"SELECT * {{ SERVICE <{EX}sparql> {{ ?s ?p ?o }} }}"})  # fmt: skip
    assert refused.status_code == 400
    assert "base IRI" in str(the(g, service, DCT.description))
    # The time-travel parameters, as an extension.
    names = {
        str(the(g, p, OMS.parameterName))
        for p in g.objects(service, OMS.timeTravelParameter)
    }
    assert names == {"valid_at", "as_of", "valid_during", "system_during"}
    for p in g.objects(service, OMS.timeTravelParameter):
        assert (p, RDF.type, OMS.TimeTravelParameter) in g
        assert isinstance(the(g, p, RDFS.comment), Literal)


def test_the_dataset_and_its_statistics_are_the_stores(
    served: tuple[str, GrainStore],
) -> None:
    base, store = served
    g = described(base)
    service = next(g.subjects(RDF.type, SD.Service))
    dataset = the(g, service, SD.defaultDataset)
    assert (dataset, RDF.type, SD.Dataset) in g
    assert (dataset, RDF.type, VOID.Dataset) in g
    assert the(g, dataset, VOID.sparqlEndpoint) == URIRef(f"{base}/sparql")
    knowledge = list(store.snapshot())
    assert figures(g, dataset) == statistics(knowledge)
    default = the(g, dataset, SD.defaultGraph)
    plain = [q for q in knowledge if q.graph_name == ox.DefaultGraph()]
    assert figures(g, default) == statistics(plain)
    named = {
        str(the(g, n, SD.name)): the(g, n, SD.graph)
        for n in g.objects(dataset, SD.namedGraph)
    }
    assert set(named) == {EX + "g1", EX + "g2"}
    for name, node in named.items():
        held = [q for q in knowledge if q.graph_name == ox.NamedNode(name)]
        assert figures(g, node) == statistics(held)


def test_the_time_span_of_the_history(served: tuple[str, GrainStore]) -> None:
    base, store = served
    g = described(base)
    dataset = the(g, next(g.subjects(RDF.type, SD.Service)), SD.defaultDataset)
    frames = [store.beliefs_by_status(s).frame() for s in
              ("active", "superseded", "retracted")]  # fmt: skip
    every = pd.concat([f for f in frames if len(f)], ignore_index=True)
    system = the(g, dataset, OMS.systemTimeSpan)
    assert (system, RDF.type, DCT.PeriodOfTime) in g
    starts = every["system_from"]
    ends = pd.concat([every["system_from"], every["system_to"]]).dropna()
    assert the(g, system, DCAT.startDate).toPython() == starts.min().to_pydatetime()
    assert the(g, system, DCAT.endDate).toPython() == ends.max().to_pydatetime()
    valid = the(g, dataset, DCT.temporal)
    # A grain naming no valid_from is valid from its system time.
    began = every["valid_from"].fillna(every["system_from"])
    bounds = pd.concat([began, every["valid_to"]]).dropna()
    assert the(g, valid, DCAT.startDate).toPython() == bounds.min().to_pydatetime()
    assert the(g, valid, DCAT.endDate).toPython() == bounds.max().to_pydatetime()
    assert the(g, valid, DCAT.startDate).toPython() == datetime.fromtimestamp(
        (T0 - 10 * DAY) / 1000, UTC
    )  # ann's valid_from, the earliest bound any belief names


# rdflib's JSON-LD parser still makes a ConjunctiveGraph, which rdflib 7 deprecates.
@pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning")
@pytest.mark.parametrize(
    "accept", ["application/n-triples", "application/ld+json", "application/rdf+xml"]
)
def test_other_rdf_formats(served: tuple[str, GrainStore], accept: str) -> None:
    base, _ = served
    g = described(base, accept)
    service = next(g.subjects(RDF.type, SD.Service))
    assert the(g, service, SD.endpoint) == URIRef(f"{base}/sparql")


def test_an_unacceptable_type_is_a_406(served: tuple[str, GrainStore]) -> None:
    base, _ = served
    got = httpx.get(f"{base}/sparql", headers={"accept": "image/png", **auth()})
    assert got.status_code == 406 and got.json()["code"] == "ERR_QUERY"


def test_a_time_that_is_not_one_is_told_before_the_accept_header(
    served: tuple[str, GrainStore],
) -> None:
    """SPARQLWrapper appends ``?query=`` to an endpoint URL that already holds
    ``?valid_at=``: the time read is not one, and there is no query. A 406 for
    its JSON Accept said nothing of that."""
    base, _ = served
    got = httpx.get(
        f"{base}/sparql?valid_at=2024?query=ASK%20%7B%7D",
        headers={"accept": "application/sparql-results+json", **auth()},
    )
    assert got.status_code == 400, got.text
    assert got.json()["message"].startswith("valid_at: expected ISO 8601")


def test_the_statistics_at_a_point_and_in_a_tokens_namespaces(
    served: tuple[str, GrainStore],
) -> None:
    base, store = served
    point = T0 + 4 * DAY + 1  # before dee's supersession and eve
    g = described(base, as_of=str(point), valid_at=str(point))
    dataset = the(g, next(g.subjects(RDF.type, SD.Service)), SD.defaultDataset)
    then = list(store.snapshot(valid_at=point, as_of=point))
    assert figures(g, dataset) == statistics(then)
    assert figures(g, dataset) != statistics(list(store.snapshot()))
    got = httpx.get(f"{base}/sparql", headers=auth(A_READER))
    mine = rdflib.Graph().parse(data=got.content, format="turtle")
    dataset = the(mine, next(mine.subjects(RDF.type, SD.Service)), SD.defaultDataset)
    assert figures(mine, dataset) == statistics(list(store.snapshot(namespace="a")))
    bad = httpx.get(f"{base}/sparql", params={"as_of": "never"}, headers=auth())
    assert bad.status_code == 400 and "as_of" in bad.json()["message"]
    assert httpx.get(f"{base}/sparql").status_code == 401  # the token still counts


def test_a_query_resolves_relative_iris_against_the_endpoint(
    served: tuple[str, GrainStore],
) -> None:
    base, _ = served

    def construct(query: str, **params: str) -> set[str]:
        got = httpx.get(f"{base}/sparql", params={"query": query, **params},
                        headers={"accept": "application/n-triples", **auth()})  # fmt: skip
        assert got.status_code == 200, got.text
        return {
            str(t.subject.value) for t in ox.parse(got.content, ox.RdfFormat.N_TRIPLES)
        }

    assert construct("CONSTRUCT { <s> <p> 1 } WHERE {}") == {f"{base}/s"}
    assert construct("CONSTRUCT { <#s> <p> 1 } WHERE {}") == {f"{base}/sparql#s"}
    own = "BASE <http://example.org/a/> CONSTRUCT { <s> <p> 1 } WHERE {}"
    assert construct(own) == {"http://example.org/a/s"}  # the query's own wins
    at = construct("CONSTRUCT { <s> <p> ?o } WHERE { ?x ?y ?o }", as_of=str(T0 + DAY))
    assert at == {f"{base}/s"}
    # A query with no relative IRI is sent as written: its error's position holds.
    bad = httpx.get(f"{base}/sparql", params={"query": "SELECT ?s WHERE { ?s ?p }"},
                    headers=auth())  # fmt: skip
    assert bad.status_code == 400 and "at 1:26:" in bad.json()["message"]
