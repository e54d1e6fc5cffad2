"""SPARQL Update as belief operations: INSERT DATA adopts, DELETE DATA retracts.

A SPARQL user adds and removes knowledge without the grain API, and no policy can
be bypassed: ``INSERT DATA`` adopts each triple as a belief (the same mapping and
checks as an import), ``DELETE DATA`` retracts the current beliefs that assert
those triples through the policies. A request is one transaction: all of its
operations are checked, in order, before anything is written, and then written
in one atomic write through the store's write path, or (any refused) not at all.
A ``soft_locked`` belief is retracted only with the caller's ``reason``. Any
other update form (``DELETE/INSERT ... WHERE``, ``LOAD``, ``CLEAR``, ``DROP``, ...)
is refused: it would rewrite the store's graphs instead of revising beliefs. The
one exception is ``DELETE { t } WHERE { t }`` over the same ground triples, which
means ``DELETE DATA`` (rdflib's ``SPARQLUpdateStore`` removes triples that way).

rdflib parses the request (pyoxigraph exposes no update parser).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyoxigraph as ox

from ..codec.grain import Grain
from ..errors import ErrorCode, QueryError
from ..rdf.mapping import address_of
from ..rdf.terms import skolem
from ..rdf.vocab import OMS, RDF
from ..store import GrainStore
from .adopt import adopted_grain

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
    from rdflib.plugins.sparql.parserutils import CompValue

    name = node.name if isinstance(node, CompValue) else None
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

    One request is one transaction. Every operation is parsed and checked first,
    in order, each seeing what the ones before it would do (a triple deleted and
    then inserted again is a new belief; one inserted and then deleted is not
    kept); then everything is written in one atomic write, with one ``update``
    audit event beside the retractions' own. A refused request writes nothing.

    ``reason`` is the caller's: it is recorded with each retraction and is the
    justification a ``soft_locked`` belief needs (spec §8.3). Without it the
    retractions are recorded as "SPARQL DELETE DATA", and a request that would
    retract a soft_locked belief is refused.

    Raises:
        QueryError: ERR_QUERY for malformed SPARQL or a refused update form.
        SchemaError: ERR_SCHEMA for inserted data a belief cannot hold (a reserved
            graph, an RDF 1.2 triple term).
        PolicyError: ERR_INVALIDATION_DENIED when a policy protects a belief that
            DELETE DATA would retract (soft_locked: without ``reason``).
    """
    operations = data_operations(text)
    report = UpdateReport()
    with store.core.lock:  # the checks and the write see one state of the store
        plan = _Plan(store, namespace, confidence, report)
        for kind, quads in operations:
            if kind == "insert":
                plan.insert(quads)
            else:
                plan.delete(quads)
        plan.write(by=by, reason=reason)
    return report


_Claim = tuple[Any, Any, Any, Any]  # subject, predicate, object, knowledge graph


