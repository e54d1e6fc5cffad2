"""The store's foundation: settings, reading grains and index state, writing rows."""

from __future__ import annotations

import base64
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyoxigraph import (
    Literal,
    NamedNode,
    Quad,
    RdfFormat,
)

from ..backends import Backend, LocalBackend
from ..codec import check_address
from ..errors import (
    ErrorCode,
    IntegrityError,
    NotFoundError,
    PolicyError,
    SchemaError,
    SignatureError,
    StoreError,
)
from ..grain import Grain, now_ms
from ..mapping import (
    BELIEF_BYTE,
    NIH_PREFIX,
    MappingSettings,
    Row,
    address_of,
    grain_iri,
    grain_rows,
    knowledge_row,
    literal_value,
    millis_literal,
    nt_literal,
    rows_to_nquads,
)
from ..policy import is_protected
from ..revision import Entrenchment
from ..signing import is_envelope, verify
from ..vocab import DEFAULT_BASE, OMS, RDF, XSD
from .audit import AuditReport, Head, current_head, seal
from .audit import verify as verify_chain
from .journal import Journal, recover
from .search import SearchIndex, search_texts
from .sparql import (
    _G_BLOBS,
    _G_INDEX,
    _P_ENVELOPE,
    _P_SIGNED_BY,
    _QUERIES,
    GUARDED,
    _rows,
    _value,
    guarded_update,
    update_request,
)
from .state import CACHE_SIZE, GrainLike, IndexState, Signature, _same_claim
from .writelock import acquire, release

_RACE_RETRIES = 20  # appends re-sealed when another writer moved the chain's head
_SETTINGS, _P_AUDIT_CHAIN, _P_AUDIT_HEAD = (
    str(OMS.settings),
    str(OMS.auditChain),
    str(OMS.auditHead),
)
_P_SYSTEM_TO = str(OMS.systemTo)
_UNREAD = object()


def _node(text: str) -> NamedNode:
    """The IRI of an N-Triples IRI term (``<…>``)."""
    return NamedNode(text[1:-1])  # the audit head before it is read from the store


COMPACT_AFTER = 200_000  # rows of one bulk write after which the store is compacted
_G_AUDIT, _P_TYPE, _AUDIT_EVENT = str(OMS.audit), str(RDF.type), str(OMS.AuditEvent)
_P_OPERATION, _P_AT, _P_TARGET = str(OMS.operation), str(OMS.at), str(OMS.target)
_P_RESULT, _P_ACTOR, _P_REASON = str(OMS.result), str(OMS.actor), str(OMS.reason)
_P_COUNT, _P_NEEDS_REVIEW = str(OMS.count), str(OMS.needsReview)


