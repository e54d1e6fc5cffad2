"""Storage backends: the narrow interface the store reaches storage through.

Every write is one atomic call (``add`` or ``update``), so a remote SPARQL 1.1
server can serve as a backend later. The local backend is pyoxigraph: in memory,
or on disk (RocksDB) with a path.

One process writes an on-disk store: it holds a lock file beside the store's
folder (:mod:`.writer_lock`) before it touches anything, so that another
opening never finishes a vacuum that is still running. A reader in another
process opens an on-disk store read-only, as of the opening.
A bulk write (an import, a bulk load) is not one transaction: RocksDB's bulk
loader publishes it in pieces, which such a reader would see in part. So the
writer marks the store first (:meth:`LocalBackend.bulk_writing`, a small file in the store's
folder, replaced atomically) and clears the mark once the write is committed and
compacted; a read-only opening that meets the mark, or a journal left open, is
refused with ERR_CONFLICT instead of showing part of the write.
"""

from __future__ import annotations

import json
import os
import socket
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import pyoxigraph as ox

from ..errors import DecodeError, ErrorCode, StoreError
from ..rdf.vocab import OMS, RDF
from .base import grains_query
from .vacuum import Closed, finish_vacuum, fsync_dir, vacuum
from .writer_lock import writer_lock, writer_unlock

__all__ = ["BULK_MARK", "LocalBackend"]

BULK_MARK = "oms-rdf-bulk.json"  # in the store's folder: see bulk_writing()


