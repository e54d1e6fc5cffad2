"""Writes too large for one transaction, made all or nothing by a journal.

``put``, ``supersede`` and a ``put_many`` into a store that holds grains are one
backend call each, so they are atomic by themselves. An import, or a bulk load
into an empty on-disk store, goes in chunks, and a crash between two chunks would
leave part of it. The journal, kept on node ``oms:journal`` in graph
``oms:index``, closes that gap:

- Into an embedded store that holds no grain, the journal keeps the store's few
  quads as they were (its settings and audit), as N-Quads text. Undoing is one
  update that clears everything and writes them back. So the chunks may go
  through RocksDB's bulk loader, which is fast but not atomic.
- Into a store that holds grains, or one other processes write too (a SPARQL
  server, which may hold more than this store and which must never be cleared),
  each chunk records the grain nodes it creates and the other quads it adds. The
  records go ahead of the data, in the same request: a server that commits an
  update's operations one by one (Virtuoso) never holds data its journal does not
  name. Undoing deletes those grains (their quads in every graph, and their
  knowledge triples) and those quads, then rebuilds the knowledge. Its cost grows
  with what was written, not with the store.

A journal is open while its mark (``oms:journal a oms:Journal``) is there. The
update that ends the write rebuilds the knowledge layer when it must, then removes
the mark and adds the audit event in one operation, then clears the records.
Opening a store whose journal is open undoes the interrupted write first
(:func:`recover`), so a crash at any point leaves the store as before the write,
or with all of it; records left without their mark are only cleared.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pyoxigraph as ox

from ..backends.base import Backend
from ..errors import ErrorCode, StoreError
from ..rdf.mapping import NIH_PREFIX, Row, nt_literal, rows_to_nquads
from ..rdf.sparql import data_block, load_query, quad_row, update_request
from ..rdf.vocab import OMS, RDF
from .presence import stored_grains, stored_rows
from .progress import Stage

Item = Row | ox.Quad

JOURNAL = OMS.journal
_INDEX = OMS.index
_G_INDEX = str(OMS.index)
_J = str(JOURNAL)
_P_ADDED, _P_QUAD = str(OMS.journalGrain), str(OMS.journalQuad)
_P_BLOB = str(OMS.blob)
# Knowledge triples are not journalled: undoing a grain deletes its triple, and
# the rebuild puts back any that another grain still asserts.
_GRAIN_GRAPHS = frozenset({"", str(OMS.blobs), _G_INDEX, str(OMS.audit)})
CHUNK_ROWS = 200_000  # rows per atomic step: bounds a transaction's memory
# Into an empty in-memory store, the rows go to one load as text pieces of this
# many rows: each is loaded while the next is made.
PIECE_ROWS = 20_000
_UNDO_BATCH = 500  # grain nodes deleted per update while undoing
_NODE = f"<{NIH_PREFIX}"
_REBUILD = load_query("rebuild_current")
_P_BEFORE = f"<{OMS.journalBefore.value}>"
_MARK = f"{_J} <{RDF.type.value}> <{OMS.Journal.value}> ."  # an open journal's mark
_CLEAR_RECORDS = f"DELETE WHERE {{ GRAPH {_G_INDEX} {{ {_J} ?p ?o }} }}"


class Journal:
    """One large write in progress; see the module docstring.

    Use :meth:`begin`, then :meth:`write` as often as needed, then :meth:`finish`;
    on failure, :meth:`undo`.
    """

    def __init__(self, backend: Backend, *, empty: bool) -> None:
        self.backend = backend
        # The store held no grain when the write began, and no one else writes it.
        self.empty = empty
        self._seen: dict[str, bool] = {}  # grain node -> created by this write
        self.finished = False
        self.written = 0  # rows written so far
        # Turns the final rows into (rows to delete, rows to add): the store chains
        # its audit events with it (store/audit.py).
        self.seal: Callable[[list[Row]], tuple[list[Row], list[Row]]] = lambda rows: (
            [],
            [],
        )
        self.stage: Stage | None = None  # shows the writing, see store/progress.py

    @classmethod
    def begin(cls, backend: Backend) -> Journal:
        """Open the journal (one atomic write) and return it."""
        empty = not backend.shared and (
            next(backend.quads(None, OMS.blob, None, OMS.blobs), None) is None
        )
        marks = [ox.Quad(JOURNAL, RDF.type, OMS.Journal, _INDEX)]
        if empty:
            before = rows_to_nquads(quad_row(q) for q in backend.quads())
            marks.append(
                ox.Quad(JOURNAL, OMS.journalBefore, ox.Literal(before), _INDEX)
            )
        backend.add(marks)
        return cls(backend, empty=empty)

    def write(self, items: Iterable[Item], *, grains: int | None = None) -> None:
        """Write rows or quads, in chunks of ``CHUNK_ROWS``.

        Into an empty on-disk store the chunks go to RocksDB's bulk loader, one at
        a time and in order, on a thread of their own: the loader releases the
        GIL, so the next chunk is made meanwhile. Into an empty in-memory store
        the rows are one load, seen whole or not at all, its pieces loaded
        while the next are made (``Backend.load_pieces``). ``items`` may be
        made as they are read. Every load has ended, and its error is raised,
        before this returns. ``grains``: how many grains the rows hold, for the
        ``stage`` to count them as they go.
        """
        tick = self.stage("writing", grains) if self.stage and grains else None
        if self.empty and self.backend.path is None:
            self._piped(items, tick)
            return
        chunk: list[Row] = []
        loading: Future[None] | None = None
        with (
            cyclic_gc_paused(),
            ThreadPoolExecutor(1, thread_name_prefix="oms-bulk-load") as loader,
        ):
            try:
                for item in items:
                    chunk.append(item if isinstance(item, tuple) else quad_row(item))
                    if len(chunk) >= CHUNK_ROWS:
                        loading = self._chunk(chunk, loader, loading, tick)
                        chunk = []
                if chunk:
                    loading = self._chunk(chunk, loader, loading, tick)
            except BaseException:
                if loading is not None:
                    wait(
                        [loading]
                    )  # before any undo; the first error is the one raised
                raise
            if loading is not None:
                loading.result()

    def _piped(
        self, items: Iterable[Item], tick: Callable[[int], object] | None
    ) -> None:
        """Write into an empty in-memory store: one load of the rows' text,
        each piece loaded while the next is made (``Backend.load_pieces``)."""

        def texts() -> Iterator[bytes]:
            for piece in _pieces(items, PIECE_ROWS):
                self.written += len(piece)
                if tick is not None:  # a grain has one blob
                    tick(sum(1 for row in piece if row[1] == _P_BLOB))
                yield rows_to_nquads(piece).encode()

        with cyclic_gc_paused():
            self.backend.load_pieces(texts(), ox.RdfFormat.N_QUADS)

    def _chunk(
        self,
        rows: list[Row],
        loader: ThreadPoolExecutor,
        loading: Future[None] | None,
        tick: Callable[[int], object] | None,
    ) -> Future[None] | None:
        """Write one chunk; its journal entries go in the same transaction.

        Returns the bulk load it started, if it started one (see :meth:`write`).
        """
        self.written += len(rows)
        if tick is not None:  # a grain has one blob
            tick(sum(1 for row in rows if row[1] == _P_BLOB))
        if not self.empty:
            rows = [*self._entries(rows), *rows]  # the journal first: see above
            self.backend.load(rows_to_nquads(rows).encode(), ox.RdfFormat.N_QUADS)
            return None
        data = rows_to_nquads(rows).encode()
        if loading is not None:
            loading.result()  # one load at a time, in order
        return loader.submit(self.backend.bulk_load, data, ox.RdfFormat.N_QUADS)

    def load(self, data: bytes | IO[bytes] | Path, fmt: ox.RdfFormat) -> None:
        """Load serialised quads natively; only into a store that held no grain.

        ``data`` may be a file's path, which an embedded store reads by itself.

        Raises:
            StoreError: ERR_STORE when the store held grains as the write began.
        """
        if not self.empty:
            raise StoreError(
                "a native load needs a store that held no grain when the write "
                "began; write rows with write() instead",
                code=ErrorCode.STORE,
            )
        if self.backend.path is not None:
            self.backend.bulk_load(data, fmt)
        else:
            self.backend.load(data, fmt)

    def _entries(self, rows: list[Row]) -> Iterator[Row]:
        """Journal rows naming what these rows add to a store that holds grains."""
        mine = [r for r in rows if r[3] in _GRAIN_GRAPHS]
        nodes = {
            r[0] for r in mine if r[0].startswith(_NODE) and r[0] not in self._seen
        }
        stored = stored_grains(self.backend, nodes)
        for node in nodes:
            created = self._seen[node] = node not in stored
            if created:
                yield (_J, _P_ADDED, node, _G_INDEX)
        others = [r for r in mine if not (r[0].startswith(_NODE) and self._seen[r[0]])]
        present = stored_rows(self.backend, others)
        for row in others:
            if row not in present:
                yield (_J, _P_QUAD, nt_literal(rows_to_nquads([row])), _G_INDEX)

    def finish(self, rows: Sequence[Item] = (), *, rebuild: bool = True) -> None:
        """End the write in one request: unless the rows written carried it,
        rebuild the knowledge; then drop the journal and add ``rows`` (the audit)."""
        final = [item if isinstance(item, tuple) else quad_row(item) for item in rows]
        unchain, chain = self.seal(final)
        # One operation closes the journal (its mark) and appends the audit event,
        # so no server can keep one without the other. It matches one solution,
        # the mark's, so its templates are written once whatever the journal
        # holds (a lone OPTIONAL that matches nothing gives no solution on
        # Virtuoso, where SPARQL gives one). The journal's records go next:
        # records without the mark are a closed journal's leftovers (recover()
        # clears them). The rebuild before it may be repeated (the undo ends
        # with one).
        end = (
            f"DELETE {{ {data_block(unchain)} GRAPH {_G_INDEX} {{ {_MARK} {_J} {_P_BEFORE} ?before }} }}\n"
            f"INSERT {{ {data_block([*final, *chain])} }}\n"
            f"WHERE {{ GRAPH {_G_INDEX} {{ {_MARK} }} "
            f"OPTIONAL {{ GRAPH {_G_INDEX} {{ {_J} {_P_BEFORE} ?before }} }} }} ;\n"
            f"{_CLEAR_RECORDS}"
        )
        # Oxigraph takes a prologue (PREFIX) only at the start of a request.
        self.backend.update(f"{_REBUILD} ;\n{end}" if rebuild else end)
        self.finished = True

    def undo(self) -> None:
        """Put the store back as it was before the write, and close the journal."""
        undo(self.backend)
        self.finished = True

    def rewind(self) -> None:
        """Put the store back as it was before the write; the journal stays open."""
        marks = list(self.backend.quads(JOURNAL, None, None, _INDEX))
        undo(self.backend)
        self.backend.add(m for m in marks if m.predicate != OMS.journalGrain)
        self._seen.clear()
        self.written = 0


def recover(backend: Backend) -> bool:
    """Undo a write that a crash interrupted; return whether there was one.

    A journal without its mark belongs to a write that ended: its records are
    cleared, nothing is undone.
    """
    if next(backend.quads(JOURNAL, RDF.type, OMS.Journal, _INDEX), None) is None:
        if next(backend.quads(JOURNAL, None, None, _INDEX), None) is not None:
            backend.update(_CLEAR_RECORDS)
        return False
    undo(backend)
    return True


def undo(backend: Backend) -> None:
    """Undo the journalled write; each step may be repeated after a crash."""
    befores = list(backend.quads(JOURNAL, OMS.journalBefore, None, _INDEX))
    if len(befores) > 1:  # only a write of ours makes a journal, with one state
        raise StoreError(
            f"the journal of an interrupted write holds {len(befores)} earlier states, "
            "not one; it cannot be undone safely (was it written by an import?)"
        )
    before = befores[0] if befores else None
    if before is not None:
        quads = _parse(before.object)
        insert = update_request([], quads)
        backend.update("CLEAR ALL" + (f" ;\n{insert}" if insert else ""))
        return
    nodes = [q.object for q in backend.quads(JOURNAL, OMS.journalGrain, None, _INDEX)]
    for start in range(0, len(nodes), _UNDO_BATCH):
        batch = nodes[start : start + _UNDO_BATCH]
        backend.update(_forget_grains(" ".join(str(n) for n in batch)))
    for entry in list(backend.quads(JOURNAL, OMS.journalQuad, None, _INDEX)):
        added = _parse(entry.object)
        blank = [q for q in added if _has_blank(q)]
        ground = [q for q in added if not _has_blank(q)]
        backend.update(
            " ;\n".join(
                [update_request([*ground, entry], []), *map(_delete_blank, blank)]
            )
        )
    backend.update(f"{_REBUILD} ;\n{_CLEAR_RECORDS}")


def _has_blank(quad: ox.Quad) -> bool:
    return any(
        isinstance(t, ox.BlankNode)
        for t in (quad.subject, quad.object, quad.graph_name)
    )


def _delete_blank(quad: ox.Quad) -> str:
    """Delete a journalled quad that holds blank nodes.

    DELETE DATA cannot name a blank node, and the store holds it under a label of
    its own, so each becomes a variable bound to blank nodes only: the store never
    keeps one in its reserved graphs, so nothing of its own can match.
    """
    names: dict[str, str] = {}

    def term(t: object) -> str:
        if isinstance(t, ox.BlankNode):
            return names.setdefault(t.value, f"?b{len(names)}")
        return str(t)

    s, p, o, g = map(term, (quad.subject, quad.predicate, quad.object, quad.graph_name))
    pattern = (
        f"{s} {p} {o} ."
        if isinstance(quad.graph_name, ox.DefaultGraph)
        else (f"GRAPH {g} {{ {s} {p} {o} }}")
    )
    blank = " && ".join(f"isBlank({v})" for v in names.values())
    return f"DELETE {{ {pattern} }} WHERE {{ {pattern} FILTER ({blank}) }}"


def _forget_grains(values: str) -> str:
    """One update deleting grains, their knowledge triples and their journal rows."""
    return f"""PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
