"""Erasure: the one way anything leaves the store (spec §15.2 `delete`, §28.4.4).

One selector finds every grain in which a person appears, for erasure and for the
subject report alike: as subject, as object, as ``user_id``, ``session_id`` or
``run_id``, or as a text value anywhere in ``context`` or ``provenance_chain``; in
every namespace unless one is given; in NFC, whatever form the name is given in.
Erasing a grain removes every quad of it in one atomic update: the grain node and
its fields, the blob and any envelope, the index state, its evidence events, its
knowledge triple (unless another belief held asserts it), the disputes naming it. What stays is a tombstone, ``<grain> oms:erasedAt T`` in
``oms:index``: the address and the time, so that no import and no ``put`` brings
the grain back. The audit event names the address and the caller's reason.

A ``hold`` keeps a grain from erasure, its own or one whose scope covers it (a
``subtree`` ancestor's, a ``lineage`` member's). Grains derived from an
erased grain are reported, not touched: their blobs keep its address only.

Oxigraph keeps every string it has seen in its dictionary, so the erased text
stays in the store's files (or memory) until :meth:`GrainStore.vacuum` rewrites the
store; reports say so until then.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from ..backends.base import Backend
from ..codec.grain import Grain
from ..codec.schema import BELIEF
from ..errors import ErrorCode, NotFoundError, PolicyError, SchemaError
from ..rdf.mapping import (
    address_of,
    grain_iri,
    literal_value,
    millis_literal,
    truthy_triple,
)
from ..rdf.terms import entity
from ..rdf.vocab import OMS, PROV, RDF
from ..times import iso
from .lookup import believers
from .policy import effective_mode
from .protectors import any_policy, passed_on, protectors
from .state import check_texts

if TYPE_CHECKING:
    from . import GrainStore

DAY_MS = 86_400_000
REMAIN = (
    "the erased text remains in the store's files (Oxigraph never drops a string "
    "from its dictionary) until vacuum() rewrites the store"
)


@dataclass
class ErasureReport:
    """What an erasure did, and what it could not do."""

    erased: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # kept by a hold
    derived: list[str] = field(default_factory=list)  # derived from erased grains, kept
    vacuumed: bool = False  # the erased bytes left the store's files

    @property
    def complete(self) -> bool:
        """Whether everything selected is gone, bytes included."""
        return not self.held and (self.vacuumed or not self.erased)

    @property
    def remaining(self) -> list[str]:
        """What the erasure left, in words (empty when complete)."""
        notes = []
        if self.erased and not self.vacuumed:
            notes.append(REMAIN)
        if self.held:
            notes.append(f"{len(self.held)} grains are under a hold and were kept")
        return notes


@dataclass
class SubjectReport:
    """Every grain that names a person, with its index state and history (a DSAR)."""

    subject: str
    grains: list[dict[str, Any]]
    complete: bool
    notes: list[str] = field(default_factory=list)

    def records(self) -> list[dict[str, Any]]:
        """One flat record a grain (a DataFrame-ready list)."""
        return [
            {k: v for k, v in g.items() if k != "fields"} | dict(g["fields"])
            for g in self.grains
        ]

    def to_json(self) -> str:
        """Return the report as JSON text (bytes as {"$base64": ...})."""
        return json.dumps(
            {
                "subject": self.subject,
                "complete": self.complete,
                "notes": self.notes,
                "grains": self.grains,
            },
            ensure_ascii=False,
            indent=2,
            default=_json_default,
        )

    def frame(self) -> Any:
        import pandas

        return pandas.DataFrame.from_records(self.records())


def select(
    store: GrainStore,
    name: str,
    *,
    namespace: str | None = None,
    user_id: str | None = None,
) -> list[str]:
    """Addresses of the grains in which ``name`` (or ``user_id``) appears; both
    in NFC, as every stored text is (spec §2.1), so any spelling of it is found."""
    check_texts(name=name, namespace=namespace, user_id=user_id)
    if not any(n and n.strip() for n in (name, user_id)):
        # Nothing to look for finds nothing, and its report would read as done.
        raise SchemaError(
            f"expected a name (or a user_id) to look for; found {name!r}",
            code=ErrorCode.EMPTY,
            path="subject",
        )
    names = {unicodedata.normalize("NFC", n) for n in (name, user_id) if n}
    candidates: set[str] = set()
    backend = store.backend
    # Maps and lists are rdf:JSON literals: a name with a quote or a backslash is
    # escaped there, so its JSON spelling is looked for too.
    spellings = names | {json.dumps(n, ensure_ascii=False)[1:-1] for n in names}
    for text in spellings:
        rows = backend.query(
            "SELECT DISTINCT ?g ?text WHERE { ?g ?p ?o FILTER (CONTAINS(STR(?o), ?text)) }",
            {ox.Variable("text"): ox.Literal(text)},
        )
        candidates |= {
            address_of(row["g"]) for row in rows if isinstance(row["g"], ox.NamedNode)
        }
    for text in names:
        # Minted entity IRIs percent-encode the name: look them up in each namespace.
        for ns in _namespaces(store):
            iri = entity(text, ns, store.settings)
            for predicate in (RDF.subject, RDF.object):
                candidates |= {
                    address_of(q.subject)  # type: ignore[arg-type]
                    for q in backend.quads(None, predicate, iri, ox.DefaultGraph())
                }
    found = []
    for address in sorted(candidates):
        if not address or address not in store:
            continue
        grain = store.get(address)
        if namespace is not None and grain.namespace != namespace:
            continue
        if any(_names(grain, text) for text in names):
            found.append(address)
    return found


def _names(grain: Grain, text: str) -> bool:
    """Whether a grain names ``text`` in a position that refers to a person."""
    fields = grain.fields
    if text in (fields.get(name) for name in _PERSON_FIELDS):
        return True
    return any(
        _contains(fields.get(name), text)
        for name in ("context", "provenance_chain", "object")
    )


# The positions that name a person (spec §28.4.4: subject, object, session, run).
_PERSON_FIELDS = ("subject", "object", "user_id", "session_id", "run_id")


def _contains(value: Any, text: str) -> bool:
    if isinstance(value, str):
        return value == text
    if isinstance(value, Mapping):
        return any(_contains(v, text) or k == text for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_contains(v, text) for v in value)
    return False


def _namespaces(store: GrainStore) -> set[str]:
    return {
        str(q.object.value)  # type: ignore[union-attr]
        for q in store.backend.quads(None, OMS.namespace, None, ox.DefaultGraph())
    }


def erase(
    store: GrainStore,
    addresses: Iterable[str],
    *,
    reason: str,
    by: str | None = None,
    vacuum: bool = False,
) -> ErasureReport:
    """Erase grains in one atomic update; held grains are kept and reported.
    With ``vacuum``, then rewrite the store, also when nothing is left to erase
    but an earlier erasure was never vacuumed (a call stopped before it)."""
    report = _erase(store, addresses, reason=reason, by=by)
    if vacuum and (report.erased or erased_since_vacuum(store.backend)):
        store.vacuum()
        report.vacuumed = True
    return report


def _erase(
    store: GrainStore, addresses: Iterable[str], *, reason: str, by: str | None
) -> ErasureReport:
    check_texts(reason=reason, by=by)
    if not reason or not reason.strip():
        raise SchemaError(
            "an erasure needs a reason (it goes in the audit log)", path="reason"
        )
    report = ErasureReport()
    now = store.clock()
    with store.core.lock:
        targets = []
        for address in dict.fromkeys(addresses):
            grain = store.get(address)
            if _under_hold(store, address, now):
                report.held.append(address)
            else:
                targets.append(grain)
        if not targets:
            return report
        ops = [_forget(grain) for grain in targets]
        leaving = _knowledge_leaving(store, targets)
        insert: list[Any] = _protection_kept(store, targets)
        for grain in targets:
            node = grain_iri(grain.address)
            insert.append(ox.Quad(node, OMS.erasedAt, millis_literal(now), OMS.index))
            insert += store.audit_rows(
                "erase", target=grain.address, actor=by, reason=reason, at=now
            )
        store.core.write(leaving, insert, before=" ;\n".join(ops))
        store.core.forget(g.address for g in targets)
        report.erased = [g.address for g in targets]
        erased = set(report.erased)
        report.derived = sorted(
            {
                address_of(q.subject)  # type: ignore[arg-type]
                for a in erased
                for q in store.backend.quads(
                    None, PROV.wasDerivedFrom, grain_iri(a), ox.DefaultGraph()
                )
            }
            - erased
        )
    return report


def _protection_kept(store: GrainStore, targets: list[Grain]) -> list[ox.Quad]:
    """Markers keeping the protection the erased grains pass on (spec §8.4: a
    store may keep a protected-root marker per grain). A ``subtree`` policy
    reaches a grain through the grains it derives from, a ``lineage`` policy
    through its supersession chain: erased, a grain between them would cut the
    walk, and the grains after it would lose a protection no one lifted. So
    each grain derived from an erased one, or in its chain, is marked with the
    grains whose policy reaches it, found before the erasure."""
    if not any_policy(store.core):
        return []
    erased = {g.address for g in targets}
    reached: set[str] = set()
    for grain in targets:
        reached.update(g.address for g in store.questions.derived(grain.address))
        reached.update(g.address for g in store.questions.history(grain.address))
    marks = []
    for address in sorted(reached - erased):
        node = grain_iri(address)
        for marker, hops in passed_on(store.core, store.questions, address).items():
            if marker not in erased:
                marks.append(
                    ox.Quad(node, OMS.protectedBy, grain_iri(marker), OMS.index)
                )
            if marker not in erased and hops:  # a subtree's: how far up it is
                far = ox.Literal(f"{marker} {hops}")
                marks.append(ox.Quad(node, OMS.subtreeHops, far, OMS.index))
    return marks


def _under_hold(store: GrainStore, address: str, now: int) -> bool:
    """Whether a hold covers the grain: its own, or one whose scope reaches it (a
    ``subtree`` ancestor's, a ``lineage`` member's; spec §8.3, §8.4)."""
    return any(
        effective_mode(p.policy, now) == "hold"
        for p in protectors(store.core, store.questions, address)
    )


def _forget(grain: Grain) -> str:
    """SPARQL update operations removing every quad of one grain's node, index
    state, evidence, disputes and the protection it passed on (no prologue);
    its knowledge triple is
    :func:`_knowledge_leaving`'s.

    The node's rows are looked for in every graph but the knowledge graphs
    (``oms:current`` and those a grain names by ``oms:graph``): there the node
    is the subject of another belief's triple (one about this grain), which is
    that belief's to keep."""
    g = str(grain_iri(grain.address))
    idx, oms = str(OMS.index), "https://w3id.org/oms-rdf/ns#"
    return f"""DELETE {{ GRAPH {idx} {{ ?e ?p ?o }} }}
WHERE {{ GRAPH {idx} {{ ?e <{oms}evidenceFor> {g} . ?e ?p ?o }} }} ;
DELETE {{ GRAPH {idx} {{ ?r <{oms}conflictsWith> {g} }} }}
WHERE {{ GRAPH {idx} {{ ?r <{oms}conflictsWith> {g} }} }} ;
DELETE {{ GRAPH {idx} {{ ?r <{oms}protectedBy> {g} }} }}
WHERE {{ GRAPH {idx} {{ ?r <{oms}protectedBy> {g} }} }} ;
DELETE {{ GRAPH {idx} {{ ?r <{oms}subtreeHops> ?h }} }}
WHERE {{ GRAPH {idx} {{ ?r <{oms}subtreeHops> ?h
  FILTER (STRSTARTS(?h, "{grain.address} ")) }} }} ;
DELETE {{ {g} ?p ?o }} WHERE {{ {g} ?p ?o }} ;
DELETE {{ GRAPH ?x {{ {g} ?p ?o }} }} WHERE {{ GRAPH ?x {{ {g} ?p ?o }}
  FILTER (?x != <{oms}current> && NOT EXISTS {{ ?k <{oms}graph> ?x }}) }}"""