class StoreBase:
    """Settings, reads, the index state, and the primitive writes of the store."""

    _lock: threading.RLock

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        base_iri: str | None = None,
        entity_relations: Iterable[str] = (),
        clock: Callable[[], int] | None = None,
        backend: Backend | None = None,
        entrenchment: Entrenchment | None = None,
        functional_relations: Iterable[str] = (),
        auto_revise: bool = False,
        authorized: Iterable[str] = (),
        read_only: bool = False,
    ) -> None:
        self.backend: Backend = (
            backend if backend is not None else LocalBackend(path, read_only=read_only)
        )
        self.read_only = read_only
        self.clock = clock or now_ms
        self.entrenchment = entrenchment or Entrenchment()
        self.functional_relations = frozenset(functional_relations)
        self.auto_revise = auto_revise
        self.authorized = frozenset(authorized)  # DIDs that may force a revision
        self._lock = threading.RLock()
        # Decoded grains by address. A blob never changes under its address and the
        # store deletes nothing, so entries never go stale; the cache only spares
        # decoding the same blob again (supersede reads a grain several times).
        self._cache: OrderedDict[str, Grain] = OrderedDict()
        self._search: SearchIndex | None = None  # built on the first search
        self._head: Head | object | None = (
            _UNREAD  # of the audit chain, read when needed
        )
        if not read_only:
            recover(self.backend)  # undo a large write that a crash interrupted
        self.settings = self._settings(base_iri, frozenset(entity_relations))

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
        if self.read_only:
            return settings  # a store that holds nothing yet, seen read-only
        quads = [Quad(node, OMS.baseIri, Literal(settings.base_iri), OMS.index)]
        quads += [
            Quad(node, OMS.entityRelation, Literal(r), OMS.index)
            for r in sorted(relations)
        ]
        self.backend.add(quads)
        return settings

    def __contains__(self, address: object) -> bool:
        if not isinstance(address, str) or len(address) != 64:
            return False
        return (
            next(
                self.backend.quads(grain_iri(address), OMS.blob, None, OMS.blobs), None
            )
            is not None
        )

    def is_empty(self) -> bool:
        """Return whether the store holds no grain (one lookup, unlike ``len``)."""
        return next(self.backend.quads(None, OMS.blob, None, OMS.blobs), None) is None

    def __len__(self) -> int:
        """Return the number of grains (counts them all: use is_empty to test)."""
        return sum(1 for _ in self.backend.quads(None, OMS.blob, None, OMS.blobs))

    def get(self, address: str) -> Grain:
        """Return the grain with this address (or unique prefix), re-verified from its blob.

        Raises:
            IntegrityError: ERR_HASH_FORMAT / ERR_HASH_LENGTH for a malformed address,
                ERR_INTEGRITY if the stored blob no longer hashes to it.
            SchemaError: ERR_HASH_FORMAT for an ambiguous prefix.
            NotFoundError: ERR_NOT_FOUND when no such grain is stored.
        """
        with self._lock:  # the cache is shared with writers and other readers
            cached = self._cache.get(address)
            if cached is not None:
                self._cache.move_to_end(address)
                return cached
        if len(address) != 64:
            address = self.resolve(address)
        check_address(address)
        quad = next(
            self.backend.quads(grain_iri(address), OMS.blob, None, OMS.blobs), None
        )
        if quad is None:
            raise NotFoundError(f"no grain {address} in this store")
        return self._remember(
            Grain.stored(base64.b64decode(_value(quad.object)), address)
        )

    def resolve(self, ref: str | Grain) -> str:
        """Return the address of a stored grain, given it or a unique prefix (8+ hex).

        Raises:
            IntegrityError: ERR_HASH_FORMAT for text that is not 8 to 64 lowercase hex.
            SchemaError: ERR_HASH_FORMAT for a prefix several grains share (the
                message lists some).
            NotFoundError: ERR_NOT_FOUND when no stored grain has it.
        """
        if isinstance(ref, Grain) or len(ref) == 64:
            address = ref.address if isinstance(ref, Grain) else check_address(ref)
            if address not in self._cache and address not in self:
                raise NotFoundError(f"no grain {address} in this store")
            return address
        if not 8 <= len(ref) < 64 or ref.strip("0123456789abcdef"):
            raise IntegrityError(
                f"expected an address or a prefix of at least 8 lowercase hex characters, "
                f"found {ref!r}",
                code=ErrorCode.HASH_FORMAT,
            )
        start = NIH_PREFIX + ref
        found = []
        for quad in self.backend.quads(None, OMS.blob, None, OMS.blobs):
            if quad.subject.value.startswith(start):  # type: ignore[union-attr]
                found.append(address_of(quad.subject))  # type: ignore[arg-type]
                if len(found) > 3:
                    break
        if not found:
            raise NotFoundError(f"no grain {ref}… in this store")
        if len(found) > 1:
            raise SchemaError(
                f"the prefix {ref} is ambiguous: {', '.join(a[:16] for a in found)}…; "
                "give more of the address",
                code=ErrorCode.HASH_FORMAT,
            )
        return found[0]

    def _remember(self, grain: Grain) -> Grain:
        """Keep a decoded, verified grain in the cache (least recently used goes first)."""
        with self._lock:
            self._cache[grain.address] = grain
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return grain

    def status(self, address: str | Grain) -> IndexState:
        """Return the index state of a stored grain.

        Raises:
            NotFoundError: ERR_NOT_FOUND when no such grain is stored.
        """
        address = self.resolve(address)
        values: dict[str, Any] = {}
        rivals: list[str] = []
        entered: set[str] = set()
        for q in self.backend.quads(grain_iri(address), None, None, OMS.index):
            if q.predicate == OMS.sprtEntered:
                entered.add(_value(q.object))
            if q.predicate == OMS.conflictsWith:
                rivals.append(_value(q.object).removeprefix(NIH_PREFIX))
            values[q.predicate.value] = q.object

        def text(p: NamedNode) -> str | None:
            term = values.get(p.value)
            return None if term is None else term.value

        def local(p: NamedNode, default: str) -> str:
            term = values.get(p.value)
            return default if term is None else term.value.rsplit("#", 1)[1]

        def number(p: NamedNode) -> Any:
            term = values.get(p.value)
            return None if term is None else literal_value(term)

        superseded = values.get(OMS.supersededBy.value)
        return IndexState(
            address=address,
            status=local(OMS.status, "active"),
            verification=local(OMS.verificationStatus, "unverified"),
            superseded_by=None if superseded is None else address_of(superseded),
            system_to=number(OMS.systemTo),
            voided_at=number(OMS.voidedAt),
            invalidation_type=text(OMS.invalidationType),
            reason=text(OMS.invalidationReason),
            initiator=text(OMS.invalidationInitiator),
            signed_by=text(OMS.signedBy),
            log_ratio=number(OMS.logRatio) or 0.0,
            sprt_status=text(OMS.sprtStatus) or "accumulating",
            sprt_entered=frozenset(entered),
            effective_confidence=number(OMS.effectiveConfidence),
            pending_erasure=number(OMS.pendingErasure),
            conflicts_with=tuple(sorted(rivals)),
        )

    def _grain(self, item: GrainLike) -> Grain:
        return self.accept(item)[0]

    def accept(self, item: GrainLike) -> tuple[Grain, Signature | None]:
        """A grain from what a caller gave, and its verified signature if it came signed.

        Raises:
            SignatureError: ERR_SIGNED_MISMATCH for a grain whose signed flag is set
                but that arrives without its COSE envelope (spec §9.2).
        """
        signature: Signature | None = None
        if isinstance(item, Grain):
            grain = item
        elif isinstance(item, bytes | bytearray | memoryview):
            data = bytes(item)
            if is_envelope(data):
                blob, did = verify(data)
                grain, signature = Grain.from_blob(blob), Signature(data, did)
            else:
                grain = Grain.from_blob(data)
        elif isinstance(item, Mapping):
            grain = Grain.from_dict(item)
        else:
            raise SchemaError(
                f"expected a Grain, a mapping of fields, blob bytes or a COSE_Sign1 "
                f"envelope; found {type(item).__name__}"
            )
        if grain.get("_disclosure_of") is not None:
            raise SchemaError(
                "a disclosed view is generated on demand and not stored (spec §10); "
                f"store the original {grain['_disclosure_of'][:12]}… instead",
                path="$._disclosure_of",
            )
        if grain.signed and signature is None:
            raise SignatureError(
                "the grain's signed flag (header bit 0) is set but it arrived without its "
                "COSE_Sign1 envelope; put the envelope from oms_rdf.signing.sign()",
                code=ErrorCode.SIGNED_MISMATCH,
            )
        return grain, signature

    def rows_for(self, grain: Grain, signature: Signature | None = None) -> list[Row]:
        """The quads of a new grain, its signature and its knowledge triple."""
        rows = grain_rows(grain, self.settings)
        current = knowledge_row(
            rows
        )  # read from the rows' end: before anything follows
        node = f"<{NIH_PREFIX}{grain.address}>"
        if signature is not None:
            envelope = base64.b64encode(signature.envelope).decode()
            rows.append(
                (
                    node,
                    _P_ENVELOPE,
                    f'"{envelope}"^^<{XSD.base64Binary.value}>',
                    _G_BLOBS,
                )
            )
            rows.append((node, _P_SIGNED_BY, nt_literal(signature.did), _G_INDEX))
        # The initial index state (active, unverified) is the absence of index rows.
        if self._search is not None and grain.type_byte == BELIEF_BYTE:
            self._search.add(grain.address, search_texts(grain))
        if current is not None:
            rows.append(current)
        return rows

    def _write(
        self,
        delete: Sequence[Quad | Row],
        insert: Sequence[Quad | Row],
        *,
        before: str = "",
        current: Sequence[str] = (),
    ) -> None:
        """The one atomic write of a store operation; its audit events join the chain.

        One SPARQL update when something is deleted (``before``: update operations
        to run first, in the same request), else one load of N-Quads text
        (faster). The chain's head advances only when the write succeeded.

        On a backend other processes write too (``backend.shared``), the checks
        this process made are made again inside the write: it applies only while
        the grains in ``current`` are still current and the audit chain's head is
        the one it links to. A write that lost a race on ``current`` raises
        ERR_CONFLICT; one that lost it on the head only is sealed again and retried.
        """
        if getattr(self.backend, "shared", False):
            self._write_guarded(delete, insert, before, current)
            return
        rows = _rows(insert)
        if self._head is _UNREAD:
            self._head = current_head(self.backend)
        unchain, chain, head = seal(rows, self._head)  # type: ignore[arg-type]
        removed = [*_rows(delete), *unchain]
        rows += chain
        if removed or before:
            data = update_request(removed, rows)
            self.backend.update(f"{before} ;\n{data}" if before else data)
        else:
            self.backend.load(rows_to_nquads(rows).encode(), RdfFormat.N_QUADS)
        self._head = head

    def _write_guarded(
        self,
        delete: Sequence[Quad | Row],
        insert: Sequence[Quad | Row],
        before: str,
        current: Sequence[str],
    ) -> None:
        """:meth:`_write` where other writers may have changed the store meanwhile."""
        still = " ".join(
            f"FILTER NOT EXISTS {{ GRAPH {_G_INDEX} {{ {grain_iri(a)} {_P_SYSTEM_TO} ?closed{i} }} }}"
            for i, a in enumerate(current)
        )
        holder = acquire(self.backend)  # one writer at a time: see writelock.py
        try:
            self._write_held(delete, insert, before, current, still, holder)
        except BaseException:
            release(self.backend, holder)
            raise

    def _write_held(
        self,
        delete: Sequence[Quad | Row],
        insert: Sequence[Quad | Row],
        before: str,
        current: Sequence[str],
        still: str,
        holder: Quad,
    ) -> None:
        for _attempt in range(_RACE_RETRIES):
            head = current_head(self.backend)
            rows = _rows(insert)
            unchain, chain, new_head = seal(rows, head)
            marker = next((r[0] for r in rows if r[3] == _G_AUDIT), None)
            if head is None:
                linked = f"FILTER NOT EXISTS {{ GRAPH {_G_INDEX} {{ {_SETTINGS} {_P_AUDIT_CHAIN} ?chain }} }}"
            else:
                linked = f"GRAPH {_G_AUDIT} {{ <{head.chain}> {_P_AUDIT_HEAD} {nt_literal(f'{head.sequence} {head.hash}')} }}"
            guard = f"{GUARDED} {still} {linked}"
            # The lock goes with the write, in the same operation: a write whose
            # guard failed keeps it (for a retry), and no server can apply one
            # without the other.
            removed = [*_rows(delete), *unchain, *_rows([holder])]
            request = guarded_update(removed, [*rows, *chain], guard)
            if before:  # the same guard on each operation: all of them apply, or none
                request = (
                    before.replace("WHERE {", f"WHERE {{ {guard}") + f" ;\n{request}"
                )
            self.backend.update(request)
            if marker is None:  # nothing tells whether it applied: give the lock back
                release(self.backend, holder)
                self._head = new_head
                return
            if next(self.backend.quads(_node(marker), None, None, OMS.audit), None):
                self._head = new_head
                return
            if current and not bool(self.backend.query(f"ASK {{ {GUARDED} {still} }}")):
                raise StoreError(
                    "another writer changed "
                    + ", ".join(f"{a[:12]}…" for a in current)
                    + " first (it is no longer current); nothing was written",
                    code=ErrorCode.CONFLICT,
                )
        raise StoreError(
            f"the audit chain kept moving: gave up after {_RACE_RETRIES} attempts",
            code=ErrorCode.CONFLICT,
        )

    def _seal_final(self, rows: list[Row]) -> tuple[list[Row], list[Row]]:
        """Chain a bulk write's closing audit event; on a shared backend, under the
        write lock, which the closing request releases (see writelock.py)."""
        holder = (
            acquire(self.backend) if getattr(self.backend, "shared", False) else None
        )
        unchain, chain, _head = seal(rows, current_head(self.backend))
        return ([*unchain, *_rows([holder])] if holder else unchain), chain

    def verify_audit(self) -> AuditReport:
        """Check the audit log's hash chains; the report names the first bad event."""
        with self._lock:
            return verify_chain(self.backend)

    @contextmanager
    def bulk(self) -> Iterator[Journal]:
        """Hold the store for one write too large for a transaction, all or nothing.

        The public write path of imports and bulk loads: inside the block, write
        rows from :meth:`rows_for` (after :meth:`accept` and :meth:`check_new`)
        with ``journal.write``, then end with ``journal.finish(audit_rows)``. A
        block left by an exception, or without ``finish``, is undone; a crash is
        undone when the store is next opened (see :mod:`.journal`).
        """
        with self._lock:
            journal = Journal.begin(self.backend)
            journal.seal = self._seal_final
            try:
                yield journal
                if not journal.finished:
                    raise StoreError("a bulk write ended without finish()")
            except BaseException:
                if not journal.finished:
                    journal.undo()
                raise
            finally:
                self._cache.clear()  # grains may have come in as quads
                self._search = None
                self._head = _UNREAD  # an import may have brought the chain
            if journal.written >= COMPACT_AFTER:
                self.optimize()  # now, rather than in the middle of the next command

    def optimize(self) -> None:
        """Compact an on-disk store; bulk writes of ``COMPACT_AFTER`` rows do it."""
        optimize = getattr(self.backend, "optimize", None)
        if optimize is not None:
            with self._lock:
                optimize()

    def audit_rows(
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
    ) -> list[Row]:
        """The rows of one audit event, N-Triples text like a grain's rows."""
        node, g = f"<urn:uuid:{uuid.uuid4()}>", _G_AUDIT
        when = millis_literal(self.clock() if at is None else at)
        rows = [
            (node, _P_TYPE, _AUDIT_EVENT, g),
            (node, _P_OPERATION, nt_literal(operation), g),
            (node, _P_AT, str(when), g),
        ]
        if target is not None:
            rows.append((node, _P_TARGET, str(grain_iri(target)), g))
        if result is not None:
            rows.append((node, _P_RESULT, str(grain_iri(result)), g))
        if actor is not None:
            rows.append((node, _P_ACTOR, nt_literal(actor), g))
        if reason is not None:
            rows.append((node, _P_REASON, nt_literal(reason), g))
        if count is not None:
            rows.append((node, _P_COUNT, nt_literal(str(count), XSD.integer.value), g))
        rows += [(node, _P_NEEDS_REVIEW, nt_literal(note), g) for note in review]
        return rows

    def check_new(
        self,
        grain: Grain,
        batch: Mapping[str, Grain] | None = None,
        *,
        exempt: str | None = None,
    ) -> None:
        """Refuse a supersession in disguise (spec §17 Level 2; design §4)."""
        parents = grain.get("derived_from")
        if not parents or grain.type_byte != BELIEF_BYTE:
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
            if other.type_byte != BELIEF_BYTE or not is_protected(
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

    def rebuild_current(self) -> None:
        """Rebuild graph ``oms:current`` from the grains and the index, in one update."""
        with self._lock:
            self.backend.update(_QUERIES["rebuild_current"])

    def close(self) -> None:
        """Make every write durable and release the store; later calls raise StoreError."""
        with self._lock:
            close = getattr(self.backend, "close", None)
            if close is not None:
                close()
            self._cache.clear()

    def __enter__(self) -> StoreBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def flush(self) -> None:
        """Make every write of an on-disk store durable."""
        flush = getattr(self.backend, "flush", None)
        if flush is not None:
            flush()


# The first pattern of the beliefs query, by the most selective bound text.
