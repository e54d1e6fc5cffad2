"""The backend protocol: everything the store asks of storage, declared.

Every backend (:class:`~oms_rdf.backends.embedded.LocalBackend`,
:class:`~oms_rdf.backends.protocol.SparqlBackend`,
:class:`~oms_rdf.backends.virtuoso.VirtuosoBackend`) has every member below; one
that cannot do something says so by doing nothing (``flush`` where each request
commits) or by raising :class:`~oms_rdf.errors.StoreError` (``vacuum`` on a
server). The store never probes a backend for what it can do: it reads the
attributes below and calls the methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any, Protocol

import pyoxigraph as ox

from ..rdf.vocab import OMS

__all__ = ["Backend", "grains_query"]


class Backend(Protocol):
    """What the store needs from storage.

    Attributes:
        shared: other processes write to this storage too: every write then
            re-checks, inside itself, what the store checked before it.
        remote: every call is a network round trip: the store then asks one
            query where it would make several lookups.
        path: the folder of an on-disk store in this process (it has a bulk
            loader and is compacted after large writes), else None.
        exact_optionals: expressions over a group's OPTIONAL variables are
            evaluated as SPARQL says beside that group's FILTERs (Virtuoso's are
            not): else the store asks such a question in simpler queries.
        lateral_joins: the engine takes Oxigraph's ``LATERAL`` (a join that
            evaluates its right side once per solution of its left, with that
            solution's bindings): a query at a point then joins its triples as a
            plain query does.
        python_functions: the engine runs in this process and calls Python
            functions during a query (pyoxigraph's ``custom_functions``): a
            selective query at a point then tests its few grains in force by
            lookups, which cost less than its patterns cost to plan.
        intervals: the store may keep the knowledge's interval layer in this
            process beside the storage (store/intervals.py), and ask a query at
            a point of that layer.
    """

    shared: bool
    remote: bool
    exact_optionals: bool
    lateral_joins: bool
    python_functions: bool
    intervals: bool
    path: Path | None

    def add(self, quads: Iterable[ox.Quad]) -> None:
        """Add quads atomically: all or nothing."""

    def update(self, sparql: str) -> None:
        """Run a SPARQL 1.1 update atomically."""

    def query(
        self,
        sparql: str,
        substitutions: Mapping[ox.Variable, Any] | None = None,
        **dataset: Any,
    ) -> Any:
        """Run a SPARQL query; variables bound through ``substitutions``.

        ``dataset`` takes pyoxigraph's ``default_graph``, ``named_graphs`` and
        ``prefixes``.
        """

    def quads_of(
        self, sparql: str, substitutions: Mapping[ox.Variable, Any] | None = None
    ) -> list[ox.Quad]:
        """Return the quads named by the ``?g ?p ?o ?graph`` solutions of a query.

        No ``?graph`` means the default graph; ``#EXACT`` in the query's SELECT
        clause is where a backend may add the columns it reads objects from.
        """

    def grains_query(self, nodes: list[str]) -> str:
        """Return the query for which of these grain nodes the store holds.

        ``nodes`` are N-Triples IRIs; the query's ``?g`` are the ones held.
        """

    def named_graphs(self) -> Iterator[Any]:
        """Return the names of the graphs that hold quads."""

    def quads(
        self, s: Any = None, p: Any = None, o: Any = None, g: Any = None
    ) -> Iterator[ox.Quad]:
        """Return the quads matching a pattern (None matches anything)."""

    def dump(self, output: IO[bytes], fmt: ox.RdfFormat, graph: Any = None) -> None:
        """Serialise the store (or one graph) to ``output``."""

    def load(self, data: bytes | IO[bytes] | Path, fmt: ox.RdfFormat) -> None:
        """Load serialised quads atomically: bytes, a binary stream or a file."""

    def bulk_load(self, data: bytes | IO[bytes] | Path, fmt: ox.RdfFormat) -> None:
        """Load serialised quads fast, perhaps not atomically (a journal guards it)."""

    def load_pieces(self, pieces: Iterable[bytes], fmt: ox.RdfFormat) -> None:
        """Load serialised quads given in pieces, atomically as :meth:`load`
        does; the pieces may be made as they are read, and their loading may
        overlap their making."""

    def bulk_writing(self) -> AbstractContextManager[None]:
        """Mark the storage as taking a bulk write for the block (or do nothing)."""

    def optimize(self) -> None:
        """Compact the storage now (or do nothing where it compacts itself)."""

    def flush(self) -> None:
        """Make every write durable (or do nothing where each write is)."""

    def vacuum(
        self,
        progress: Callable[[int], object] | None = None,
        *,
        reading: Callable[[], int] = lambda: 0,
    ) -> None:
        """Rewrite the storage with only its live quads (``reading``: how many
        answers of it are still being read, which a swap must wait for).

        Raises:
            StoreError: ERR_STORE where the backend cannot be vacuumed.
        """

    def close(self) -> None:
        """Release the storage; later calls raise StoreError."""

    def __len__(self) -> int:
        """Return the number of quads."""


def grains_query(nodes: list[str]) -> str:
    """Return the standard query for which of ``nodes`` the store holds.

    ``nodes`` are N-Triples IRIs, joined as a VALUES block with the blobs graph.

    >>> grains_query(["<urn:a>"])[:30]
    'SELECT ?g WHERE { VALUES ?g { '
    """
    return (
        f"SELECT ?g WHERE {{ VALUES ?g {{ {' '.join(nodes)} }} "
        f"GRAPH {OMS.blobs} {{ ?g {OMS.blob} ?blob }} }}"
    )
