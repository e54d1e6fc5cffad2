"""SPARQL the store writes and reads: update requests from rows, the query templates, terms."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from importlib import resources
from typing import Any

from pyoxigraph import (
    BlankNode,
    DefaultGraph,
    Literal,
    NamedNode,
    Quad,
)

from ..codec.grain import Grain
from ..errors import SchemaError, StoreError
from ..times import to_millis
from .mapping import (
    Row,
    grain_iri,
    millis_literal,
)
from .terms import skolem
from .vocab import OMS, XSD

DEFAULT = DefaultGraph()


def load_query(name: str) -> str:
    return resources.files("oms_rdf.queries").joinpath(f"{name}.rq").read_text()


def quad_row(quad: Quad) -> Row:
    """Return a quad as an N-Triples row: subject, predicate, object, graph ("": default)."""
    graph = quad.graph_name
    g = "" if isinstance(graph, DefaultGraph) else str(graph)
    return str(quad.subject), str(quad.predicate), str(quad.object), g


def data_block(rows: Iterable[Row]) -> str:
    """Return the body of an INSERT DATA / DELETE DATA block, grouped by graph."""
    by_graph: dict[str, list[str]] = {}
    for s, p, o, g in rows:
        by_graph.setdefault(g, []).append(f"{s} {p} {o} .")
    parts = []
    for g, lines in by_graph.items():
        body = "\n".join(lines)
        parts.append(body if not g else f"GRAPH {g} {{\n{body}\n}}")
    return "\n".join(parts)


def update_request(delete: Sequence[Quad | Row], insert: Sequence[Quad | Row]) -> str:
    """Return one SPARQL update request deleting then inserting data (atomic)."""
    ops = []
    if delete:
        ops.append(f"DELETE DATA {{\n{data_block(as_rows(delete))}\n}}")
    if insert:
        ops.append(f"INSERT DATA {{\n{data_block(as_rows(insert))}\n}}")
    return " ;\n".join(ops)


# Opens a guard made of filters only. A group with a pattern is what SPARQL means
# anyway, and Virtuoso 7.2 needs one: it finds FILTER NOT EXISTS true in a group
# with no pattern (or only a BIND), even when the pattern exists.
GUARDED = "VALUES ?guarded { true }"


def guarded_update(
    delete: Sequence[Quad | Row], insert: Sequence[Quad | Row], guard: str
) -> str:
    """One update deleting then inserting ground quads only where ``guard`` holds."""
    removed = f"DELETE {{\n{data_block(as_rows(delete))}\n}}\n" if delete else ""
    return f"{removed}INSERT {{\n{data_block(as_rows(insert))}\n}}\nWHERE {{ {guard} }}"


def as_rows(items: Iterable[Quad | Row]) -> list[Row]:
    """Return quads and rows alike as N-Triples rows (see :func:`quad_row`)."""
    return [item if isinstance(item, tuple) else quad_row(item) for item in items]


# The fixed queries (queries/*.rq). Those that ask whether a belief is in force
# or held are built from that definition, in inforce.py.
QUERIES = {
    name: load_query(name)
    for name in (
        "history",
        "derived",
        "rebuild_current",
        "consent_dependents",
        "subject_grains",
        "now_ahead",
        "grains_count",
        "closed_count",
    )
}


def term_for(value: Any) -> Any:
    """Return the RDF term a Python value binds to in a query.

    str → plain literal, bool/int/float → typed literal, datetime → xsd:dateTime,
    Grain → its statement node; IRIs and literals are taken as they are, and a
    blank node (as answers give them) is the node of the store it names.

    Raises:
        SchemaError: ERR_SCHEMA for a value of any other type.
    """
    if isinstance(value, NamedNode | Literal):
        return value
    if isinstance(value, BlankNode):  # as the store keeps it: the answer's node
        return skolem(value)
    if isinstance(value, Grain):
        return grain_iri(value.address)
    if isinstance(value, bool):
        return Literal("true" if value else "false", datatype=XSD.boolean)
    if isinstance(value, int):
        return Literal(str(value), datatype=XSD.integer)
    if isinstance(value, float):
        return Literal(repr(value), datatype=XSD.double)
    if isinstance(value, datetime):
        return millis_literal(to_millis(value))
    if isinstance(value, str):
        return Literal(value)
    raise SchemaError(f"cannot bind a {type(value).__name__} in SPARQL")


def lexical_value(term: Any) -> str:
    """Return the lexical value of an IRI or literal term."""
    if not isinstance(term, NamedNode | Literal):
        raise StoreError(f"expected an IRI or a literal, found {term}")
    return term.value


P_STATUS = str(OMS.status)


ACTIVE, G_INDEX = str(OMS.active), str(OMS.index)


P_ENVELOPE, P_SIGNED_BY, G_BLOBS = (
    str(OMS.envelope),
    str(OMS.signedBy),
    str(OMS.blobs),
)