class LocalBackend:
    """A pyoxigraph store: in memory when ``path`` is None, else on-disk RocksDB.

    ``read_only`` opens an on-disk store beside the process that writes it (RocksDB
    allows one writer): a view as of the opening, which may lag that writer.
    """

    shared: bool = False  # this process is the store's only writer
    remote: bool = False  # lookups are calls in process: cheap
    exact_optionals: bool = True  # Oxigraph evaluates SPARQL as written
    lateral_joins: bool = True  # pyoxigraph parses and evaluates LATERAL
    python_functions: bool = True  # pyoxigraph calls Python during a query
    # An interval layer is kept beside it in process, but for a read-only
    # opening: every write of its writer would have it read whole again.
    intervals: bool = True

    def __init__(
        self, path: str | Path | None = None, *, read_only: bool = False
    ) -> None:
        self.path: Path | None = None if path is None else Path(path)
        self.read_only = read_only
        if read_only:
            self.intervals = False
        self._bulk_depth = 0  # nested bulk_writing() blocks of this process
        self._release: Callable[[], None] = lambda: None  # the writer's lock
        try:
            if path is None:
                self.store = ox.Store()
            elif read_only:
                self.store = _open_read_only(Path(path))
            else:
                # Created if missing, its folders too (the lock file sits beside it).
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                # The writer's lock first: only then is a vacuum left half made
                # this process's to finish (it may be another's, running).
                held = writer_lock(Path(path))
                if held is not None:
                    self._release = weakref.finalize(
                        self, writer_unlock, Path(path), held, os.getpid()
                    )
                finish_vacuum(Path(path))  # a swap a crash interrupted
                self.store = ox.Store(str(path))
        except (OSError, RuntimeError) as exc:
            self._release()
            asked = (
                "" if "has it open" in str(exc) else " (is another process using it?)"
            )
            raise StoreError(
                f"cannot open the store at {path}: {exc}{asked}", code=ErrorCode.STORE
            ) from exc
        if path is not None and not read_only:
            # The writer holds RocksDB's lock now: a mark still set belongs to a
            # bulk write a crash interrupted. Its journal is still open, so readers
            # stay refused until the store's recovery has undone it.
            _set_mark(Path(path), writing=False)

    @contextmanager
    def bulk_writing(self) -> Iterator[None]:
        """Mark an on-disk store as taking a bulk write for the block's duration.

        Set before the block's first write, cleared after it (once the write is
        committed, or undone, and compacted); read-only openings in other
        processes refuse a marked store (see the module docstring). The store
        takes it around every bulk write (``Core.bulk``).
        """
        if self.path is None or self.read_only:
            yield
            return
        self._bulk_depth += 1
        try:
            if self._bulk_depth == 1:
                _set_mark(self.path, writing=True)
            yield
        finally:
            self._bulk_depth -= 1
            if self._bulk_depth == 0:
                _set_mark(self.path, writing=False)

    def _writable(self) -> None:
        if self.read_only:
            raise StoreError(
                f"the store at {self.path} was opened read-only (another process "
                "writes it); write through that process, or its `oms-rdf serve`",
                code=ErrorCode.STORE,
            )

    def add(self, quads: Iterable[ox.Quad]) -> None:
        self._writable()
        try:
            self.store.extend(quads)
        except (OSError, ValueError) as exc:
            raise StoreError(f"adding quads failed: {exc}") from exc

    def update(self, sparql: str) -> None:
        self._writable()
        try:
            self.store.update(sparql)
        except (OSError, SyntaxError, ValueError) as exc:
            raise StoreError(f"SPARQL update failed: {exc}") from exc

    def query(
        self,
        sparql: str,
        substitutions: Mapping[ox.Variable, Any] | None = None,
        **dataset: Any,
    ) -> Any:
        try:
            return self.store.query(
                sparql, substitutions=dict(substitutions or {}), **dataset
            )
        except (OSError, SyntaxError, ValueError, RuntimeError) as exc:
            raise StoreError(f"SPARQL query failed: {exc}") from exc

    def quads_of(
        self, sparql: str, substitutions: Mapping[ox.Variable, Any] | None = None
    ) -> list[ox.Quad]:
        """The quads named by a query's ``?g ?p ?o ?graph`` (see Backend)."""
        rows = self.query(sparql, substitutions)
        return [
            ox.Quad(r["g"], r["p"], r["o"], r["graph"] or ox.DefaultGraph())
            for r in rows
        ]

    def grains_query(self, nodes: list[str]) -> str:
        """The standard query (:func:`oms_rdf.backends.base.grains_query`)."""
        return grains_query(nodes)

    def named_graphs(self) -> Iterator[Any]:
        # The engine keeps a graph's name after its last quad is removed: such a
        # graph holds nothing, and GRAPH ?g {} must not find it.
        store = self.store
        return (
            g
            for g in store.named_graphs()
            if next(store.quads_for_pattern(None, None, None, g), None) is not None
        )

    def quads(
        self, s: Any = None, p: Any = None, o: Any = None, g: Any = None
    ) -> Iterator[ox.Quad]:
        return iter(self.store.quads_for_pattern(s, p, o, g))

    def dump(self, output: IO[bytes], fmt: ox.RdfFormat, graph: Any = None) -> None:
        try:
            if graph is None:
                self.store.dump(output, fmt)
            else:
                self.store.dump(output, fmt, from_graph=graph)
        except (OSError, ValueError) as exc:
            raise StoreError(f"dump failed: {exc}") from exc

    def load(self, data: bytes | IO[bytes] | Path, fmt: ox.RdfFormat) -> None:
        """Load atomically. Raises DecodeError for data that does not parse and
        StoreError for a failure of the store itself (disk full, I/O).

        A file given by its path is read by the store itself, without the GIL.
        """
        self._writable()
        with _load_errors("load"):
            if isinstance(data, Path):
                self.store.load(path=data, format=fmt)
            else:
                self.store.load(data, fmt)

    def bulk_load(self, data: bytes | IO[bytes] | Path, fmt: ox.RdfFormat) -> None:
        """Load with RocksDB's bulk loader: fast, *not* atomic (the store's journal
        guards it); data and errors as :meth:`load`."""
        self._writable()
        with _load_errors("bulk load"):
            if isinstance(data, Path):
                self.store.bulk_load(path=data, format=fmt)
            else:
                self.store.bulk_load(data, fmt)

    def load_pieces(self, pieces: Iterable[bytes], fmt: ox.RdfFormat) -> None:
        """Load pieces atomically. Into an in-memory store that holds little,
        each piece is loaded on a thread of its own while the next is made (a
        load releases the GIL), into a copy of the store that replaces it once
        all are in: readers see the store before or after, never between, and
        a failure on either side leaves it as it was. Otherwise one load of
        them joined."""
        self._writable()
        if self.path is not None or len(self.store) > _STAGED_AT_MOST:
            self.load(b"".join(pieces), fmt)
            return
        staging = ox.Store()
        staging.extend(self.store)
        loading: Future[None] | None = None
        with ThreadPoolExecutor(1, thread_name_prefix="oms-load") as loader:
            try:
                for piece in pieces:
                    if loading is not None:
                        loading.result()  # one load at a time, in order
                    loading = loader.submit(_staged_load, staging, piece, fmt)
            except BaseException:
                if loading is not None:
                    wait([loading])  # the first error is the one raised
                raise
            if loading is not None:
                loading.result()
        self.store = staging

    def optimize(self) -> None:
        """Compact an on-disk store (RocksDB), as it would do later by itself."""
        if self.path is not None:
            self._writable()
            try:
                self.store.optimize()
            except OSError as exc:
                raise StoreError(f"compaction failed: {exc}") from exc

    def flush(self) -> None:
        """Write buffered changes of an on-disk store."""
        if self.path is not None:
            self.store.flush()

    def vacuum(
        self,
        progress: Callable[[int], object] | None = None,
        *,
        reading: Callable[[], int] = lambda: 0,
    ) -> None:
        """Rewrite the store with only its live quads, and swap it in
        (:func:`.vacuum.vacuum`: ``reading``, how many answers of it are still
        being read).

        Raises:
            StoreError: ERR_CONFLICT when another thread holds the old store too
                long; ERR_STORE for a copy that failed (nothing changed either way).
        """
        self._writable()
        vacuum(self, progress, reading)

    def close(self) -> None:
        """Flush and release the store (an on-disk store can then be reopened)."""
        if isinstance(self.store, Closed):  # closed already (a vacuum gave up)
            self._release()  # the writer's lock too (it runs once)
            return
        if not self.read_only:
            self.flush()
        self.store = Closed(self.path)  # type: ignore[assignment]
        self._release()

    def __len__(self) -> int:
        return len(self.store)


