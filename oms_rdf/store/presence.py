"""Which grains and quads a store holds already, asked many at a time.

In process a lookup costs microseconds, so each is one pattern lookup; over a
server (``backend.remote``) each would be a round trip, so they go in batches of
``BATCH``, one query each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyoxigraph as ox

from ..backends.base import Backend
from ..rdf.mapping import NIH_PREFIX, Row, address_of, rows_to_nquads
from ..rdf.vocab import OMS

BATCH = 1000  # rows looked up per query over a server


def stored_addresses(backend: Backend, addresses: Iterable[str]) -> set[str]:
    """The addresses among ``addresses`` whose grains the store holds."""
    nodes = {f"<{NIH_PREFIX}{a}>": a for a in addresses}
    return {nodes[n] for n in stored_grains(backend, set(nodes))}


def stored_grains(backend: Backend, nodes: set[str]) -> set[str]:
    """The grain nodes (N-Triples IRIs) among ``nodes`` that the store holds."""
    if not backend.remote:  # lookups are cheap in process
        return {
            n
            for n in nodes
            if _holds(backend, ox.NamedNode(n[1:-1]), OMS.blob, None, OMS.blobs)
        }
    found: set[str] = set()
    listed = sorted(nodes)
    ask = backend.grains_query
    for start in range(0, len(listed), BATCH):
        rows = backend.query(ask(listed[start : start + BATCH]))
        found.update(str(row["g"]) for row in rows)
    return found


def stored_rows(backend: Backend, rows: list[Row]) -> set[Row]:
    """The rows the store holds already (one query per batch over a server)."""
    quads = list(ox.parse(rows_to_nquads(rows).encode(), ox.RdfFormat.N_QUADS))
    if not backend.remote:
        return {r for r, q in zip(rows, quads, strict=True) if _holds(backend, *q)}
    found: set[Row] = set()
    for start in range(0, len(rows), BATCH):
        batch = rows[start : start + BATCH]
        values = " ".join(
            f"({i} {s} {p} {o})" for i, (s, p, o, g) in enumerate(batch) if not g
        )
        named = " ".join(
            f"({i} {s} {p} {o} {g})" for i, (s, p, o, g) in enumerate(batch) if g
        )
        # Matched by position, not by the terms read back (a server may write a
        # literal another way).
        query = (
            f"SELECT ?i WHERE {{ {{ VALUES (?i ?s ?p ?o) {{ {values} }} ?s ?p ?o }} UNION "
            f"{{ VALUES (?i ?s ?p ?o ?g) {{ {named} }} GRAPH ?g {{ ?s ?p ?o }} }} }}"
        )
        for row in backend.query(query):
            found.add(batch[int(row["i"].value)])
    return found


def _holds(backend: Backend, s: Any, p: Any, o: Any, g: Any) -> bool:
    """Whether the store holds a quad that matches the pattern (None: any term)."""
    return next(backend.quads(s, p, o, g), None) is not None


def addresses_with_prefix(backend: Backend, prefix: str) -> Iterator[str]:
    """The addresses of the stored grains that begin with ``prefix`` (hex)."""
    start = NIH_PREFIX + prefix
    for quad in backend.quads(None, OMS.blob, None, OMS.blobs):
        if quad.subject.value.startswith(start):  # type: ignore[union-attr]
            yield address_of(quad.subject)  # type: ignore[arg-type]
