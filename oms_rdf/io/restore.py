"""The fast restore: a whole-store export into a store that holds no grain yet.

One native load writes the source (RocksDB's bulk loader on disk) on a thread of
its own (:meth:`~oms_rdf.store.BulkImport.restore`), while this thread reads the
source again and checks it: every blob must verify, every grain node must have
its blob and only what an export holds may sit in the reserved graphs, the
settings must agree, and put's policy check holds. The loader releases the GIL,
so the two run side by side. When a check fails, the store is put back as it was
(it held no grain) and the general two-pass import runs instead, to report the
bad record with its place.

The export's knowledge is kept when it is what the rebuild would make of its
grains (:class:`~oms_rdf.store.KnowledgeCheck`), and rebuilt otherwise.
"""

from __future__ import annotations

import io as _io
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import IO

import pyoxigraph as ox

from ..codec.grain import Grain
from ..errors import DecodeError, OmsError, StoreError
from ..rdf.literals import base64_bytes
from ..rdf.mapping import NIH_PREFIX
from ..rdf.vocab import OMS
from ..store import BulkImport, KnowledgeCheck
from .evidence import EvidenceCheck, is_event_subject
from .layer import LayerCheck
from .plans import SourceSettings, holds_blank, tombstone_time
from .records import ImportReport, term_text
from .signatures import SignatureCheck
from .sources import Counting, Progress, parse_source

FAST_RESTORE_LIMIT = 1 << 30  # bytes; a larger source takes the streaming path

_DEFAULT = ox.DefaultGraph()
_OURS = frozenset({_DEFAULT, OMS.blobs, OMS.index, OMS.audit})
# A stream is read by the loader in large reads: each one waits for the GIL.
_READ_SIZE = 1 << 22


def restore_into_empty(
    target: BulkImport,
    reopen: Callable[[], IO[bytes]],
    fmt: ox.RdfFormat,
    report: ImportReport,
    progress: Progress,
    path: Path | None = None,
) -> bool:
    """Restore ``reopen``'s export into the import's store, which holds no grain;
    return whether it was restored (if not, the store is as it was).

    ``path``: the source's file, if it is one; the store then reads it by itself,
    never waiting for the GIL that the checks hold. ``progress`` is told of the
    bytes the checks have read.
    """
    check = _RestoreCheck(target)

    def checked() -> tuple[int, bool] | None:
        try:
            with reopen() as again:
                check.read(parse_source(again, fmt, None, progress))
            return check.grains(), check.knowledge.as_rebuilt()
        except (OmsError, ValueError):
            return None  # the general path names the record

    with ExitStack() as files:
        source: IO[bytes] | Path
        if path is None:
            raw = files.enter_context(reopen())
            source = _io.BufferedReader(Counting(raw, None), _READ_SIZE)
        else:
            source = path
        grains = target.restore(source, fmt, checked)
    if grains is None:
        return False
    report.added = grains
    report.quads = target.written
    return True