# An in-memory store holding at most this many quads is copied to take pieces
# (see LocalBackend.load_pieces): the copy costs less than the overlap saves.
_STAGED_AT_MOST = 100_000


def _staged_load(staging: ox.Store, piece: bytes, fmt: ox.RdfFormat) -> None:
    with _load_errors("load"):
        staging.load(piece, fmt)


@contextmanager
def _load_errors(what: str) -> Iterator[None]:
    """Tell the source's faults from the store's: only the first is the data's."""
    try:
        yield
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else None
        raise DecodeError(
            f"{what}: not valid RDF: {exc}", code=ErrorCode.CORRUPT, path=where
        ) from exc
    except ValueError as exc:  # an unsupported format, or bytes that are not UTF-8
        raise DecodeError(f"{what}: {exc}", code=ErrorCode.CORRUPT) from exc
    except OSError as exc:
        raise StoreError(f"{what} failed in the store: {exc}") from exc
    except MemoryError as exc:  # pyoxigraph's parsers stop at a 16 MiB line or token
        if "buffer maximal size" not in str(exc):
            raise
        raise DecodeError(
            f"{what}: a line or token is longer than the parser's 16 MiB buffer",
            code=ErrorCode.CORRUPT,
        ) from exc


@dataclass(frozen=True, slots=True)
class _Mark:
    """The bulk-write mark of a store: its generation counts the bulk writes begun."""

    generation: int = 0
    writing: bool = False
    pid: int | None = None
    host: str | None = None
    since: int | None = None  # epoch ms


def _read_mark(path: Path) -> _Mark:
    """The mark in the store's folder (none: no bulk write ever marked it)."""
    try:
        data = json.loads((path / BULK_MARK).read_text(encoding="utf-8"))
        return _Mark(
            generation=int(data["generation"]),
            writing=bool(data["writing"]),
            pid=data.get("pid"),
            host=data.get("host"),
            since=data.get("since"),
        )
    except FileNotFoundError:
        return _Mark()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # Replaced atomically, so never torn: a file we cannot read is not ours
        # to trust either way.
        raise StoreError(
            f"cannot read the bulk-write mark {path / BULK_MARK}: {exc}; open the "
            "store for writing (no other process using it) to reset it",
            code=ErrorCode.STORE,
        ) from exc


