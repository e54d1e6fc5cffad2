"""Moving whole stores in and out: RDF formats, ``.mg`` containers, JSON Lines.

Export formats:

- ``trig``, ``nquads``: the whole store, every graph (index, audit, blobs).
- ``turtle``: the knowledge only (default graph, no blobs); every grain still comes
  back byte for byte through :func:`oms_rdf.quads_to_grain`.
- ``jsonld``: the whole store as JSON-LD (RDF 1.1).
- ``turtle12``, ``trig12``: an RDF 1.2 view: as ``turtle`` / ``trig``, plus
  ``<grain> rdf:reifies <<( s p o )>>`` for every belief.
- ``mg``: the OMS container with an index manifest; ``jsonl``: one grain a line.

Imports are all or nothing: a first pass reads and checks every record (a bad one
stops the import with its line or offset, unless ``skip_invalid``), a second pass
writes in atomic chunks, and a failure while writing removes what the import had
written. Sources are streamed, so files larger than memory import; a Turtle file
is first loaded into a staging store on disk to group each grain's triples.
A Turtle or N-Triples graph that is not ours (no ``oms:contentAddress``) is
adopted: each triple becomes a belief grain (``source_type: "imported"``).

rdflib is imported only inside the functions that need it.
"""

from __future__ import annotations

import base64
import io as _io
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, cast, get_args

import pyoxigraph as ox

from .container import read_mg, write_mg
from .errors import DecodeError, ErrorCode, OmsError, StoreError
from .grain import Grain, now_ms
from .mapping import (
    NIH_PREFIX,
    Row,
    address_of,
    expected_header,
    grain_iri,
    millis_literal,
    nt_literal,
    quads_to_grain,
    rows_to_nquads,
)
from .schema import INDEX_FIELDS
from .store import GrainStore, update_request
from .vocab import OMS

if TYPE_CHECKING:
    import rdflib

__all__ = ["FORMATS", "ImportReport", "export", "from_rdflib", "import_", "to_rdflib"]

Format = Literal[
    "trig",
    "nquads",
    "turtle",
    "ntriples",
    "jsonld",
    "turtle12",
    "trig12",
    "mg",
    "jsonl",
]
FORMATS: tuple[str, ...] = get_args(Format)
_BY_SUFFIX = {
    ".trig": "trig", ".nq": "nquads", ".nquads": "nquads", ".ttl": "turtle", ".nt": "ntriples",
    ".jsonld": "jsonld", ".mg": "mg", ".jsonl": "jsonl", ".ndjson": "jsonl",
}  # fmt: skip
_RDF_FORMATS = {
    "trig": ox.RdfFormat.TRIG, "nquads": ox.RdfFormat.N_QUADS, "turtle": ox.RdfFormat.TURTLE,
    "ntriples": ox.RdfFormat.N_TRIPLES, "jsonld": ox.RdfFormat.JSON_LD,
    "turtle12": ox.RdfFormat.TURTLE, "trig12": ox.RdfFormat.TRIG,
}  # fmt: skip
PREFIXES = {
    "oms": "https://w3id.org/oms-rdf/ns#",
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "prov": "http://www.w3.org/ns/prov#",
}
CHUNK_ROWS = 200_000  # rows written per atomic step of an import
STAGING_ON_DISK = 256 << 20  # Turtle sources larger than this are staged on disk
Source = str | os.PathLike[str] | IO[bytes]
Progress = Callable[[int], object] | None


def format_for(path: str | os.PathLike[str], given: str | None = None) -> str:
    """Return the format named, or the one a file name's suffix implies."""
    if given is not None:
        if given not in FORMATS:
            raise StoreError(
                f"unknown format {given!r}; one of {', '.join(FORMATS)}",
                code=ErrorCode.SCHEMA,
            )
        return given
    suffix = Path(path).suffix.lower()
    if suffix not in _BY_SUFFIX:
        raise StoreError(
            f"cannot tell the format of {path}; give one of {', '.join(FORMATS)}",
            code=ErrorCode.SCHEMA,
        )
    return _BY_SUFFIX[suffix]


@dataclass
class ImportReport:
    """What an import did: grains added, records skipped (with ``skip_invalid``)."""

    added: int = 0
    quads: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why)


