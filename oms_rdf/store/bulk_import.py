"""The store's side of an import: one all-or-nothing bulk write, and what it answers.

:mod:`oms_rdf.io` reads a source and checks its records; it writes them through a
:class:`BulkImport`, which :meth:`BulkImport.open` makes on the store's bulk write
path (:meth:`~oms_rdf.store.GrainStore.bulk`, a journal: see :mod:`.journal`). A
failure, or a block left without :meth:`~BulkImport.finish`, undoes the import
whole. It offers:

- the questions an import asks of the store: which grains it holds
  (:meth:`~BulkImport.held`) and which it erased (:meth:`~BulkImport.erased`);
- :meth:`~BulkImport.policies`: the policy check ``put`` makes of a new grain,
  made of all of an import's new grains together (:class:`ImportPolicies`);
- :meth:`~BulkImport.bury`: the tombstones a backup carries, written first;
- :meth:`~BulkImport.write` and :meth:`~BulkImport.rewind`: rows in atomic
  chunks, and back to the start with the journal still open;
- :meth:`~BulkImport.finish`: the imported audit chain must verify, then the write
  ends with the import's audit event (and rebuilds the knowledge unless the rows
  carried it);
- :meth:`~BulkImport.restore`: a whole-store export loaded natively into a store
  that holds no grain while the caller checks it, kept only when the checks hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

import pyoxigraph as ox

from ..codec.grain import Grain
from ..codec.schema import BELIEF, CONSENT
from ..errors import DecodeError, OmsError
from ..rdf.mapping import Row, grain_iri, millis_literal
from ..rdf.sparql import as_rows
from ..rdf.vocab import OMS
from .admission import check_axes
from .audit import check as check_audit
from .consent import foreign_withdrawal, is_withdrawal, withdrawals_of
from .erasure import erased_addresses
from .import_states import ImportStates
from .journal import Journal, cyclic_gc_paused
from .policy import is_protected
from .presence import stored_addresses
from .progress import Stage

if TYPE_CHECKING:
    from . import GrainStore

__all__ = ["BulkImport", "ImportPolicies"]

Item = Row | ox.Quad

# A restored export may hold a writer's lock on the store it was made from.
_CAUGHT_LOCKS = f"DELETE WHERE {{ GRAPH {OMS.index} {{ {OMS.writer} ?p ?o }} }}"


class BulkImport:
    """One import's write into a store, all or nothing; see the module docstring.

    >>> from oms_rdf import Belief, GrainStore
    >>> store = GrainStore()
    >>> grain = Belief("ann", "likes", "tea", 0.9, created_at=1)
    >>> with BulkImport.open(store) as target:
    ...     new = [a for a in [grain.address] if a not in target.held([a])]
    ...     target.write(store.rows_for(grain), grains=len(new))
    ...     target.finish(len(new), rebuild=False)
    >>> [g["object"] for g in store.beliefs()]
    ['tea']
    """

    def __init__(self, store: GrainStore, journal: Journal) -> None:
        self.store, self.journal = store, journal
        # A forward-only store that holds grains takes no system time before its
        # last commit from an import either (see :mod:`.clock`); an empty one
        # takes the history an import or a restore carries.
        system = store.core.system
        forward = system.forward_only and not journal.empty and not system.loading
        self._after = system.last(store.backend) if forward else None
        self.checks: list[ImportPolicies] = []  # the plans' checks (withdrawals)

    @classmethod
    @contextmanager
    def open(
        cls, store: GrainStore, *, stage: Stage | None = None
    ) -> Iterator[BulkImport]:
        """Hold ``store`` for one import (see :meth:`GrainStore.bulk`).

        ``stage`` is told as the writing and a compaction begin.
        """
        with store.bulk(stage=stage) as journal:
            yield cls(store, journal)

    @property
    def empty(self) -> bool:
        """Whether the store held no grain when the import began (and no other
        process writes it): a refusal is then undone in one cheap step."""
        return self.journal.empty

    @property
    def written(self) -> int:
        """The rows (quads) the import has written so far."""
        return self.journal.written

    def erased(self) -> set[str]:
        """The addresses of the grains erased here (their tombstones), as of now:
        the tombstones :meth:`bury` wrote are among them."""
        return erased_addresses(self.store.backend)

    def held(self, addresses: Iterable[str]) -> set[str]:
        """The addresses among ``addresses`` whose grains the store holds (over a
        server, one query per batch)."""
        return stored_addresses(self.store.backend, addresses)

    def policies(self) -> ImportPolicies:
        """A check of the import's new grains against put's policies, at now."""
        policies = ImportPolicies(self.store)
        self.checks.append(policies)
        return policies

    def withdrawals(self) -> list[Grain]:
        """The consent withdrawals the import brought in, and those stored of
        the consents it brought (they came first), each once."""
        found = {g.address: g for p in self.checks for g in p.withdrawals}
        core = self.store.core
        for consent in (c for p in self.checks for c in p.consents):
            if consent in self.store:
                found.update((w.address, w) for w in withdrawals_of(core, consent))
        return [g for a, g in found.items() if a in self.store]

    def dependents(self) -> list[Grain]:
        """The grains with a processing basis the import brought in, each once:
        those of a consent withdrawn before are pending erasure from the start."""
        found = {g.address: g for p in self.checks for g in p.dependents}
        return [g for a, g in found.items() if a in self.store]

    def bury(self, tombstones: Mapping[str, int]) -> None:
        """Write the tombstones (address -> epoch ms of the erasure) the store has
        not, for grains it does not hold: an import never erases a held grain."""
        if not tombstones:
            return
        new = set(tombstones) - self.erased()
        held = self.held(new)
        self.journal.write(
            ox.Quad(
                grain_iri(a), OMS.erasedAt, millis_literal(tombstones[a]), OMS.index
            )
            for a in sorted(new - held)
        )

    def write(self, items: Iterable[Item], *, grains: int | None = None) -> None:
        """Write rows or quads in atomic chunks; ``grains``: how many they hold,
        for the stage to count.

        Raises:
            TimeRangeError: ERR_RANGE, on a forward-only store that holds grains,
                for a row recording a system time before its last commit.
        """
        if self._after is not None:
            items = as_rows(list(items))
            self.store.core.system.check(self.store.backend, items, "this import")
        self.journal.write(items, grains=grains)

    def rewind(self) -> None:
        """Take back everything written so far; the import goes on from the start."""
        self.journal.rewind()

    def finish(self, grains: int, *, rebuild: bool) -> None:
        """End the import: refuse an audit chain that does not verify, then add the
        import's audit event (``grains`` added), rebuilding the knowledge first
        when ``rebuild`` (the rows did not carry it).

        Raises:
            IntegrityError: ERR_INTEGRITY when the imported audit log fails its
                hash chain; nothing of the import is kept.
        """
        check_audit(self.store.backend)
        rows = self.store.audit_rows("import", count=grains)
        self.journal.finish(rows, rebuild=rebuild)

    def _load(self, source: IO[bytes] | Path, fmt: ox.RdfFormat) -> bool:
        """Load on the loader's thread; whether the source was not valid RDF.

        The error stays on this thread with its traceback: its frames hold
        pyoxigraph iterators, which may only be dropped on the thread that made
        them (pyoxigraph raises, unraisably, when another thread drops one).
        """
        try:
            self.journal.load(source, fmt)
        except DecodeError:
            return True
        return False

    def restore(
        self,
        source: IO[bytes] | Path,
        fmt: ox.RdfFormat,
        check: Callable[[], tuple[int, bool] | None],
    ) -> int | None:
        """Load a whole-store export natively, into a store that held no grain.

        The load runs on a thread of its own while ``check`` (on this one) reads
        the source again; it returns the number of grains and whether the
        source's knowledge is what the rebuild would make, or None when the
        source may not be kept as it is. A file given by its ``Path`` is read by
        the store itself, without the GIL. Kept, the restore is finished as
        :meth:`finish` does, and the number of grains returned; refused (by the
        check, a syntax error, or an audit chain that does not verify), the store
        is put back as it was, the import still open, and None returned.
        """
        backend = self.store.backend
        before = len(backend)
        with (
            cyclic_gc_paused(),
            ThreadPoolExecutor(1, thread_name_prefix="oms-restore") as loader,
        ):
            loading = loader.submit(self._load, source, fmt)
            try:
                checked = check()
            finally:
                wait([loading])  # before the source it reads is closed
            if loading.result():
                checked = None  # a syntax error: the caller names its line
        backend.update(_CAUGHT_LOCKS)
        if checked is not None:
            try:
                check_audit(backend)
            except OmsError:
                checked = None
        if checked is None:
            self.journal.rewind()
            return None
        grains, as_rebuilt = checked
        self.journal.written = len(backend) - before
        rows = self.store.audit_rows("import", count=grains)
        self.journal.finish(rows, rebuild=not as_rebuilt)
        return grains


class ImportPolicies:
    """What ``put`` checks of each new grain, checked of an import's new grains.

    A grain whose ``derived_from`` names a current protected belief with the
    same claim is a supersession in disguise (:func:`.admission.check_new`). The
    parent may be stored, or new in the same import and current after it; only
    protected new beliefs and new grains with parents are kept for the check.
    The index state the import brings for them is checked too (:mod:`.import_states`).
    """

    def __init__(self, store: GrainStore) -> None:
        self.store, self.now = store, store.clock()
        self.protected: dict[str, Grain] = {}
        self.children: list[Grain] = []
        self.states = ImportStates(store)
        self.index = self.states.index  # take one index row of a grain
        self.withdrawals: list[Grain] = []  # honoured once the import is written
        self.consents: dict[str, Grain] = {}  # the import's own
        self.dependents: list[Grain] = []  # grains with a processing basis: too
        self.misplaced: dict[str, OmsError] = {}  # grains with times put refuses

    def see(self, grain: Grain) -> None:
        """Take one new grain of the import."""
        self.states.see(grain)
        try:
            check_axes(grain)
        except OmsError as exc:
            self.misplaced[grain.address] = exc
        if is_withdrawal(grain):
            self.withdrawals.append(grain)
        elif grain.type_byte == CONSENT.byte:
            self.consents[grain.address] = grain  # its withdrawals may be stored
        if isinstance(grain.get("processing_basis"), str):
            self.dependents.append(grain)
        if grain.type_byte != BELIEF.byte:
            return
        if is_protected(grain.get("invalidation_policy"), self.now):
            self.protected[grain.address] = grain
        if grain.get("derived_from"):
            self.children.append(grain)

    def refused(self, closed: Callable[[str], bool]) -> Iterator[tuple[str, OmsError]]:
        """The new grains put would refuse, or whose index state the store's
        operations never write, each by its address with its error; ``closed``
        tells the new grains the import brings in already superseded or retracted."""
        yield from self.misplaced.items()
        yield from self.states.refusals()
        for withdrawal in self.withdrawals:  # of a consent the store holds already
            refusal = foreign_withdrawal(self.store.core, withdrawal)
            if refusal is not None:
                yield withdrawal.address, refusal
        current = {a: g for a, g in self.protected.items() if not closed(a)}
        for grain in self.children:
            try:
                self.store.check_new(grain, current)
            except OmsError as exc:
                yield grain.address, exc
