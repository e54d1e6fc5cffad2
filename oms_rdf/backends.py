"""Storage backends: the narrow interface the store reaches storage through.

Every write is one atomic call (``add`` or ``update``), so a remote SPARQL 1.1
server can serve as a backend later. The local backend is pyoxigraph: in memory,
or on disk (RocksDB) with a path.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Protocol

import pyoxigraph as ox

from .errors import ErrorCode, StoreError

__all__ = ["Backend", "LocalBackend"]


class Backend(Protocol):
    """What the store needs from storage."""

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

    def named_graphs(self) -> Iterator[Any]:
        """Return the names of the graphs that hold quads."""

    def quads(
        self, s: Any = None, p: Any = None, o: Any = None, g: Any = None
    ) -> Iterator[ox.Quad]:
        """Return the quads matching a pattern (None matches anything)."""

    def dump(self, output: IO[bytes], fmt: ox.RdfFormat, graph: Any = None) -> None:
        """Serialise the store (or one graph) to ``output``."""

    def load(self, data: bytes | IO[bytes], fmt: ox.RdfFormat) -> None:
        """Load serialised quads atomically."""

    def __len__(self) -> int:
        """Return the number of quads."""


class LocalBackend:
    """A pyoxigraph store: in memory when ``path`` is None, else on-disk RocksDB."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = None if path is None else Path(path)
        try:
            self.store = ox.Store() if path is None else ox.Store(str(path))
        except OSError as exc:
            raise StoreError(
                f"cannot open the store at {path}: {exc} (is another process using it?)",
                code=ErrorCode.STORE,
            ) from exc

    def add(self, quads: Iterable[ox.Quad]) -> None:
        try:
            self.store.extend(quads)
        except (OSError, ValueError) as exc:
            raise StoreError(f"adding quads failed: {exc}") from exc

    def update(self, sparql: str) -> None:
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

    def named_graphs(self) -> Iterator[Any]:
        return iter(self.store.named_graphs())

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

    def load(self, data: bytes | IO[bytes], fmt: ox.RdfFormat) -> None:
        try:
            self.store.load(data, fmt)
        except (OSError, SyntaxError, ValueError) as exc:
            raise StoreError(f"load failed: {exc}") from exc

    def bulk_load(self, data: bytes, fmt: ox.RdfFormat) -> None:
        """Load with RocksDB's bulk loader: fast, *not* atomic (the store guards it)."""
        try:
            self.store.bulk_load(data, fmt)
        except (OSError, SyntaxError, ValueError) as exc:
            raise StoreError(f"bulk load failed: {exc}") from exc

    def flush(self) -> None:
        """Write buffered changes of an on-disk store."""
        if self.path is not None:
            self.store.flush()

    def __len__(self) -> int:
        return len(self.store)
