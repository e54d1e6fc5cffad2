"""The W3C SPARQL test files: where they come from, their manifests, their answers.

The files are those of the W3C test repository (w3c/rdf-tests) as rdflib's source
distribution on PyPI carries them (``test/data/suites/w3c``): CI reaches PyPI but not
GitHub, and the files are not ours to copy into this repository. ``python -m
tests.w3c`` fetches them once into a cache folder; ``OMS_RDF_W3C`` names another.

A case's answer is compared the way the suites mean it: solutions as a multiset (a
sequence when the query orders them), blank nodes up to a one-to-one renaming, graphs
up to isomorphism, CSV as its lines.
"""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyoxigraph as ox

RDFLIB_SDIST = "rdflib==7.6.0"
SUITES = "rdflib-7.6.0/test/data/suites/w3c/"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "oms-rdf"
FETCH_HINT = "python -m tests.w3c (fetches rdflib's sdist from PyPI), as .ci/run does"

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
QT = "http://www.w3.org/2001/sw/DataAccess/tests/test-query#"
DAWGT = "http://www.w3.org/2001/sw/DataAccess/tests/test-dawg#"
RS = "http://www.w3.org/2001/sw/DataAccess/tests/result-set#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"

# The query-evaluation manifests: SPARQL 1.0 and the SPARQL 1.1 query language and
# result formats. Update, entailment, federation and protocol have suites of their own.
MANIFESTS = (
    "dawg-data-r2/manifest-evaluation.ttl",
    *(
        f"sparql11/{name}/manifest.ttl"
        for name in (
            "aggregates",
            "bind",
            "bindings",
            "construct",
            "exists",
            "functions",
            "grouping",
            "negation",
            "project-expression",
            "property-path",
            "subquery",
            "csv-tsv-res",
            "json-res",
        )
    ),
)


def root() -> Path | None:
    """The folder holding ``dawg-data-r2`` and ``sparql11``, or None when not fetched."""
    folder = (
        Path(os.environ["OMS_RDF_W3C"])
        if "OMS_RDF_W3C" in os.environ
        else CACHE / "w3c"
    )
    return folder if (folder / "sparql11").is_dir() else None


def fetch() -> Path:
    """Fetch rdflib's source distribution with pip and keep its W3C suites."""
    target = CACHE / "w3c"
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-d",
                tmp,
                RDFLIB_SDIST,
            ],
            check=True,
        )
        (sdist,) = Path(tmp).glob("rdflib-*.tar.gz")
        with tarfile.open(sdist) as tar:
            members = [
                m
                for m in tar.getmembers()
                if m.name.startswith(SUITES)
                and m.isfile()
                and m.name.split("/")[5] in ("dawg-data-r2", "sparql11")
            ]
            staging = Path(tmp) / "out"
            for member in members:
                member.name = member.name[len(SUITES) :]
                tar.extract(member, staging, filter="data")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            subprocess.run(["rm", "-rf", str(target)], check=True)
        staging.rename(target)
    return target


@dataclass(frozen=True)
class Case:
    """One query-evaluation test of a manifest."""

    id: str
    query: Path
    data: tuple[Path, ...]
    graph_data: tuple[Path, ...]
    result: Path

    @property
    def text(self) -> str:
        return self.query.read_text(encoding="utf-8")

    @property
    def base(self) -> str:
        return self.query.as_uri()


def _objects(store: ox.Store, subject: Any, predicate: str) -> list[Any]:
    return [
        q.object
        for q in store.quads_for_pattern(subject, ox.NamedNode(predicate), None)
    ]


def _list(store: ox.Store, head: Any) -> Iterator[Any]:
    while head != ox.NamedNode(RDF + "nil"):
        (first,) = _objects(store, head, RDF + "first")
        yield first
        (head,) = _objects(store, head, RDF + "rest")


def _path(term: Any) -> Path:
    return Path(term.value.removeprefix("file://"))