def _knowledge_leaving(store: GrainStore, targets: list[Grain]) -> list[ox.Quad]:
    """The knowledge triples of erased beliefs that no other belief held
    (:func:`.lookup.believers`) keeps asserting."""
    erased = {grain_iri(g.address) for g in targets}
    leaving: dict[ox.Quad, None] = {}
    for grain in targets:
        quad = truthy_triple(grain, store.settings)
        if quad is None or quad in leaving:
            continue
        others = [
            n
            for n in believers(store.backend, quad, facts=store.core.facts)
            if n not in erased
        ]
        if not others:
            leaving[quad] = None
    return list(leaving)


def erased_at(backend: Backend, address: str) -> int | None:
    """When a grain was erased, or None: its tombstone."""
    quad = next(backend.quads(grain_iri(address), OMS.erasedAt, None, OMS.index), None)
    if quad is None:
        return None
    value: int = literal_value(quad.object)  # type: ignore[arg-type]
    return value


def erased_addresses(backend: Backend) -> set[str]:
    """The addresses of every erased grain (its tombstones)."""
    return {
        address_of(q.subject)  # type: ignore[arg-type]
        for q in backend.quads(None, OMS.erasedAt, None, OMS.index)
    }


def erased_since_vacuum(backend: Backend) -> bool:
    """Whether a grain was erased since the store's last vacuum (or there was
    none): its text may still be in the store's files."""
    erased = [
        literal_value(q.object)  # type: ignore[arg-type]
        for q in backend.quads(None, OMS.erasedAt, None, OMS.index)
    ]
    if not erased:
        return False
    vacuumed = [
        literal_value(at.object)  # type: ignore[arg-type]
        for event in backend.quads(None, OMS.operation, ox.Literal("vacuum"), OMS.audit)
        for at in backend.quads(event.subject, OMS.at, None, OMS.audit)
    ]
    return bool(max(erased) >= max(vacuumed, default=max(erased)))


