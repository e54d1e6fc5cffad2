"""GrainStore: grains as a bi-temporal knowledge graph in Oxigraph.

Graphs: the default graph holds the immutable projection of every grain;
``oms:blobs`` its canonical blob; ``oms:index`` the mutable index layer (status,
supersession, retraction, contradiction, verification); ``oms:current`` the plain
``s p o`` triples of beliefs that are current and not contradicted; ``oms:audit``
the log of operations. Every change is one atomic write made after all checks, so
a refused or failed operation leaves the store exactly as it was.

>>> from oms_rdf.grain import Belief
>>> store = GrainStore(clock=lambda: 1_800_000_000_000)
>>> old = store.put(Belief("alice", "works_at", "Acme", 0.9, created_at=1_700_000_000_000))
>>> new = store.supersede(old, {"type": "belief", "subject": "alice", "relation": "works_at",
...                             "object": "Initech", "confidence": 0.95,
...                             "created_at": 1_750_000_000_000})
>>> [g["object"] for g in store.beliefs("alice")]
['Initech']
>>> [g["object"] for g in store.history(new)]
['Acme', 'Initech']
"""

from __future__ import annotations

import base64
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from pyoxigraph import (
    DefaultGraph,
    Literal,
    NamedNode,
    Quad,
    QuerySolutions,
    RdfFormat,
    Variable,
)

from .backends import Backend, LocalBackend
from .codec import DEFAULT_NAMESPACE, EPOCH, MS, check_address
from .errors import ErrorCode, NotFoundError, PolicyError, StoreError
from .grain import Grain, now_ms
from .mapping import (
    NIH_PREFIX,
    MappingSettings,
    Row,
    address_of,
    grain_iri,
    grain_rows,
    literal_value,
    millis_literal,
    rows_to_nquads,
    truthy_row,
    truthy_triple,
)
from .policy import MAX_HOPS, Protector, check, is_protected
from .vocab import DEFAULT_BASE, OMS, RDF, XSD

__all__ = ["GrainStore", "IndexState"]

GrainLike = Grain | Mapping[str, Any] | bytes
TimeLike = int | datetime | None
DEFAULT = DefaultGraph()
CACHE_SIZE = 65_536  # decoded grains kept by GrainStore.get
STATUSES = ("active", "superseded", "retracted")
VERIFICATIONS = ("unverified", "verified", "disputed", "contradicted")
# OMS 1.6 spellings of verification status, accepted as synonyms.
VERIFICATION_ALIASES = {"contested": "contradicted"}


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexState:
    """The index layer of one grain: what the store knows about it beside the blob."""

    address: str
    status: str  # active | superseded | retracted
    verification: str  # unverified | verified | disputed | contradicted
    superseded_by: str | None = None
    system_to: int | None = None  # epoch ms the grain stopped being current
    voided_at: int | None = None  # epoch ms of a retraction or contradiction
    invalidation_type: str | None = None
    reason: str | None = None
    initiator: str | None = None

    @property
    def is_current(self) -> bool:
        """Whether the grain is current: active, not closed, not contradicted."""
        return self.system_to is None


def _query(name: str) -> str:
    return resources.files("oms_rdf.queries").joinpath(f"{name}.rq").read_text()


def _to_millis(value: TimeLike, clock: Callable[[], int]) -> int:
    if value is None:
        return clock()
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise StoreError(
                "a naive datetime has no time zone; give an aware one",
                code=ErrorCode.SCHEMA,
            )
        return (value - EPOCH) // MS
    if type(value) is not int:
        raise StoreError(
            f"expected epoch milliseconds or a datetime, found {type(value).__name__}",
            code=ErrorCode.SCHEMA,
        )
    return value


def _millis_of(lit: Any) -> int:
    value: int = literal_value(lit)
    return value


def _row(quad: Quad) -> Row:
    graph = quad.graph_name
    g = "" if isinstance(graph, DefaultGraph) else str(graph)
    return str(quad.subject), str(quad.predicate), str(quad.object), g


