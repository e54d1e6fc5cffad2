"""Importing into a store: all or nothing, in atomic chunks, with rollback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..store import GrainStore
from ..store.audit import check as check_audit
from ..store.progress import Stage
from .adopt import file_base, plan_adoption, scan
from .formats import RDF_FORMATS, format_for
from .manifest import Tombstones
from .plans import TwoPassError, plan_dataset, plan_jsonl, plan_mg
from .records import ImportReport
from .restore import FAST_RESTORE_LIMIT, restore_into_empty
from .sources import Progress, Source, _reopenable


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

    Other processes reading an on-disk store see it before the import or after
    it, never in between: while it runs (until its compaction ends), a
    read-only opening is refused with ERR_CONFLICT (see :mod:`oms_rdf.backends.embedded`).

    Args:
        format: one of :data:`FORMATS`; from the file suffix when omitted.
        skip_invalid: skip bad records and report them instead of stopping.
        namespace, confidence: for beliefs adopted from foreign RDF.
        base_iri: resolves relative IRIs of foreign RDF (default: the file's URI).
        progress: called with the number of bytes read, as reading goes.
        stage: told as the writing and a compaction begin, to show them (see
            :mod:`oms_rdf.store.progress`; the reading is shown by ``progress``).

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
        # A backup's tombstones go first: none of its grains, or a later import's,
        # comes back once erased (TriG, N-Quads, JSON-LD carry them as quads).
        tombstones = Tombstones.read(fmt, reopen, report, skip_invalid)
        tombstones.bury(store, journal)
        reopen = tombstones.without_lines(reopen)
        if fmt == "mg":
            plan = plan_mg(store, reopen, report, skip_invalid, progress)
        elif fmt == "jsonl":
            # Into a store without grains, one pass: the journal undoes a refusal.
            plan = plan_jsonl(store, reopen, report, skip_invalid, progress,
                               at_once=journal.empty and not skip_invalid)  # fmt: skip
        else:
            rdf = RDF_FORMATS[fmt]
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
                and restore_into_empty(
                    store, journal, reopen, rdf, report, progress, path=_path_of(src)
                )
            ):
                return report
            else:
                plan = plan_dataset(store, reopen, rdf, report, skip_invalid, progress)
                rebuild = True
        try:
            with plan as rows:
                journal.write(rows(), grains=report.added)
        except TwoPassError:  # a one-pass plan met a grain on two lines
            journal.rewind()
            tombstones.bury(store, journal)
            with plan_jsonl(store, reopen, report, skip_invalid, progress) as rows:
                journal.write(rows(), grains=report.added)
        report.quads = journal.written
        check_audit(store.backend)  # an imported chain is verified before it is kept
        journal.finish(store.audit_rows("import", count=report.added), rebuild=rebuild)
    return report


def _path_of(src: Source) -> Path | None:
    """The file a source is, if it is one (a stream is not)."""
    return None if hasattr(src, "read") else Path(src)
