"""One writer at a time on a store that several processes write (a SPARQL server).

A SPARQL server may evaluate each update on its own snapshot without detecting
write-write conflicts (Oxigraph server does): two updates that arrive together can
both pass the checks in their ``WHERE``. So the store's writes on a shared backend
take this lock first, held as a quad any writer can see:

1. add ``oms:writer oms:holder "<time> <token>"`` (in ``oms:index``), one request;
2. read every holder. Only ours: the lock is ours. Another live one: take ours
   back, wait a random moment, try again.

Two writers cannot both see only themselves: whichever added its holder second
reads after both were committed, so it sees the other one. The holder is removed
by the write itself, in the same request. A holder older than ``LEASE_MS`` is
a writer that died while holding the lock; it is removed by the next one.
"""

from __future__ import annotations

import random
import time
import uuid

import pyoxigraph as ox

from ..backends.base import Backend
from ..codec.grain import now_ms
from ..errors import ErrorCode, StoreError
from ..rdf.sparql import update_request
from ..rdf.vocab import OMS

WRITER = OMS.writer
LEASE_MS = 30_000  # a holder this old belongs to a writer that died
ATTEMPTS = 500


def acquire(backend: Backend) -> ox.Quad:
    """Take the write lock; return the holder quad, which the write removes."""
    token = uuid.uuid4().hex
    for attempt in range(ATTEMPTS):
        now = now_ms()
        mine = ox.Quad(WRITER, OMS.holder, ox.Literal(f"{now} {token}"), OMS.index)
        backend.add([mine])
        others = [
            q for q in backend.quads(WRITER, OMS.holder, None, OMS.index) if q != mine
        ]
        stale = [q for q in others if _since(q) + LEASE_MS < now]
        if stale:
            backend.update(update_request(stale, []))
        if len(others) == len(stale):
            return mine
        backend.update(update_request([mine], []))
        time.sleep(random.uniform(0.0005, 0.002) * min(attempt + 1, 10))
    raise StoreError(
        f"another writer held this store's write lock through {ATTEMPTS} attempts",
        code=ErrorCode.CONFLICT,
    )


def release(backend: Backend, holder: ox.Quad) -> None:
    """Give the lock back without writing, if the holder is still there (a write
    that applied removed it, in the same operation)."""
    if next(backend.quads(*holder), None) is not None:
        backend.update(update_request([holder], []))


def _since(quad: ox.Quad) -> int:
    try:
        return int(str(quad.object.value).split(" ", 1)[0])  # type: ignore[union-attr]
    except ValueError:
        return 0  # not ours to read: treated as stale