# --- export ------------------------------------------------------------------------


def export(store: GrainStore, dest: Source, *, format: str | None = None) -> int:
    """Write the store to ``dest`` (a path or a binary file); return the grains written."""
    fmt = (
        format_for(dest, format)
        if not hasattr(dest, "write")
        else format_for("x", format or "trig")
    )
    with _open(dest, "wb") as out:
        if fmt == "mg":
            return write_mg(
                _blobs(store), out, manifest=_manifest(store), deduplicated=True
            )
        if fmt == "jsonl":
            count = 0
            for blob in _blobs(store):
                out.write(dumps_jsonl(Grain.from_blob(blob)).encode() + b"\n")
                count += 1
            return count
        rdf = _RDF_FORMATS[fmt]
        if fmt in ("turtle", "ntriples"):
            quads: Iterable[ox.Quad] = store.backend.quads(
                None, None, None, ox.DefaultGraph()
            )
            triples: Iterable[Any] = (
                ox.Triple(q.subject, q.predicate, q.object) for q in quads
            )
        elif fmt == "turtle12":
            quads = store.backend.quads(None, None, None, ox.DefaultGraph())
            triples = _with_reifiers(
                store, (ox.Triple(q.subject, q.predicate, q.object) for q in quads)
            )
        elif fmt == "trig12":
            triples = _with_reifiers(store, store.backend.quads(), quads=True)
        else:
            triples = store.backend.quads()
        ox.serialize(
            triples,
            out,
            format=rdf,
            prefixes=PREFIXES
            if rdf in (ox.RdfFormat.TURTLE, ox.RdfFormat.TRIG)
            else None,
        )
    return len(store)


def _with_reifiers(
    store: GrainStore, items: Iterable[Any], *, quads: bool = False
) -> Iterator[Any]:
    """The items, then ``<grain> rdf:reifies <<( s p o )>>`` for every belief (RDF 1.2)."""
    yield from items
    reifies = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies")
    rows = store.backend.query(
        "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> "
        "SELECT ?g ?s ?p ?o WHERE { ?g rdf:subject ?s ; rdf:predicate ?p ; rdf:object ?o }"
    )
    for row in rows:
        triple = ox.Triple(row["s"], row["p"], row["o"])
        yield (
            ox.Quad(row["g"], reifies, triple, ox.DefaultGraph())
            if quads
            else ox.Triple(row["g"], reifies, triple)
        )


def _blobs(store: GrainStore) -> Iterator[bytes]:
    for q in store.backend.quads(None, OMS.blob, None, OMS.blobs):
        yield base64.b64decode(_text(q.object))


_VERIFICATION_OUT = {
    "verified": "verified",
    "disputed": "disputed",
    "contradicted": "contested",
}
_VERIFICATION_IN = {"verified": "verified", "disputed": "disputed", "contested": "contradicted",
                    "contradicted": "contradicted", "unverified": "unverified"}  # fmt: skip
VOIDED_KEY = (
    "oms_rdf:voided"  # our extension: when a grain was retracted or contradicted
)


def _manifest(store: GrainStore) -> dict[str, dict[str, Any]]:
    """Index state of every grain whose state is not the default (spec §11.7)."""
    subjects = (
        _text(q.subject) for q in store.backend.quads(None, None, None, OMS.index)
    )
    nodes = {s for s in subjects if s.startswith(NIH_PREFIX)}
    manifest: dict[str, dict[str, Any]] = {}
    for node in nodes:
        state = store.status(node.removeprefix(NIH_PREFIX))
        entry: dict[str, Any] = {}
        if state.superseded_by is not None:
            entry["sb"] = state.superseded_by
        if state.system_to is not None:
            entry["svt"] = state.system_to
        if state.status == "retracted":
            entry["vstatus"] = "retracted"
        elif state.verification != "unverified":
            entry["vstatus"] = _VERIFICATION_OUT[state.verification]
        if state.voided_at is not None:
            entry[VOIDED_KEY] = state.voided_at
            if state.status == "retracted" and state.verification == "contradicted":
                entry["oms_rdf:contradicted"] = True
        for key, value in (
            ("itype", state.invalidation_type),
            ("ireason", state.reason),
            ("iinit", state.initiator),
        ):
            if value is not None:
                entry[key] = value
        if entry:
            manifest[state.address] = entry
    return manifest