def cases(folder: Path) -> list[Case]:
    """Every query-evaluation test in scope that is not withdrawn or rejected."""
    found: list[Case] = []
    for name in MANIFESTS:
        found += _entries(folder / name)
    return found


def _entries(manifest: Path) -> list[Case]:
    graph = ox.Store()
    graph.load(
        path=str(manifest), format=ox.RdfFormat.TURTLE, base_iri=manifest.as_uri()
    )
    doc = ox.NamedNode(manifest.as_uri())
    found: list[Case] = []
    for head in _objects(graph, doc, MF + "include"):
        for included in _list(graph, head):
            found += _entries(_path(included))
    for head in _objects(graph, doc, MF + "entries"):
        for entry in _list(graph, head):
            case = _case(graph, manifest, entry)
            if case is not None:
                found.append(case)
    return found


def _case(graph: ox.Store, manifest: Path, entry: Any) -> Case | None:
    kinds = {t.value for t in _objects(graph, entry, RDF + "type")}
    approval = {t.value for t in _objects(graph, entry, DAWGT + "approval")}
    if not kinds & {MF + "QueryEvaluationTest", MF + "CSVResultFormatTest"}:
        return None
    if approval & {DAWGT + "Withdrawn", DAWGT + "Rejected"}:
        return None
    (action,) = _objects(graph, entry, MF + "action")
    (result,) = _objects(graph, entry, MF + "result")
    (query,) = _objects(graph, action, QT + "query")
    return Case(
        id=f"{manifest.parent.name}/{entry.value.rsplit('#', 1)[-1]}",
        query=_path(query),
        data=tuple(_path(t) for t in _objects(graph, action, QT + "data")),
        graph_data=tuple(_path(t) for t in _objects(graph, action, QT + "graphData")),
        result=_path(result),
    )


_FROM = re.compile(r"\bFROM\s+(NAMED\s+)?<([^>]*)>", re.IGNORECASE)


def dataset(case: Case) -> list[ox.Quad]:
    """The case's data as quads: qt:data in the default graph, qt:graphData and the
    documents a FROM or FROM NAMED clause names as graphs named by their IRI."""
    quads: list[ox.Quad] = []
    for path in case.data:
        quads += _parse(path, ox.DefaultGraph())
    named = {p.as_uri(): p for p in case.graph_data}
    for _, iri in _FROM.findall(case.text):
        resolved = (
            case.query.parent.joinpath(iri).resolve() if "://" not in iri else None
        )
        if resolved is not None and resolved.exists():
            named.setdefault(resolved.as_uri(), resolved)
    for iri, path in named.items():
        quads += _parse(path, ox.NamedNode(iri))
    return quads


def _parse(path: Path, graph: Any) -> list[ox.Quad]:
    fmt = ox.RdfFormat.from_extension(path.suffix.lstrip(".")) or ox.RdfFormat.TURTLE
    return [
        ox.Quad(q.subject, q.predicate, q.object, graph)
        for q in ox.parse(
            path=str(path), format=fmt, base_iri=path.as_uri(), rename_blank_nodes=True
        )
    ]


def nquads(quads: Iterable[ox.Quad]) -> bytes:
    out = io.BytesIO()
    ox.serialize(list(quads), out, ox.RdfFormat.N_QUADS)
    return out.getvalue()


# Answers, compared: ("bool", b), ("rows", variables, rows, ordered), ("graph", triples),
# ("csv", header, lines).
Answer = tuple[Any, ...]


