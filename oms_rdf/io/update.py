"""SPARQL Update as belief operations: INSERT DATA adopts, DELETE DATA retracts.

A SPARQL user adds and removes knowledge without the grain API, and no policy can
be bypassed: ``INSERT DATA`` goes through adoption (the same checks, the same
write path as an import), ``DELETE DATA`` retracts the current beliefs that assert
those triples through the policies, all of them in one atomic write or none. Any
other update form (``DELETE/INSERT ... WHERE``, ``LOAD``, ``CLEAR``, ``DROP``, ...)
is refused: it would rewrite the store's graphs instead of revising beliefs. The
one exception is ``DELETE { t } WHERE { t }`` over the same ground triples, which
means ``DELETE DATA`` (rdflib's ``SPARQLUpdateStore`` removes triples that way).

rdflib parses the request (pyoxigraph exposes no update parser).
"""

from __future__ import annotations

import io as _io
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyoxigraph as ox

from ..errors import ErrorCode, QueryError
from ..mapping import address_of
from ..store import GrainStore
from ..terms import skolem
from ..vocab import OMS, RDF

__all__ = ["UpdateReport", "data_operations", "update"]

_ALLOWED = {"InsertData": "insert", "DeleteData": "delete"}


@dataclass
class UpdateReport:
    """What an update did: beliefs added, already believed, and retracted."""

    added: int = 0
    believed: int = 0
    retracted: list[str] = field(default_factory=list)  # addresses
    not_believed: int = 0  # deleted triples no current belief asserted


def data_operations(text: str) -> list[tuple[str, list[ox.Quad]]]:
    """Parse an update request into its INSERT DATA and DELETE DATA quads, in order.

    Raises:
        QueryError: ERR_QUERY for malformed SPARQL (with the parser's position) or
            any other update form.
    """
    from pyparsing import ParseException
    from rdflib.plugins.sparql.algebra import translateUpdate
    from rdflib.plugins.sparql.parser import parseUpdate

    try:
        request = translateUpdate(parseUpdate(text))
    except ParseException as exc:
        raise QueryError(
            f"not valid SPARQL Update: {exc.msg} (line {exc.lineno}, column {exc.col})"
        ) from None
    except Exception as exc:  # rdflib's translation raises plain exceptions
        raise QueryError(f"not valid SPARQL Update: {exc}") from None
    operations = []
    for op in request.algebra:
        kind = _ALLOWED.get(op.name)
        if kind is None and _ground_delete(op):
            # DELETE { t } WHERE { t } with the same ground triples: DELETE DATA, as
            # rdflib's SPARQLUpdateStore.remove writes it.
            operations.append(("delete", _quads(op["delete"], _part(op, "withClause"))))
            continue
        if kind is None:
            raise QueryError(
                f"{op.name} is refused: only INSERT DATA (adopt triples as beliefs) and "
                "DELETE DATA (retract the beliefs that assert them) change this store, "
                "so that every change goes through the belief operations and policies",
                code=ErrorCode.QUERY,
            )
        operations.append((kind, _quads(op)))
    return operations


def _ground_delete(op: Any) -> bool:
    """Whether a Modify only deletes ground triples its WHERE matches exactly."""
    from rdflib.term import Literal, URIRef

    if op.name != "Modify" or "insert" in op or "using" in op or "delete" not in op:
        return False
    template = op["delete"]
    if _part(template, "quads"):
        return False
    triples = list(_part(template, "triples") or ())
    pattern = _bgp_triples(op["where"])
    ground = all(
        isinstance(term, URIRef | Literal) for triple in triples for term in triple
    )
    return (
        bool(triples)
        and ground
        and pattern is not None
        and set(pattern) == set(triples)
    )


def _part(node: Any, key: str) -> Any:
    """A part of an rdflib algebra node, or None (its ``get`` returns the key itself)."""
    return node[key] if key in node else None


def _bgp_triples(node: Any) -> list[Any] | None:
    """The triples of a WHERE made only of basic graph patterns, else None."""
    name = getattr(node, "name", None)
    if name == "BGP":
        return list(_part(node, "triples") or ())
    if name == "Join":
        left, right = _bgp_triples(node["p1"]), _bgp_triples(node["p2"])
        return None if left is None or right is None else left + right
    return None


def _quads(op: Any, graph: Any = None) -> list[ox.Quad]:
    with_graph = f" {graph.n3()}" if graph is not None else ""
    lines = [
        f"{s.n3()} {p.n3()} {o.n3()}{with_graph} ."
        for s, p, o in _part(op, "triples") or ()
    ]
    for name, triples in (_part(op, "quads") or {}).items():
        lines += [f"{s.n3()} {p.n3()} {o.n3()} {name.n3()} ." for s, p, o in triples]
    try:
        return list(ox.parse("\n".join(lines), format=ox.RdfFormat.N_QUADS))
    except SyntaxError as exc:
        raise QueryError(f"cannot read the update's data: {exc}") from None


def update(
    store: GrainStore,
    text: str,
    *,
    namespace: str | None = None,
    confidence: float = 1.0,
    by: str | None = None,
    reason: str | None = None,
) -> UpdateReport:
    """Apply an update request to ``store`` as belief operations (see the module).

    Every operation is parsed before any is applied; each is atomic.

    Raises:
        QueryError: ERR_QUERY for malformed SPARQL or a refused update form.
        PolicyError: ERR_INVALIDATION_DENIED when a policy protects a belief that
            DELETE DATA would retract; nothing of that operation is written.
    """
    report = UpdateReport()
    for kind, quads in data_operations(text):
        if kind == "insert":
            data = ox.serialize(quads, format=ox.RdfFormat.N_QUADS) or b""
            adopted = store.import_(
                _io.BytesIO(data), format="nquads", namespace=namespace,
                confidence=confidence,
            )  # fmt: skip
            report.added += adopted.added
            report.believed += adopted.believed
        else:
            targets = list(_believers(store, quads, namespace, report))
            store.retract_all(targets, reason=reason or "SPARQL DELETE DATA", by=by)
            report.retracted += targets
    return report


def _believers(
    store: GrainStore,
    quads: Iterable[ox.Quad],
    namespace: str | None,
    report: UpdateReport,
) -> Iterable[str]:
    """The current beliefs (of the namespace, if given) that assert each quad."""
    backend, default = store.backend, ox.DefaultGraph()
    for quad in quads:
        s, o = skolem(quad.subject), skolem(quad.object)
        graph = (
            OMS.current
            if isinstance(quad.graph_name, ox.DefaultGraph)
            else quad.graph_name
        )
        found = False
        for q in backend.quads(None, RDF.subject, s, default):
            node = q.subject
            if not isinstance(node, ox.NamedNode) or not all(
                next(backend.quads(node, p, v, default), None) is not None
                for p, v in ((RDF.predicate, quad.predicate), (RDF.object, o))
            ):
                continue
            named = next(backend.quads(node, OMS.graph, None, default), None)
            if (OMS.current if named is None else named.object) != graph:
                continue
            if (
                next(backend.quads(node, OMS.systemTo, None, OMS.index), None)
                is not None
            ):
                continue
            grain = store.get(address_of(node))
            if namespace is None or grain.get("namespace", "shared") == namespace:
                found = True
                yield grain.address
        report.not_believed += not found
