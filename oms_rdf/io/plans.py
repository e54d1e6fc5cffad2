"""What every import plan shares: which grains are new, their index state, settings.

An import plan checks a whole source first, then yields the rows to write. One
plan per kind of source: :mod:`.jsonl_plan`, :mod:`.mg_plan`, :mod:`.dataset_plan`
(an export of ours in RDF), :mod:`.adopt` (any other RDF). A plan is a context
manager that yields a function giving the rows; it writes nothing itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager

import pyoxigraph as ox

from ..codec.grain import Grain
from ..errors import DecodeError, ErrorCode, StoreError
from ..rdf.mapping import NIH_PREFIX, Row, grain_iri, rows_to_nquads
from ..rdf.vocab import OMS, XSD
from ..store import BulkImport, GrainStore
from ..times import to_millis
from .records import ImportReport, Item, term_text

ONE_PASS_LIMIT = 250_000  # grains an import keeps from its first read
ONE_PASS_BYTES = 256 << 20  # and the most blob bytes it keeps
BATCH = 1000  # grains read ahead of their rows, and asked of the store at once

Plan = AbstractContextManager[Callable[[], Iterator[Item]]]

_P_SYSTEM_TO = str(OMS.systemTo)
_GRAIN_GRAPHS = frozenset({"", str(OMS.blobs), str(OMS.index)})


def fits_one_pass(grains: int, blob_bytes: int) -> bool:
    """Whether an import may keep this many grains from its first read, to write
    them without reading the source again."""
    return grains < ONE_PASS_LIMIT and blob_bytes <= ONE_PASS_BYTES


class TwoPassError(Exception):
    """A one-pass import met what only two passes handle exactly: the journal
    undoes what it wrote, and the import starts again in two passes."""


def knowing(rows: list[Row], closed: bool) -> list[Row]:
    """A new grain's rows, without its knowledge triple when its state closes it:
    then the rows are the knowledge as the store would rebuild it."""
    if not closed:
        return rows
    return [row for row in rows if row[3] in _GRAIN_GRAPHS]


def closes(state: Sequence[Row]) -> bool:
    """Whether the index rows an import brings close a grain (oms:systemTo)."""
    return any(r[1] == _P_SYSTEM_TO for r in state)


def tombstone_time(quad: ox.Quad) -> int:
    """The time of a tombstone an RDF source carries (``<grain> oms:erasedAt T``),
    as epoch ms: what the store writes, an xsd:dateTime of years 1-9999.

    Raises:
        DecodeError: ERR_CORRUPT for any other term.
        SchemaError: ERR_RANGE for a time outside years 1-9999.
    """
    term = quad.object
    if not isinstance(term, ox.Literal) or term.datatype != XSD.dateTime:
        raise DecodeError(
            f"a tombstone's time (oms:erasedAt) is an xsd:dateTime; found {term} "
            f"in {quad}"
        )
    return to_millis(term.value, "oms:erasedAt")


class Known:
    """Which of a source's grains are new here: neither stored nor erased.

    The store's tombstones are read once; stored grains are asked a batch at a
    time (one query per batch over a server). An erased grain is skipped, and the
    import says so.
    """

    def __init__(self, target: BulkImport, report: ImportReport) -> None:
        self.target, self.report = target, report
        self.tombstones = target.erased()
        self.held: set[str] = set()  # the source's grains stored already

    def erased(self, address: str) -> bool:
        """Whether a grain was erased here; then the import reports it skipped."""
        if address not in self.tombstones:
            return False
        self.skipped(address)
        return True

    def skipped(self, address: str) -> None:
        """Report an erased grain (here, or by the source's own tombstone) skipped."""
        where = f"grain {address[:12]}…"
        if (where, "erased, skipped") not in self.report.skipped:
            self.report.skipped.append((where, "erased, skipped"))

    def new(self, grains: Iterable[Grain]) -> Iterator[Grain]:
        """The grains that are new here, in their order."""
        batch: list[Grain] = []
        for grain in grains:
            batch.append(grain)
            if len(batch) == BATCH:
                yield from self._new(batch)
                batch = []
        yield from self._new(batch)

    def _new(self, batch: list[Grain]) -> Iterator[Grain]:
        held = self.target.held({g.address for g in batch})
        self.held |= held  # a set: a source read twice counts each once
        self.report.held = len(self.held)
        for grain in batch:
            if grain.address not in held and not self.erased(grain.address):
                yield grain


def check_same_state(store: GrainStore, address: str, rows: list[Row]) -> None:
    """Refuse index state for a stored grain other than the state it has.

    Raises:
        StoreError: ERR_CONFLICT: importing would change the grain's history.
    """
    # Compare as stored: Oxigraph keeps literals in canonical form ("…00Z", not
    # "…00.000Z"), so both sides go through a store before comparing.
    given = ox.Store()
    node = f"<{NIH_PREFIX}{address}>"  # the grain's own rows; events are other nodes
    own = [row for row in rows if row[0] == node]
    given.load(rows_to_nquads(own).encode(), format=ox.RdfFormat.N_QUADS)
    # The signer is read from the envelope, which the grain's bytes pin down;
    # protection an erasure kept (oms:protectedBy) is the erasing store's, and
    # a copy that holds the erased grain has it through that grain.
    have = {
        str(q)
        for q in store.backend.quads(grain_iri(address), None, None, OMS.index)
        if not _not_history(q)
    }
    if {
        str(q) for q in given if not _not_history(q) and not _of_erased(store, q)
    } != have:
        raise StoreError(
            f"grain {address[:12]}… is already in the store with another index state; "
            "importing would change its history (the store cannot tell a change "
            "its source made since an earlier backup from one of its own: restore "
            "a later backup of a store whose grains changed into an empty store)",
            code=ErrorCode.CONFLICT,
            path=address,
        )


_NOT_HISTORY = (OMS.signedBy, OMS.protectedBy, OMS.subtreeHops)
_ACCUMULATING = ox.Literal("accumulating")


def _not_history(quad: ox.Quad) -> bool:
    """A row that is no part of a grain's history: one of _NOT_HISTORY, or an
    SPRT status of "accumulating", the state of a grain with none written (the
    manifest writes none)."""
    return quad.predicate in _NOT_HISTORY or (
        quad.predicate == OMS.sprtStatus and quad.object == _ACCUMULATING
    )


def _of_erased(store: GrainStore, quad: ox.Quad) -> bool:
    """A dispute with a grain erased since: the erasure took it out of the
    store's state, and an older backup still names it."""
    rival = quad.object
    return quad.predicate == OMS.conflictsWith and (
        next(store.backend.quads(rival, OMS.erasedAt, None, OMS.index), None)
        is not None
    )


class SourceSettings:
    """The mapping settings an RDF export was made with (node ``oms:settings``).

    Its grain layer was mapped with them; a store with other settings would map
    the same grains to other terms, so it refuses the source.
    """

    def __init__(self) -> None:
        self.bases: set[str] = set()
        self.relations: set[str] = set()
        self.seen = False  # a source without the node (hand-made) carries none

    def see(self, quad: ox.Quad) -> None:
        """Take one quad of the settings node."""
        if quad.predicate == OMS.baseIri:
            self.seen = True
            self.bases.add(term_text(quad.object))
        elif quad.predicate == OMS.entityRelation:
            self.relations.add(term_text(quad.object))

    def check(self, store: GrainStore) -> None:
        """Refuse settings other than ``store``'s (ERR_CONFLICT)."""
        if not self.seen:
            return
        mine = store.settings
        if self.bases != {mine.base_iri}:
            raise StoreError(
                f"the source was made with base IRI {', '.join(sorted(self.bases))}, "
                f"this store uses {mine.base_iri!r}; entity IRIs would not match",
                code=ErrorCode.CONFLICT,
            )
        if self.relations != mine.entity_relations:
            raise StoreError(
                f"the source was made with entity relations {sorted(self.relations)}, "
                f"this store with {sorted(mine.entity_relations)}; open the store "
                "with the source's (entity_relations=...) to restore it",
                code=ErrorCode.CONFLICT,
            )


def holds_blank(quad: ox.Quad) -> bool:
    """Whether a quad's subject or object is a blank node."""
    return isinstance(quad.subject, ox.BlankNode) or isinstance(
        quad.object, ox.BlankNode
    )
