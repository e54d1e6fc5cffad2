"""System time moves forward only: a past as-of answer is final.

Every write records system times: a new grain's ``oms:systemFrom`` (its
``system_valid_from``, else its ``created_at``), a closing's ``oms:systemTo``, a
retraction's or contradiction's ``oms:voidedAt``. The store's last commit is the
latest of them. A write that records a time before it is refused (ERR_RANGE): it
would change what the store answered "as of T" for a T already past, which
XTDB and SQL:2011 system-versioned tables never do. A write at the last commit's
own millisecond is taken, so an answer is final for every point strictly before
the last commit.

Loading history (``with store.load_history():``) is the one way to
write past system times, into a store or namespace that holds nothing yet; the
store's writes are then checked from the latest time it loaded.

The guarantee is the store's, not a process's: once a store is opened
``forward_only``, its settings record it (``oms:forwardOnly``), and every later
opening (the command line, the HTTP server, a notebook) keeps it.

>>> from oms_rdf.rdf.mapping import millis_literal
>>> rows = [("<g>", str(OMS.systemFrom), str(millis_literal(5)), "")]
>>> recorded(rows)
[5]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING

from pyoxigraph import DefaultGraph, Literal, Quad

from ..backends.base import Backend
from ..codec import EPOCH, MS
from ..errors import ErrorCode, StoreError, TimeRangeError
from ..rdf.mapping import Row, nt_literal
from ..rdf.sparql import as_rows
from ..rdf.vocab import OMS, XSD
from .lookup import count_grains

if TYPE_CHECKING:
    from .core import Core

__all__ = [
    "FORWARD_ONLY",
    "FORWARD_ONLY_QUAD",
    "SystemClock",
    "last_commit",
    "load_history",
    "recorded",
]

# The store's setting that it moves forward only, as a row to write.
FORWARD_ONLY = (
    str(OMS.settings),
    str(OMS.forwardOnly),
    nt_literal("true", XSD.boolean.value),
    str(OMS.index),
)
FORWARD_ONLY_QUAD = (OMS.settings, OMS.forwardOnly, Literal(True), OMS.index)
_DATETIME = f"^^<{XSD.dateTime.value}>"
_INTEGER = f"^^<{XSD.integer.value}>"
_P_NAMESPACE = str(OMS.namespace)
_SYSTEM = frozenset(str(p) for p in (OMS.systemFrom, OMS.systemTo, OMS.voidedAt))

# The latest system time recorded: grains' starts in the grain layer, closings
# and voids in the index. Per datatype, as times outside years 1-9999 are
# integers and SPARQL does not order the two together.
_LAST = """PREFIX oms: <https://w3id.org/oms-rdf/ns#>
SELECT (MAX(?t) AS ?last) WHERE {
  { ?g oms:systemFrom ?t } UNION
  { GRAPH oms:index { ?g oms:systemTo|oms:voidedAt ?t } }
  FILTER (DATATYPE(?t) = <%s>)
}"""


def recorded(rows: Iterable[Row]) -> list[int]:
    """The system times that rows about to be written record, in epoch ms."""
    out = []
    for _s, p, o, _g in rows:
        if p in _SYSTEM:
            if o.endswith(_DATETIME):
                out.append(_millis(o[1 : -len(_DATETIME) - 1], True))
            elif o.endswith(_INTEGER):
                out.append(_millis(o[1 : -len(_INTEGER) - 1], False))
    return out


def _millis(lexical: str, is_datetime: bool) -> int:
    if is_datetime:
        return (datetime.fromisoformat(lexical) - EPOCH) // MS
    return int(lexical)


def last_commit(backend: Backend) -> int | None:
    """The latest system time the store records (None: it records none)."""
    found: list[int] = []
    for datatype in (XSD.dateTime, XSD.integer):
        for row in backend.query(_LAST % datatype.value):
            term = row["last"]
            if isinstance(term, Literal):
                found.append(_millis(term.value, term.datatype == XSD.dateTime))
    return max(found, default=None)


class SystemClock:
    """The store's last commit, read once and kept up by its writes; with
    ``forward_only``, the check that refuses writes before it."""

    def __init__(self, forward_only: bool = False) -> None:
        self.forward_only = forward_only  # refuse writes before the last commit
        self.loading = False  # history is being loaded: past times are taken
        self.namespace: str | None = None  # ... for grains of this namespace only
        self.since: int | None = None  # the last commit when that load began
        self.loaded: set[str] = set()  # grain nodes of that namespace written
        self._last: int | None = None
        self._read = False
        self.unrecorded = False  # forward only since this opening: not recorded yet
        self._carried_by: object = None  # the open transaction that records it

    @classmethod
    def opened(
        cls, backend: Backend, wanted: bool | None, *, read_only: bool
    ) -> SystemClock:
        """The clock of a store as opened: forward only as its settings record,
        or as ``wanted`` (True: for every later opening too, the opening's first
        write records it with an audit event, :data:`FORWARD_ONLY`; None: as
        recorded).

        Raises:
            StoreError: ERR_CONFLICT for ``wanted=False`` where the store records it
                (its past answers were promised final), or ``wanted=True`` for a
                read-only opening of a store that does not record it.
        """
        held = next(backend.quads(*FORWARD_ONLY_QUAD), None) is not None
        if wanted is None or wanted == held or (read_only and not wanted):
            return cls(held)
        if held:
            raise StoreError(
                "this store moves forward only (its settings record it): what it "
                "answered as of a past time is final, so it cannot be opened to take "
                "past system times; load history into a new store instead",
                code=ErrorCode.CONFLICT,
            )
        if read_only:
            raise StoreError(
                "a read-only opening cannot make a store forward only: open it for "
                "writing once with forward_only=True",
                code=ErrorCode.CONFLICT,
            )
        clock = cls(True)
        clock.unrecorded = True  # the store records it with the opening's first write
        return clock

    def record_due(self, backend: Backend, pending: object) -> bool:
        """Whether the write being made records forward only: asked for by this
        opening, recorded by no earlier write, and carried by no earlier
        operation of the same transaction (``pending``, if one is open)."""
        if not self.unrecorded:
            return False
        if next(backend.quads(*FORWARD_ONLY_QUAD), None) is not None:
            self.unrecorded = False  # an earlier write recorded it
            return False
        if pending is not None:
            if self._carried_by is pending:
                return False
            self._carried_by = pending
        return True

    def forget(self) -> None:
        """Read the store again at the next write (after a bulk write, or where
        other processes write too)."""
        self._read = False

    def last(self, backend: Backend) -> int | None:
        """The store's last commit: the latest system time it records."""
        if not self._read:
            self._last, self._read = last_commit(backend), True
        return self._last

    def admit(
        self, backend: Backend, insert: Sequence[Quad | Row]
    ) -> tuple[list[Row], list[int]]:
        """The rows of a write and the system times they record, refused as
        :meth:`check` refuses (where other processes write too, the last
        commit is read again first)."""
        rows = as_rows(insert)
        if not self.forward_only:  # nothing to check: the last commit is not kept
            self.forget()
            return rows, []
        if backend.shared:
            self.forget()
        return rows, self.check(backend, rows, "this write")

    def check(self, backend: Backend, rows: Iterable[Row], where: str) -> list[int]:
        """Refuse rows that record a system time before the last commit; return
        the times they record.

        Raises:
            TimeRangeError: ERR_RANGE, naming the time, the last commit and
                ``where`` (the operation).
        """
        rows = list(rows)
        times = recorded(rows)
        if not times or not self.forward_only:
            return times
        if self.loading:
            if self.namespace is not None:
                self._check_namespace(rows, where)
            return times
        last = self.last(backend)
        earliest = min(times)
        if last is not None and earliest < last:
            raise TimeRangeError(
                f"{where} would record system time {earliest}, before the store's "
                f"last commit at {last}: system time moves forward only, so that "
                "what the store answered as of a past time stays its answer. "
                "Leave at= out (the store's clock), give a system_valid_from at or "
                "after the last commit, or load history into a store that holds "
                "none yet (store.load_history())",
                code=ErrorCode.RANGE,
            )
        return times

    def _check_namespace(self, rows: Sequence[Row], where: str) -> None:
        """Inside a namespace's history load: refuse a past time on a grain
        outside the namespace."""
        ns = nt_literal(self.namespace or "")
        self.loaded |= {s for s, p, o, _g in rows if p == _P_NAMESPACE and o == ns}
        since = self.since
        for s, p, o, g in rows:
            if p in _SYSTEM and since is not None and s not in self.loaded:
                time = recorded([(s, p, o, g)])
                if time and time[0] < since:
                    raise TimeRangeError(
                        f"{where} would record system time {time[0]} on {s}, before "
                        f"the store's last commit at {since}, outside namespace "
                        f"{self.namespace!r} whose history is being loaded: past "
                        "times are taken only for that namespace's grains",
                        code=ErrorCode.RANGE,
                    )

    def advance(self, times: Iterable[int]) -> None:
        """Take the times a write recorded."""
        if self._read:
            self._last = max([*times, *([] if self._last is None else [self._last])])