def _data(rows: Iterable[Row]) -> str:
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
        ops.append(f"DELETE DATA {{\n{_data(_rows(delete))}\n}}")
    if insert:
        ops.append(f"INSERT DATA {{\n{_data(_rows(insert))}\n}}")
    return " ;\n".join(ops)


def _rows(items: Iterable[Quad | Row]) -> list[Row]:
    return [item if isinstance(item, tuple) else _row(item) for item in items]


class GrainStore:
    """A bi-temporal belief store over Oxigraph.

    Args:
        path: None for an in-memory store, else the directory of an on-disk
            (RocksDB) store, created if missing and reopened if present.
        base_iri: prefix of entity and relation IRIs; recorded in the store.
        entity_relations: relations whose text objects become entity IRIs.
        clock: epoch-ms clock for retraction, contradiction and status changes
            (default: the wall clock); injectable for tests and replays.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        base_iri: str | None = None,
        entity_relations: Iterable[str] = (),
        clock: Callable[[], int] | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.backend: Backend = backend if backend is not None else LocalBackend(path)
        self.clock = clock or now_ms
        self._lock = threading.RLock()
        # Decoded grains by address. A blob never changes under its address and the
        # store deletes nothing, so entries never go stale; the cache only spares
        # decoding the same blob again (supersede reads a grain several times).
        self._cache: OrderedDict[str, Grain] = OrderedDict()
        self.settings = self._settings(base_iri, frozenset(entity_relations))

    # --- settings ---------------------------------------------------------------

    def _settings(
        self, base_iri: str | None, relations: frozenset[str]
    ) -> MappingSettings:
        node = OMS.settings
        stored_base = [
            _value(q.object)
            for q in self.backend.quads(node, OMS.baseIri, None, OMS.index)
        ]
        stored_rel = frozenset(
            _value(q.object)
            for q in self.backend.quads(node, OMS.entityRelation, None, OMS.index)
        )
        if stored_base:
            if base_iri is not None and base_iri != stored_base[0]:
                raise StoreError(
                    f"this store was made with base IRI {stored_base[0]!r}, not {base_iri!r}; "
                    "the mapping must stay a function of the blob and the store's settings",
                    code=ErrorCode.CONFLICT,
                )
            if relations and relations != stored_rel:
                raise StoreError(
                    f"this store was made with entity relations {sorted(stored_rel)}, "
                    f"not {sorted(relations)}",
                    code=ErrorCode.CONFLICT,
                )
            return MappingSettings(stored_base[0], stored_rel)
        settings = MappingSettings(base_iri or DEFAULT_BASE, relations)
        quads = [Quad(node, OMS.baseIri, Literal(settings.base_iri), OMS.index)]
        quads += [
            Quad(node, OMS.entityRelation, Literal(r), OMS.index)
            for r in sorted(relations)
        ]
        self.backend.add(quads)
        return settings

    # --- reading ----------------------------------------------------------------

    def __contains__(self, address: object) -> bool:
        if not isinstance(address, str) or len(address) != 64:
            return False
        return (
            next(
                self.backend.quads(grain_iri(address), OMS.blob, None, OMS.blobs), None
            )
            is not None
        )

    def __len__(self) -> int:
        """Return the number of grains."""
        return sum(1 for _ in self.backend.quads(None, OMS.blob, None, OMS.blobs))

    def get(self, address: str) -> Grain:
        """Return the grain with this address, re-verified from its blob.

        Raises:
            IntegrityError: ERR_HASH_FORMAT / ERR_HASH_LENGTH for a malformed address,
                ERR_INTEGRITY if the stored blob no longer hashes to it.
            NotFoundError: ERR_NOT_FOUND when no such grain is stored.
        """
        cached = self._cache.get(address)
        if cached is not None:
            self._cache.move_to_end(address)
            return cached
        check_address(address)
        quad = next(
            self.backend.quads(grain_iri(address), OMS.blob, None, OMS.blobs), None
        )
        if quad is None:
            raise NotFoundError(f"no grain {address} in this store")
        grain = Grain.from_blob(base64.b64decode(_value(quad.object)), address=address)
        self._cache[address] = grain
        if len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return grain

    def _resolve(self, ref: str | Grain) -> str:
        address = ref.address if isinstance(ref, Grain) else check_address(ref)
        if address not in self._cache and address not in self:
            raise NotFoundError(f"no grain {address} in this store")
        return address

    def status(self, address: str | Grain) -> IndexState:
        """Return the index state of a stored grain.

        Raises:
            NotFoundError: ERR_NOT_FOUND when no such grain is stored.
        """
        address = self._resolve(address)
        values: dict[str, Any] = {}
        for q in self.backend.quads(grain_iri(address), None, None, OMS.index):
            values[q.predicate.value] = q.object

        def text(p: NamedNode) -> str | None:
            term = values.get(p.value)
            return None if term is None else term.value

        def local(p: NamedNode, default: str) -> str:
            term = values.get(p.value)
            return default if term is None else term.value.rsplit("#", 1)[1]

        superseded = values.get(OMS.supersededBy.value)
        system_to = values.get(OMS.systemTo.value)
        voided = values.get(OMS.voidedAt.value)
        return IndexState(
            address=address,
            status=local(OMS.status, "active"),
            verification=local(OMS.verificationStatus, "unverified"),
            superseded_by=None if superseded is None else address_of(superseded),
            system_to=None if system_to is None else _millis_of(system_to),
            voided_at=None if voided is None else _millis_of(voided),
            invalidation_type=text(OMS.invalidationType),
            reason=text(OMS.invalidationReason),
            initiator=text(OMS.invalidationInitiator),
        )

    # --- writing ----------------------------------------------------------------

    def _grain(self, item: GrainLike) -> Grain:
        if isinstance(item, Grain):
            return item
        if isinstance(item, bytes | bytearray | memoryview):
            return Grain.from_blob(bytes(item))
        if isinstance(item, Mapping):
            return Grain.from_dict(item)
        raise StoreError(
            f"expected a Grain, a mapping of fields or blob bytes, found {type(item).__name__}",
            code=ErrorCode.SCHEMA,
        )

    def _new_rows(self, grain: Grain) -> list[Row]:
        """The quads of a new grain, its initial index state and its current triple."""
        rows = grain_rows(grain, self.settings)
        node = f"<{NIH_PREFIX}{grain.address}>"
        rows.append((node, _P_STATUS, _ACTIVE, _G_INDEX))
        rows.append((node, _P_VERIFICATION, _UNVERIFIED, _G_INDEX))
        current = truthy_row(grain, self.settings)
        if current is not None:
            rows.append(current)
        return rows

    def _load(self, rows: Iterable[Row]) -> None:
        """Add rows in one atomic load of N-Quads text."""
        self.backend.load(rows_to_nquads(rows).encode(), RdfFormat.N_QUADS)

    def _audit(
        self,
        operation: str,
        *,
        target: str | None = None,
        result: str | None = None,
        actor: str | None = None,
        reason: str | None = None,
        at: int | None = None,
        count: int | None = None,
        review: Sequence[str] = (),
    ) -> list[Quad]:
        node = NamedNode(f"urn:uuid:{uuid.uuid4()}")
        g = OMS.audit
        quads = [
            Quad(node, RDF.type, OMS.AuditEvent, g),
            Quad(node, OMS.operation, Literal(operation), g),
            Quad(node, OMS.at, millis_literal(self.clock() if at is None else at), g),
        ]
        if target is not None:
            quads.append(Quad(node, OMS.target, grain_iri(target), g))
        if result is not None:
            quads.append(Quad(node, OMS.result, grain_iri(result), g))
        if actor is not None:
            quads.append(Quad(node, OMS.actor, Literal(actor), g))
        if reason is not None:
            quads.append(Quad(node, OMS.reason, Literal(reason), g))
        if count is not None:
            quads.append(
                Quad(node, OMS.count, Literal(str(count), datatype=XSD.integer), g)
            )
        for note in review:
            quads.append(Quad(node, OMS.needsReview, Literal(note), g))
        return quads

    def put(self, item: GrainLike, /) -> str:
        """Store a grain; return its address. Storing the same bytes again is a no-op.

        Raises:
            DecodeError, EncodeError, SchemaError: the grain is invalid.
            PolicyError: ERR_INVALIDATION_DENIED when ``derived_from`` names a current
                protected grain with the same subject, relation and namespace: that
                is a supersession, which must go through :meth:`supersede`.
        """
        grain = self._grain(item)
        with self._lock:
            if grain.address in self:
                return grain.address
            self._check_put(grain)
            rows = self._new_rows(grain)
            rows += _rows(self._audit("put", target=grain.address))
            self._load(rows)
        return grain.address

    def put_many(
        self, items: Iterable[GrainLike], /, *, progress: bool = False
    ) -> list[str]:
        """Store many grains in one atomic write; return their addresses in order.

        Raises:
            as :meth:`put`; nothing is stored when any grain is refused.
        """
        grains = [self._grain(item) for item in items]
        with self._lock:
            rows: list[Row] = []
            seen: set[str] = set()
            fresh = []
            for grain in grains:
                if grain.address in seen or grain.address in self:
                    continue
                seen.add(grain.address)
                fresh.append(grain)
            batch = {g.address: g for g in fresh}
            iterator: Iterable[Grain] = fresh
            if progress:
                import click

                bar = click.progressbar(fresh, label="mapping grains", file=None)
                iterator = bar
            for grain in iterator:
                self._check_put(grain, batch)
                rows.extend(self._new_rows(grain))
            rows += _rows(self._audit("put_many", count=len(fresh)))
            self._load(rows)
        return [g.address for g in grains]

    def _check_put(
        self,
        grain: Grain,
        batch: Mapping[str, Grain] | None = None,
        *,
        exempt: str | None = None,
    ) -> None:
        """Refuse a supersession in disguise (spec §17 Level 2; design §4)."""
        parents = grain.get("derived_from")
        if not parents or grain.type_byte != 0x01:
            return
        now = self.clock()
        for parent in parents:
            if parent == exempt:
                continue  # the grain being superseded, through supersede itself
            if batch is not None and parent in batch:
                other = batch[parent]
            elif parent in self:
                other = self.get(parent)
                if not self.status(parent).is_current:
                    continue
            else:
                continue
            if other.type_byte != 0x01 or not is_protected(
                other.get("invalidation_policy"), now
            ):
                continue
            if _same_claim(grain, other):
                raise PolicyError(
                    f"put refused: derived_from names {parent[:12]}…, a current protected "
                    "belief with the same subject, relation and namespace; that is a "
                    "supersession, use store.supersede(old, new)",
                    code=ErrorCode.INVALIDATION_DENIED,
                    path="$.derived_from",
                )

    # --- protection -------------------------------------------------------------

    def _protectors(self, address: str) -> list[Protector]:
        grain = self.get(address)
        out = (
            [Protector(address, grain.get("invalidation_policy"), "own")]
            if grain.get("invalidation_policy") is not None
            else []
        )
        # subtree: policies of derivation ancestors within MAX_HOPS (spec §8.4, §8.5).
        frontier, seen = [grain], {address}
        for _ in range(MAX_HOPS):
            next_frontier = []
            for g in frontier:
                for parent in g.get("derived_from", ()):
                    if parent in seen or parent not in self:
                        continue
                    seen.add(parent)
                    ancestor = self.get(parent)
                    policy = ancestor.get("invalidation_policy")
                    if isinstance(policy, Mapping) and policy.get("scope") == "subtree":
                        out.append(Protector(parent, policy, "subtree ancestor"))
                    next_frontier.append(ancestor)
            frontier = next_frontier
        # lineage: policies anywhere in the supersession chain.
        for member in self.history(address):
            policy = member.get("invalidation_policy")
            if (
                member.address != address
                and isinstance(policy, Mapping)
                and policy.get("scope") == "lineage"
            ):
                out.append(Protector(member.address, policy, "lineage"))
        return out

    # --- index mutations --------------------------------------------------------

    def _current_removal(self, grain: Grain) -> list[Quad]:
        """The oms:current triple of a grain leaving the current view, unless shared."""
        triple = truthy_triple(grain, self.settings)
        if triple is None:
            return []
        s, p, o = triple
        others = self.backend.query(
            _QUERIES["shared_claim"],
            {
                Variable("s"): s,
                Variable("p"): p,
                Variable("o"): o,
                Variable("self"): grain_iri(grain.address),
            },
        )
        return [] if bool(others) else [Quad(s, p, o, OMS.current)]

    def supersede(
        self,
        old: str | Grain,
        new: GrainLike,
        *,
        justification: str | None = None,
        by: str | None = None,
        auth: Sequence[Any] = (),
        signer: Any = None,
    ) -> str:
        """Replace ``old`` by ``new`` atomically; return the new address.

        A mapping ``new`` without ``derived_from`` gets ``derived_from: [old]`` (the
        spec's supersession shape) and, when given, ``justification`` as its
        ``supersession_justification``. The old grain is closed at the new grain's
        system time (``system_valid_from``, else ``created_at``); it keeps describing
        the past up to the new grain's ``valid_from``.

        Raises:
            NotFoundError: ``old`` is not stored.
            PolicyError: ERR_INVALIDATION_DENIED when a policy protecting ``old``
                refuses; ERR_CONFLICT when ``old`` is no longer current; ERR_RANGE
                when the new grain is older than ``old``.
        """
        if auth or signer is not None:
            raise PolicyError(
                "signed supersession (auth=, signer=) is not supported yet",
                code=ErrorCode.INVALIDATION_DENIED,
            )
        with self._lock:
            old_address = self._resolve(old)
            old_grain = self.get(old_address)
            state = self.status(old_address)
            if not state.is_current:
                raise PolicyError(
                    f"{old_address[:12]}… is not current ({state.status}, "
                    f"{state.verification}"
                    + (
                        f", superseded by {state.superseded_by[:12]}…"
                        if state.superseded_by
                        else ""
                    )
                    + "); supersede the current grain instead",
                    code=ErrorCode.CONFLICT,
                )
            if isinstance(new, Mapping):
                fields = dict(new)
                if fields.get("derived_from") is None:
                    fields["derived_from"] = [old_address]
                if (
                    justification is not None
                    and fields.get("supersession_justification") is None
                ):
                    fields["supersession_justification"] = justification
                new_grain = Grain.from_dict(fields)
            else:
                new_grain = self._grain(new)
            if new_grain.address == old_address:
                raise PolicyError(
                    "a grain cannot supersede itself", code=ErrorCode.CONFLICT
                )
            at = _system_from(new_grain)
            if at < _system_from(old_grain):
                raise PolicyError(
                    f"the new grain's system time {at} is before the old grain's "
                    f"{_system_from(old_grain)}; a successor cannot be older",
                    code=ErrorCode.RANGE,
                )
            review = check(
                "supersede",
                self._protectors(old_address),
                now_ms=self.clock(),
                justification=new_grain.get("supersession_justification")
                or justification,
            )
            insert: list[Quad | Row] = []
            exists = new_grain.address in self
            if not exists:
                self._check_put(new_grain, exempt=old_address)
                insert += self._new_rows(new_grain)
            node = grain_iri(old_address)
            idx = OMS.index
            delete = [
                Quad(node, OMS.status, OMS.active, idx),
                *self._current_removal(old_grain),
            ]
            insert += [
                Quad(node, OMS.status, OMS.superseded, idx),
                Quad(node, OMS.supersededBy, grain_iri(new_grain.address), idx),
                Quad(node, OMS.systemTo, millis_literal(at), idx),
                Quad(node, OMS.invalidationType, Literal("superseded"), idx),
            ]
            if by is not None:
                insert.append(Quad(node, OMS.invalidationInitiator, Literal(by), idx))
            reason = new_grain.get("supersession_justification") or justification
            if reason:
                insert.append(Quad(node, OMS.invalidationReason, Literal(reason), idx))
            insert += self._audit(
                "supersede",
                target=old_address,
                result=new_grain.address,
                actor=by,
                reason=reason,
                review=review,
            )
            self.backend.update(update_request(delete, insert))
        return new_grain.address

    def retract(
        self,
        address: str | Grain,
        *,
        reason: str,
        by: str | None = None,
        at: TimeLike = None,
    ) -> None:
        """Retract a grain without replacement: it answers for no valid time from ``at`` on.

        Raises:
            NotFoundError: not stored. PolicyError: refused by a policy
            (ERR_INVALIDATION_DENIED) or already retracted (ERR_CONFLICT).
        """
        self._void(address, "retract", reason=reason, by=by, at=at)

    def contradict(
        self,
        address: str | Grain,
        *,
        by: str | None = None,
        reason: str | None = None,
        at: TimeLike = None,
    ) -> None:
        """Mark a grain contradicted: it leaves the current view and answers for no valid time from ``at`` on.

        Raises:
            NotFoundError: not stored. PolicyError: refused by a policy
            (ERR_INVALIDATION_DENIED) or already contradicted (ERR_CONFLICT).
        """
        self._void(address, "contradict", reason=reason, by=by, at=at)

    def _void(
        self,
        address: str | Grain,
        operation: str,
        *,
        reason: str | None,
        by: str | None,
        at: TimeLike,
    ) -> None:
        when = _to_millis(at, self.clock)
        with self._lock:
            address = self._resolve(address)
            grain = self.get(address)
            state = self.status(address)
            if state.voided_at is not None:
                raise PolicyError(
                    f"{address[:12]}… is already {'retracted' if state.status == 'retracted' else 'contradicted'}",
                    code=ErrorCode.CONFLICT,
                )
            if when < _system_from(grain):
                raise PolicyError(
                    f"cannot {operation} at {when}, before the grain entered the system at "
                    f"{_system_from(grain)}",
                    code=ErrorCode.RANGE,
                )
            review = check(
                operation,
                self._protectors(address),
                now_ms=self.clock(),
                justification=reason,
            )
            node, idx = grain_iri(address), OMS.index
            delete: list[Quad] = []
            insert = [Quad(node, OMS.voidedAt, millis_literal(when), idx)]
            if state.is_current:
                delete += self._current_removal(grain)
                insert.append(Quad(node, OMS.systemTo, millis_literal(when), idx))
            if operation == "retract":
                delete.append(Quad(node, OMS.status, getattr(OMS, state.status), idx))
                insert.append(Quad(node, OMS.status, OMS.retracted, idx))
                kind = "retraction"
            else:
                delete.append(
                    Quad(
                        node,
                        OMS.verificationStatus,
                        getattr(OMS, state.verification),
                        idx,
                    )
                )
                insert.append(Quad(node, OMS.verificationStatus, OMS.contradicted, idx))
                kind = "contradiction"
            if state.invalidation_type is None:
                insert.append(Quad(node, OMS.invalidationType, Literal(kind), idx))
                if reason:
                    insert.append(
                        Quad(node, OMS.invalidationReason, Literal(reason), idx)
                    )
                if by is not None:
                    insert.append(
                        Quad(node, OMS.invalidationInitiator, Literal(by), idx)
                    )
            insert += self._audit(
                operation,
                target=address,
                actor=by,
                reason=reason,
                at=when,
                review=review,
            )
            self.backend.update(update_request(delete, insert))

    def set_verification(
        self,
        address: str | Grain,
        status: str,
        *,
        by: str | None = None,
        at: TimeLike = None,
    ) -> None:
        """Set the verification status: ``unverified``, ``verified`` or ``disputed``.

        ``contradicted`` (or its 1.6 spelling ``contested``) goes through
        :meth:`contradict` and its policy check. Disputed and verified grains stay
        current.

        Raises:
            PolicyError: ERR_SCHEMA for an unknown status; as :meth:`contradict`.
        """
        status = VERIFICATION_ALIASES.get(status, status)
        if status == "contradicted":
            self.contradict(address, by=by, at=at)
            return
        if status not in ("unverified", "verified", "disputed"):
            raise PolicyError(
                f"verification status must be one of {list(VERIFICATIONS)}; found {status!r}",
                code=ErrorCode.SCHEMA,
            )
        when = _to_millis(at, self.clock)
        with self._lock:
            address = self._resolve(address)
            state = self.status(address)
            if state.verification == "contradicted":
                raise PolicyError(
                    f"{address[:12]}… is contradicted; a contradiction is not undone by "
                    "set_verification",
                    code=ErrorCode.CONFLICT,
                )
            node = grain_iri(address)
            delete = [
                Quad(
                    node,
                    OMS.verificationStatus,
                    getattr(OMS, state.verification),
                    OMS.index,
                )
            ]
            insert = [
                Quad(node, OMS.verificationStatus, getattr(OMS, status), OMS.index)
            ]
            insert += self._audit(
                "set_verification", target=address, actor=by, reason=status, at=when
            )
            self.backend.update(update_request(delete, insert))

    # --- questions --------------------------------------------------------------

    def beliefs(
        self,
        subject: str | None = None,
        relation: str | None = None,
        *,
        namespace: str | None = None,
        valid_at: TimeLike = None,
        as_of: TimeLike = None,
    ) -> list[Grain]:
        """Return the beliefs true at ``valid_at`` as known at ``as_of``.

        ``as_of`` (system time) defaults to now; ``valid_at`` (valid time) defaults to
        ``as_of``, so ``beliefs(as_of=T)`` is "what did we believe at T". Ordered by
        confidence, highest first.
        """
        known = _to_millis(as_of, self.clock)
        valid = known if valid_at is None else _to_millis(valid_at, self.clock)
        bindings: dict[Variable, Any] = {
            Variable("asOf"): millis_literal(known),
            Variable("validAt"): millis_literal(valid),
        }
        anchor = "?g rdf:subject ?entity ."  # no text bound: every belief
        for name, value in (
            ("namespace", namespace),
            ("relation", relation),
            ("subject", subject),
        ):
            if value is not None:
                bindings[Variable(name)] = Literal(value)
                anchor = _ANCHORS[name]  # the last bound one is the most selective
        query = _QUERIES["beliefs"].replace("#ANCHOR", anchor)
        return self._grains(self.backend.query(query, bindings))

    def history(self, address: str | Grain) -> list[Grain]:
        """Return the supersession chain through a grain, oldest first (forks included)."""
        address = self._resolve(address)
        return self._chronological(
            self.backend.query(
                _QUERIES["history"], {Variable("target"): grain_iri(address)}
            )
        )

    def derived(self, address: str | Grain) -> list[Grain]:
        """Return the grains derived from a grain, transitively, oldest first."""
        address = self._resolve(address)
        return self._chronological(
            self.backend.query(
                _QUERIES["derived"], {Variable("target"): grain_iri(address)}
            )
        )

    def _chronological(self, solutions: QuerySolutions) -> list[Grain]:
        """The grains of the solutions, oldest system time first."""
        return sorted(
            self._grains(solutions), key=lambda g: (_system_from(g), g.address)
        )

    def _grains(self, solutions: QuerySolutions) -> list[Grain]:
        return [self.get(address_of(row["g"])) for row in solutions]

    def query(self, sparql: str, /, **bindings: Any) -> Any:
        """Run SPARQL over the store; keyword arguments bind variables (no string formatting).

        Python values become RDF terms: str → literal, int/float/bool → typed
        literal, datetime → xsd:dateTime, Grain → its statement node.

        >>> store = GrainStore()
        >>> [r["n"].value for r in store.query("SELECT ?x (STR(?x) AS ?n) WHERE {}", x="hi")]
        ['hi']

        pyoxigraph binds only variables that a SELECT projects (or any in ASK).
        """
        return self.backend.query(
            sparql, {Variable(k): _term(v) for k, v in bindings.items()}
        )

    def export(self, dest: Any, /, *, format: str | None = None) -> int:
        """Write the store to a path or binary file; see :mod:`oms_rdf.io` for formats."""
        from .io import export  # io builds on the store: imported when used

        return export(self, dest, format=format)

    def import_(self, src: Any, /, *, format: str | None = None, **options: Any) -> Any:
        """Import a path or binary file, all or nothing; see :func:`oms_rdf.io.import_`."""
        from .io import import_

        return import_(self, src, format=format, **options)

    def to_rdflib(self) -> Any:
        """Return the store's graphs as an ``rdflib.Dataset`` (a copy)."""
        from .io import to_rdflib

        return to_rdflib(self)

    @classmethod
    def from_rdflib(cls, dataset: Any) -> GrainStore:
        """Return a new in-memory store holding an ``rdflib.Dataset`` of our graphs."""
        from .io import from_rdflib

        return from_rdflib(dataset)

    def rebuild_current(self) -> None:
        """Rebuild graph ``oms:current`` from the grains and the index, in one update."""
        with self._lock:
            self.backend.update(_QUERIES["rebuild_current"])

    def flush(self) -> None:
        """Make every write of an on-disk store durable."""
        flush = getattr(self.backend, "flush", None)
        if flush is not None:
            flush()


# The first pattern of the beliefs query, by the most selective bound text.
_ANCHORS = {
    "subject": "?g oms:subjectText ?subject .",
    "relation": "?g oms:relationText ?relation .",
    "namespace": "?g oms:namespace ?namespace .",
}
_QUERIES = {
    name: _query(name)
    for name in ("beliefs", "history", "derived", "shared_claim", "rebuild_current")
}


def _term(value: Any) -> Any:
    if isinstance(value, NamedNode | Literal):
        return value
    if isinstance(value, Grain):
        return grain_iri(value.address)
    if isinstance(value, bool):
        return Literal("true" if value else "false", datatype=XSD.boolean)
    if isinstance(value, int):
        return Literal(str(value), datatype=XSD.integer)
    if isinstance(value, float):
        return Literal(repr(value), datatype=XSD.double)
    if isinstance(value, datetime):
        return millis_literal(_to_millis(value, now_ms))
    if isinstance(value, str):
        return Literal(value)
    raise StoreError(
        f"cannot bind a {type(value).__name__} in SPARQL", code=ErrorCode.SCHEMA
    )


def _system_from(grain: Grain) -> int:
    value: int = grain.get("system_valid_from", grain.created_at)
    return value


def _value(term: Any) -> str:
    """Return the lexical value of an IRI or literal term."""
    if not isinstance(term, NamedNode | Literal):
        raise StoreError(f"expected an IRI or a literal, found {term}")
    return term.value


def _same_claim(a: Grain, b: Grain) -> bool:
    return bool(
        a.get("subject") == b.get("subject")
        and a.get("relation") == b.get("relation")
        and a.get("namespace", DEFAULT_NAMESPACE)
        == b.get("namespace", DEFAULT_NAMESPACE)
    )


_P_STATUS, _P_VERIFICATION = str(OMS.status), str(OMS.verificationStatus)
_ACTIVE, _UNVERIFIED, _G_INDEX = str(OMS.active), str(OMS.unverified), str(OMS.index)
