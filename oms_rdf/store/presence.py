"""Which grains and quads a store holds already, asked many at a time.

In process a lookup costs microseconds, so each is one pattern lookup; over a
server (``backend.remote``) each would be a round trip, so they go in batches of
``BATCH``, one query each.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyoxigraph as ox

from ..backends.embedded import Backend
from ..rdf.mapping import NIH_PREFIX, Row, rows_to_nquads
from ..rdf.vocab import OMS

BATCH = 1000  # rows looked up per query over a server
_G_BLOBS, _P_BLOB = str(OMS.blobs), str(OMS.blob)


def stored_addresses(backend: Backend, addresses: Iterable[str]) -> set[str]:
    """The addresses among ``addresses`` whose grains the store holds."""
    nodes = {f"<{NIH_PREFIX}{a}>": a for a in addresses}
    return {nodes[n] for n in stored_grains(backend, set(nodes))}


def stored_grains(backend: Backend, nodes: set[str]) -> set[str]:
    """The grain nodes (N-Triples IRIs) among ``nodes`` that the store holds."""
    if not getattr(backend, "remote", False):  # lookups are cheap in process
        return {n for n in nodes if next(backend.quads(
            ox.NamedNode(n[1:-1]), OMS.blob, None, OMS.blobs), None) is not None}  # fmt: skip
    found: set[str] = set()
    listed = sorted(nodes)
    ask = getattr(backend, "grains_query", grains_query)
    for start in range(0, len(listed), BATCH):
        rows = backend.query(ask(listed[start : start + BATCH]))
        found.update(str(row["g"]) for row in rows)
    return found


def grains_query(nodes: list[str]) -> str:
    """The query for which of these grain nodes (N-Triples IRIs) the store holds.
    A backend may ask it its own way (``backend.grains_query``)."""
    return (
        f"SELECT ?g WHERE {{ VALUES ?g {{ {' '.join(nodes)} }} "
        f"GRAPH {_G_BLOBS} {{ ?g {_P_BLOB} ?blob }} }}"
    )


def stored_rows(backend: Backend, rows: list[Row]) -> set[Row]:
    """The rows the store holds already (one query per batch over a server)."""
    quads = list(ox.parse(rows_to_nquads(rows).encode(), ox.RdfFormat.N_QUADS))
    if not getattr(backend, "remote", False):
        return {r for r, q in zip(rows, quads, strict=True) if next(backend.quads(
            q.subject, q.predicate, q.object, q.graph_name), None) is not None}  # fmt: skip
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