def expected(case: Case) -> Answer:
    suffix = case.result.suffix
    if suffix == ".csv":
        return _csv(case.result.read_text(encoding="utf-8"), case)
    if suffix in (".srx", ".srj", ".tsv"):
        fmt = ox.QueryResultsFormat.from_extension(suffix.lstrip("."))
        parsed = ox.parse_query_results(path=str(case.result), format=fmt)
        if isinstance(parsed, ox.QueryBoolean):
            return ("bool", bool(parsed))
        names = [v.value for v in parsed.variables]
        rows = [{n: s[n] for n in names if s[n] is not None} for s in parsed]
        return ("rows", names, rows, ordered(case))
    graph = ox.Store()
    fmt = ox.RdfFormat.from_extension(suffix.lstrip(".")) or ox.RdfFormat.TURTLE
    graph.load(path=str(case.result), format=fmt, base_iri=case.result.as_uri())
    sets = list(
        graph.quads_for_pattern(
            None, ox.NamedNode(RDF + "type"), ox.NamedNode(RS + "ResultSet")
        )
    )
    if not sets:
        return ("graph", [ox.Triple(q.subject, q.predicate, q.object) for q in graph])
    return _result_set(graph, sets[0].subject, case)


def _result_set(graph: ox.Store, node: Any, case: Case) -> Answer:
    boolean = _objects(graph, node, RS + "boolean")
    if boolean:
        return ("bool", boolean[0].value == "true")
    names = [v.value for v in _objects(graph, node, RS + "resultVariable")]
    rows, indexed = [], []
    for solution in _objects(graph, node, RS + "solution"):
        row = {}
        for binding in _objects(graph, solution, RS + "binding"):
            (name,) = _objects(graph, binding, RS + "variable")
            (value,) = _objects(graph, binding, RS + "value")
            row[name.value] = value
        index = _objects(graph, solution, RS + "index")
        indexed.append((int(index[0].value) if index else 0, row))
        rows.append(row)
    if any(i for i, _ in indexed):
        rows = [row for _, row in sorted(indexed, key=lambda pair: pair[0])]
    return ("rows", names, rows, ordered(case))


def _csv(text: str, case: Case) -> Answer:
    """CSV rows keyed by the header: the text of each value, blank nodes kept apart."""
    lines = list(csv.reader(io.StringIO(text)))
    names, body = lines[0], [line for line in lines[1:] if line]
    rows = [
        {
            n: ox.BlankNode(v[2:]) if v.startswith("_:") else ox.Literal(v)
            for n, v in zip(names, line, strict=True)
            if v
        }
        for line in body
    ]
    return ("rows", names, rows, ordered(case))


def ordered(case: Case) -> bool:
    return re.search(r"\bORDER\s+BY\b", case.text, re.IGNORECASE) is not None


def actual(case: Case, result: Any) -> Answer:
    """The answer of a query, from pyoxigraph's results or from the store's."""
    if case.result.suffix == ".csv":
        fmt = (
            ox.QueryResultsFormat.CSV
            if isinstance(result, ox.QuerySolutions)
            else "csv"
        )
        text = result.serialize(format=fmt)
        return _csv(text.decode() if isinstance(text, bytes) else text, case)
    if isinstance(result, (bool, ox.QueryBoolean)):
        return ("bool", bool(result))
    variables = getattr(result, "variables", None)
    if variables is None:
        return ("graph", list(result))
    names = [v.value for v in variables]
    rows = []
    for solution in result:
        row = {}
        for n in names:
            value = (
                solution[n]
                if isinstance(solution, ox.QuerySolution)
                else solution.get(n)
            )
            if value is not None:
                row[n] = value
        rows.append(row)
    return ("rows", names, rows, ordered(case))


def same(want: Answer, got: Answer) -> bool:
    """Whether two answers agree, blank nodes renamed one to one."""
    if want[0] != got[0]:
        return False
    if want[0] in ("bool", "csv"):
        return want == got
    if want[0] == "graph":
        return _isomorphic(want[1], got[1])
    _, names, rows, in_order = want
    return set(names) == set(got[1]) and _match_rows(rows, got[2], in_order)


