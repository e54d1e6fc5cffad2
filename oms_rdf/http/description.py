"""What ``GET /sparql`` with no query answers: the SPARQL 1.1 Service Description
of the endpoint, with VoID statistics of its knowledge, and the base IRI the
endpoint gives a query.

The description (Turtle by default; N-Triples, JSON-LD or RDF/XML when asked)
says what a client may rely on, and nothing that is not true:

- ``sd:Service``, its ``sd:endpoint`` (the URL the request reached), the
  languages (SPARQL 1.1 Query, and Update as belief operations), each
  ``sd:resultFormat`` the endpoint answers in, and simple entailment. There is no
  ``sd:feature``: the default graph is the knowledge's own, not the union of the
  named graphs (no ``sd:UnionDefaultGraph``), and SERVICE is refused (no
  ``sd:BasicFederatedQuery``).
- ``sd:defaultDataset``: an ``sd:Dataset`` and ``void:Dataset`` whose
  ``sd:defaultGraph`` is the knowledge's default graph and whose
  ``sd:namedGraph`` are the adopted graphs that hold knowledge; each with
  ``void:triples``, ``void:classes``, ``void:properties``,
  ``void:distinctSubjects`` and ``void:distinctObjects``, counted by SPARQL
  aggregates over the knowledge the request's token sees, now or at the point
  its ``valid_at``/``as_of`` ask.
- The time span of the history, whatever the point asked (of the grains in the
  token's namespaces): ``oms:systemTimeSpan``, a ``dcterms:PeriodOfTime`` from
  the first grain's system time to the last change (a write, supersession or
  retraction), and ``dcterms:temporal``, the span of the valid-time bounds the
  grains name (``dcat:startDate``, ``dcat:endDate``).
- The time-travel parameters, an extension: ``oms:timeTravelParameter``, each
  an ``oms:TimeTravelParameter`` with its ``oms:parameterName``.

A query is given the endpoint's URL as its base IRI (SPARQL 1.1 Query §4.1.1):
relative IRIs resolve against it, and a query's own ``BASE`` wins.

>>> with_base(QueryRequest(text="CONSTRUCT { <s> <p> 1 } WHERE {}"),
...           "http://example.org/sparql").text
'BASE <http://example.org/sparql> CONSTRUCT { <s> <p> 1 } WHERE {}'
>>> with_base(QueryRequest(text="ASK { ?s <http://x.org/p> ?o }"), "http://e/").text
'ASK { ?s <http://x.org/p> ?o }'
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pyoxigraph as ox
from starlette.requests import Request
from starlette.responses import Response

from ..errors import OmsError
from ..rdf.terms import is_absolute_iri
from ..rdf.vocab import OMS, OMS_NS, RDF, RDFS, XSD
from ..store import GrainStore, Solutions
from ..times import to_millis
from .auth import Token
from .bodies import param_millis, param_span
from .lanes import Job
from .responses import not_acceptable, refusal
from .results import RDF_FORMATS, RESULT_TYPES, QueryRequest, negotiate

__all__ = [
    "Figures",
    "description_work",
    "endpoint_iri",
    "service_triples",
    "with_base",
]

SD = "http://www.w3.org/ns/sparql-service-description#"
VOID = "http://rdfs.org/ns/void#"
DCTERMS = "http://purl.org/dc/terms/"
DCAT = "http://www.w3.org/ns/dcat#"
FORMATS = "http://www.w3.org/ns/formats/"
PREFIXES = {
    "sd": SD,
    "void": VOID,
    "dcterms": DCTERMS,
    "dcat": DCAT,
    "formats": FORMATS,
    "oms": OMS_NS,
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
}
# The W3C name of each media type the endpoint answers in.
FORMAT_NAMES = {
    "application/sparql-results+json": "SPARQL_Results_JSON",
    "application/sparql-results+xml": "SPARQL_Results_XML",
    "text/csv": "SPARQL_Results_CSV",
    "text/tab-separated-values": "SPARQL_Results_TSV",
    "text/turtle": "Turtle",
    "application/n-triples": "N-Triples",
    "application/ld+json": "JSON-LD",
    "application/rdf+xml": "RDF_XML",
}
PARAMETERS = {
    "valid_at": "Valid time: the query sees the knowledge true at this time "
    "(ISO 8601, or epoch milliseconds); now when not given.",
    "as_of": "System time: the query sees the knowledge as the store knew it at "
    "this time (ISO 8601, or epoch milliseconds); now when not given.",
    "valid_during": "A range of valid time, START/END (each end as valid_at takes "
    "it, or .. for an open end): the query sees every triple true at some time "
    "of it, each solution binding ?validFrom ?validTo ?systemFrom ?systemTo, "
    "the extent it held in.",
    "system_during": "A range of system time, START/END: the query sees every "
    "triple the store knew at some time of it (with valid_during, or at "
    "valid_at), each solution binding its extent as valid_during says.",
}
ABOUT = (
    "A bi-temporal belief store. A query's relative IRIs resolve against this "
    "endpoint's URL (its base IRI); valid_at and as_of ask the knowledge of "
    "another point in time, valid_during and system_during of a range; updates "
    "are belief operations."
)

# An IRI reference, and whether it is absolute (it begins with a scheme).
_IRIREF = re.compile(r"<([^<>\"{}|^`\\\x00-\x20]*)>")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")

# Counts of the knowledge, per graph (?graph unbound: the default graph) or in all.
_FIGURES = """(COUNT(*) AS ?triples) (COUNT(DISTINCT ?s) AS ?subjects)
  (COUNT(DISTINCT ?p) AS ?properties) (COUNT(DISTINCT ?o) AS ?objects)
  (COUNT(DISTINCT ?class) AS ?classes)"""
_CLASS = f"BIND (IF(?p = {RDF.type}, ?o, ?none) AS ?class)"
IN_DEFAULT = f"""SELECT {_FIGURES} WHERE {{
  ?s ?p ?o
  {_CLASS}
}}"""
PER_GRAPH = f"""SELECT ?graph {_FIGURES} WHERE {{
  GRAPH ?graph {{ ?s ?p ?o }}
  {_CLASS}
}}
GROUP BY ?graph"""
# Whether any grain ever said a triple of a named graph (else no graph is asked).
ANY_NAMED = f"ASK {{ ?g {OMS.graph} ?graph }}"
IN_ALL = f"""SELECT {_FIGURES} WHERE {{
  {{ ?s ?p ?o }} UNION {{ GRAPH ?graph {{ ?s ?p ?o }} }}
  {_CLASS}
}}"""


def endpoint_iri(request: Request) -> str:
    """Return the endpoint's IRI: the URL the request reached, without its query."""
    return str(request.url.replace(query="", fragment=""))


