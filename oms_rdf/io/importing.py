"""Importing into a store: all or nothing, in atomic chunks, with rollback."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..errors import ErrorCode, StoreError
from ..store import BulkImport, GrainStore, Stage
from .adopt import file_base, plan_adoption, scan
from .dataset_plan import plan_dataset
from .formats import RDF_FORMATS, format_for
from .jsonl_plan import plan_jsonl
from .mg_plan import plan_mg
from .plans import Plan, TwoPassError
from .records import ImportReport
from .restore import FAST_RESTORE_LIMIT, restore_into_empty
from .sources import Progress, Source, reopenable
from .tombstones import Tombstones


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
            disagree with the store's; ERR_SCHEMA when ``src`` is neither a path
            nor a file object.
    """
    fmt = _source_format(src, format)
    report = ImportReport()
    base = base_iri if base_iri is not None else file_base(src)
    with (
        BulkImport.open(store, stage=stage) as target,
        reopenable(src) as (reopen, size),
    ):
        # A backup's tombstones go first: none of its grains, or a later import's,
        # comes back once erased (TriG, N-Quads, JSON-LD carry them as quads).
        tombstones = Tombstones.read(fmt, reopen, report, skip_invalid)
        tombstones.bury(target)
        reopen = tombstones.without_lines(reopen)
        run = _Import(target, reopen, report, skip_invalid, progress, tombstones)
        if fmt in ("mg", "jsonl"):
            run.write(run.grain_plan(fmt), rebuild=False)
        else:
            _rdf(run, fmt, src, base, size, namespace, confidence)
    # Written: consents it withdrew are honoured as a put's are, at once.
    store.writes.honour_withdrawals(target.withdrawals(), target.dependents())
    return report


def _rdf(
    run: _Import,
    fmt: str,
    src: Source,
    base: str | None,
    size: int,
    namespace: str | None,
    confidence: float,
) -> None:
    """Import an RDF source: adopted, restored natively, or planned as ours."""
    target, reopen, report = run.target, run.reopen, run.report
    skip_invalid, progress = run.skip, run.progress
    rdf = RDF_FORMATS[fmt]
    source = scan(reopen, rdf, base)
    plan: Plan
    if not source.ours:
        plan = plan_adoption(
            target,
            reopen,
            rdf,
            source,
            report,
            skip_invalid,
            progress,
            namespace=namespace,
            confidence=confidence,
            base_iri=base,
        )
        run.write(plan, rebuild=False)  # beliefs' rows carry their knowledge
    elif not (
        target.empty
        and not source.journal
        and rdf.supports_datasets
        and size <= FAST_RESTORE_LIMIT
        and restore_into_empty(
            target, reopen, rdf, report, progress, path=_path_of(src)
        )
    ):
        plan = plan_dataset(target, reopen, rdf, report, skip_invalid, progress)
        run.write(plan, rebuild=True)  # a dataset's knowledge is rebuilt


@dataclass
class _Import:
    """One import's writing, once its plan has checked the source."""

    target: BulkImport
    reopen: Callable[[], IO[bytes]]
    report: ImportReport
    skip: bool
    progress: Progress
    tombstones: Tombstones

    def grain_plan(self, fmt: str) -> Plan:
        """The plan of a ``.mg`` or JSON Lines source, whose rows carry the
        knowledge triples of their grains."""
        args = (self.target, self.reopen, self.report, self.skip, self.progress)
        if fmt == "mg":
            return plan_mg(*args)
        # Into a store without grains, one pass: the journal undoes a refusal.
        return plan_jsonl(*args, at_once=self.target.empty and not self.skip)

    def write(self, plan: Plan, *, rebuild: bool) -> None:
        """Write the plan's rows and end the import (its audit chain checked)."""
        target, report = self.target, self.report
        try:
            with plan as rows:
                target.write(rows(), grains=report.added)
        except TwoPassError:  # a one-pass plan met a grain on two lines
            target.rewind()
            self.tombstones.bury(target)
            again = plan_jsonl(target, self.reopen, report, self.skip, self.progress)
            with again as rows:
                target.write(rows(), grains=report.added)
        report.quads = target.written
        target.finish(report.added, rebuild=rebuild)  # the imported chain verified


def _path_of(src: Source) -> Path | None:
    """The file a source is, if it is one (a stream is not)."""
    return None if hasattr(src, "read") else Path(src)


def _source_format(src: Source, format: str | None) -> str:
    """The format of a source: named, or told by a path's suffix (a file object
    without a name is N-Quads unless named).

    Raises:
        StoreError: ERR_SCHEMA when ``src`` is neither a path nor a file object.
    """
    if hasattr(src, "read"):
        return format_for("x", format or "nquads")
    if isinstance(src, str | os.PathLike):
        return format_for(src, format)
    raise StoreError(
        "expected a path or a binary file object to import from; found "
        f"{type(src).__name__} (wrap bytes in io.BytesIO)",
        code=ErrorCode.SCHEMA,
        path="src",
    )
