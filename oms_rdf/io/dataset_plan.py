"""The import plan of an oms_rdf export in RDF: its grain layer, blobs and index.

The store's reserved graphs take only what an export of ours holds, and only
for grains whose blobs verify: every grain node has its blob, its grain layer is
what the mapping makes of the blob (:mod:`.layer`), its index state is the
store's if the store holds it already, its evidence is whole (:mod:`.evidence`).
The knowledge (``oms:current`` and adopted graphs) is not read: the store
rebuilds it from the grains. A triple format (the flattened export of
``grains=True``) has its quads put back in their graphs by property.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, NoReturn

import pyoxigraph as ox

from ..codec.grain import Grain
from ..errors import DecodeError, ErrorCode, OmsError, StoreError
from ..rdf.literals import base64_bytes
from ..rdf.mapping import NIH_PREFIX, Row, address_of
from ..rdf.vocab import INDEX_PROPERTIES, OMS
from ..store import BulkImport
from .evidence import EvidenceCheck, is_event_subject
from .layer import LayerCheck
from .plans import (
    Known,
    SourceSettings,
    check_same_state,
    holds_blank,
    tombstone_time,
)
from .records import ImportReport, Item, fail_or_skip, row_of, term_text
from .signatures import SignatureCheck
from .sources import PREFIX, Progress, line_of, parse_source, prefix_rows

__all__ = ["plan_dataset"]

_OURS = (ox.DefaultGraph(), OMS.blobs, OMS.index, OMS.audit)
_BLOB_PROPERTIES = frozenset({OMS.blob, OMS.envelope})
# The vocabulary lists the index properties by name.
_INDEX_PROPERTIES = frozenset(getattr(OMS, name) for name in INDEX_PROPERTIES)
# Why a quad is refused, or a grain skipped.
_BLANK = "a blank node in the store's own graphs, where the store never writes one"
_JOURNAL = "the journal belongs to a write in progress in this store"
_OTHER_LAYER = (
    "its grain layer (default graph) is not what the mapping makes of its blob "
    "with this store's settings"
)
_STRAY_INDEX = "index state for a grain neither in the source nor the store"


@contextmanager
def plan_dataset(
    target: BulkImport,
    reopen: Callable[[], IO[bytes]],
    fmt: ox.RdfFormat,
    report: ImportReport,
    skip: bool,
    progress: Progress,
) -> Iterator[Callable[[], Iterator[Item]]]:
    """Check the whole export in one read, then yield its quads to write."""
    plan = _DatasetPlan(target, reopen, fmt, report, skip)
    with reopen() as raw:
        plan.read(_quads(raw, fmt, progress))
    plan.conclude()
    yield plan.rows


class _DatasetPlan:
    """What an export's quads bring in, decided in one read."""

    def __init__(
        self,
        target: BulkImport,
        reopen: Callable[[], IO[bytes]],
        fmt: ox.RdfFormat,
        report: ImportReport,
        skip: bool,
    ) -> None:
        self.store, self.reopen, self.fmt = target.store, reopen, fmt
        self.report, self.skip = report, skip
        self.known: dict[str, bool] = {}  # grain node -> already in the store
        self.with_blob: set[str] = set()
        self.bad: set[str] = set()  # grain nodes skipped: never written
        self.existing_index: dict[str, set[Row]] = {}  # of grains stored already
        self.indexed: dict[str, ox.Quad] = {}  # grain node -> one of its index quads
        self.described: set[str] = set()  # grain nodes with a grain layer
        self.present: set[str] = set()  # quads not of a grain the store has already
        self.closed: set[str] = set()  # grain nodes the source closes (oms:systemTo)
        self.buried: set[str] = set()  # grain nodes with the source's tombstone
        self.burying: set[str] = set()  # ... whose tombstone the import writes
        self.settings = SourceSettings()
        self.policies = target.policies()
        self.erasures = Known(target, report)
        self.layer = LayerCheck(self.store.settings)
        self.evidence = EvidenceCheck()
        self.signatures = SignatureCheck(self.store)

    def refuse(self, quad: ox.Quad, why: str) -> NoReturn:
        raise StoreError(
            f"{why}: {quad}; only an oms_rdf export whose grains verify may write the "
            "store's reserved graphs",
            code=ErrorCode.CONFLICT,
            path=line_of(self.reopen, quad),
        )

    def read(self, quads: Iterator[ox.Quad]) -> None:
        """Take every quad of the source, refusing what may not be restored."""
        for quad in quads:
            s, graph = quad.subject, quad.graph_name
            if graph in _OURS and holds_blank(quad):
                self.refuse(quad, _BLANK)
            if isinstance(s, ox.NamedNode) and s.value.startswith(NIH_PREFIX):
                self._grain_quad(quad, s)
            elif s == OMS.journal:
                self.refuse(quad, _JOURNAL)
            elif s == OMS.settings and graph == OMS.index:
                self.settings.see(quad)
            elif isinstance(graph, ox.DefaultGraph) or graph == OMS.blobs:
                self.refuse(quad, "the grain layer and the blobs hold only grain nodes")
            elif graph == OMS.index or graph == OMS.audit:
                if graph == OMS.index and is_event_subject(s):
                    self.evidence.see(quad)
                there = self.store.backend.quads(s, quad.predicate, quad.object, graph)
                if next(there, None):
                    self.present.add(str(quad))  # decided once, before any write
                del there  # else an error's traceback keeps it (see lookup._has)
            # Knowledge (oms:current and adopted graphs) is rebuilt from the grains.

    def _grain_quad(self, quad: ox.Quad, s: ox.NamedNode) -> None:
        node, graph, p = s.value, quad.graph_name, quad.predicate
        if node not in self.known:
            self.known[node] = address_of(s) in self.store
            if self.erasures.erased(address_of(s)):
                self.bad.add(node)  # skipped, reported, never written
        if graph == OMS.blobs and p not in _BLOB_PROPERTIES:
            self.refuse(quad, "the blobs graph holds only blobs and envelopes")
        if graph == OMS.blobs and p == OMS.blob:
            self._blob(quad, s)
        elif graph == OMS.blobs and not self.known[node]:  # an envelope
            self.signatures.envelope(address_of(s), quad.object)
        elif graph == OMS.index:
            if p == OMS.erasedAt:  # a tombstone needs no grain
                self._tombstone(quad)
                self.buried.add(node)
            else:
                self.indexed.setdefault(node, quad)
            if p == OMS.systemTo:
                self.closed.add(node)
            if self.known[node] and p != OMS.erasedAt:
                self.existing_index.setdefault(node, set()).add(row_of(quad))
            elif not self.known[node]:
                self.policies.index(address_of(s), str(p), str(quad.object))
                if p == OMS.signedBy:
                    self.signatures.signer(address_of(s), quad.object)
        elif isinstance(graph, ox.DefaultGraph):
            self.described.add(node)
            self.layer.see(quad)
        elif graph == OMS.audit:
            self.refuse(quad, "the audit log describes operations, not grains")

    def _tombstone(self, quad: ox.Quad) -> None:
        try:
            tombstone_time(quad)
        except OmsError as exc:  # said again with its line, found only now
            where = line_of(self.reopen, quad)
            raise type(exc)(exc.message, code=exc.code, path=where) from None

    def _blob(self, quad: ox.Quad, s: ox.NamedNode) -> None:
        node = s.value
        if node in self.with_blob:
            self.refuse(quad, "a grain with two blobs")
        self.with_blob.add(node)
        try:
            blob = base64_bytes(term_text(quad.object))
            grain = Grain.from_blob(blob, address=address_of(s))
            if not self.known[node]:
                self.policies.see(grain)
                self.signatures.grain(grain)
                self.layer.grain(grain)
        except (OmsError, ValueError) as exc:
            self.bad.add(node)
            error = exc if isinstance(exc, OmsError) else DecodeError(str(exc))
            self._skip(node, error)

    def _skip(self, node: str, error: OmsError) -> None:
        where = f"grain {address_of(ox.NamedNode(node))[:12]}…"
        fail_or_skip(self.report, self.skip, where, error)

    def conclude(self) -> None:
        """The checks of the whole source, once it is read; then the count."""
        self.settings.check(self.store)
        # A grain the source itself says was erased (a backup merged with a later
        # one) stays out; its tombstone is written, unless the store erased it too.
        here = self.erasures.tombstones
        self.burying = {
            node
            for node in self.buried
            if not self.known[node] and address_of(ox.NamedNode(node)) not in here
        }
        for node in self.burying & self.with_blob:
            self.bad.add(node)
            self.erasures.skipped(address_of(ox.NamedNode(node)))
        for node in self.described - self.with_blob:
            if self.known[node]:
                continue  # stored already: its quads in the source are not written
            without = "a grain node without its blob in graph oms:blobs"
            self._skip(node, DecodeError(without))
            self.bad.add(node)
        for differing in self.layer.differing():
            node = str(differing)[1:-1]
            if node not in self.bad:
                self.bad.add(node)
                self._skip(node, DecodeError(_OTHER_LAYER))
        for node, quad in self.indexed.items():
            if node not in self.with_blob and not self.known[node]:
                self.refuse(quad, _STRAY_INDEX)
        closed = self.closed
        refusals = self.policies.refused(lambda a: NIH_PREFIX + a in closed)
        for address, error in [*refusals, *self.signatures.refusals()]:
            if f"{NIH_PREFIX}{address}" not in self.bad:
                self.bad.add(f"{NIH_PREFIX}{address}")
                self._skip(f"{NIH_PREFIX}{address}", error)
        self._check_evidence()
        for node, state in self.existing_index.items():
            if node not in self.bad:
                address = address_of(ox.NamedNode(node))
                check_same_state(self.store, address, list(state))
        grains = [
            stored
            for node, stored in self.known.items()
            if node not in self.bad and node in self.with_blob
        ]
        self.report.added, self.report.held = grains.count(False), grains.count(True)

    def _check_evidence(self) -> None:
        def restored(node: object) -> bool:
            name = str(node)[1:-1]
            return name in self.with_blob and not self.known[name]

        for quad, why in self.evidence.refusals(
            restored,
            lambda q: str(q) in self.present,
            lambda node: str(node)[1:-1] in self.bad,
        ):
            self.refuse(quad, why)

    def rows(self) -> Iterator[Item]:
        """The quads to write, from a second read: the grain layer, blobs and
        index of the new grains, the index quads the store does not hold, and
        the source's recorded prefixes for names the store has none for."""
        declared: dict[str, str] = {}
        with self.reopen() as raw:
            for quad in _quads(raw, self.fmt, None):
                s = quad.subject
                if quad.graph_name not in _OURS or isinstance(quad.object, ox.Triple):
                    continue  # knowledge is rebuilt; RDF 1.2 reifiers are views
                if isinstance(s, ox.NamedNode) and s.value.startswith(NIH_PREFIX):
                    if quad.predicate == OMS.erasedAt and s.value in self.burying:
                        yield quad  # of a grain not stored here: it stays out
                        continue
                    if self.known.get(s.value) or s.value in self.bad:
                        continue
                elif s == OMS.settings or s == OMS.writer or str(quad) in self.present:
                    if quad.predicate == PREFIX and isinstance(quad.object, ox.Literal):
                        name, _, iri = quad.object.value.partition(" ")
                        declared.setdefault(name, iri)
                    continue  # there before the import: never written, never removed
                elif s in self.evidence.dropped:
                    continue  # the evidence of a grain left out
                yield quad
        yield from prefix_rows(self.store, declared)


def _regraph(quad: ox.Quad) -> ox.Quad:
    """Put a quad of a flattened grain layer back in its graph, by its property."""
    s, p = quad.subject, quad.predicate
    if isinstance(s, ox.NamedNode) and s.value.startswith(NIH_PREFIX):
        if p in _BLOB_PROPERTIES:
            graph: Any = OMS.blobs
        elif p in _INDEX_PROPERTIES:
            graph = OMS.index
        else:
            return quad
    else:
        graph = OMS.index  # the settings node and evidence events
    return ox.Quad(s, p, quad.object, graph)


def _quads(raw: IO[bytes], fmt: ox.RdfFormat, progress: Progress) -> Iterator[ox.Quad]:
    quads = parse_source(raw, fmt, None, progress)
    return quads if fmt.supports_datasets else map(_regraph, quads)