def dumps_jsonl(grain: Grain) -> str:
    """Return a grain as one JSON line with full names; bytes as ``{"$base64": ...}``.

    A grain whose header the fields do not determine (an application type byte, a
    foreign writer's header hints), or that carries index-layer fields a foreign
    writer put in its blob, is written as ``{"$blob": "<base64>"}`` so that
    its bytes, and so its address, survive.
    """
    if (
        expected_header(grain) != grain.blob[:9]
        or INDEX_FIELDS.keys() & grain.fields.keys()
    ):
        return json.dumps({"$blob": base64.b64encode(grain.blob).decode()})
    return json.dumps(
        dict(grain.fields),
        ensure_ascii=False,
        separators=(",", ":"),
        default=_json_bytes,
    )


def _json_bytes(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$base64": base64.b64encode(value).decode()}
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _json_object(pairs: list[tuple[str, Any]]) -> Any:
    if len(pairs) == 1 and pairs[0][0] == "$base64" and isinstance(pairs[0][1], str):
        return base64.b64decode(pairs[0][1])
    return dict(pairs)


# --- import ------------------------------------------------------------------------


def import_(
    store: GrainStore,
    src: Source,
    *,
    format: str | None = None,
    skip_invalid: bool = False,
    namespace: str | None = None,
    confidence: float = 1.0,
    progress: Progress = None,
) -> ImportReport:
    """Import ``src`` into ``store``; all or nothing unless ``skip_invalid``.

    Args:
        format: one of :data:`FORMATS`; from the file suffix when omitted.
        skip_invalid: skip bad records and report them instead of stopping.
        namespace, confidence: for beliefs adopted from a foreign RDF graph.
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
    with store._lock, _reopenable(src) as (reopen, size):
        fast = fmt in ("trig", "nquads") and size <= FAST_RESTORE_LIMIT
        if fast and _restore_into_empty(
            store, reopen, _RDF_FORMATS[fmt], report, progress
        ):
            return report
        if fmt == "mg":
            plan = _plan_mg(store, reopen, report, skip_invalid, progress)
        elif fmt == "jsonl":
            plan = _plan_jsonl(store, reopen, report, skip_invalid, progress)
        elif fmt in ("trig", "nquads", "jsonld", "trig12"):
            plan = _plan_dataset(
                store, reopen, _RDF_FORMATS[fmt], report, skip_invalid, progress
            )
        else:
            plan = _plan_graph(store, reopen, _RDF_FORMATS[fmt], report, skip_invalid, progress,
                               namespace=namespace, confidence=confidence)  # fmt: skip
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
    if len(store):
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
    audit = store._audit("import", count=report.added)
    store.backend.add(audit)
    store.rebuild_current()
    report.quads = len(store.backend) - len(before)
    return True


FAST_RESTORE_LIMIT = 1 << 30


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
        1
        for _ in store.backend.quads(None, OMS.contentAddress, None, ox.DefaultGraph())
    )
    if described != count:
        raise DecodeError(f"{described} grains described but {count} blobs")
    return count


def _put_back(store: GrainStore, rows: list[Row]) -> None:
    """Empty the store and write back its previous quads (it held no grain)."""
    store.backend.update("CLEAR ALL")
    if rows:
        store._load(rows)


Item = Row | ox.Quad  # grain sources build rows; RDF sources pass parsed quads on


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


def _row_of(quad: ox.Quad) -> Row:
    g = "" if isinstance(quad.graph_name, ox.DefaultGraph) else str(quad.graph_name)
    return str(quad.subject), str(quad.predicate), str(quad.object), g


@contextmanager
def _reopenable(src: Source) -> Iterator[tuple[Callable[[], IO[bytes]], int]]:
    """Yield a function that opens the source afresh (imports read it twice), and its size."""
    if hasattr(src, "read"):
        stream: Any = src
        if stream.seekable():
            start = stream.tell()
            size = stream.seek(0, os.SEEK_END) - start
            stream.seek(start)

            def rewind() -> IO[bytes]:
                stream.seek(start)
                return cast(IO[bytes], _Unclosed(stream))

            yield rewind, size
            return
        with tempfile.TemporaryFile() as spool:  # a pipe: keep a copy to read again
            while chunk := stream.read(1 << 20):
                spool.write(chunk)

            def respool() -> IO[bytes]:
                spool.seek(0)
                return cast(IO[bytes], _Unclosed(spool))

            yield respool, spool.tell()
        return
    path = Path(src)
    if not path.exists():
        raise StoreError(f"no such file: {path}", code=ErrorCode.NOT_FOUND)
    yield (lambda: open(path, "rb")), path.stat().st_size


class _Unclosed(_io.RawIOBase):
    """A view of a caller's stream that the importer may close without closing it."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.stream.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


@contextmanager
def _open(dest: Source, mode: str) -> Iterator[IO[bytes]]:
    if hasattr(dest, "write"):
        yield dest  # type: ignore[misc]
        return
    path = Path(dest)
    tmp = path.with_name(path.name + ".partial")
    try:
        with open(tmp, mode) as out:
            yield out
        os.replace(tmp, path)  # a finished file or none: never a half-written one
    finally:
        tmp.unlink(missing_ok=True)


class _Counting(_io.RawIOBase):
    """Reports bytes read to a progress callback."""

    def __init__(self, stream: IO[bytes], progress: Progress) -> None:
        self.stream, self.progress = stream, progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.stream.read(len(buffer))
        buffer[: len(data)] = data
        if self.progress is not None and data:
            self.progress(len(data))
        return len(data)


def _fail_or_skip(report: ImportReport, skip: bool, where: str, exc: OmsError) -> None:
    if not skip:
        raise type(exc)(
            f"{where}: {exc.message}",
            code=exc.code,
            path=where if exc.path is None else f"{where} {exc.path}",
        ) from exc
    report.skipped.append((where, str(exc)))


# --- grain sources: .mg and JSON Lines ------------------------------------------------


def _grain_rows(
    store: GrainStore, grains: Iterator[Grain], fresh: set[str] | None = None
) -> Iterator[Row]:
    for grain in grains:
        if fresh is not None and grain.address not in fresh:
            continue
        yield from store._new_rows(grain)


@contextmanager
def _plan_jsonl(store: GrainStore, reopen: Callable[[], IO[bytes]], report: ImportReport,
                skip: bool, progress: Progress) -> Iterator[Callable[[], Iterator[Item]]]:  # fmt: skip
    bad: set[int] = set()
    fresh: set[str] = set()

    def grains(check: bool) -> Iterator[Grain]:
        with reopen() as raw:
            stream = _io.BufferedReader(_Counting(raw, progress if check else None))
            for number, line in enumerate(
                _io.TextIOWrapper(stream, encoding="utf-8"), 1
            ):
                if not line.strip() or number in bad:
                    continue
                try:
                    try:
                        fields = json.loads(line, object_pairs_hook=_json_object)
                    except json.JSONDecodeError as exc:
                        raise DecodeError(
                            f"not JSON: {exc.msg} (column {exc.colno})"
                        ) from None
                    if isinstance(fields, dict) and set(fields) == {"$blob"}:
                        fields = base64.b64decode(fields["$blob"])
                    grain = store._grain(fields)
                except OmsError as exc:
                    bad.add(number)
                    _fail_or_skip(report, skip, f"line {number}", exc)
                    continue
                yield grain

    for grain in grains(check=True):
        if grain.address not in store and grain.address not in fresh:
            fresh.add(grain.address)
    report.added = len(fresh)
    yield lambda: _grain_rows(store, _unique(grains(check=False), fresh), None)


def _unique(grains: Iterator[Grain], fresh: set[str]) -> Iterator[Grain]:
    seen: set[str] = set()
    for grain in grains:
        if grain.address in fresh and grain.address not in seen:
            seen.add(grain.address)
            yield grain


@contextmanager
def _plan_mg(store: GrainStore, reopen: Callable[[], IO[bytes]], report: ImportReport,
             skip: bool, progress: Progress) -> Iterator[Callable[[], Iterator[Item]]]:  # fmt: skip
    fresh: set[str] = set()
    with reopen() as raw:
        reader = read_mg(raw, progress=progress)
        for blob in reader.blobs():
            grain = Grain.from_blob(blob)
            if grain.address not in store:
                fresh.add(grain.address)
        manifest = reader.manifest
    states = {
        addr: _state_from_manifest(addr, entry) for addr, entry in manifest.items()
    }
    for address, state in states.items():
        if address not in fresh and address in store:
            _check_same_state(store, address, state)
        elif address not in fresh:
            _fail_or_skip(report, skip, f"manifest {address[:12]}…",
                          DecodeError("the manifest names a grain the container does not hold"))  # fmt: skip
    report.added = len(fresh)

    def rows() -> Iterator[Row]:
        with reopen() as raw:
            for blob in read_mg(raw).blobs():
                grain = Grain.from_blob(blob)
                if grain.address in fresh:
                    yield from _with_state(
                        store._new_rows(grain), states.get(grain.address)
                    )
        for address, state in states.items():
            if address in fresh:
                yield from state

    yield rows


def _state_from_manifest(address: str, entry: Mapping[str, Any]) -> list[Row]:
    """Index rows for one manifest entry (status and verification replace the defaults)."""
    node = f"<{NIH_PREFIX}{address}>"
    idx = str(OMS.index)
    rows: list[Row] = []
    vstatus = entry.get("vstatus")
    status = (
        "retracted"
        if vstatus == "retracted"
        else ("superseded" if "sb" in entry else "active")
    )
    verification = _VERIFICATION_IN.get(str(vstatus), "unverified") if vstatus != "retracted" else (
        "contradicted" if entry.get("oms_rdf:contradicted") else "unverified")  # fmt: skip
    rows.append((node, str(OMS.status), str(getattr(OMS, status)), idx))
    rows.append(
        (node, str(OMS.verificationStatus), str(getattr(OMS, verification)), idx)
    )
    if "sb" in entry:
        rows.append((node, str(OMS.supersededBy), f"<{NIH_PREFIX}{entry['sb']}>", idx))
    for key, prop in (("svt", OMS.systemTo), (VOIDED_KEY, OMS.voidedAt)):
        if isinstance(entry.get(key), int):
            rows.append((node, str(prop), str(millis_literal(entry[key])), idx))
    for key, prop in (("itype", OMS.invalidationType), ("ireason", OMS.invalidationReason),
                      ("iinit", OMS.invalidationInitiator)):  # fmt: skip
        if isinstance(entry.get(key), str):
            rows.append((node, str(prop), nt_literal(entry[key]), idx))
    return rows


def _with_state(rows: list[Row], state: list[Row] | None) -> list[Row]:
    """A new grain's rows with the default index state dropped when a manifest gives one."""
    if state is None:
        return rows
    drop = {str(OMS.status), str(OMS.verificationStatus)}
    return [r for r in rows if not (r[3] == str(OMS.index) and r[1] in drop)]


def _check_same_state(store: GrainStore, address: str, rows: list[Row]) -> None:
    # Compare as stored: Oxigraph keeps literals in canonical form ("…00Z", not
    # "…00.000Z"), so both sides go through a store before comparing.
    given = ox.Store()
    given.load(rows_to_nquads(rows).encode(), format=ox.RdfFormat.N_QUADS)
    have = {
        str(q) for q in store.backend.quads(grain_iri(address), None, None, OMS.index)
    }
    if {str(q) for q in given} != have:
        raise StoreError(
            f"grain {address[:12]}… is already in the store with another index state; "
            "importing would change its history",
            code=ErrorCode.CONFLICT,
            path=address,
        )


# --- RDF datasets: ours (TriG, N-Quads, JSON-LD) --------------------------------------


def _quads(raw: IO[bytes], fmt: ox.RdfFormat, progress: Progress) -> Iterator[ox.Quad]:
    try:
        yield from ox.parse(_io.BufferedReader(_Counting(raw, progress)), format=fmt)
    except SyntaxError as exc:
        raise DecodeError(
            f"not valid {fmt.name}: {exc}", code=ErrorCode.CORRUPT, path=_position(exc)
        ) from None


def _position(exc: SyntaxError) -> str | None:
    return f"line {exc.lineno}" if exc.lineno else None


@contextmanager
def _plan_dataset(store: GrainStore, reopen: Callable[[], IO[bytes]], fmt: ox.RdfFormat, report: ImportReport,
                  skip: bool, progress: Progress) -> Iterator[Callable[[], Iterator[Item]]]:  # fmt: skip
    known: dict[str, bool] = {}  # grain node -> already in the store
    with_blob: set[str] = set()
    bad: set[str] = set()
    existing_index: dict[str, set[Row]] = {}
    index_graph, blob_graph = OMS.index, OMS.blobs
    settings_base = None
    described: set[str] = set()
    present: set[str] = set()  # quads not about a grain that the store already has
    with reopen() as raw:
        for quad in _quads(raw, fmt, progress):
            s = quad.subject
            if isinstance(s, ox.NamedNode) and s.value.startswith(NIH_PREFIX):
                node = s.value
                if node not in known:
                    known[node] = address_of(s) in store
                if quad.graph_name == blob_graph and quad.predicate == OMS.blob:
                    with_blob.add(node)
                    try:
                        Grain.from_blob(
                            base64.b64decode(_text(quad.object)), address=address_of(s)
                        )
                    except (OmsError, ValueError) as exc:
                        bad.add(node)
                        err = (
                            exc if isinstance(exc, OmsError) else DecodeError(str(exc))
                        )
                        _fail_or_skip(report, skip, f"grain {address_of(s)[:12]}…", err)
                elif quad.graph_name == index_graph and known[node]:
                    existing_index.setdefault(node, set()).add(_row_of(quad))
                elif (
                    isinstance(quad.graph_name, ox.DefaultGraph)
                    and quad.predicate == OMS.contentAddress
                ):
                    described.add(node)
            elif s == OMS.settings and quad.predicate == OMS.baseIri:
                settings_base = _text(quad.object)
            elif next(
                store.backend.quads(s, quad.predicate, quad.object, quad.graph_name),
                None,
            ):
                present.add(str(quad))  # decided once, before anything is written
    if settings_base is not None and settings_base != store.settings.base_iri:
        raise StoreError(
            f"the source was made with base IRI {settings_base!r}, this store uses "
            f"{store.settings.base_iri!r}; entity IRIs would not match",
            code=ErrorCode.CONFLICT,
        )
    for node in described - with_blob:
        _fail_or_skip(report, skip, f"grain {address_of(ox.NamedNode(node))[:12]}…",
                      DecodeError("no blob in graph oms:blobs; import a knowledge-only file as turtle"))  # fmt: skip
        bad.add(node)
    for node, state in existing_index.items():
        if node not in bad:
            _check_same_state(store, address_of(ox.NamedNode(node)), list(state))
    report.added = sum(
        1 for n, pre in known.items() if not pre and n not in bad and n in with_blob
    )
    skip_graphs = (OMS.current,)

    def rows() -> Iterator[Item]:
        with reopen() as raw:
            for quad in _quads(raw, fmt, None):
                s = quad.subject
                if isinstance(s, ox.NamedNode) and s.value.startswith(NIH_PREFIX):
                    if known.get(s.value) or s.value in bad:
                        continue
                elif s == OMS.settings or quad.graph_name in skip_graphs:
                    continue
                elif str(quad) in present:
                    continue  # there before the import: never written, never removed
                if isinstance(quad.object, ox.Triple):
                    continue  # RDF 1.2 reifiers of the *12 views are derived, not stored
                yield quad

    yield rows


# --- RDF graphs: our Turtle (knowledge only), or a foreign graph to adopt -----------------


@contextmanager
def _plan_graph(store: GrainStore, reopen: Callable[[], IO[bytes]], fmt: ox.RdfFormat, report: ImportReport,
                skip: bool, progress: Progress, *, namespace: str | None,
                confidence: float) -> Iterator[Callable[[], Iterator[Item]]]:  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="oms-rdf-staging-") as tmp:
        staging = ox.Store(tmp)  # on disk: the source may not fit in memory
        with reopen() as raw:
            try:
                staging.bulk_load(
                    _io.BufferedReader(_Counting(raw, progress)), format=fmt
                )
            except SyntaxError as exc:
                raise DecodeError(
                    f"not valid {fmt.name}: {exc}", path=_position(exc)
                ) from None
        ours = (
            next(staging.quads_for_pattern(None, OMS.contentAddress, None), None)
            is not None
        )
        created = now_ms()

        def grains(check: bool) -> Iterator[Grain]:
            # Records refused on the first pass were reported (or raised) there.
            if ours:
                return _staged_grains(staging, report, skip, check)
            return _adopted(staging, report, skip, check, namespace=namespace,
                            confidence=confidence, created=created)  # fmt: skip

        fresh: set[str] = set()
        for grain in grains(check=True):
            if grain.address not in store:
                fresh.add(grain.address)
        report.added = len(fresh)
        yield lambda: _grain_rows(store, _unique(grains(check=False), fresh))