def with_base(asked: QueryRequest, base: str) -> QueryRequest:
    """Return ``asked`` with ``base`` as its base IRI when it writes a relative
    IRI (the text is otherwise left as written, so that the positions of its
    errors stay where they are)."""
    relative = any(not _SCHEME.match(m.group(1)) for m in _IRIREF.finditer(asked.text))
    if not relative or not is_absolute_iri(base):
        return asked
    declared = f"BASE <{base}> "
    return replace(asked, text=declared + asked.text, added=len(declared))


def description_work(
    store: GrainStore, request: Request, params: Mapping[str, list[str]], token: Token
) -> Response | Callable[[Job], tuple[bytes, str]]:
    """Return the work that answers the service description (run on the query
    lane), or the response refusing the request: a 406 for an Accept header no
    RDF format meets, a 400 for a time that is not one (asked first: a client
    that appends its query to an endpoint URL holding a time with a second
    ``?`` sends a time that is not one, and no query)."""
    try:
        point = {
            name: param_millis(params[name][0], name)
            for name in ("valid_at", "as_of")
            if name in params
        }
        for name in ("valid_during", "system_during"):  # read, to refuse a bad one
            if name in params:
                param_span(params[name][0], name)
    except OmsError as exc:
        return refusal(exc)
    media = negotiate(request.headers.get("accept", "*/*"), RESULT_TYPES["graph"])
    if media is None:
        offered = ", ".join(RESULT_TYPES["graph"])
        return not_acceptable(f"not acceptable; the description comes as {offered}")
    endpoint = endpoint_iri(request)

    def work(job: Job) -> tuple[bytes, str]:
        triples = service_triples(
            store, endpoint, namespaces=token.namespaces, check=job.check, **point
        )
        out = io.BytesIO()
        prefixes = PREFIXES if media == "text/turtle" else None
        ox.serialize(triples, out, format=RDF_FORMATS[media], prefixes=prefixes)
        return out.getvalue(), media

    return work