class _RestoreCheck:
    """What an export must hold to be restored as it is, checked as it streams past."""

    def __init__(self, target: BulkImport) -> None:
        self.store = store = target.store
        self.policies = target.policies()
        self.knowledge = KnowledgeCheck()
        self.layer = LayerCheck(store.settings)
        self.evidence = EvidenceCheck()
        self.signatures = SignatureCheck(store)
        # A store without grains may hold tombstones: their grains stay out, which
        # the general path does (it skips and reports them).
        self.tombstones = target.erased()
        self.blobs: set[ox.NamedNode] = set()  # grain nodes with their blob
        self.subjects: set[object] = set()  # subjects of the grain layer
        self.described: set[object] = set()  # ... with oms:systemFrom
        self.indexed: set[object] = set()  # grain nodes with index state
        self.erased: set[object] = set()  # grain nodes with a tombstone
        self.graphs: set[object] = set()  # named graphs besides the reserved ones
        self.settings = SourceSettings()

    def read(self, quads: Iterable[ox.Quad]) -> None:
        """Take every quad of the source, refusing what may not be kept as it is."""
        knowledge = self.knowledge
        for quad in quads:
            s, p, graph = quad.subject, quad.predicate, quad.graph_name
            grain = isinstance(s, ox.NamedNode) and s.value.startswith(NIH_PREFIX)
            if graph in _OURS and holds_blank(quad):
                raise StoreError(f"a blank node in the store's own graphs: {quad}")
            if graph == _DEFAULT:
                if isinstance(quad.object, ox.Triple):
                    # RDF 1.2 reifiers are views: the general path leaves them out.
                    raise DecodeError(f"a view, not a grain layer quad: {quad}")
                knowledge.describes(s, p, quad.object)
                self.layer.see(quad)
                self.subjects.add(s)
                if p == OMS.systemFrom:
                    self.described.add(s)
            elif graph == OMS.blobs:
                if not grain:
                    raise StoreError(
                        f"the blobs graph holds a quad of no grain: {quad}"
                    )
                if p == OMS.blob:
                    self._blob(s, quad.object)  # type: ignore[arg-type]
                elif p == OMS.envelope:
                    self.signatures.envelope(_address(s), quad.object)
                else:
                    raise StoreError(f"the blobs graph holds only blobs: {quad}")
            elif graph == OMS.index:
                knowledge.indexes(s, p)
                if grain and p == OMS.erasedAt:
                    tombstone_time(quad)
                if grain:
                    (self.erased if p == OMS.erasedAt else self.indexed).add(s)
                    address = _address(s)
                    self.policies.index(address, str(p), str(quad.object))
                    if p == OMS.signedBy:
                        self.signatures.signer(address, quad.object)
                elif s == OMS.settings:
                    self.settings.see(quad)
                elif is_event_subject(s):
                    self.evidence.see(quad)
            elif graph == OMS.audit:
                if grain:
                    raise StoreError(f"the audit log describes a grain: {quad}")
            else:
                knowledge.holds(quad)
                if graph != OMS.current:
                    self.graphs.add(graph)

    def _blob(self, node: ox.NamedNode, blob: object) -> None:
        address = node.value.removeprefix(NIH_PREFIX)
        if node in self.blobs:
            raise DecodeError(f"grain {address[:12]}… has two blobs")
        if address in self.tombstones:
            raise StoreError(f"grain {address[:12]}… was erased here")
        grain = Grain.from_blob(base64_bytes(term_text(blob)), address=address)
        self.policies.see(grain)
        self.signatures.grain(grain)
        self.layer.grain(grain)
        self.blobs.add(node)

    def grains(self) -> int:
        """The number of grains restored, once every check of the whole source holds."""
        if not self.subjects <= self.blobs or self.described != self.blobs:
            raise DecodeError(
                "the grain layer and the blobs do not describe the same grains"
            )
        for node in self.layer.differing():
            raise DecodeError(f"the grain layer of {node} is not what its blob maps to")
        if not self.indexed <= self.blobs or self.erased & self.blobs:
            raise StoreError("index state for a grain that is not there, or erased")
        for _quad, why in self.evidence.refusals(
            self.blobs.__contains__, _never, _never
        ):
            raise StoreError(why)
        if not self.graphs <= self.knowledge.graphs:
            raise StoreError("a named graph that no belief names")
        self.settings.check(self.store)
        closed = {
            n.value.removeprefix(NIH_PREFIX)
            for n in self.knowledge.closed
            if isinstance(n, ox.NamedNode)
        }
        for _address, error in self.policies.refused(closed.__contains__):
            raise error
        for _address, error in self.signatures.refusals():
            raise error
        return len(self.blobs)


def _address(node: object) -> str:
    """The address of a grain node (``<nih:sha-256;HEX>``)."""
    return str(node)[len(NIH_PREFIX) + 1 : -1]


def _never(term: object) -> bool:
    return False  # a store without grains holds no evidence and skips no grain