def refuse_erased(backend: Backend, address: str) -> None:
    """Raise when a grain was erased: one-way means no way back in."""
    when = erased_at(backend, address)
    if when is not None:
        raise PolicyError(
            f"grain {address[:12]}… was erased on {iso(when)}; an erased grain never "
            "comes back (spec §15.2: erasure is one-way)",
            code=ErrorCode.INVALIDATION_DENIED,
        )


def report(
    store: GrainStore,
    name: str,
    *,
    namespace: str | None = None,
    user_id: str | None = None,
) -> SubjectReport:
    """The subject report (DSAR): every grain the selector finds, with its state."""
    grains = []
    for address in select(store, name, namespace=namespace, user_id=user_id):
        grain = store.get(address)
        state = store.status(address)
        history = (
            [g.address for g in store.history(address)]
            if grain.type_byte == BELIEF.byte
            else [address]
        )
        grains.append(
            {
                "address": address,
                "type": grain.get("type"),
                "status": state.status,
                "verification": state.verification,
                "superseded_by": state.superseded_by,
                "system_to": None if state.system_to is None else iso(state.system_to),
                "history": history,
                "fields": _plain(dict(grain.fields)),
            }
        )
    notes = [
        "every grain of this store was examined: subject, object, user_id, "
        "session_id, run_id, and text "
        "values in context and provenance_chain, in "
        + (f"namespace {namespace!r}" if namespace else "every namespace")
    ]
    complete = not store.read_only
    if not complete:  # a view beside the writing process, as of its opening
        notes.append(
            "the store was opened read-only beside a writer: grains written since "
            "are not in this report"
        )
    return SubjectReport(name, grains, complete=complete, notes=notes)


def due(store: GrainStore, now: int, sla_days: float) -> Iterator[str]:
    """Grains pending erasure whose SLA has passed at ``now``."""
    for quad in store.backend.quads(None, OMS.pendingErasure, None, OMS.index):
        marked: int = literal_value(quad.object)  # type: ignore[arg-type]
        if marked + sla_days * DAY_MS <= now:
            yield address_of(quad.subject)  # type: ignore[arg-type]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        import base64

        return {"$base64": base64.b64encode(value).decode()}
    raise TypeError(f"not JSON: {type(value).__name__}")


def check_found(store: GrainStore, address: str) -> str:
    """The address of a stored grain; an erased one is named as such."""
    try:
        return store.resolve(address)
    except NotFoundError:
        if len(address) == 64 and erased_at(store.backend, address) is not None:
            raise NotFoundError(f"grain {address[:12]}… was erased") from None
        raise