@dataclass(frozen=True, slots=True)
class Figures:
    """The VoID statistics of some knowledge."""

    triples: int = 0
    subjects: int = 0
    objects: int = 0
    properties: int = 0
    classes: int = 0

    @classmethod
    def of(cls, row: Any) -> Figures:
        """Return the figures of one row of :data:`IN_DEFAULT`, :data:`PER_GRAPH`
        or :data:`IN_ALL`."""
        names = ("triples", "subjects", "objects", "properties", "classes")
        return cls(*(int(row[n].value) if row[n] is not None else 0 for n in names))

    def triples_of(self, node: ox.NamedNode | ox.BlankNode) -> Iterator[ox.Triple]:
        """Yield the VoID triples saying these figures of ``node``."""
        for name, value in (
            ("triples", self.triples),
            ("classes", self.classes),
            ("properties", self.properties),
            ("distinctSubjects", self.subjects),
            ("distinctObjects", self.objects),
        ):
            yield ox.Triple(node, ox.NamedNode(VOID + name), _integer(value))


def _integer(value: int) -> ox.Literal:
    return ox.Literal(str(value), datatype=XSD.integer)


def service_triples(
    store: GrainStore,
    endpoint: str,
    *,
    valid_at: int | None = None,
    as_of: int | None = None,
    namespaces: tuple[str, ...] | None = None,
    check: Callable[[], None] = lambda: None,
) -> list[ox.Triple]:
    """Return the service description of the endpoint at ``endpoint`` over
    ``store``: the service, its dataset with the statistics of the knowledge
    in ``namespaces`` (None: every one) at (``valid_at``, ``as_of``), and the
    time span of the history."""
    where = ox.NamedNode(endpoint)
    service, dataset = (
        ox.NamedNode(f"{endpoint}#service"),
        ox.NamedNode(f"{endpoint}#dataset"),
    )
    triples = list(_service(service, where, dataset))
    asked: dict[str, Any] = {"valid_at": valid_at, "as_of": as_of}
    if namespaces is not None:
        asked["namespace"] = list(namespaces)
    default = Figures.of(_rows(store.query(IN_DEFAULT, **asked))[0])
    check()
    graphs = {}
    if store.query(ANY_NAMED, grains=True) is True:
        rows = _rows(store.query(PER_GRAPH, **asked))
        graphs = {row["graph"]: Figures.of(row) for row in rows}
        check()
    if graphs:
        total = Figures.of(next(iter(_rows(store.query(IN_ALL, **asked)))))
    else:
        total = default
    check()
    triples += _dataset(dataset, where, total, default, graphs, endpoint)
    triples += _spans(store, dataset, namespaces)
    return triples


def _rows(result: object) -> list[Any]:
    assert isinstance(result, Solutions)
    return list(result)


def _service(
    service: ox.NamedNode, where: ox.NamedNode, dataset: ox.NamedNode
) -> Iterator[ox.Triple]:
    """The service's own triples: what it is, speaks, answers in, and asks."""
    sd = _namespace(SD)
    yield ox.Triple(service, RDF.type, sd("Service"))
    yield ox.Triple(service, sd("endpoint"), where)
    for language in ("SPARQL11Query", "SPARQL11Update"):
        yield ox.Triple(service, sd("supportedLanguage"), sd(language))
    for kind in RESULT_TYPES.values():
        for media in kind:
            named = ox.NamedNode(FORMATS + FORMAT_NAMES[media])
            yield ox.Triple(service, sd("resultFormat"), named)
    yield ox.Triple(
        service,
        sd("defaultEntailmentRegime"),
        ox.NamedNode("http://www.w3.org/ns/entailment/Simple"),
    )
    yield ox.Triple(service, sd("defaultDataset"), dataset)
    yield ox.Triple(service, ox.NamedNode(DCTERMS + "description"), ox.Literal(ABOUT))
    for name, comment in PARAMETERS.items():
        parameter = ox.NamedNode(f"{where.value}#{name}")
        yield ox.Triple(service, OMS.timeTravelParameter, parameter)
        yield ox.Triple(parameter, RDF.type, OMS.TimeTravelParameter)
        yield ox.Triple(parameter, OMS.parameterName, ox.Literal(name))
        yield ox.Triple(parameter, RDFS.comment, ox.Literal(comment))


