"""Importing into a store: all or nothing, in atomic chunks, with rollback."""

from __future__ import annotations

import base64
import io as _io
from collections.abc import Callable
from typing import IO, Any

import pyoxigraph as ox

from ..errors import DecodeError, ErrorCode, OmsError, StoreError
from ..grain import Grain
from ..mapping import NIH_PREFIX
from ..progress import Stage
from ..store import GrainStore
from ..store.audit import check as check_audit
from ..store.journal import Journal
from ..store.sparql import load_query
from ..store.writelock import WRITER
from ..vocab import OMS
from .adopt import file_base, plan_adoption, scan
from .formats import _RDF_FORMATS, format_for
from .plans import _plan_dataset, _plan_jsonl, _plan_mg, _Policies
from .records import ImportReport, _text
from .sources import Progress, Source, _Counting, _reopenable

FAST_RESTORE_LIMIT = 1 << 30


def import_(
    store: GrainStore,
    src: Source,
    *,
    format: str | None = None,
    skip_invalid: bool = False,
    namespace: str | None = None,
    confidence: float = 1.0,
    base_iri: str | None = None,
    progress: Progress = None,
    stage: Stage | None = None,
) -> ImportReport:
    """Import ``src`` into ``store``; all or nothing unless ``skip_invalid``.

    An RDF source that is an oms_rdf export (its grains in graph ``oms:blobs``)
    restores those grains with their index state; any other RDF source is adopted:
    every triple becomes a belief (see :mod:`oms_rdf.io.adopt`).

    Args:
        format: one of :data:`FORMATS`; from the file suffix when omitted.
        skip_invalid: skip bad records and report them instead of stopping.
        namespace, confidence: for beliefs adopted from foreign RDF.
        base_iri: resolves relative IRIs of foreign RDF (default: the file's URI).
        progress: called with the number of bytes read, as reading goes.
        stage: told as the writing and a compaction begin, to show them (see
            :mod:`oms_rdf.progress`; the reading is shown by ``progress``).

    Raises:
        DecodeError, SchemaError, IntegrityError: a bad record (its line, offset or
            grain in the path); nothing of the import is kept.
        StoreError: ERR_CONFLICT when the source's index state or settings
            disagree with the store's.
    """
    fmt = (
        format_for(src, format)
        if not hasattr(src, "read")
        else format_for("x", format or "nquads")
    )
    report = ImportReport()
    base = base_iri if base_iri is not None else file_base(src)
    with store.bulk(stage=stage) as journal, _reopenable(src) as (reopen, size):
        plan: Any
        rebuild = False  # grain rows carry their knowledge triples; a dataset's do not
        if fmt == "mg":
            plan = _plan_mg(store, reopen, report, skip_invalid, progress)
        elif fmt == "jsonl":
            plan = _plan_jsonl(store, reopen, report, skip_invalid, progress)
        else:
            rdf = _RDF_FORMATS[fmt]
            source = scan(reopen, rdf, base)
            if not source.ours:
                plan = plan_adoption(store, reopen, rdf, source, report, skip_invalid,
                                     progress, namespace=namespace, confidence=confidence,
                                     base_iri=base)  # fmt: skip
            elif (
                journal.empty
                and not source.journal
                and rdf.supports_datasets
                and size <= FAST_RESTORE_LIMIT
                and _restore_into_empty(store, journal, reopen, rdf, report, progress)
            ):
                return report
            else:
                plan = _plan_dataset(store, reopen, rdf, report, skip_invalid, progress)
                rebuild = True
        with plan as rows:
            journal.write(rows(), grains=report.added)
        report.quads = journal.written
        check_audit(store.backend)  # an imported chain is verified before it is kept
        journal.finish(store.audit_rows("import", count=report.added), rebuild=rebuild)
    return report


def _restore_into_empty(store: GrainStore, journal: Journal, reopen: Callable[[], IO[bytes]],
                        fmt: ox.RdfFormat, report: ImportReport, progress: Progress) -> bool:  # fmt: skip
    """Restore a whole-store export into a store that holds no grain yet, fast.

    One native load (RocksDB's bulk loader on disk), then the checks on what was
    loaded: every blob must verify, every grain node must have its blob, the
    settings must agree. If the source does not parse or a check fails, the
    journal puts the store back as it was (it held no grain) and the general
    two-pass import runs instead, to report the bad record with its place. Sources
    over ``FAST_RESTORE_LIMIT`` bytes take the streaming path.
    """
    before = len(store.backend)
    with reopen() as raw:
        try:
            journal.load(_io.BufferedReader(_Counting(raw, progress)), fmt)
        except DecodeError:
            journal.rewind()
            return False  # a syntax error: the general path names its line
    # A write lock caught in the export belongs to a writer of another store.
    store.backend.update(f"DELETE WHERE {{ GRAPH {OMS.index} {{ {WRITER} ?p ?o }} }}")
    try:
        report.added = _check_restored(store)
    except (OmsError, ValueError):
        journal.rewind()
        return False
    report.quads = journal.written = len(store.backend) - before
    journal.finish(store.audit_rows("import", count=report.added))
    return True


def _check_restored(store: GrainStore) -> int:
    """Verify every blob of a store just restored; return the number of grains."""
    settings = {
        _text(q.object)
        for q in store.backend.quads(OMS.settings, OMS.baseIri, None, OMS.index)
    }
    if len(settings) > 1:
        raise StoreError(
            f"the source was made with another base IRI: {sorted(settings)}",
            code=ErrorCode.CONFLICT,
        )
    count = 0
    policies = _Policies(store)
    for quad in store.backend.quads(None, OMS.blob, None, OMS.blobs):
        address = _text(quad.subject).removeprefix(NIH_PREFIX)
        policies.see(
            Grain.from_blob(base64.b64decode(_text(quad.object)), address=address)
        )
        count += 1
    closed = {
        _text(q.subject).removeprefix(NIH_PREFIX)
        for q in store.backend.quads(None, OMS.systemTo, None, OMS.index)
    }
    for _grain, error in policies.refused(closed.__contains__):
        raise error  # the general path names the grain
    [layer] = store.backend.query(load_query("restore_subjects"))
    if int(layer["described"].value) != count:
        raise DecodeError(
            f"{layer['described'].value} grains described but {count} blobs"
        )
    if layer["subjects"] != layer["grains"]:
        raise StoreError(
            f"the source's grain layer describes {layer['subjects'].value} subjects, "
            f"of which {layer['grains'].value} are grains with their blobs"
        )
    if store.backend.query(load_query("restore_strays")):
        raise StoreError("the source holds quads an oms_rdf export would not")
    check_audit(store.backend)
    return count