def _in_namespace(backend: Backend, namespace: str) -> bool:
    """Whether the store holds a grain of ``namespace`` (read in the grain
    layer: a belief may have ``oms:namespace`` as its relation)."""
    term = Literal(namespace)
    for quad in backend.quads(None, OMS.namespace, term, DefaultGraph()):
        if next(backend.quads(quad.subject, OMS.blob, None, OMS.blobs), None):
            return True
    return False


@contextmanager
def load_history(
    core: Core, reason: str | None = None, namespace: str | None = None
) -> Iterator[None]:
    """Load history: inside the block, writes may record system times before
    the store's last commit (see :mod:`.clock`).

    Only where nobody can have asked about the past yet: a store that holds no
    grain, or (``namespace``) a namespace of which the store holds no grain. In
    a namespace, a write before the last commit is taken only for grains of
    that namespace; every other write in the block is checked as always.
    Audited first, as a ``load_history`` event whose reason names the
    namespace. A block that raises leaves the store as it was before it, the
    event too (in memory or on disk: the store's quads are kept until the
    block ends, so a block's memory grows with the store; over a server, which
    is never cleared, each write in the block is atomic on its own).

    Raises:
        StoreError: ERR_CONFLICT when the store (or the namespace) holds grains
            already, or in a transaction or another history block.
    """
    with core.lock:
        system = core.system
        if core.pending is not None or system.loading:
            raise StoreError(
                "history is loaded on its own, not inside a transaction or "
                "another history block",
                code=ErrorCode.CONFLICT,
            )
        if namespace is None and not core.is_empty():
            raise StoreError(
                "history is loaded only into a store that holds no grain yet, "
                f"or into a namespace that holds none: this store holds {count_grains(core.backend)}, "
                "whose past may have been asked (give namespace=)",
                code=ErrorCode.CONFLICT,
            )
        if namespace is not None and _in_namespace(core.backend, namespace):
            raise StoreError(
                f"history is loaded only into a namespace that holds no grain yet: "
                f"namespace {namespace!r} holds grains, whose past may have been asked",
                code=ErrorCode.CONFLICT,
            )
        backend = core.backend
        before = None if backend.shared else list(backend.quads())
        where = f"namespace {namespace!r}" if namespace is not None else "store"
        note = f"into {where}" + (f": {reason}" if reason else "")
        core.write([], core.audit_rows("load_history", reason=note))
        system.loading = True
        system.namespace = namespace
        system.loaded = set()
        if namespace is not None:
            system.forget()
            system.since = system.last(backend)
        try:
            yield
        except BaseException:
            if before is not None:
                backend.update("CLEAR ALL")
                backend.add(before)
                core.forget()
            raise
        finally:
            system.loading = False
            system.namespace, system.since, system.loaded = None, None, set()
            system.forget()
