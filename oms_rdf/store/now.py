"""Whether the knowledge held (``oms:current``) is the knowledge of now.

What SPARQL sees by default is the knowledge in force now on both axes (design
§3): the beliefs held now whose valid time holds now. ``oms:current`` holds every
belief not closed, whatever its valid time; the two differ only where a belief's
times reach past now (``queries/now_ahead.rq``, :data:`.inforce.NOW_ENDED`). Where they do not, a query of
``oms:current`` is the query of now, at the cost of a plain query; where they do,
the store asks the query at the point (now, now) instead.

The knowledge held now whatever its valid time (``held=True``) is ``oms:current``
too, unless a system time lies ahead of now: a grain that enters the store's past
only later, or one closed only later (``retract(..., at=T)`` with T ahead). The
watch answers that question beside the first, from the same readings.

Finding out reads every grain's times, so it is done once and then kept up: the
answer holds until the next time a belief's times reach (the same queries), and
each write tells :meth:`NowWatch.saw` the rows it added,
whose times can only make the two differ. What a write took away is not looked
at (it can only make them agree): the watch then answers "differ" until the next
boundary or a new reading, which costs a slower query, never a wrong one. Writes
whose rows are not seen (bulk writes, erasure) call :meth:`NowWatch.forget`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pyoxigraph import Literal, Variable

from ..backends.base import Backend
from ..codec import EPOCH, MS
from ..rdf.inforce import NOW_ENDED
from ..rdf.mapping import Row, millis_literal
from ..rdf.sparql import QUERIES
from ..rdf.vocab import OMS, XSD

__all__ = ["NowWatch"]

# Past every time a grain can hold: an answer then holds for good.
END_OF_TIME = 1 << 62

_VALID_TO = str(OMS.validTo)
# Times that make the two differ when they lie ahead of now: a belief not valid
# yet, not in the store's past yet, or closed only later.
_AHEAD = frozenset(
    str(p) for p in (OMS.validFrom, OMS.systemFrom, OMS.systemTo, OMS.voidedAt)
)
# Times that make oms:current differ from the knowledge held now when ahead of it.
_SYSTEM = frozenset(str(p) for p in (OMS.systemFrom, OMS.systemTo))
_DATETIME = f"^^<{XSD.dateTime.value}>"
_INTEGER = f"^^<{XSD.integer.value}>"


class NowWatch:
    """The store's answers to "is ``oms:current`` the knowledge of now?" and
    "... the knowledge held now?", kept up."""

    def __init__(self) -> None:
        # (from, until, same, held): the answers hold for clock times in
        # [from, until); same: the knowledge of now, held: that held now.
        self._known: tuple[int, int, bool, bool] | None = None

    def forget(self) -> None:
        """Drop the answer: the next question reads the store again."""
        self._known = None

    def same(self, backend: Backend, now: int) -> bool:
        """Whether ``oms:current`` is exactly the knowledge in force at ``now``."""
        return self._answers(backend, now)[2]

    def held(self, backend: Backend, now: int) -> bool:
        """Whether ``oms:current`` is exactly the knowledge held at ``now``,
        whatever its valid time."""
        return self._answers(backend, now)[3]

    def _answers(self, backend: Backend, now: int) -> tuple[int, int, bool, bool]:
        known = self._known
        if known is None or not known[0] <= now < known[1]:
            known = self._known = _read(backend, now)
        return known

    def saw(self, rows: Iterable[Row], now: int) -> None:
        """Take the rows a write added, at clock time ``now``."""
        known = self._known
        if known is None:
            return
        start, until, same, held = known
        for _s, p, o, _g in rows:
            if p == _VALID_TO:
                t = _millis(o)
                if t is None or t <= now:
                    same = False
                else:
                    until = min(until, t)
            elif p in _AHEAD:
                t = _millis(o)
                if t is None or t > now:
                    same = False
                    held = held and p not in _SYSTEM
                    until = min(until, t) if t is not None else until
        # Taken at ``now``: a question about an earlier time reads the store again.
        self._known = (max(start, now), until, same, held)


def _read(backend: Backend, now: int) -> tuple[int, int, bool, bool]:
    at = millis_literal(now)
    ahead = {}
    for prop in _TIMES:
        bound = {Variable("now"): at, Variable("property"): prop}
        row = next(iter(backend.query(QUERIES["now_ahead"], bound)), None)
        if row is not None and isinstance(row["next"], Literal):
            ahead[prop] = _term_millis(row["next"])
    ended = list(backend.query(NOW_ENDED, {Variable("now"): at}))
    until = min([*ahead.values(), END_OF_TIME])
    # A valid_to ahead of now only ends a belief later; every other time ahead,
    # and a held belief whose valid time has ended, makes the two differ now.
    differs = bool(ended) or any(prop != OMS.validTo for prop in ahead)
    held = not any(prop in (OMS.systemFrom, OMS.systemTo) for prop in ahead)
    return now, max(until, now + 1), not differs, held


# The times of a belief that may lie ahead of now (queries/now_ahead.rq).
_TIMES = (OMS.validFrom, OMS.systemFrom, OMS.validTo, OMS.systemTo, OMS.voidedAt)


def _term_millis(term: Literal) -> int:
    if term.datatype == XSD.dateTime:
        return (datetime.fromisoformat(term.value) - EPOCH) // MS
    return int(term.value)


def _millis(text: str) -> int | None:
    """Epoch ms of a time literal in N-Triples, as the mapping writes times."""
    if text.endswith(_DATETIME):
        try:
            moment = datetime.fromisoformat(text[1 : -len(_DATETIME) - 1])
        except ValueError:
            return None
        return (moment - EPOCH) // MS
    if text.endswith(_INTEGER):
        return int(text[1 : -len(_INTEGER) - 1])
    return None