class _Plan:
    """A request's changes, checked in order and held until its one write."""

    def __init__(
        self,
        store: GrainStore,
        namespace: str | None,
        confidence: float,
        report: UpdateReport,
    ) -> None:
        self.store, self.namespace = store, namespace
        self.confidence, self.report = confidence, report
        self.created = store.clock()  # the request's beliefs are adopted at one time
        self.new: dict[str, Grain] = {}  # address -> belief to put
        # what the new beliefs assert -> their addresses (a claim may have several,
        # one per namespace)
        self.claims: dict[_Claim, list[str]] = {}
        self.leaving: dict[str, None] = {}  # stored beliefs to retract, in order

    def insert(self, quads: list[ox.Quad]) -> None:
        """Adopt each triple as a belief unless one (new or stored) asserts it."""
        labels = _labels(quads)
        for quad in quads:
            terms = (quad.subject, quad.predicate, quad.object, quad.graph_name)
            quad = ox.Quad(*(labels(t) for t in terms))
            grain = adopted_grain(
                quad,
                self.store,
                namespace=self.namespace,
                confidence=self.confidence,
                created=self.created,
            )
            ns = grain.namespace
            claim = _claim_of(quad)
            if grain.address in self.new or grain.address in self.store:
                # The same bytes again: put is a no-op (believed, unless retracted).
                self.report.believed += (
                    grain.address in self.new
                    or grain.address in self._stored(claim, ns)
                )
                continue
            if self._pending(claim, ns) or any(True for _ in self._stored(claim, ns)):
                self.report.believed += 1
                continue
            self.new[grain.address] = grain
            self.claims.setdefault(claim, []).append(grain.address)
            self.report.added += 1

    def delete(self, quads: list[ox.Quad]) -> None:
        """Retract the current beliefs (new in this request, or stored) of each triple."""
        for quad in quads:
            claim = _claim_of(quad)
            found = False
            for address in self._pending(claim, self.namespace):
                del self.new[address]  # never written
                self.claims[claim].remove(address)
                self.report.added -= 1
                found = True
            for address in list(self._stored(claim, self.namespace)):
                self.leaving[address] = None
                self.report.retracted.append(address)
                found = True
            self.report.not_believed += not found

    def _pending(self, claim: _Claim, namespace: str | None) -> list[str]:
        """The beliefs new in this request that assert ``claim``."""
        return [
            address
            for address in self.claims.get(claim, ())
            if namespace is None or self.new[address].namespace == namespace
        ]

    def _stored(self, claim: _Claim, namespace: str | None) -> Iterator[str]:
        """The stored current beliefs (of the namespace, if given) that assert
        ``claim`` and that this request does not retract."""
        s, p, o, graph = claim
        backend, default = self.store.backend, ox.DefaultGraph()
        if next(backend.quads(s, p, o, graph), None) is None:
            return  # nobody asserts it now: the common case, one lookup
        for q in list(backend.quads(None, RDF.subject, s, default)):
            node = q.subject
            if not isinstance(node, ox.NamedNode) or not all(
                next(backend.quads(node, p_, v, default), None) is not None
                for p_, v in ((RDF.predicate, p), (RDF.object, o))
            ):
                continue
            named = next(backend.quads(node, OMS.graph, None, default), None)
            if (OMS.current if named is None else named.object) != graph:
                continue
            if next(backend.quads(node, OMS.systemTo, None, OMS.index), None):
                continue
            address = address_of(node)
            if address in self.leaving:
                continue
            grain = self.store.get(address)
            if namespace is None or grain.namespace == namespace:
                yield address

    def write(self, *, by: str | None, reason: str | None) -> None:
        """Check the retractions and the new beliefs, then write all in one write."""
        store = self.store
        change = store.invalidation.plan_void(
            list(self.leaving),
            "retract",
            reason=reason or "SPARQL DELETE DATA",
            justification=reason,
            by=by,
        )
        for grain in self.new.values():
            store.check_new(grain, self.new)
        if not self.new and not change.current:
            return  # nothing changes: no write, no audit event
        try:
            rows = [row for grain in self.new.values() for row in store.rows_for(grain)]
            audit = store.audit_rows("update", actor=by, count=len(self.new))
            store.core.write(
                change.delete, [*change.insert, *rows, *audit], current=change.current
            )
        except BaseException:
            store.core.forget(self.new)  # the search index took the new beliefs
            raise


def _claim_of(quad: ox.Quad) -> _Claim:
    """What a quad asserts, as the store keeps it: blank nodes skolemised, the
    default graph as the current knowledge."""
    graph = quad.graph_name
    return (
        skolem(quad.subject),
        quad.predicate,
        skolem(quad.object),
        OMS.current if isinstance(graph, ox.DefaultGraph) else skolem(graph),
    )


def _labels(quads: list[ox.Quad]) -> Callable[[Any], Any]:
    """Blank node labels for one INSERT DATA, as an import of its N-Quads gives
    them: from the bytes' digest and the order of first appearance, so the same
    operation again asserts the same terms (and adds nothing)."""
    data = ox.serialize(quads, format=ox.RdfFormat.N_QUADS) or b""
    digest = hashlib.sha256(data).hexdigest()
    seen: dict[str, ox.BlankNode] = {}

    def label(term: Any) -> Any:
        if not isinstance(term, ox.BlankNode):
            return term
        if term.value not in seen:
            n = len(seen)
            text = "b" + hashlib.sha256(f"{digest}:{n}".encode()).hexdigest()[:32]
            seen[term.value] = ox.BlankNode(text)
        return seen[term.value]

    return label
