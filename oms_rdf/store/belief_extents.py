"""Each belief's extents, found by their bounds: what changed between two points
at the cost of the change, not of the store.

A belief is in force at one point and not at another only where one of its
extents holds the one and not the other; an extent is a product of half-open
intervals, so one of its bounds then lies between the two points' coordinates on
an axis where they differ (``lo < bound <= hi``). The beliefs with a bound there
are the candidates, found through the bounds sorted; each is then tested at both
points. This is :func:`oms_rdf.rdf.inforce.delta_query`'s reasoning, asked of
the extents the interval layer (:mod:`.intervals`) derives from the grain layer
and keeps up, instead of every bound the store holds.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["BeliefExtents", "Held"]

# (system from, system to, valid from, valid to) in epoch ms; None: open.
Extent = tuple[int, int | None, int, int | None]
Point = tuple[int, int]  # (valid time, system time)


# One per belief, hashed by identity; not frozen, since a frozen dataclass is
# several times slower to make, and one is made per belief read.
@dataclass(slots=True, eq=False)
class Held:
    """What a belief's delta needs: its address, where it is in force, its
    namespace (None: it has none), and what
    orders it as :meth:`GrainStore.beliefs` answers: its rank, then its system
    start."""

    address: str
    extents: tuple[Extent, ...]
    namespace: str | None
    rank: float
    system_from: int

    def bounds(self) -> Iterator[tuple[bool, int]]:
        """Each bound of its extents: (on the system axis, time)."""
        for sf, st, vf, vt in self.extents:
            yield True, sf
            yield False, vf
            if st is not None:
                yield True, st
            if vt is not None:
                yield False, vt


# A time added to sorted times is inserted in place (a move of the times after
# it) up to this many times; past that, the times are sorted again when next asked.
_INSERTS_PER_SORT = 100


class _Bounds:
    """The beliefs with a bound at each time of one axis, the times sorted.

    A belief read again or gone stays listed until the lists are made again
    (:meth:`BeliefExtents.drop`, once most entries are stale): a list entry
    costs a pointer, where a set's costs several."""

    def __init__(self) -> None:
        self.at: dict[int, list[Held]] = {}
        self._times: list[int] | None = []  # the keys of ``at``, ascending
        self._inserts = 0  # since they were last sorted whole

    def add(self, time: int, held: Held) -> None:
        beliefs = self.at.get(time)
        if beliefs is None:
            beliefs = self.at[time] = []
            if self._times is not None and self._inserts < _INSERTS_PER_SORT:
                bisect.insort(self._times, time)
                self._inserts += 1
            else:  # a read whole, or a large catch-up: sort once when asked
                self._times = None
        beliefs.append(held)

    def between(self, low: int, high: int) -> Iterable[list[Held]]:
        """The beliefs listed with a bound in ``(low, high]``, a list per time."""
        if self._times is None:
            self._times, self._inserts = sorted(self.at), 0
        times = self._times
        start, end = bisect.bisect_right(times, low), bisect.bisect_right(times, high)
        return [self.at[time] for time in times[start:end]]


class BeliefExtents:
    """Each belief's extents by its grain's address, found by their bounds on
    either axis."""

    def __init__(self) -> None:
        self.held: dict[str, Held] = {}
        self._axes = {True: _Bounds(), False: _Bounds()}  # system, valid
        self._stale = 0  # entries of the lists no longer held
        # Beliefs by their extents: those written together share them.
        self._alike: Counter[tuple[Extent, ...]] = Counter()

    def __len__(self) -> int:
        return len(self.held)

    def put(self, held: Held) -> None:
        """Keep (or replace) a belief's extents."""
        self.drop(held.address)
        self.held[held.address] = held
        self._alike[held.extents] += 1
        for system, time in held.bounds():
            self._axes[system].add(time, held)

    def drop(self, address: str) -> None:
        """Forget a belief (gone, or about to be read again)."""
        held = self.held.pop(address, None)
        if held is None:
            return
        self._alike[held.extents] -= 1
        if not self._alike[held.extents]:
            del self._alike[held.extents]
        self._stale += sum(1 for _ in held.bounds())
        if self._stale > 2 * len(self.held) + 1_000:  # list the held ones again
            self._axes, self._stale = {True: _Bounds(), False: _Bounds()}, 0
            for one in self.held.values():
                for system, time in one.bounds():
                    self._axes[system].add(time, one)

    @property
    def alike(self) -> int:
        """How many sets of extents the beliefs have (what :meth:`count_at` tests)."""
        return len(self._alike)

    def count_at(self, valid: int, known: int) -> int:
        """How many beliefs are in force at (``valid``, ``known``): a test per
        set of extents that beliefs share, not per belief."""
        return sum(
            n
            for extents, n in self._alike.items()
            if any(
                sf <= known
                and (st is None or known < st)
                and vf <= valid
                and (vt is None or valid < vt)
                for sf, st, vf, vt in extents
            )
        )

    def changed(
        self, since: Point, until: Point, namespace: str | None = None
    ) -> tuple[list[str], list[str]]:
        """The addresses of the beliefs in force at ``until`` and not at
        ``since`` (entered), and the other way (left), each highest rank first,
        then latest system start, then by address, as
        :func:`oms_rdf.rdf.inforce.delta_query` orders them (``namespace``:
        one, or None for all)."""
        candidates: set[Held] = set()
        for system, a, b in ((False, since[0], until[0]), (True, since[1], until[1])):
            for beliefs in self._axes[system].between(min(a, b), max(a, b)):
                candidates.update(beliefs)
        # Grouped by their rank and system start, which most changed beliefs
        # share, then each group by address.
        entered: dict[tuple[float, int], list[str]] = {}
        left: dict[tuple[float, int], list[str]] = {}
        held = self.held
        (v1, k1), (v2, k2) = since, until
        for one in candidates:  # the rules inlined: tens of thousands of them
            if held.get(one.address) is not one:
                continue  # read again since, or gone
            if namespace is not None and one.namespace != namespace:
                continue
            before = after = False
            for sf, st, vf, vt in one.extents:
                if sf <= k1 and vf <= v1 and (st is None or k1 < st):
                    if vt is None or v1 < vt:
                        before = True
                if sf <= k2 and vf <= v2 and (st is None or k2 < st):
                    if vt is None or v2 < vt:
                        after = True
            if before is not after:
                group = (left if before else entered).setdefault(
                    (one.rank, one.system_from), []
                )
                group.append(one.address)
        return _ranked(entered), _ranked(left)


def _ranked(groups: dict[tuple[float, int], list[str]]) -> list[str]:
    """The beliefs of each group, highest rank first, then latest system start,
    then by address (the order of the grain nodes)."""
    out: list[str] = []
    for order in sorted(groups, key=lambda g: (-g[0], -g[1])):
        out += sorted(groups[order])
    return out
