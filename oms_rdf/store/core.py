"""The store's core: settings, reads of grains and index state, the one write path."""

from __future__ import annotations

import base64
import threading
from collections import OrderedDict
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import islice
from typing import Any

from pyoxigraph import NamedNode, Quad, RdfFormat

from ..backends.base import Backend
from ..backends.heap import give_back
from ..codec import check_address
from ..codec.grain import Grain, now_ms
from ..codec.schema import BELIEF
from ..errors import ErrorCode, IntegrityError, NotFoundError, SchemaError, StoreError
from ..rdf.mapping import (
    NIH_PREFIX,
    Row,
    grain_iri,
    grain_rows,
    knowledge_row,
    nt_literal,
    rows_to_nquads,
)
from ..rdf.sparql import (
    G_BLOBS,
    G_INDEX,
    GUARDED,
    P_ENVELOPE,
    P_SIGNED_BY,
    QUERIES,
    as_rows,
    guarded_update,
    lexical_value,
    update_request,
)
from ..rdf.vocab import OMS, XSD
from .audit import AuditReport, Head, bulk_head, current_head, event_rows, seal
from .audit import verify as verify_chain
from .clock import FORWARD_ONLY, SystemClock
from .grain_facts import GrainFacts
from .index_state import index_state
from .intervals import Intervals
from .journal import Journal, recover
from .now import NowWatch
from .presence import addresses_with_prefix
from .progress import Stage
from .search import SearchIndex, search_texts
from .settings import mapping_settings
from .state import CACHE_SIZE, IndexState, Signature, check_texts
from .transaction import Pending, refuse_made
from .writelock import acquire, release

COMPACT_AFTER = 200_000  # rows of one bulk write after which the store is compacted
SETTLE_AFTER = 10_000  # rows of one write after which memory is settled (settle())
_RACE_RETRIES = 20  # appends re-sealed when another writer moved the chain's head
_SETTINGS, _P_AUDIT_CHAIN = str(OMS.settings), str(OMS.auditChain)
_P_AUDIT_HEAD, _P_SYSTEM_TO = str(OMS.auditHead), str(OMS.systemTo)
_G_AUDIT, _P_BLOB = str(OMS.audit), str(OMS.blob)
_UNREAD = object()  # the audit head before it is read from the store


def _node(text: str) -> NamedNode:
    """The IRI of an N-Triples IRI term (``<…>``)."""
    return NamedNode(text[1:-1])