def _staged_grains(
    staging: ox.Store, report: ImportReport, skip: bool, check: bool
) -> Iterator[Grain]:
    for quad in staging.quads_for_pattern(
        None, OMS.contentAddress, None, ox.DefaultGraph()
    ):
        node = quad.subject
        try:
            yield quads_to_grain(
                staging.quads_for_pattern(node, None, None, ox.DefaultGraph())
            )
        except OmsError as exc:
            if check:
                _fail_or_skip(report, skip, f"grain {_text(node)}", exc)


def _adopted(staging: ox.Store, report: ImportReport, skip: bool, check: bool, *, namespace: str | None,
             confidence: float, created: int) -> Iterator[Grain]:  # fmt: skip
    """Beliefs from a foreign graph: one per triple, all made at import time."""
    for i, quad in enumerate(staging.quads_for_pattern(None, None, None, None)):
        fields: dict[str, Any] = {
            "type": "belief",
            "subject": _term_text(quad.subject),
            "relation": quad.predicate.value,
            "object": _term_text(quad.object),
            "confidence": confidence,
            "source_type": "imported",
            "created_at": created,
            "namespace": namespace,
            "context": _term_context(quad.object) or None,
        }
        try:
            yield Grain.from_dict(fields)
        except OmsError as exc:
            if check:
                _fail_or_skip(report, skip, f"triple {i + 1}", exc)


