"""What the endpoint answers is readable by the clients that ask for it: RDF/XML
an XML parser reads (or a 406), ASK in CSV and TSV, error columns in the caller's
text, the blob of a fact only when it is preferred, cursors only as given."""

from __future__ import annotations

import base64
import io
import json
import re
import warnings
import xml.dom.minidom
from collections.abc import Iterator

import httpx
import pytest
from SPARQLWrapper import SPARQLWrapper

import oms_rdf as oms
from oms_rdf.http.app import create_app
from tests.helpers import running

EX = "http://example.org/"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, str]]:
    store = oms.GrainStore()
    store.import_(io.BytesIO(
        f'<{EX}s> <{EX}name> "plain" .\n'
        f'<{EX}s> <{EX}p/1> "a local name that starts with a digit" .\n'
        f'<{EX}s> <{EX}vocab/> "an IRI that ends in a slash" .\n'
        f'<{EX}t> <{EX}note> "a\\u0001b" .\n'.encode()), format="ntriples")  # fmt: skip
    fact = store.put(
        oms.Belief("ann", "likes", "tea", 0.8, created_at=1_700_000_000_000)
    )
    with running(create_app(store)) as base:
        yield base, fact


def construct(base: str, where: str, accept: str) -> httpx.Response:
    query = f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ {where} }}"
    return httpx.get(
        base + "/sparql", params={"query": query}, headers={"accept": accept}
    )


@pytest.mark.parametrize(
    "where",
    [f"?s <{EX}p/1> ?o BIND(<{EX}p/1> AS ?p)", f"?s <{EX}vocab/> ?o BIND(<{EX}vocab/> AS ?p)",
     f"?s <{EX}note> ?o BIND(<{EX}note> AS ?p)"],
)  # fmt: skip
def test_rdf_xml_that_xml_cannot_write_is_a_406_not_broken_xml(
    served: tuple[str, str], where: str
) -> None:
    base, _ = served
    refused = construct(base, where, "application/rdf+xml")
    assert refused.status_code == 406 and refused.json()["code"] == "ERR_QUERY"
    assert refused.json()["path"] == "Accept" and "RDF/XML" in refused.json()["message"]
    assert construct(base, where, "text/turtle").status_code == 200


def test_rdf_xml_that_xml_can_write_parses_and_sparqlwrapper_reads_it(
    served: tuple[str, str],
) -> None:
    base, _ = served
    answer = construct(
        base, f"?s <{EX}name> ?o BIND(<{EX}name> AS ?p)", "application/rdf+xml"
    )
    assert answer.status_code == 200
    xml.dom.minidom.parseString(answer.content)  # raises on XML no parser reads
    client = SPARQLWrapper(base + "/sparql")  # CONSTRUCT: RDF/XML by default
    client.setQuery(f"CONSTRUCT {{ ?s <{EX}name> ?o }} WHERE {{ ?s <{EX}name> ?o }}")
    with warnings.catch_warnings():  # SPARQLWrapper builds an rdflib ConjunctiveGraph
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        assert len(client.queryAndConvert()) == 1


@pytest.mark.parametrize(
    ("accept", "body"),
    [
        ("text/tab-separated-values", "?_askResult\n{}\n"),
        ("text/csv", "_askResult\r\n{}\r\n"),
    ],
)
def test_ask_in_csv_and_tsv_has_each_format_s_header_and_line_ends(
    served: tuple[str, str], accept: str, body: str
) -> None:
    base, _ = served
    for query, answer in (("ASK {}", "true"), ("ASK { FILTER(false) }", "false")):
        got = httpx.get(
            base + "/sparql", params={"query": query}, headers={"accept": accept}
        )
        assert got.status_code == 200 and got.text == body.format(answer)


def test_a_syntax_error_s_column_counts_in_the_caller_s_text(
    served: tuple[str, str],
) -> None:
    """A relative IRI makes the server declare its base before the text; the
    column of an error is still the column in what the caller sent."""
    base, _ = served
    columns = []
    for query in ("SELECT * WHERE { <http://x/s> ?p ?o FILTER( }",
                  "SELECT * WHERE { <s> ?p ?o FILTER( }"):  # fmt: skip
        got = httpx.get(base + "/sparql", params={"query": query})
        assert got.status_code == 400
        found = re.search(r"error at 1:(\d+):", got.json()["message"])
        assert found is not None
        columns.append(int(found.group(1)) - query.index("}"))
    assert columns[0] == columns[1]  # the same place: the "}" each ends with


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        ("application/json, application/vnd.oms.grain;q=0", "application/json"),
        ("application/json, application/vnd.oms.grain;q=0.1", "application/json"),
        ("Application/VND.oms.grain", "application/vnd.oms.grain"),
        (
            "application/vnd.oms.grain, application/json;q=0.5",
            "application/vnd.oms.grain",
        ),
        ("text/html", "application/json"),
    ],
)
def test_a_fact_is_its_blob_only_where_the_blob_is_preferred(
    served: tuple[str, str], accept: str, media: str
) -> None:
    base, fact = served
    got = httpx.get(f"{base}/v1/facts/{fact}", headers={"accept": accept})
    assert got.status_code == 200 and got.headers["content-type"].startswith(media)
    assert got.headers["vary"] == "Accept"


def test_a_cursor_the_server_did_not_give_is_refused(served: tuple[str, str]) -> None:
    base, _ = served
    given = httpx.get(base + "/v1/facts", params={"limit": 1}).json()["next_cursor"]
    assert httpx.get(base + "/v1/facts", params={"cursor": given}).status_code == 200
    text, _, seal = given.partition(".")
    fields = json.loads(base64.urlsafe_b64decode(text + "=="))
    forged_fields = {**fields, "offset": 10**30, "as_of": -(10**20)}
    forged = base64.urlsafe_b64encode(json.dumps(forged_fields).encode()).decode()
    for cursor in (forged.rstrip("="), f"{forged.rstrip('=')}.{seal}"):
        got = httpx.get(base + "/v1/facts", params={"cursor": cursor})
        assert got.status_code == 422 and got.json()["path"] == "cursor"