class Core:
    """The store's foundation: its backend and settings, reads of grains and of the
    index state, and the one write path every operation ends in.

    The parts of a :class:`~oms_rdf.store.GrainStore` (questions, invalidation,
    revision, writes) each hold the core; none of them writes around it.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        base_iri: str | None = None,
        entity_relations: Iterable[str] = (),
        clock: Callable[[], int] | None = None,
        read_only: bool = False,
        forward_only: bool | None = None,
    ) -> None:
        self.backend = backend
        self.read_only = read_only
        self._clock = clock or now_ms
        # Taken by every write, and by reads that make several lookups, so that a
        # reader sees the store before a write or after it, never between.
        self.lock = threading.RLock()
        # Decoded grains by address: a blob never changes under its address, so an
        # entry goes stale only when its grain is erased (forget()). A lock of
        # its own, taken after ``lock`` if both are: a reader still holding an
        # answer's rows reads the cache without waiting on a writer (vacuum
        # waits for such an answer to be let go of).
        self._cache: OrderedDict[str, Grain] = OrderedDict()
        self._cache_lock = threading.RLock()
        # Built by the first search (questions.py), kept up by rows_for.
        self.search_index: SearchIndex | None = None
        self._head: Head | object | None = _UNREAD  # of the audit chain
        # Whether oms:current is the knowledge of now, kept up by the writes.
        self.now_watch = NowWatch()
        self.intervals = Intervals()  # versions by extent, kept up as now_watch is
        self.facts = GrainFacts()  # what each grain node asserts, for lookups
        # An open transaction: its thread, writes and frozen clock (other
        # threads wait on the lock for writes, and see neither).
        self._open: tuple[int, Pending, Callable[[], int]] | None = None
        if not read_only:
            recover(self.backend)  # undo a large write that a crash interrupted
        relations = frozenset(entity_relations)
        self.settings = mapping_settings(backend, base_iri, relations, read_only)
        self.system = SystemClock.opened(backend, forward_only, read_only=read_only)

    @property
    def pending(self) -> Pending | None:
        """The writes of the transaction this thread has open, if any."""
        open_ = self._open
        return open_[1] if open_ and open_[0] == threading.get_ident() else None

    @property
    def clock(self) -> Callable[[], int]:
        """The store's clock; in a transaction, for its thread, frozen at its start."""
        open_ = self._open
        return open_[2] if open_ and open_[0] == threading.get_ident() else self._clock

    def __contains__(self, address: object) -> bool:
        if isinstance(address, str):
            address = address.removeprefix(NIH_PREFIX)  # a node IRI's text too
        if not isinstance(address, str) or len(address) != 64:
            return False
        node = grain_iri(address)
        return (
            next(self.backend.quads(node, OMS.blob, None, OMS.blobs), None) is not None
        )

    def is_empty(self) -> bool:
        """Return whether the store holds no grain (one lookup, unlike ``len``)."""
        return next(self.backend.quads(None, OMS.blob, None, OMS.blobs), None) is None

    def get(self, address: str) -> Grain:
        """Return the grain with this address (or unique prefix), re-verified from its blob.

        Raises:
            IntegrityError: ERR_HASH_FORMAT / ERR_HASH_LENGTH for a malformed address,
                ERR_INTEGRITY if the stored blob no longer hashes to it.
            SchemaError: ERR_HASH_FORMAT for an ambiguous prefix.
            NotFoundError: ERR_NOT_FOUND when no such grain is stored.
        """
        # Where other processes write too, another may have erased the grain: the
        # store is asked every time, and the cache only spares decoding.
        shared = self.backend.shared
        with self._cache_lock:  # the cache is shared with writers and other readers
            cached = self._cache.get(address)
            if cached is not None:
                self._cache.move_to_end(address)
                if not shared:
                    return cached
        if len(address) != 64:
            address = self.resolve(address)
        check_address(address)
        # No local keeps the lookup's iterator (see lookup._has): kept by an error.
        node = grain_iri(address)
        quad = next(self.backend.quads(node, OMS.blob, None, OMS.blobs), None)
        if quad is None:
            with self._cache_lock:
                self._cache.pop(address, None)
            raise NotFoundError(f"no grain {address} in this store")
        if cached is not None:
            return cached
        return self.remember(
            Grain.stored(base64.b64decode(lexical_value(quad.object)), address)
        )

    def decoded(self) -> Container[str]:
        """The addresses of the grains kept decoded, which :meth:`get` answers
        without reading the store (none where other processes write too): a
        live view, for membership tests (each one atomic), not to iterate."""
        return () if self.backend.shared else self._cache.keys()

    def _made(self) -> Iterable[str]:
        """What the open transaction (if any) wrote so far: not stored yet."""
        return self.pending.changed if self.pending is not None else ()

    def get_many(self, addresses: Iterable[str]) -> list[Grain]:
        """:meth:`get` of each of these addresses, those cached read with the lock
        taken once (a delta can list tens of thousands)."""
        with self._cache_lock:
            if self.backend.shared:
                return [self.get(a) for a in addresses]
            cache = self._cache
            return [cache.get(a) or self.get(a) for a in addresses]

    def resolve(self, ref: str | Grain) -> str:
        """Return the address of a stored grain, given it or a unique prefix (8+
        hex), either also as its node IRI's text (``nih:sha-256;…``, as SPARQL
        answers name a grain).

        Raises:
            IntegrityError: ERR_HASH_FORMAT for what is not 8 to 64 lowercase hex.
            SchemaError: ERR_HASH_FORMAT for a prefix several grains share.
            NotFoundError: ERR_NOT_FOUND when no stored grain has it.
            StoreError: ERR_CONFLICT for a grain an open transaction made.
        """
        if isinstance(ref, str):
            ref = ref.removeprefix(NIH_PREFIX)
        text = isinstance(ref, str)
        if isinstance(ref, Grain) or (text and len(ref) >= 64):  # longer: HASH_LENGTH
            address = ref.address if isinstance(ref, Grain) else check_address(ref)
            if address not in self._cache and address not in self:
                refuse_made(self._made(), address)
                raise NotFoundError(f"no grain {address} in this store")
            return address
        if not text or not 8 <= len(ref) < 64 or ref.strip("0123456789abcdef"):
            raise IntegrityError(
                f"expected an address or a prefix of at least 8 lowercase hex characters, "
                f"found {ref!r}",
                code=ErrorCode.HASH_FORMAT,
            )
        found = list(islice(addresses_with_prefix(self.backend, ref), 4))
        if not found:
            refuse_made(self._made(), ref)
            raise NotFoundError(f"no grain {ref}… in this store")
        if len(found) > 1:
            raise SchemaError(
                f"the prefix {ref} is ambiguous: {', '.join(a[:16] for a in found)}…; "
                "give more of the address",
                code=ErrorCode.HASH_FORMAT,
            )
        return found[0]

    def remember(self, grain: Grain) -> Grain:
        """Keep a decoded, verified grain in the cache (least recently used goes first)."""
        with self._cache_lock:
            self._cache[grain.address] = grain
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return grain

    def grain_of(self, address: str, blob: Any) -> Grain:
        """A grain from a query row: its projected blob (a literal) spares a lookup,
        and shows the grain stored as of that answer."""
        if blob is None:
            return self.get(address)
        with self._cache_lock:
            cached = self._cache.get(address)
        if cached is not None:
            return cached
        return self.remember(Grain.stored(base64.b64decode(blob.value), address))

    def forget(self, addresses: Iterable[str] | None = None) -> None:
        """Drop what is kept beside the store after grains left it or came in
        around the write path: cached grains (all, or these), the search index and
        the audit head."""
        with self.lock, self._cache_lock:
            if addresses is None:
                self._cache.clear()
            else:
                for address in addresses:
                    self._cache.pop(address, None)
            self.search_index = None
            self._head = _UNREAD
            self.now_watch.forget()
            self.intervals.forget()
            self.system.forget()

    def status(self, address: str | Grain) -> IndexState:
        """Return the index state of a stored grain.

        Raises:
            NotFoundError: ERR_NOT_FOUND when no such grain is stored.
        """
        address = self.resolve(address)
        node = grain_iri(address)
        return index_state(address, self.backend.quads(node, None, None, OMS.index))

    def rows_for(self, grain: Grain, signature: Signature | None = None) -> list[Row]:
        """The quads of a new grain, its signature and its knowledge triple."""
        rows = grain_rows(grain, self.settings)
        current = knowledge_row(rows)  # read from the rows' end: before the rest
        self.facts.learn(grain, self.settings)
        if self.pending is not None:  # what later operations' checks may meet
            self.pending.made[grain.address] = grain
        node = f"<{NIH_PREFIX}{grain.address}>"
        if signature is not None:
            envelope = base64.b64encode(signature.envelope).decode()
            rows.append(
                (
                    node,
                    P_ENVELOPE,
                    f'"{envelope}"^^<{XSD.base64Binary.value}>',
                    G_BLOBS,
                )
            )
            rows.append((node, P_SIGNED_BY, nt_literal(signature.did), G_INDEX))
        # The initial index state (active, unverified) is the absence of index rows.
        if self.search_index is not None and grain.type_byte == BELIEF.byte:
            self.search_index.add(grain.address, search_texts(grain))
        if current is not None:
            rows.append(current)
        return rows

    def write(
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
        rows, times = self.system.admit(self.backend, insert)
        if self.pending is not None:  # inside a transaction: written at its end
            self.pending.add(delete, rows, before, current)
            return
        if self.backend.shared:
            self._write_guarded(delete, rows, before, current)
            self.system.advance(times)
            return
        if self._head is _UNREAD:
            self._head = current_head(self.backend)
        unchain, chain, head = seal(rows, self._head)  # type: ignore[arg-type]
        removed = [*as_rows(delete), *unchain]
        rows += chain
        if removed or before:
            data = update_request(removed, rows)
            self.backend.update(f"{before} ;\n{data}" if before else data)
        else:
            self.backend.load(rows_to_nquads(rows).encode(), RdfFormat.N_QUADS)
        self._head = head
        self.now_watch.saw(rows, self.clock())
        self.intervals.saw(removed, rows, whole=bool(before))
        self.system.advance(times)
        if len(removed) + len(rows) >= SETTLE_AFTER:
            self.settle()

    def _write_guarded(
        self,
        delete: Sequence[Quad | Row],
        insert: Sequence[Quad | Row],
        before: str,
        current: Sequence[str],
    ) -> None:
        """:meth:`write` where other writers may have changed the store meanwhile."""
        # Still stored (not erased by another client) and still current.
        still = " ".join(
            f"GRAPH {G_BLOBS} {{ {grain_iri(a)} {_P_BLOB} ?stored{i} }} "
            f"FILTER NOT EXISTS {{ GRAPH {G_INDEX} {{ {grain_iri(a)} {_P_SYSTEM_TO} ?closed{i} }} }}"
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
            rows = as_rows(insert)
            unchain, chain, new_head = seal(rows, head)
            marker = next((r[0] for r in rows if r[3] == _G_AUDIT), None)
            if head is None:
                linked = f"FILTER NOT EXISTS {{ GRAPH {G_INDEX} {{ {_SETTINGS} {_P_AUDIT_CHAIN} ?chain }} }}"
            else:
                linked = f"GRAPH {_G_AUDIT} {{ <{head.chain}> {_P_AUDIT_HEAD} {nt_literal(f'{head.sequence} {head.hash}')} }}"
            guard = f"{GUARDED} {still} {linked}"
            # The lock goes with the write, in the same operation: a write whose
            # guard failed keeps it (for a retry), and no server can apply one
            # without the other.
            removed = [*as_rows(delete), *unchain, *as_rows([holder])]
            request = guarded_update(removed, [*rows, *chain], guard)
            if before:  # the same guard on each operation: all of them apply, or none
                request = (
                    before.replace("WHERE {", f"WHERE {{ {guard}") + f" ;\n{request}"
                )
            self.backend.update(request)
            if marker is None:  # nothing tells whether it applied: give the lock back
                release(self.backend, holder)
                self._wrote(head, new_head)
                return
            if next(self.backend.quads(_node(marker), None, None, OMS.audit), None):
                self._wrote(head, new_head)
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

    def _wrote(self, head: Head | None, new_head: Head | None) -> None:
        """A guarded write linked to ``head`` applied, and moved it to ``new_head``;
        a search index up to date at ``head`` took its beliefs (:meth:`rows_for`)."""
        self._head = new_head
        index = self.search_index
        if index is not None and index.head == head:
            index.head = new_head

    def _seal_final(self, rows: list[Row], own: bool) -> tuple[list[Row], list[Row]]:
        """Chain a bulk write's closing audit event (``own``: whether the store
        had a chain when the write began, see :func:`.audit.bulk_head`); on a
        shared backend, under the write lock, which the closing request releases
        (see writelock.py)."""
        holder = acquire(self.backend) if self.backend.shared else None
        head, unlink = bulk_head(self.backend, own)
        unchain, chain, _head = seal(rows, head)
        removed = [*unlink, *unchain]
        return ([*removed, *as_rows([holder])] if holder else removed), chain

    def verify_audit(self) -> AuditReport:
        """Check the audit log's hash chains; the report names the first bad event."""
        with self.lock:
            return verify_chain(self.backend)

    @contextmanager
    def transaction(
        self,
        *,
        event: str = "transaction",
        actor: str | None = None,
        reason: str | None = None,
    ) -> Iterator[None]:
        """Hold the store for one transaction (see :mod:`.transaction`): its
        operations' writes are made at its end, in one atomic write, at one
        system time; an exception in the block writes nothing. ``event`` names
        its one audit event, ``actor`` who made it, ``reason`` why (else the
        event gives what its operations were).

        Raises:
            StoreError: ERR_CONFLICT for a transaction inside another.
        """
        check_texts(actor=actor, reason=reason)
        with self.lock:
            if self._open is not None:
                raise StoreError(
                    "a transaction is open already: transactions do not nest",
                    code=ErrorCode.CONFLICT,
                )
            at, pending = self._clock(), Pending()
            self._open = (threading.get_ident(), pending, lambda: at)
            try:
                yield
            finally:
                self._open = None
            if pending.operations or pending.insert or pending.delete:
                rows = self.audit_rows(
                    event,
                    actor=actor,
                    at=at,
                    count=len(pending.operations),
                    reason=reason or pending.summary() or None,
                )
                insert = [*pending.insert, *pending.event(as_rows(rows))]
                self.write(pending.delete, insert, current=pending.current)

    @contextmanager
    def bulk(self, *, stage: Stage | None = None) -> Iterator[Journal]:
        """Hold the store for one write too large for a transaction, all or nothing.

        The public write path of imports and bulk loads: inside the block, write
        rows from :meth:`rows_for` (after :meth:`accept` and :meth:`check_new`)
        with ``journal.write``, then end with ``journal.finish(audit_rows)``. A
        block left by an exception, or without ``finish``, is undone; a crash is
        undone when the store is next opened (see :mod:`.journal`).

        A write of ``COMPACT_AFTER`` rows or more compacts an on-disk store at its
        end, so that the next command does not. ``stage`` is told of the writing
        and the compaction as they begin (see :mod:`.progress`).
        """
        if self.pending is not None:
            raise StoreError(
                "an import or bulk load is not part of a transaction: make it before "
                "or after",
                code=ErrorCode.STORE,
            )
        # Marked from before the journal opens until after the compaction: a
        # reader in another process refuses the store meanwhile (backends.py).
        with self.lock, self.backend.bulk_writing():
            journal = Journal.begin(self.backend)
            own = current_head(self.backend) is not None
            journal.seal = lambda rows: self._seal_final(rows, own)
            journal.stage = stage
            try:
                yield journal
                if not journal.finished:
                    raise StoreError("a bulk write ended without finish()")
            except BaseException:
                if not journal.finished:
                    journal.undo()
                raise
            finally:
                self.forget()  # grains, and perhaps an audit chain, came in as quads
            on_disk = self.backend.path is not None
            if journal.written >= COMPACT_AFTER and on_disk:
                if stage is not None:
                    stage("compacting", None)
                self.optimize()  # now, rather than in the middle of the next command
            if journal.written >= SETTLE_AFTER:
                self.settle()

    def settle(self) -> None:
        """Bring memory down after a write of ``SETTLE_AFTER`` rows or more.

        An on-disk store's write buffers (RocksDB's memtables, one per index)
        are written to its files, and the heap the write freed goes back to the
        system (:func:`~oms_rdf.backends.heap.give_back`). Otherwise a process
        stays at the memory of its largest write, and its buffers grow until
        RocksDB writes them out by itself.
        """
        self.backend.flush()
        give_back()

    def optimize(self) -> None:
        """Compact an on-disk store; bulk writes of ``COMPACT_AFTER`` rows do it."""
        with self.lock:
            self.backend.optimize()

    def audit_rows(
        self,
        operation: str,
        *,
        target: str | None = None,
        targets: Sequence[str] = (),
        result: str | None = None,
        actor: str | None = None,
        reason: str | None = None,
        at: int | None = None,
        count: int | None = None,
        review: Sequence[str] = (),
    ) -> list[Row]:
        """The rows of one audit event at ``at`` (default now), N-Triples text like
        a grain's rows; the write that carries them chains them. ``targets``: the
        grains of one write about several, listed after ``target``.

        Forward only since this opening and not recorded yet: the setting and
        its own event follow, so the opening's first write records it (a
        refused one records nothing)."""
        when = self.clock() if at is None else at
        rows = event_rows(
            operation,
            when,
            target=target,
            targets=targets,
            result=result,
            actor=actor,
            reason=reason,
            count=count,
            review=review,
        )
        if self.system.record_due(self.backend, self.pending):
            rows += [FORWARD_ONLY, *event_rows("forward_only", when)]
        return rows

    def rebuild_current(self) -> None:
        """Rebuild graph ``oms:current`` from the grains and the index, in one update."""
        with self.lock:
            self.backend.update(QUERIES["rebuild_current"])
            self.now_watch.forget()

    def close(self) -> None:
        """Make every write durable and release the store; later calls raise StoreError."""
        with self.lock, self._cache_lock:
            self.backend.close()
            self._cache.clear()

    def flush(self) -> None:
        """Make every write of an on-disk store durable."""
        self.backend.flush()
