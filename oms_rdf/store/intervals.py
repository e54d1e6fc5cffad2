"""The interval layer: each knowledge triple's versions, with disjoint
bitemporal extents, so that a query at a point is a plain query (design §6).

A belief is in force at (valid time V, system time T) in at most two rectangles
of the plane, its extents (:mod:`oms_rdf.rdf.inforce`): from its system start
until it was superseded or voided, valid from ``validFrom`` to ``validTo``; and,
once superseded and until voided, valid up to its latest successor's
``validFrom``. The extents of all the beliefs of one triple, cut into disjoint
rectangles, are the triple's *versions*; each is one quad here, the triple in a
graph named by its extent. The knowledge of a point is then the union of the
graphs whose extent holds it, and a triple is in it at most once: what SPARQL
over that union answers is what it answers over the point's knowledge,
multiplicities included.

The layer is kept in process, in memory, beside the store of an embedded
backend (not of a read-only opening, which its writer's writes would have read
whole again each time). It is read from the grain layer at the second question
at a point (a process that asks one is answered by the grain layer,
:mod:`.rewrite`), and kept up by the writes after it: each tells
:meth:`Intervals.saw` the rows it added and took away, and the triples of the
grains those rows are about are read again before the next question. A write
whose rows are not seen (an import, an erasure) calls :meth:`Intervals.forget`,
and the layer is read whole again when next asked.

Each belief's own extents are kept too, found by their bounds
(:mod:`.belief_extents`), so that what changed between two points is found at
the cost of the change (:mod:`.changes`); those of adopted named graphs are kept
there, though only the default graph's triples have versions.

Extents are written into the graph's IRI as four fixed-width numbers, so that a
query can also test them where too many graphs hold the point to name them
(:func:`extent_test`).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pyoxigraph as ox

from ..backends.base import Backend
from ..rdf.clause import GrainClause
from ..rdf.limits import CACHED_TEXT_CHARS, text_cache
from ..rdf.mapping import Row
from ..rdf.tables import query_prefixes
from ..rdf.terms import GENID
from ..rdf.vocab import RDF
from .belief_extents import BeliefExtents, Extent
from .interval_reads import GrainRead, Triple, read, read_text
from .knowledge import PREFIXES
from .querytext import UnreadableError
from .rewrite import rewrite

__all__ = ["EXTENT_PREFIX", "Intervals", "VersionClause", "extent_test", "rectangles"]

EXTENT_PREFIX = "urn:oms:extent:"
_WIDTH = 15
# Milliseconds from 0000-01-01 to 1970-01-01: every time a grain holds, shifted
# by it, is a non-negative number of _WIDTH digits; the largest is "open".
_SHIFT = 62_167_219_200_000
_OPEN = 10**_WIDTH - 1


_NODE_PREFIX = "<nih:sha-256;"


def _code(ms: int | None) -> str:
    return f"{_OPEN if ms is None else ms + _SHIFT:0{_WIDTH}d}"


@lru_cache(maxsize=65_536)  # the graphs of a point, named again at each question
def _graph(extent: Extent) -> ox.NamedNode:
    return ox.NamedNode(EXTENT_PREFIX + "".join(map(_code, extent)))


def extent_test(graph: str, valid_at: int, as_of: int) -> str:
    """A filter true where the extent named by ``graph`` (a variable bound to a
    graph of this layer) holds (``valid_at``, ``as_of``)."""

    def part(i: int) -> str:
        start = len(EXTENT_PREFIX) + 1 + i * _WIDTH
        return f"SUBSTR(STR({graph}), {start}, {_WIDTH})"

    t, v = f'"{_code(as_of)}"', f'"{_code(valid_at)}"'
    return (
        f"FILTER ({part(0)} <= {t} && {t} < {part(1)} && "
        f"{part(2)} <= {v} && {v} < {part(3)})"
    )


@dataclass(frozen=True, slots=True)
class VersionClause(GrainClause):
    """What the rewrite (:mod:`.rewrite`) matches a triple pattern with over this
    layer: the triple in a graph whose extent holds the point. Where too many
    graphs hold it to name them, a query is asked so."""

    valid_at: int = 0
    as_of: int = 0

    def pattern(
        self,
        s: str,
        p: str,
        o: str,
        graph: str | None,
        atom: int,
        *,
        lead: int | None = None,
    ) -> str:
        if graph is not None:  # the layer holds the default graph's knowledge only
            raise UnreadableError("a GRAPH pattern, asked of the interval layer")
        version = f"?_omsv_{atom}"
        test = extent_test(version, self.valid_at, self.as_of)
        return f"GRAPH {version} {{ {s} {p} {o} }} {test}"


# A query whose rewrite has one triple pattern, variables at both ends, and
# nothing that binds them first (VALUES, BIND, another pattern, a path).
_SCAN = re.compile(
    r"(?is)(?!.*\b(?:VALUES|BIND|SERVICE)\b)(?!.*_omsv_2\b)"
    r".*GRAPH \?_omsv_1 \{ [?$]\w+ (?P<p><[^<>\s]*>|[\w.-]*:[\w.-]*) [?$]\w+ \}.*"
)


@text_cache
def _scanned(query: str) -> str | None:
    """The predicate (N-Triples) of a query that is one scan, read from its
    rewrite (the same at every point: rewritten at one)."""
    rewritten = rewrite(query, VersionClause(None, ()), lateral=True)
    found = None if rewritten is None else _SCAN.fullmatch(rewritten)
    if found is None:
        return None
    predicate: str = found["p"]
    if predicate.startswith("<"):
        return predicate
    prefix, _, local = predicate.partition(":")
    namespace = (PREFIXES | query_prefixes(query)).get(prefix)
    return None if namespace is None else f"<{namespace}{local}>"


_POINTS_KEPT = 16  # points whose graphs are kept until the layer changes


def _name_order(extent: Extent) -> tuple[int, int, int, int]:
    """An extent's place in the order of its graph's name (an open end, spelt
    with the largest number, last)."""
    sf, st, vf, vt = extent
    return (sf, _OPEN if st is None else st, vf, _OPEN if vt is None else vt)


def _before(a: int, b: int | None) -> bool:
    return b is None or a < b


def _earlier(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def rectangles(
    vf: int,
    vt: int | None,
    sf: int,
    st: int | None,
    void: int | None,
    next_from: int | None,
) -> list[Extent]:
    """A belief's extents: where it is in force, as the rules of
    :func:`oms_rdf.rdf.inforce.in_force` say (``next_from``: the latest
    successor's ``validFrom``)."""
    out: list[Extent] = []
    until = _earlier(st, void)
    if _before(sf, until) and _before(vf, vt):
        out.append((sf, until, vf, vt))
    if st is not None and next_from is not None:
        start, valid_until = max(sf, st), _earlier(vt, next_from)
        if _before(start, void) and _before(vf, valid_until):
            out.append((start, void, vf, valid_until))
    return out


def versions(extents: Sequence[Extent]) -> list[Extent]:
    """The union of extents cut into disjoint ones: for each stretch of system
    time between two of their system bounds, the valid intervals they cover
    there, merged; stretches with the same intervals joined."""
    cuts = sorted({e[0] for e in extents} | {e[1] for e in extents if e[1] is not None})
    stretches: list[tuple[int, int | None, list[tuple[int, int | None]]]] = []
    for i, start in enumerate(cuts):
        end = cuts[i + 1] if i + 1 < len(cuts) else None
        covering = [
            (e[2], e[3]) for e in extents if e[0] <= start and _before(start, e[1])
        ]
        spans = _merged(sorted(covering, key=lambda span: span[0]))
        if stretches and stretches[-1][2] == spans:
            stretches[-1] = (stretches[-1][0], end, spans)
        else:
            stretches.append((start, end, spans))
    return [(a, b, low, high) for a, b, spans in stretches for low, high in spans]


def _merged(spans: list[tuple[int, int | None]]) -> list[tuple[int, int | None]]:
    """Intervals sorted by their start, overlapping or touching ones joined."""
    out: list[tuple[int, int | None]] = []
    for low, high in spans:
        if out and (out[-1][1] is None or low <= out[-1][1]):
            last_low, last_high = out[-1]
            joined = None if high is None or last_high is None else max(high, last_high)
            out[-1] = (last_low, joined)
        else:
            out.append((low, high))
    return out


# Catching a grain's triple up costs about what reading three grains does, when
# the layer is read whole: past that share of a write, it is read whole again.
_GRAINS_READ_PER_CATCH_UP = 3
_CAUGHT_UP_AT_MOST = 1_000  # ... but a small layer is always caught up


class Intervals:
    """The interval layer of one store, read on demand and kept up by its writes."""

    # A query is asked of the graphs in force at its point, named (each a lookup
    # per pattern); past this many extents, it tests them (extent_test) instead.
    named_at_most = 64
    # Reading the layer costs about what a few questions at a point cost on the
    # grain layer: a process that asks one (a command) does not read it; the
    # layer is read at this question.
    read_at_question = 2

    def __init__(self) -> None:
        self.store: ox.Store | None = None
        self.extents: Counter[Extent] = Counter()  # versions per extent
        self.versions = 0  # of them all
        self.of_predicate: Counter[str] = Counter()  # versions by predicate
        self.blank = 0  # versions that may hold a stored blank node (_blank)
        self._graphs_at: dict[tuple[int, int], list[ox.NamedNode]] = {}
        self._named = _NameOrder()  # the extents with versions, by their names
        self.dirty: set[str] = set()  # grain nodes written since (N-Triples)
        self.usable = True  # False: a time the layer cannot order (a type error)
        self.asked = 0  # questions at a point while it was not read
        # The questions being asked of a layer store, outside the store's lock:
        # each one's token, to the id of the store it reads. A dict's single
        # steps need no lock, and a fork inherits none held.
        self._reading: dict[object, int] = {}
        self.beliefs = BeliefExtents()  # each belief's, named graphs' too

    def forget(self) -> None:
        """Read the layer whole again when next asked."""
        self.store = None
        self.dirty.clear()
        self.beliefs = BeliefExtents()
        self._graphs_at.clear()
        self._named = _NameOrder()

    def saw(
        self, removed: Iterable[Row], added: Iterable[Row], *, whole: bool = False
    ) -> None:
        """Take the rows a write took away and added: their grains' triples are
        read again (``whole``: the write did more, and the layer is)."""
        if whole:
            self.forget()
        elif self.store is not None:
            for rows in (removed, added):
                self.dirty.update(
                    s for s, _p, _o, _g in rows if s.startswith(_NODE_PREFIX)
                )

    def ready(self, backend: Backend) -> ox.Store | None:
        """The layer, up to date with ``backend``; None when it cannot answer:
        a backend that is not in this process, or that other processes write
        (see :attr:`.Backend.intervals`)."""
        if not backend.intervals or backend.shared:
            return None
        most = _CAUGHT_UP_AT_MOST + self.versions // _GRAINS_READ_PER_CATCH_UP
        if len(self.dirty) > most:
            self.forget()  # a large write: reading the layer whole costs less
        if self.store is None:
            self.asked += 1
            if self.asked < self.read_at_question:
                return None
            self._build(backend)
        elif self.dirty:
            if self.reading:
                return None  # not changed under a question: asked elsewhere
            self._catch_up(backend)
        return self.store if self.usable else None

    def begin_reading(self) -> object:
        """Take the layer's store for a question asked outside the store's
        lock: until :meth:`done_reading` is given the token returned, a
        catch-up does not change that store (a new one, read whole, may
        replace it)."""
        token = object()
        self._reading[token] = id(self.store)
        return token

    @property
    def reading(self) -> bool:
        """Whether a question is being asked of the layer's store."""
        return id(self.store) in list(self._reading.values())

    def done_reading(self, token: object) -> None:
        """Give back the store :meth:`begin_reading` took."""
        self._reading.pop(token, None)

    def graphs_at(self, valid_at: int, as_of: int) -> list[ox.NamedNode]:
        """The graphs whose extent holds the point, in the order of their names
        (one order, however the layer was made); kept for the last few points
        asked until the layer changes."""
        point = (valid_at, as_of)
        found = self._graphs_at.get(point)
        if found is None:
            found = self._named.at(self.extents, valid_at, as_of)
            if len(self._graphs_at) >= _POINTS_KEPT:
                self._graphs_at.clear()
            self._graphs_at[point] = found
        return found

    def scan_graphs(
        self, query: str, valid_at: int, as_of: int
    ) -> list[ox.NamedNode] | None:
        """The graphs in force at the point, where ``query`` is one scan (its
        rewrite by :class:`VersionClause` a single triple pattern, its subject
        and object variables nothing binds) and naming them costs less than
        testing each version of its predicate; else None.

        Each graph named is one lookup per pattern, and each version tested one
        row filtered by its graph's name: a scan over many extents is answered
        faster by naming the few graphs in force, a lookup of a bound subject
        by testing its few versions."""
        if len(query) > CACHED_TEXT_CHARS:  # no scan is that long: not rewritten twice
            return None
        predicate = _scanned(query)
        if predicate is None:
            return None
        versions = self.of_predicate[predicate]
        # Finding the graphs is a pass over every extent: worth it only for a
        # predicate with about as many versions as there are extents.
        if 2 * versions < len(self.extents):
            return None
        graphs = self.graphs_at(valid_at, as_of)
        return graphs if len(graphs) <= versions else None

    def _build(self, backend: Backend) -> None:
        self.store, self.extents, self.dirty, self.usable = (
            ox.Store(),
            Counter(),
            set(),
            True,
        )
        self.versions = 0
        self.of_predicate = Counter()
        self.blank = 0
        self.beliefs = BeliefExtents()
        self._named = _NameOrder()
        by_triple: dict[Triple, list[list[Extent]]] = {}
        grains = read_text(backend)
        for node, grain in read(backend, {}) if grains is None else grains:
            self._take(node, grain, by_triple.setdefault(grain.triple, []))
        self._add(by_triple)

    def _catch_up(self, backend: Backend) -> None:
        triples: set[Triple] = set()
        for node in self.dirty:
            grain = ox.NamedNode(node[1:-1])
            found = [
                next(backend.quads(grain, p, None, ox.DefaultGraph()), None)
                for p in (RDF.subject, RDF.predicate, RDF.object)
            ]
            if found[0] and found[1] and found[2]:
                triples.add((found[0].object, found[1].object, found[2].object))
            self.beliefs.drop(_address(node))  # read again with its triple, if held
        self.dirty.clear()
        store = self.store
        assert store is not None
        for s, p, o in triples:
            for quad in list(store.quads_for_pattern(s, p, o, None)):
                store.remove(quad)
                extent = _extent_of(quad.graph_name)
                self.extents[extent] -= 1
                if not self.extents[extent]:
                    self._named.remove(extent)
                self.of_predicate[str(quad.predicate)] -= 1
                self.blank -= _blank(quad.subject, quad.object)
                self.versions -= 1
        self.extents = +self.extents  # drop the extents no version has
        by_triple: dict[Triple, list[list[Extent]]] = {t: [] for t in triples}
        for triple in triples:
            s, p, o = triple
            for node, one in read(backend, {"s": s, "p": p, "o": o}):
                self._take(node, one, by_triple[triple])
        self._add(by_triple)

    def _take(self, node: str, grain: GrainRead, versions: list[list[Extent]]) -> None:
        """A grain read: its extents, among its triple's versions unless it is
        in a named graph, and its belief's record."""
        extents = self._extents(grain)
        if not self.usable:
            return  # the layer answers nothing: what it holds no longer matters
        if not grain.named:
            versions.append(extents)
        held = grain.held(_address(node), extents)
        if held is not None:
            self.beliefs.put(held)

    def _extents(self, grain: GrainRead) -> list[Extent]:
        if not grain.typed:
            self.usable = False
            return []
        t = grain.times
        vf, sf = t["vf"], t["sf"]
        assert vf is not None and sf is not None
        if any(not 0 <= ms + _SHIFT < _OPEN for ms in t.values() if ms is not None):
            self.usable = False  # a time the graph names cannot spell
            return []
        return rectangles(vf, t["vt"], sf, t["st"], t["void"], t["next"])

    def _add(self, by_triple: dict[Triple, list[list[Extent]]]) -> None:
        """Write the versions of these triples (terms, or N-Triples text)."""
        assert self.store is not None
        self._graphs_at.clear()  # after a catch-up's removals too
        quads, lines = [], []
        for triple, beliefs in by_triple.items():
            # One belief's extents are disjoint already: the common case.
            cut = (
                beliefs[0]
                if len(beliefs) == 1
                else versions([e for b in beliefs for e in b])
            )
            self.of_predicate[str(triple[1])] += len(cut)
            self.blank += len(cut) * _blank(triple[0], triple[2])
            for extent in cut:
                if not self.extents[extent]:
                    self._named.add(extent)
                self.extents[extent] += 1
                self.versions += 1
                if isinstance(triple[0], str):
                    s, p, o = triple
                    lines.append(f"{s} {p} {o} <{_graph(extent).value}> .\n")
                else:
                    quads.append(ox.Quad(*triple, _graph(extent)))
        self.store.extend(quads)
        if lines:
            self.store.load("".join(lines).encode(), format=ox.RdfFormat.N_QUADS)


class _NameOrder:
    """The extents that have versions, in the order of their graphs' names, kept
    sorted as extents come and go (sorted whole again after a large change), so
    that the graphs of a point are found by one filtered pass, cut short at
    the point's system time, with no sort."""

    def __init__(self) -> None:
        # (system from, to, valid from, to, graph), open ends spelt _OPEN;
        # None: to be sorted from the extents when next asked.
        self._sorted: list[tuple[int, int, int, int, ox.NamedNode]] | None = None
        self._moves = 0  # insertions and removals since it was last sorted whole

    def add(self, extent: Extent) -> None:
        if self._sorted is not None and self._moved():
            bisect.insort(self._sorted, _named(extent))

    def remove(self, extent: Extent) -> None:
        if self._sorted is not None and self._moved():
            entry = _named(extent)
            at = bisect.bisect_left(self._sorted, entry)
            if at < len(self._sorted) and self._sorted[at] == entry:
                del self._sorted[at]

    def _moved(self) -> bool:
        """Count a move; False (and sort whole when next asked) past many."""
        self._moves += 1
        if self._moves > _MOVES_PER_SORT:
            self._sorted = None
        return self._sorted is not None

    def at(
        self, extents: Counter[Extent], valid_at: int, as_of: int
    ) -> list[ox.NamedNode]:
        """The graphs whose extent holds (``valid_at``, ``as_of``), of these
        extents (those with a count)."""
        if self._sorted is None:
            named = (_named(e) for e, versions in extents.items() if versions > 0)
            self._sorted, self._moves = sorted(named), 0
        # Every bound a graph spells is below _OPEN - 1: a later point is
        # answered as that one is.
        valid_at, as_of = min(valid_at, _OPEN - 1), min(as_of, _OPEN - 1)
        ordered = self._sorted
        end = bisect.bisect_left(ordered, (as_of + 1,))  # begun by as_of
        return [
            graph
            for sf, st, vf, vt, graph in itertools.islice(ordered, end)
            if as_of < st and vf <= valid_at < vt
        ]


# Extents inserted in place (a move of those after each) up to this many; past
# that, they are sorted whole again when next asked.
_MOVES_PER_SORT = 1_000


def _named(extent: Extent) -> tuple[int, int, int, int, ox.NamedNode]:
    sf, st, vf, vt = _name_order(extent)
    return sf, st, vf, vt, _graph(extent)


_SKOLEM = "<" + GENID


def _blank(subject: Any, object: Any) -> bool:
    """Whether a version's terms (or N-Triples text) may hold a stored blank
    node, a skolem IRI; a quoted triple is taken to."""
    for term in (subject, object):
        if isinstance(term, str):  # the same answer as for its term
            iri = term.startswith("<") and not term.startswith("<<")
            if not term.startswith('"') and (not iri or term.startswith(_SKOLEM)):
                return True
        elif type(term) is not ox.Literal and (
            type(term) is not ox.NamedNode or term.value.startswith(GENID)
        ):
            return True
    return False


def _address(node: str) -> str:
    """The address of a grain node written as N-Triples (``<nih:sha-256;…>``)."""
    return node[len(_NODE_PREFIX) : -1]


def _extent_of(graph: Any) -> Extent:
    digits = graph.value[len(EXTENT_PREFIX) :]
    parts = [int(digits[i * _WIDTH : (i + 1) * _WIDTH]) for i in range(4)]
    sf, st, vf, vt = (None if n == _OPEN else n - _SHIFT for n in parts)
    assert sf is not None and vf is not None
    return (sf, st, vf, vt)