PREFIX oms: <https://w3id.org/oms-rdf/ns#>
DELETE {{ GRAPH ?kg {{ ?s ?p ?o }} }} WHERE {{
  VALUES ?g {{ {values} }}
  ?g rdf:subject ?s ; rdf:predicate ?p ; rdf:object ?o .
  OPTIONAL {{ ?g oms:graph ?named }}
  BIND (COALESCE(?named, oms:current) AS ?kg)
}} ;
DELETE {{ ?g ?p ?o }} WHERE {{ VALUES ?g {{ {values} }} ?g ?p ?o }} ;
DELETE {{ GRAPH ?x {{ ?g ?p ?o }} }} WHERE {{ VALUES ?g {{ {values} }} GRAPH ?x {{ ?g ?p ?o }} }} ;
DELETE {{ GRAPH oms:index {{ oms:journal oms:journalGrain ?g }} }}
WHERE {{ VALUES ?g {{ {values} }} }}"""


def _parse(text: Any) -> list[ox.Quad]:
    """The quads of a journal literal (N-Quads text)."""
    if not isinstance(text, ox.Literal):
        raise StoreError(f"a journal entry must be N-Quads text, found {text}")
    return list(ox.parse(text.value.encode(), ox.RdfFormat.N_QUADS))


def _pieces(items: Iterable[Item], size: int) -> Iterator[list[Row]]:
    """The items as rows, in lists of ``size``."""
    piece: list[Row] = []
    for item in items:
        piece.append(item if isinstance(item, tuple) else quad_row(item))
        if len(piece) >= size:
            yield piece
            piece = []
    if piece:
        yield piece


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cycle collector while a loader thread runs beside this one.

    pyoxigraph's iterators may only be dropped on the thread that made them; the
    collector runs on whichever thread allocates, so an iterator in a reference
    cycle made here could be collected on the loader's thread, where pyoxigraph
    raises (seen as a RuntimeError thrown into the load). Reference counting
    still frees everything else at once.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
            # The cycles made meanwhile are collected now, on this thread: left
            # to the next collection, they could be on another's (a server's).
            gc.collect(0)