XSD = "http://www.w3.org/2001/XMLSchema#"
_INTEGERS = {
    XSD + n
    for n in (
        "integer",
        "int",
        "long",
        "short",
        "byte",
        "nonNegativeInteger",
        "positiveInteger",
        "negativeInteger",
        "nonPositiveInteger",
        "unsignedInt",
        "unsignedLong",
        "unsignedShort",
        "unsignedByte",
    )
}


def canonical(term: Any) -> Any:
    """A term as the store keeps it: numbers and booleans by value (Oxigraph keeps
    their canonical form, where the files write ``01``, ``1.0e0`` or ``+1``)."""
    if not isinstance(term, ox.Literal):
        return term
    datatype, text = term.datatype.value, term.value
    try:
        if datatype in _INTEGERS:
            return ("int", datatype, int(text))
        if datatype == XSD + "decimal":
            return ("decimal", Decimal(text))
        if datatype in (XSD + "double", XSD + "float"):
            return ("float", datatype, float(text))
    except (ValueError, ArithmeticError):
        return term
    if datatype == XSD + "boolean" and text in ("true", "false", "1", "0"):
        return ("bool", text in ("true", "1"))
    return term


def _key(row: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A row's shape with blank nodes blanked: rows that can match share a key."""
    return tuple(
        sorted(
            (k, "_" if isinstance(v, ox.BlankNode) else str(canonical(v)))
            for k, v in row.items()
        )
    )


def _match_rows(
    want: Sequence[dict[str, Any]], got: Sequence[dict[str, Any]], in_order: bool
) -> bool:
    if len(want) != len(got):
        return False
    if in_order:
        return (
            _bijection([(w, g) for w, g in zip(want, got, strict=True)], {}, {})
            is not None
        )
    if Counter(map(_key, want)) != Counter(map(_key, got)):
        return False
    if not any(isinstance(v, ox.BlankNode) for row in want for v in row.values()):
        return True
    return _assign(list(want), list(got), {}, {})


def _bijection(
    pairs: Iterable[tuple[dict[str, Any], dict[str, Any]]],
    fwd: dict[Any, Any],
    back: dict[Any, Any],
) -> tuple[dict[Any, Any], dict[Any, Any]] | None:
    fwd, back = dict(fwd), dict(back)
    for w, g in pairs:
        if w.keys() != g.keys():
            return None
        for k, a in w.items():
            b = g[k]
            if isinstance(a, ox.BlankNode) and isinstance(b, ox.BlankNode):
                if fwd.setdefault(a, b) != b or back.setdefault(b, a) != a:
                    return None
            elif canonical(a) != canonical(b):
                return None
    return fwd, back


def _assign(
    want: list[dict[str, Any]],
    got: list[dict[str, Any]],
    fwd: dict[Any, Any],
    back: dict[Any, Any],
) -> bool:
    """Backtracking: give each wanted row a distinct got row under one renaming."""
    if not want:
        return True
    first, rest = want[0], want[1:]
    for i, candidate in enumerate(got):
        if _key(candidate) != _key(first):
            continue
        maps = _bijection([(first, candidate)], fwd, back)
        if maps is not None and _assign(rest, got[:i] + got[i + 1 :], *maps):
            return True
    return False


def _isomorphic(want: Sequence[ox.Triple], got: Sequence[ox.Triple]) -> bool:
    from rdflib import Graph
    from rdflib.compare import isomorphic

    def same_form(term: Any) -> Any:
        value = canonical(term)
        return (
            term if value is term else ox.Literal(repr(value), datatype=term.datatype)
        )

    def graph(triples: Sequence[ox.Triple]) -> Graph:
        out = io.BytesIO()
        ox.serialize(
            [ox.Triple(t.subject, t.predicate, same_form(t.object)) for t in triples],
            out,
            ox.RdfFormat.N_TRIPLES,
        )
        return Graph().parse(data=out.getvalue(), format="nt")

    return len(set(want)) == len(set(got)) and isomorphic(graph(want), graph(got))


if __name__ == "__main__":
    print(fetch())
