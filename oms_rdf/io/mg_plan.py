"""The import plan of a ``.mg`` container: its grains, then its manifest's entries."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

from ..codec.grain import Grain
from ..errors import DecodeError, ErrorCode, OmsError, SignatureError
from ..rdf.mapping import Row
from ..store import BulkImport, GrainStore
from .container import read_mg
from .manifest import state_from_manifest
from .plans import BATCH, Known, check_same_state, closes, fits_one_pass, knowing
from .records import ImportReport, Item, fail_or_skip
from .sources import Progress

__all__ = ["plan_mg"]

_BATCH_BYTES = 8 << 20  # blob bytes decoded at once while checking a container


@contextmanager
def plan_mg(
    target: BulkImport,
    reopen: Callable[[], IO[bytes]],
    report: ImportReport,
    skip: bool,
    progress: Progress,
) -> Iterator[Callable[[], Iterator[Item]]]:
    """Check the whole container in one read, then yield the new grains' rows.

    The rows come from what the read kept, or from a second read past
    ``ONE_PASS_LIMIT`` (see :func:`.plans.fits_one_pass`).
    """
    plan = _MgPlan(target, reopen, report, skip)
    with reopen() as raw:
        # Skipping, the plan decodes each grain itself, to report a bad one and
        # go on; otherwise the reader does, and the first bad grain ends it.
        plan.read(read_mg(raw, progress=progress, check=not skip).items())
    report.added = len(plan.fresh)
    yield plan.rows


def _reread(
    reopen: Callable[[], IO[bytes]],
) -> Iterator[Grain | tuple[str, dict[str, Any]]]:
    with reopen() as raw:
        for item in read_mg(raw, check=False).items():
            if not isinstance(item, bytes):
                yield item
                continue
            try:
                yield Grain.from_blob(item)
            except OmsError:
                continue  # refused and reported by the first read


class _MgPlan:
    """What an ``.mg`` import adds, decided in one read of the container.

    Its grains come first, then its manifest, an entry at a time. The new grains
    and their entries are kept for writing while they are at most
    ``ONE_PASS_LIMIT``; past that, only sets of addresses are kept, and the rows
    are made again from a second read.
    """

    def __init__(
        self,
        target: BulkImport,
        reopen: Callable[[], IO[bytes]],
        report: ImportReport,
        skip: bool,
    ) -> None:
        self.store, self.reopen = target.store, reopen
        self.report, self.skip = report, skip
        self.fresh: set[str] = set()  # the new grains, to be added
        self.contained: set[str] = set()  # every grain the container holds
        self.flagged: set[str] = set()  # new grains whose signed flag is set
        self.closed: set[str] = set()  # new grains their entry closes
        self.entries: set[str] = set()  # addresses the manifest names
        self.signatures: dict[str, Any] = {}
        # What the rows are made from, in the container's order, while it fits.
        self.kept: list[Grain | tuple[str, dict[str, Any]]] | None = []
        self.kept_bytes = 0  # of the blobs kept
        self.policies = target.policies()
        self.known = Known(target, report)

    def read(self, items: Iterator[bytes | tuple[str, dict[str, Any]]]) -> None:
        """Take the container's grains and entries, in its order; then refuse the
        signed grains without an envelope and what put's policies refuse."""
        batch: list[Grain] = []
        size = 0  # of the batch's blobs: a batch of large grains is cut short
        for index, item in enumerate(items):
            if isinstance(item, bytes):
                try:
                    batch.append(Grain.from_blob(item))
                except OmsError as exc:
                    fail_or_skip(self.report, self.skip, f"grain[{index}]", exc)
                    continue
                size += len(item)
                if len(batch) == BATCH or size > _BATCH_BYTES:
                    self._grains(batch)
                    batch, size = [], 0
            else:
                self._grains(batch)  # every grain is seen before the first entry
                batch = []
                self._entry(*item)
        self._grains(batch)
        for address in sorted(self.flagged - self.entries):
            self._refuse(address, _unsigned())
        for address, error in self.policies.refused(self.closed.__contains__):
            self._refuse(address, error)

    def _grains(self, batch: list[Grain]) -> None:
        self.contained.update(g.address for g in batch)
        for grain in self.known.new(batch):
            if grain.address in self.fresh:
                continue  # the same grain again: kept and checked once
            self.fresh.add(grain.address)
            self.policies.see(grain)
            if grain.signed:
                self.flagged.add(grain.address)
            self._keep(grain)

    def _entry(self, address: str, entry: dict[str, Any]) -> None:
        if address in self.entries:
            raise DecodeError(
                f"the manifest names {address[:12]}… twice",
                path=f"manifest {address[:12]}…",
            )
        self.entries.add(address)
        state = state_from_manifest(address, entry)
        if address in self.flagged:
            # A signed grain travels with its envelope; verified here as put does.
            try:
                self.signatures[address] = _envelope(self.store, address, entry)
            except OmsError as exc:
                self._refuse(address, exc)
        elif address in self.fresh and "oms_rdf:envelope" in entry:
            self._refuse(address, _unflagged())
        if address in self.fresh:
            for row in state:
                self.policies.index(address, row[1], row[2])
            if closes(state):
                self.closed.add(address)
            self._keep((address, entry))
        elif address in self.store:
            check_same_state(self.store, address, state)
        elif address not in self.contained:
            missing = "the manifest names a grain the container does not hold"
            where = f"manifest {address[:12]}…"
            fail_or_skip(self.report, self.skip, where, DecodeError(missing))

    def _keep(self, item: Grain | tuple[str, dict[str, Any]]) -> None:
        if self.kept is None:
            return
        if isinstance(item, Grain):
            self.kept_bytes += len(item.blob)
        if fits_one_pass(len(self.kept), self.kept_bytes):
            self.kept.append(item)
        else:
            self.kept = None  # past what one read may hold: read again to write

    def rows(self) -> Iterator[Row]:
        """The rows of the new grains, each once, with their entries' state."""
        items = self.kept if self.kept is not None else _reread(self.reopen)
        written: set[str] = set()  # a container may hold a grain twice
        for item in items:
            if isinstance(item, Grain):
                if item.address in self.fresh and item.address not in written:
                    written.add(item.address)
                    rows = self.store.rows_for(item, self.signatures.get(item.address))
                    yield from knowing(rows, item.address in self.closed)
            elif item[0] in self.fresh:
                yield from state_from_manifest(*item)

    def _refuse(self, address: str, error: OmsError) -> None:
        self.fresh.discard(address)
        fail_or_skip(self.report, self.skip, f"grain {address[:12]}…", error)


def _unsigned() -> SignatureError:
    return SignatureError(
        "the grain's signed flag (header bit 0) is set but the manifest holds no "
        "COSE_Sign1 envelope for it (oms_rdf:envelope)",
        code=ErrorCode.SIGNED_MISMATCH,
    )


def _unflagged() -> SignatureError:
    return SignatureError(
        "the manifest holds a COSE_Sign1 envelope (oms_rdf:envelope) for a grain "
        "whose signed flag (header bit 0) is clear (spec §9.2)",
        code=ErrorCode.SIGNED_MISMATCH,
    )


def _envelope(store: GrainStore, address: str, entry: Mapping[str, Any]) -> Any:
    """The verified signature of a signed grain, from its manifest entry."""
    envelope = entry.get("oms_rdf:envelope")
    if not isinstance(envelope, bytes):
        raise _unsigned()
    signed, signature = store.accept(envelope)
    if signed.address != address:
        raise SignatureError(
            f"the envelope in the manifest signs {signed.address[:12]}…",
            code=ErrorCode.SIGNATURE,
        )
    return signature