def _set_mark(path: Path, *, writing: bool) -> None:
    """Write the mark atomically (a new file renamed over the old one), durably."""
    try:
        old = _read_mark(path)
    except StoreError:
        old = _Mark(writing=True)  # unreadable: replaced, set or cleared
    if not writing and not old.writing:
        return  # nothing to clear: no write to the disk
    generation = old.generation + 1 if writing else old.generation
    data: dict[str, object] = {"generation": generation, "writing": writing}
    if writing:
        data |= {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": int(time.time() * 1000),
        }
    temporary = path / (BULK_MARK + ".tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            json.dump(data, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path / BULK_MARK)
        fsync_dir(path)
    except OSError as exc:
        raise StoreError(
            f"cannot write the bulk-write mark {path / BULK_MARK}: {exc}",
            code=ErrorCode.STORE,
        ) from exc


def _busy(path: Path, mark: _Mark | None) -> StoreError:
    """The refusal of a read-only opening beside an unfinished bulk write."""
    if mark is None:
        what = (
            "a large write into it is in progress or was interrupted (its journal "
            "is open)"
        )
    else:
        since = (
            ""
            if mark.since is None
            else datetime.fromtimestamp(mark.since / 1000, UTC).strftime(
                " since %Y-%m-%dT%H:%M:%SZ"
            )
        )
        what = f"an import or bulk load into it is running (process {mark.pid}{since})"
        if mark.pid is not None and mark.host == socket.gethostname():
            try:
                os.kill(mark.pid, 0)
            except ProcessLookupError:
                what = (
                    f"an import or bulk load into it was interrupted (process "
                    f"{mark.pid}{since} is gone)"
                )
            except OSError:
                pass  # alive, another user's
    return StoreError(
        f"cannot read the store at {path}: {what}, and a read now could see only "
        "part of it. Retry when the import has ended; to read while writing, run "
        "`oms-rdf serve` on the store and read through it. An interrupted write is "
        "undone when the store is next opened for writing (no other process "
        "using it)",
        code=ErrorCode.CONFLICT,
    )


def _open_read_only(path: Path, attempts: int = 8) -> ox.Store:
    """Open beside a writer, as of a committed state, or refuse (ERR_CONFLICT).

    The bulk-write mark is read before and after the opening: unset both times
    with the same generation, no bulk write began or ran while RocksDB's files
    were read, so the view holds every committed write whole. A journal left
    open in the view (a write in progress, or one a crash interrupted) is
    refused too.

    RocksDB's files are listed before and after as well, and the opening is
    tried again if they changed: a file the writer deleted meanwhile (compacted
    away) would be missing from the view, and a query that meets a missing file
    in pyoxigraph 0.5 gathers errors without end (it grew to gigabytes). Once
    opened, the view holds its files open, so later compactions do not touch it.
    Opening is also retried when it fails, since the writer may swap RocksDB's
    manifest between our reading of its name and of its file.
    """
    for attempt in range(attempts):
        before, files = _read_mark(path), _files(path)
        if before.writing:
            raise _busy(path, before)
        try:
            store = ox.Store.read_only(str(path))
        except (OSError, RuntimeError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2**attempt)
            continue
        after = _read_mark(path)
        if after == before and _files(path) == files:
            if next(store.quads_for_pattern(*_JOURNAL_MARK), None) is not None:
                raise _busy(path, None)
            return store
        del store
        if after.writing:
            raise _busy(path, after)
        time.sleep(0.01 * 2**attempt)
    mark = _read_mark(path)
    if mark.writing:
        raise _busy(path, mark)
    raise StoreError(
        f"cannot read the store at {path}: its files kept changing while it was "
        f"opened ({attempts} tries; a writer is compacting it). Retry, or run "
        "`oms-rdf serve` on the store and read through it",
        code=ErrorCode.CONFLICT,
    )


def _files(path: Path) -> frozenset[str]:
    """The names of RocksDB's tables, logs and manifests in a store's folder."""
    try:
        names = os.listdir(path)
    except OSError:
        return frozenset()  # the opening reports it
    return frozenset(
        n for n in names if n.endswith((".sst", ".log")) or n.startswith("MANIFEST-")
    )


# An open journal's mark (store/journal.py writes it as the first step of a
# bulk write and removes it in the write's last).
_JOURNAL_MARK = (OMS.journal, RDF.type, OMS.Journal, OMS.index)
