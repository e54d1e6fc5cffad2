"""GrainStore: grains as a bi-temporal knowledge graph in Oxigraph.

Graphs: the default graph holds the immutable projection of every grain;
``oms:blobs`` its canonical blob; ``oms:index`` the mutable index layer (status,
supersession, retraction, contradiction, verification); ``oms:current`` the plain
``s p o`` triples of beliefs that are current and not contradicted; ``oms:audit``
the log of operations. Every change is one atomic write made after all checks, so
a refused or failed operation leaves the store exactly as it was.

The store layer: it may import errors, times, codec, rdf and backends, never io,
http, cli or notebook (io's report types are named for signatures only, and its
conveniences, :meth:`GrainStore.export` and the like, import io when called).
Callers above it use the names in ``__all__``.

>>> from oms_rdf.codec.grain import Belief
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

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends.base import Backend
from ..backends.deadline import QueryTimeoutError, time_limit
from ..backends.embedded import LocalBackend
from ..codec.grain import Grain
from ..errors import ErrorCode, PolicyError, SchemaError, StoreError
from ..rdf.limits import check_query
from ..rdf.mapping import MappingSettings
from ..rdf.sparql import update_request
from ..times import to_millis
from .admission import accept, check_new
from .audit import AuditReport
from .bulk_import import BulkImport
from .changes import Axis, Changes, changes
from .clock import load_history
from .core import Core
from .delegate import Delegated
from .erasure import ErasureReport, SubjectReport, check_found, due, select
from .erasure import erase as erase_grains
from .erasure import report as subject_report
from .invalidation import Invalidation
from .knowledge import (
    COMMON_PREFIXES,
    PREFIXES,
    RESERVED_GRAPHS,
    QueryRow,
    Snapshot,
    Solutions,
    Triples,
    open_answers,
)
from .lookup import count_grains
from .progress import Stage
from .questions import Questions
from .rebuild import KnowledgeCheck
from .recall import Recall
from .revising import EvidenceEvent, EvidenceResult, Revision
from .revision import Entrenchment
from .sparql_queries import SparqlQueries
from .state import IndexState, TimeLike
from .writes import Writes

if TYPE_CHECKING:  # io builds on the store: its types only, for the signatures
    import rdflib

    from ..io import ImportReport
    from ..io.update import UpdateReport

__all__ = [
    "COMMON_PREFIXES",
    "PREFIXES",
    "RESERVED_GRAPHS",
    "AuditReport",
    "BulkImport",
    "Changes",
    "ErasureReport",
    "EvidenceEvent",
    "EvidenceResult",
    "GrainStore",
    "IndexState",
    "KnowledgeCheck",
    "QueryRow",
    "QueryTimeoutError",
    "Snapshot",
    "Solutions",
    "Stage",
    "SubjectReport",
    "Triples",
    "time_limit",
    "update_request",
]


class GrainStore:
    """A bi-temporal belief store over Oxigraph.

    Args:
        path: None for an in-memory store, else the directory of an on-disk
            (RocksDB) store, created if missing and reopened if present.
        base_iri: prefix of entity and relation IRIs; recorded in the store.
        entity_relations: relations whose text objects become entity IRIs.
        clock: epoch-ms clock for retraction, contradiction and status changes
            (default: the wall clock); injectable for tests and replays.
        backend: where the quads live, instead of ``path``: for example a
            :class:`~oms_rdf.SparqlBackend` over a SPARQL server.
        entrenchment: the tiers :meth:`revise` and conflict resolution rank by.
        functional_relations: relations with one current object per subject
            (``works_at``, ``lives_in``): a conflicting put is resolved or disputed.
        auto_revise: resolve such conflicts by revision when entrenchment allows.
        authorized: DIDs that may ``revise(..., force=True)`` (audited).
        read_only: open an on-disk store beside the process that writes it: reads
            see the store as of the opening; every write is refused (ERR_STORE).
        forward_only: system time moves forward only: a write recording a
            system time before the store's last commit is refused (ERR_RANGE),
            except inside :meth:`load_history` (see :mod:`.clock`). True records
            it in the store's settings, and every later opening keeps it; None
            (the default) takes what the store records; False refuses a store
            that records it (ERR_CONFLICT).

    The store holds its parts, each a module with one job: the ``core`` (backend,
    settings, reads, the one write path), ``questions`` (beliefs, their history),
    ``sparql`` (queries and snapshots, now or at a point), ``recall`` (search),
    ``invalidation`` (supersede, retract, contradict under the
    policies), ``revision`` (evidence, entrenchment) and ``writes`` (put). Its
    methods are theirs (see :class:`.delegate.Delegated`).
    """

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
        forward_only: bool | None = None,
    ) -> None:
        if backend is None:
            backend = LocalBackend(path, read_only=read_only)
        entrenchment = entrenchment or Entrenchment()
        self.core = Core(
            backend,
            base_iri=base_iri,
            entity_relations=entity_relations,
            clock=clock,
            read_only=read_only,
            forward_only=forward_only,
        )
        self.questions = Questions(self.core)
        self.sparql = SparqlQueries(self.core, self.questions)
        self.recall = Recall(self.core, self.questions)
        self.invalidation = Invalidation(self.core, self.questions)
        self.revision = Revision(
            self.core, self.invalidation, entrenchment, frozenset(authorized)
        )
        self.writes = Writes(
            self.core,
            self.invalidation,
            entrenchment,
            frozenset(functional_relations),
            auto_revise,
        )

    @property
    def backend(self) -> Backend:
        return self.core.backend

    @property
    def settings(self) -> MappingSettings:
        return self.core.settings

    @property
    def clock(self) -> Callable[[], int]:
        return self.core.clock

    @property
    def read_only(self) -> bool:
        return self.core.read_only

    @property
    def folder(self) -> Path | None:
        """The folder of an on-disk store opened in this process; None in memory
        or over a server. Another process opens it with ``read_only=True``."""
        return self.core.backend.path

    @contextmanager
    def writes_held(self) -> Iterator[None]:
        """A block in which no write of this process runs on the store: its
        writers wait until the block ends (a fork inside sees no write half made)."""
        with self.core.lock:
            yield

    @property
    def entrenchment(self) -> Entrenchment:
        return self.revision.entrenchment

    @property
    def functional_relations(self) -> frozenset[str]:
        """The relations with one current object per subject (see ``put``)."""
        return self.writes.functional_relations

    # --- putting grains in (writes.py) and the write path every way in uses -----

    put = Delegated("writes", Writes.put)
    put_many = Delegated("writes", Writes.put_many)
    conflicts = Delegated("writes", Writes.conflicts)
    pending_erasure = Delegated("writes", Writes.pending_erasure)
    accept = staticmethod(accept)
    rows_for = Delegated("core", Core.rows_for)
    audit_rows = Delegated("core", Core.audit_rows)
    bulk = Delegated("core", Core.bulk)

    def load_history(
        self, reason: str | None = None, *, namespace: str | None = None
    ) -> AbstractContextManager[None]:
        """Load history: writes in the block may record past system times, into
        a store that holds no grain yet, or into a ``namespace`` that holds none;
        a block that raises leaves the store as it was (see
        :func:`.clock.load_history`)."""
        return load_history(self.core, reason, namespace)

    def check_new(
        self,
        grain: Grain,
        batch: Mapping[str, Grain] | None = None,
        *,
        exempt: str | None = None,
    ) -> None:
        """Refuse a supersession in disguise; see :func:`.admission.check_new`."""
        check_new(self.core, grain, batch, exempt=exempt)

    # --- reading grains and their index state (core.py) -------------------------

    get = Delegated("core", Core.get)
    resolve = Delegated("core", Core.resolve)
    status = Delegated("core", Core.status)
    is_empty = Delegated("core", Core.is_empty)
    verify_audit = Delegated("core", Core.verify_audit)

    def __contains__(self, address: object) -> bool:
        return address in self.core

    def __len__(self) -> int:
        """Return the number of grains (counts them all: use is_empty to test)."""
        return count_grains(self.core.backend)  # one COUNT, not a pass over the blobs

    # --- questions (questions.py, sparql_queries.py, recall.py) ------------------

    beliefs = Delegated("questions", Questions.beliefs)
    beliefs_by_status = Delegated("questions", Questions.beliefs_by_status)
    history = Delegated("questions", Questions.history)
    ancestors = Delegated("questions", Questions.ancestors)
    derived = Delegated("questions", Questions.derived)
    count_beliefs = Delegated("questions", Questions.count_beliefs)
    versions = Delegated("questions", Questions.versions)
    query = Delegated("sparql", SparqlQueries.query)
    frame = Delegated("sparql", SparqlQueries.frame)
    snapshot = Delegated("sparql", SparqlQueries.snapshot)
    knowledge_graphs = Delegated("sparql", SparqlQueries.knowledge_graphs)
    search = Delegated("recall", Recall.search)
    reindex = Delegated("recall", Recall.reindex)

    # --- changing what is believed (invalidation.py, revising.py) ----------------

    supersede = Delegated("invalidation", Invalidation.supersede)
    retract = Delegated("invalidation", Invalidation.retract)
    retract_all = Delegated("invalidation", Invalidation.retract_all)
    contradict = Delegated("invalidation", Invalidation.contradict)
    set_verification = Delegated("invalidation", Invalidation.set_verification)
    revise = Delegated("revision", Revision.revise)
    evidence = Delegated("revision", Revision.evidence)
    evidence_log = Delegated("revision", Revision.evidence_log)
    effective_confidence = Delegated("revision", Revision.effective_confidence)

    # --- upkeep (core.py) -------------------------------------------------------

    rebuild_current = Delegated("core", Core.rebuild_current)

    def changes(
        self,
        since: TimeLike,
        until: TimeLike = None,
        *,
        namespace: str | None = None,
        axis: Axis = "both",
    ) -> Changes:
        """Return the beliefs that entered and left between two points.

        ``axis``: ``"both"`` compares what was believed true at ``since`` (as
        believed then) with ``until`` (default now); ``"valid"`` how the world
        changed, as known at ``until``; ``"system"`` what the store learnt about
        the world at ``until`` (see :mod:`.changes`).

        >>> from oms_rdf import Belief, GrainStore
        >>> store = GrainStore()
        >>> old = store.put(Belief("ann", "works_at", "Acme", 0.9, created_at=1))
        >>> _ = store.supersede(old, {"type": "belief", "subject": "ann",
        ...     "relation": "works_at", "object": "Initech", "confidence": 0.9,
        ...     "created_at": 1000})
        >>> delta = store.changes(500, 2000)
        >>> [g["object"] for g in delta.entered], [g["object"] for g in delta.left]
        (['Initech'], ['Acme'])
        """
        return changes(self.questions, since, until, namespace=namespace, axis=axis)

    @contextmanager
    def transaction(
        self,
        *,
        event: str = "transaction",
        by: str | None = None,
        reason: str | None = None,
    ) -> Iterator[GrainStore]:
        """Make the operations in the block one atomic write, at one system time.

        Puts, supersessions, retractions, contradictions, evidence and
        verification marks inside ``with store.transaction() as tx:`` are each
        checked as they are called, against the store as it was when the block
        began; they are written together when it ends, with one audit event
        listing them, or not at all when it raises (a refusal caught in the
        block is its operation's alone). An operation on a grain an
        earlier one created or changed is refused (ERR_CONFLICT); imports and
        erasure are not part of a transaction (see :mod:`.transaction`).
        ``event`` names the audit event (``"transaction"``; a SPARQL Update's is
        ``"update"``), ``by`` is its actor and ``reason`` why (without one, the
        event's reason lists what its operations were).

        >>> from oms_rdf import Belief, GrainStore
        >>> store = GrainStore()
        >>> old = store.put(Belief("ann", "works_at", "Acme", 0.9, created_at=1))
        >>> with store.transaction() as tx:
        ...     _ = tx.supersede(old, {"type": "belief", "subject": "ann",
        ...         "relation": "works_at", "object": "Initech", "confidence": 0.9,
        ...         "created_at": 2})
        ...     _ = tx.put(Belief("bo", "works_at", "Acme", 0.8, created_at=2))
        >>> sorted(g["object"] for g in store.beliefs())
        ['Acme', 'Initech']
        """
        with self.core.transaction(event=event, actor=by, reason=reason):
            yield self

    optimize = Delegated("core", Core.optimize)
    flush = Delegated("core", Core.flush)
    close = Delegated("core", Core.close)

    def __enter__(self) -> GrainStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- import and export (oms_rdf.io) -------------------------------------------

    def prefixes(self) -> dict[str, str]:
        """The store's own prefixes, then those its adopted sources declared
        (recorded at adoption; a name keeps its first namespace)."""
        from ..io.export import prefixes_of

        return prefixes_of(self)

    def export(
        self,
        dest: Any,
        /,
        *,
        format: str | None = None,
        valid_at: Any = None,
        as_of: Any = None,
        namespace: str | None = None,
        grains: bool | None = None,
    ) -> int:
        """Write the store to a path or binary file; see :func:`oms_rdf.io.export`."""
        from ..io import export

        return export(
            self,
            dest,
            format=format,
            valid_at=valid_at,
            as_of=as_of,
            namespace=namespace,
            grains=grains,
        )

    def import_(
        self,
        src: Any,
        /,
        *,
        format: str | None = None,
        skip_invalid: bool = False,
        namespace: str | None = None,
        confidence: float = 1.0,
        base_iri: str | None = None,
        progress: Callable[[int], object] | None = None,
        stage: Stage | None = None,
    ) -> ImportReport:
        """Import a path or binary file, all or nothing; see :func:`oms_rdf.io.import_`."""
        from ..io import import_

        return import_(
            self,
            src,
            format=format,
            skip_invalid=skip_invalid,
            namespace=namespace,
            confidence=confidence,
            base_iri=base_iri,
            progress=progress,
            stage=stage,
        )

    def update(
        self,
        sparql: str,
        /,
        *,
        namespace: str | None = None,
        confidence: float = 1.0,
        by: str | None = None,
        reason: str | None = None,
        valid_from: TimeLike = None,
        valid_to: TimeLike = None,
        base_iri: str | None = None,
    ) -> UpdateReport:
        """Apply SPARQL Update as belief operations; see :mod:`oms_rdf.io.update`.

        ``INSERT DATA`` adopts its triples as beliefs (in ``namespace``, with
        ``confidence``), as an import does; ``DELETE DATA`` retracts the current
        beliefs that assert its triples, through the policies. The whole request
        is one atomic write, made after every operation's checks; a refused
        request writes nothing. ``reason`` is recorded with the retractions and is
        the justification a ``soft_locked`` belief needs; without it such a
        retraction is refused (ERR_INVALIDATION_DENIED). Any other update form is
        refused with ERR_QUERY. Returns an ``UpdateReport``.

        With ``valid_from`` (and ``valid_to``; none: no end) the request is about
        that portion of valid time only (SQL:2011 ``FOR PORTION OF``): ``DELETE
        DATA`` retracts the portion, an ``INSERT DATA`` that replaces a held
        triple supersedes it over the portion, and new beliefs are valid over it.
        ``base_iri`` resolves the request's relative IRIs (a request's own
        ``BASE`` wins); without one, a relative IRI is refused.
        """
        from ..io.update import update

        check_query(sparql, update=True)  # before any parser: deep nesting crashes them
        return update(
            self,
            sparql,
            namespace=namespace,
            confidence=confidence,
            by=by,
            reason=reason,
            valid_from=valid_from,
            valid_to=valid_to,
            base_iri=base_iri,
        )

    def to_rdflib(self, *, grains: bool = False) -> rdflib.Dataset:
        """Return the knowledge (or, with ``grains=True``, every graph) as an rdflib.Dataset."""
        from ..io import to_rdflib

        return to_rdflib(self, grains=grains)

    # --- erasure (store/erasure.py) ----------------------------------------------

    def erase(
        self, address: str | Grain, /, *, reason: str, by: str | None = None
    ) -> ErasureReport:
        """Erase one grain, every layer of it, in one atomic write (compliance only).

        A tombstone (address and time) stays, so that nothing brings it back; the
        audit event names the address and ``reason``. The erased text leaves the
        store's files only with :meth:`vacuum`; the report says so until then.

        Raises:
            PolicyError: ERR_INVALIDATION_DENIED when the grain is under a hold.
            NotFoundError: ERR_NOT_FOUND for a grain not stored (or erased already).
            SchemaError: an empty reason.
        """
        address = check_found(
            self, address.address if isinstance(address, Grain) else address
        )
        found = erase_grains(self, [address], reason=reason, by=by)
        if found.held:
            raise PolicyError(
                f"erase refused: grain {address[:12]}… is under a hold (spec §15.2: "
                "delete MUST check hold); release the hold first",
                code=ErrorCode.INVALIDATION_DENIED,
            )
        return found

    def erase_subject(
        self,
        subject: str,
        /,
        *,
        reason: str,
        namespace: str | None = None,
        user_id: str | None = None,
        by: str | None = None,
        vacuum: bool = False,
    ) -> ErasureReport:
        """Erase every grain in which a person appears (see :meth:`subject_report`).

        One atomic write for all of them; grains under a hold are kept and listed
        in the report, and grains derived from erased ones are listed for the
        caller to decide about. With ``vacuum=True`` the store is rewritten too,
        so the erased bytes leave its files.
        """
        selected = select(self, subject, namespace=namespace, user_id=user_id)
        return erase_grains(self, selected, reason=reason, by=by, vacuum=vacuum)

    def subject_report(
        self,
        subject: str,
        /,
        *,
        namespace: str | None = None,
        user_id: str | None = None,
    ) -> SubjectReport:
        """Every grain in which a person appears, with its index state and history.

        The same selector as :meth:`erase_subject`: subject, object, ``user_id``,
        and text values in ``context`` and ``provenance_chain``, in every namespace
        unless one is given. ``.to_json()`` for the person, ``.records()`` or
        ``.frame()`` for a table.
        """
        with self.core.lock:
            return subject_report(self, subject, namespace=namespace, user_id=user_id)

    def process_erasures(
        self, now: Any = None, *, sla_days: float = 30
    ) -> ErasureReport:
        """Erase the grains pending erasure (a withdrawn consent) whose SLA has passed.

        ``sla_days`` (30 by default) after the withdrawal; grains under a hold are
        kept and reported.

        Raises:
            SchemaError: ERR_RANGE for an SLA that is not a number of days from 0
                to 31 (spec §8.3: erasure within one month of the withdrawal).
        """
        if not (isinstance(sla_days, int | float) and 0 <= sla_days <= 31):
            raise SchemaError(
                f"sla_days: expected days from 0 to 31 (spec §8.3: within one "
                f"month), found {sla_days!r}",
                code=ErrorCode.RANGE,
                path="sla_days",
            )
        when = self.clock() if now is None else to_millis(now)
        with self.core.lock:
            found = list(due(self, when, sla_days))
            return erase_grains(
                self, found, reason=f"consent withdrawn, {sla_days:g}-day SLA passed"
            )

    def vacuum(self, *, progress: Any = None) -> None:
        """Rewrite the store with only its live data, so erased bytes leave its files.

        Atomic and crash-safe: a kill at any point leaves the old store or the new
        one (see :meth:`oms_rdf.backends.embedded.LocalBackend.vacuum`).
        """
        with self.core.lock:
            on_disk = getattr(self.backend, "path", None) is not None
            if on_disk and (reading := open_answers(self.backend)):  # see knowledge.py
                raise StoreError(
                    f"{reading} answers of this store's queries are still being read: "
                    "read them to their end, or let go of them (del), before vacuum(); "
                    "nothing was changed",
                    code=ErrorCode.CONFLICT,
                )
            self.backend.vacuum(progress, reading=lambda: open_answers(self.backend))
            self.core.forget()
            self.core.write([], self.audit_rows("vacuum"))

    @classmethod
    def from_rdflib(cls, dataset: rdflib.Dataset) -> GrainStore:
        """Return a new in-memory store holding an ``rdflib.Dataset`` of our graphs."""
        from ..io import from_rdflib

        return from_rdflib(dataset)
