"""Importing into a store: all or nothing, in atomic chunks, with rollback."""

from __future__ import annotations

import base64
import io as _io
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import pyoxigraph as ox

from ..errors import DecodeError, ErrorCode, OmsError, StoreError
from ..grain import Grain
from ..mapping import (
    NIH_PREFIX,
    Row,
)
from ..store import GrainStore, update_request
from ..store._common import load_query
from ..vocab import OMS
from ._common import (
    _RDF_FORMATS,
    ImportReport,
    Item,
    Progress,
    Source,
    _Counting,
    _reopenable,
    _row_of,
    _text,
    format_for,
)
from .adopt import file_base, plan_adoption, scan
from .plans import _plan_dataset, _plan_jsonl, _plan_mg

CHUNK_ROWS = 200_000  # rows written per atomic step of an import


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
    with store._lock, _reopenable(src) as (reopen, size):
        plan: Any
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
                rdf.supports_datasets
                and size <= FAST_RESTORE_LIMIT
                and _restore_into_empty(store, reopen, rdf, report, progress)
            ):
                return report
            else:
                plan = _plan_dataset(store, reopen, rdf, report, skip_invalid, progress)
        with plan as rows:
            report.quads = _commit(store, rows, report)
    return report


def _restore_into_empty(store: GrainStore, reopen: Callable[[], IO[bytes]], fmt: ox.RdfFormat,
                        report: ImportReport, progress: Progress) -> bool:  # fmt: skip
    """Restore a whole-store export into a store that holds no grain yet, fast.

    One native, atomic load, then the checks on what was loaded: every blob must
    verify, every grain node must have its blob, the settings must agree. If a
    check fails the store is put back exactly as it was (it held no grain, so
    that is its few settings and audit quads) and the general two-pass import runs
    instead, to report the bad record with its place. Sources over
    ``FAST_RESTORE_LIMIT`` bytes take the streaming path.
    """
    if not store.is_empty():
        return False
    before = [_row_of(q) for q in store.backend.quads()]
    with reopen() as raw:
        try:
            store.backend.load(_io.BufferedReader(_Counting(raw, progress)), fmt)
        except StoreError:
            return False  # a syntax error: the general path names its line
    try:
        report.added = _check_restored(store)
    except (OmsError, ValueError):
        _put_back(store, before)
        return False
    store._cache.clear()
    store._load(store._audit("import", count=report.added))
    store.rebuild_current()
    store.reindex()  # grains came in as quads, not through the mapping
    report.quads = len(store.backend) - len(before)
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
    for quad in store.backend.quads(None, OMS.blob, None, OMS.blobs):
        address = _text(quad.subject).removeprefix(NIH_PREFIX)
        Grain.from_blob(base64.b64decode(_text(quad.object)), address=address)
        count += 1
    described = sum(
        1 for _ in store.backend.quads(None, OMS.systemFrom, None, ox.DefaultGraph())
    )
    if described != count:
        raise DecodeError(f"{described} grains described but {count} blobs")
    if store.backend.query(load_query("restore_strays")):
        raise StoreError("the source holds quads an oms_rdf export would not")
    return count


def _put_back(store: GrainStore, rows: list[Row]) -> None:
    """Empty the store and write back its previous quads (it held no grain)."""
    store.backend.update("CLEAR ALL")
    if rows:
        store._load(rows)


def _commit(
    store: GrainStore, rows: Callable[[], Iterator[Item]], report: ImportReport
) -> int:
    """Write in atomic chunks; on failure remove what was written, then re-raise."""
    audit: list[Item] = list(store._audit("import", count=report.added))
    written = 0
    try:
        chunk: list[Item] = []
        for item in _chain(rows(), audit):
            chunk.append(item)
            if len(chunk) >= CHUNK_ROWS:
                _write(store, chunk)
                written += len(chunk)
                chunk = []
        if chunk:
            _write(store, chunk)
            written += len(chunk)
    except BaseException:
        _remove(store, _chain(rows(), audit), written)
        raise
    finally:
        store._cache.clear()
    store.rebuild_current()
    store.reindex()  # a restore writes grains as quads, not through the mapping
    return written


def _write(store: GrainStore, chunk: list[Item]) -> None:
    """One atomic write: rows as N-Quads text, parsed quads as they are."""
    rows = [item for item in chunk if isinstance(item, tuple)]
    quads = [item for item in chunk if not isinstance(item, tuple)]
    if rows and quads:
        rows += [_row_of(q) for q in quads]
        quads = []
    if rows:
        store._load(rows)
    else:
        store.backend.add(quads)


def _chain(*parts: Iterable[Item]) -> Iterator[Item]:
    for part in parts:
        yield from part


def _remove(store: GrainStore, rows: Iterator[Item], count: int) -> None:
    """Delete the first ``count`` items (the part of an import that was written)."""
    chunk: list[Item] = []
    for i, row in enumerate(rows):
        if i >= count:
            break
        chunk.append(row)
        if len(chunk) >= 10_000:
            store.backend.update(update_request(chunk, []))
            chunk = []
    if chunk:
        store.backend.update(update_request(chunk, []))
    store.rebuild_current()