def _text(term: Any) -> str:
    """The lexical value of an IRI, blank node or literal term."""
    return str(term.value)


def _term_text(term: Any) -> str:
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    return str(term.value)


def _term_context(term: Any) -> dict[str, Any]:
    """What the object text alone does not say: an IRI, a datatype or a language."""
    if isinstance(term, ox.NamedNode):
        return {"rdf:object": "iri"}
    if isinstance(term, ox.BlankNode):
        return {"rdf:object": "blank node"}
    if isinstance(term, ox.Literal):
        if term.language:
            return {"rdf:language": term.language}
        if term.datatype.value != "http://www.w3.org/2001/XMLSchema#string":
            return {"rdf:datatype": term.datatype.value}
    return {}


# --- rdflib bridge ---------------------------------------------------------------------


def to_rdflib(store: GrainStore) -> rdflib.Dataset:
    """Return the store's graphs as an ``rdflib.Dataset`` (a copy)."""
    import rdflib

    buffer = _io.BytesIO()
    store.backend.dump(buffer, ox.RdfFormat.N_QUADS)
    dataset = rdflib.Dataset()
    with warnings.catch_warnings():
        # rdflib 7's own N-Quads parser calls Dataset APIs rdflib deprecates.
        warnings.filterwarnings("ignore", "Dataset.*deprecated", DeprecationWarning)
        dataset.parse(data=buffer.getvalue(), format="nquads")
    return dataset


def from_rdflib(dataset: rdflib.Dataset, store: GrainStore | None = None) -> GrainStore:
    """Import an ``rdflib.Dataset`` made by :func:`to_rdflib` (or a TriG export) into a store."""
    target = store if store is not None else GrainStore()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Dataset.*deprecated", DeprecationWarning)
        data = dataset.serialize(format="nquads", encoding="utf-8")
    import_(target, _io.BytesIO(data), format="nquads")
    return target