def _dataset(
    dataset: ox.NamedNode,
    where: ox.NamedNode,
    total: Figures,
    default: Figures,
    graphs: Mapping[Any, Figures],
    endpoint: str,
) -> list[ox.Triple]:
    """The dataset, its default graph and its named graphs, with their figures."""
    sd, void = _namespace(SD), _namespace(VOID)
    triples = [
        ox.Triple(dataset, RDF.type, sd("Dataset")),
        ox.Triple(dataset, RDF.type, void("Dataset")),
        ox.Triple(dataset, void("sparqlEndpoint"), where),
        *total.triples_of(dataset),
    ]
    default_node = ox.NamedNode(f"{endpoint}#default-graph")
    triples += [
        ox.Triple(dataset, sd("defaultGraph"), default_node),
        ox.Triple(default_node, RDF.type, sd("Graph")),
        ox.Triple(default_node, RDF.type, void("Dataset")),
        *default.triples_of(default_node),
    ]
    for name, figures in sorted(graphs.items(), key=lambda item: str(item[0])):
        named, graph = ox.BlankNode(), ox.BlankNode()
        triples += [
            ox.Triple(dataset, sd("namedGraph"), named),
            ox.Triple(named, RDF.type, sd("NamedGraph")),
            ox.Triple(named, sd("name"), name),
            ox.Triple(named, sd("graph"), graph),
            ox.Triple(graph, RDF.type, sd("Graph")),
            ox.Triple(graph, RDF.type, void("Dataset")),
            *figures.triples_of(graph),
        ]
    return triples


def _spans(
    store: GrainStore, dataset: ox.NamedNode, namespaces: tuple[str, ...] | None
) -> list[ox.Triple]:
    """The time spans of the history: system time and valid time."""
    scope = ""
    if namespaces is not None:
        values = " ".join(str(ox.Literal(n)) for n in namespaces)
        scope = f"?g {OMS.namespace} ?ns . VALUES ?ns {{ {values} }}"
    started = _one(
        store,
        f"""SELECT (MIN(?t) AS ?first) (MAX(?t) AS ?last) WHERE {{
  ?g {OMS.systemFrom} ?t . {scope} }}""",
    )
    changed = _one(
        store,
        f"""SELECT (MAX(?t) AS ?last) WHERE {{
  GRAPH {OMS.index} {{ ?g {OMS.systemTo}|{OMS.voidedAt} ?t }} {scope} }}""",
    )
    valid = _one(
        store,
        f"""SELECT (MIN(?t) AS ?first) (MAX(?t) AS ?last) WHERE {{
  ?g {OMS.validFrom}|{OMS.validTo} ?t . {scope} }}""",
    )
    triples = []
    ends = [t for t in (started.get("last"), changed.get("last")) if t is not None]
    if started.get("first") is not None and ends:
        last = max(ends, key=lambda t: to_millis(t.value))
        triples += _period(dataset, OMS.systemTimeSpan, started["first"], last)
    if valid.get("first") is not None:
        temporal = ox.NamedNode(DCTERMS + "temporal")
        triples += _period(dataset, temporal, valid["first"], valid["last"])
    return triples


def _one(store: GrainStore, query: str) -> dict[str, Any]:
    """The one row of an aggregate over the grains, by variable name."""
    result = store.query(query, grains=True)
    assert isinstance(result, Solutions)
    names = [v.value for v in result.variables]
    row = next(iter(result))
    return {name: row[name] for name in names}


def _period(
    dataset: ox.NamedNode, link: ox.NamedNode, start: ox.Literal, end: ox.Literal
) -> list[ox.Triple]:
    period = ox.BlankNode()
    return [
        ox.Triple(dataset, link, period),
        ox.Triple(period, RDF.type, ox.NamedNode(DCTERMS + "PeriodOfTime")),
        ox.Triple(period, ox.NamedNode(DCAT + "startDate"), start),
        ox.Triple(period, ox.NamedNode(DCAT + "endDate"), end),
    ]


def _namespace(base: str) -> Callable[[str], ox.NamedNode]:
    return lambda name: ox.NamedNode(base + name)
