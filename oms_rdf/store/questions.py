"""The temporal questions: beliefs at a point, their count, history, lineage."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyoxigraph import (
    BlankNode,
    Literal,
    NamedNode,
    QuerySolutions,
    Variable,
)

from ..backends.embedded import LocalBackend
from ..codec.grain import Grain, system_from
from ..errors import SchemaError
from ..rdf.inforce import (
    BELIEFS_COUNT,
    beliefs_by_status_query,
    beliefs_query,
    versions_query,
)
from ..rdf.mapping import (
    DEFAULT_SETTINGS,
    MappingSettings,
    address_of,
    grain_iri,
    literal_value,
    millis_literal,
    relation_pattern,
    subject_pattern,
)
from ..rdf.sparql import QUERIES
from ..rdf.tables import GrainList
from ..rdf.terms import unskolem
from ..rdf.vocab import OMS, RDF
from .audit import current_head
from .core import Core
from .lookup import chain_rows, count_held, earlier_versions, subject_rows
from .portion import valid_interval
from .state import STATUSES, TimeLike, check_texts, millis_or_now


@dataclass(frozen=True, slots=True)
class Version:
    """A belief and one extent in which it was in force: valid time
    [``valid_from``, ``valid_to``) as known during system time
    [``system_from``, ``system_to``), epoch milliseconds (None: still open)."""

    grain: Grain
    valid_from: int
    valid_to: int | None
    system_from: int
    system_to: int | None

    def holds(self, valid_at: int, as_of: int) -> bool:
        """Whether the extent holds the point (``valid_at``, ``as_of``)."""
        return (
            self.valid_from <= valid_at
            and (self.valid_to is None or valid_at < self.valid_to)
            and self.system_from <= as_of
            and (self.system_to is None or as_of < self.system_to)
        )


# A set of extents costs about what four held beliefs cost the engine to count.
_ALIKE_AT_MOST = 4


class Questions:
    """What is believed, was true, was believed; how beliefs evolved."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self._head_seen: object = None  # the audit head, on a shared backend

    def now_point(self) -> int | None:
        """The time at which the knowledge of now is asked, or None when the
        knowledge held (``oms:current``) is exactly it, so queries take it as is.

        Now means now on both axes (design §3): a belief whose valid time has
        ended, or not begun, is not in it, with no write in between (see
        :mod:`.now`). Where other clients write too, their writes move the audit
        chain's head, and the answer is read again.
        """
        now = self._watched_now()
        return None if self.core.now_watch.same(self.core.backend, now) else now

    def held_point(self) -> int | None:
        """The system time at which the knowledge held now (``held=True``) is
        asked, or None when ``oms:current`` is exactly it: it differs only while
        a system time lies ahead of the clock (see :mod:`.now`)."""
        now = self._watched_now()
        return None if self.core.now_watch.held(self.core.backend, now) else now

    def _watched_now(self) -> int:
        """The clock's now, the watch of now forgotten when another client wrote."""
        core = self.core
        if core.backend.shared:
            head = current_head(core.backend)
            if head != self._head_seen:
                core.now_watch.forget()
                self._head_seen = head
        return core.clock()

    def beliefs(
        self,
        subject: str | None = None,
        relation: str | None = None,
        *,
        namespace: str | None = None,
        valid_at: TimeLike = None,
        as_of: TimeLike = None,
    ) -> GrainList:
        """Return the beliefs true at ``valid_at`` as known at ``as_of``.

        Both default to now (design §5). "What did we believe at T" about the world
        at T is ``beliefs(valid_at=T, as_of=T)``; ``beliefs(as_of=T)`` asks what we
        believed at T about now. Ordered by effective confidence (earned by
        evidence), highest first. To list beliefs by their index status instead,
        whatever their times, use :meth:`beliefs_by_status`.

        Raises:
            SchemaError: ERR_SCHEMA for a time argument that cannot be read.
        """
        check_texts(subject=subject, relation=relation, namespace=namespace)
        known = millis_or_now(as_of, self.core.clock, "as_of")
        valid = millis_or_now(valid_at, self.core.clock, "valid_at")
        if subject is None:
            return self.beliefs_by_query(subject, relation, namespace, valid, known)
        # One subject has a handful of grains: reading them by pattern is several
        # times faster than the query, with the same answer (see lookup.py).
        # Several pattern reads: under the writers' lock, so that they all see the
        # store before a write or after it, never between (a torn read).
        with self.core.lock:
            copy = self._subject_copy(subject)
            rows = subject_rows(
                copy or self.core.backend,
                self.core.settings,
                subject,
                relation,
                namespace,
                valid_at=valid,
                as_of=known,
                # A copy holds only the quads the lookups read: not what facts
                # are read from (a node's whole grain layer).
                facts=None if copy else self.core.facts,
                known=self.core.decoded(),
            )
            return GrainList(
                [self.core.grain_of(address_of(r.node), r.blob) for r in rows],
                self.core.status,
            )

    def beliefs_by_status(
        self,
        status: str,
        subject: str | None = None,
        relation: str | None = None,
        *,
        namespace: str | None = None,
    ) -> GrainList:
        """Return the beliefs whose index status is ``status``, whatever their times.

        ``status`` is "active", "superseded" or "retracted" (the listing semantics
        of REST memory APIs); ``subject``, ``relation`` and ``namespace`` narrow
        the list as they do for :meth:`beliefs`.

        >>> from oms_rdf import Belief, GrainStore
        >>> store = GrainStore()
        >>> old = store.put(Belief("ann", "works_at", "Acme", 0.9, created_at=1))
        >>> _ = store.supersede(old, {"type": "belief", "subject": "ann",
        ...     "relation": "works_at", "object": "Initech", "confidence": 0.9,
        ...     "created_at": 2})
        >>> [g["object"] for g in store.beliefs_by_status("superseded", "ann")]
        ['Acme']

        Raises:
            SchemaError: ERR_SCHEMA for a status not among those three.
        """
        if status not in STATUSES:
            raise SchemaError(
                f"status is one of {list(STATUSES)}; found {status!r}", path="status"
            )
        texts, bindings = bound_texts(subject, relation, namespace, self.core.settings)
        bindings[Variable("statusNode")] = getattr(OMS, status)
        query = beliefs_by_status_query(texts)
        return self.grains_of(self.core.backend.query(query, bindings))

    def _subject_copy(self, subject: str) -> LocalBackend | None:
        """Over a network, a copy in memory of what the lookups of one subject
        read, brought in one request (a round trip per lookup would cost more
        than the general query); None in process."""
        remote = self.core.backend
        if not remote.remote:
            return None
        by, term = subject_pattern(subject)
        bindings = {Variable("by"): by, Variable("term"): term}
        copy = LocalBackend()
        copy.add(remote.quads_of(QUERIES["subject_grains"], bindings))
        return copy

    def beliefs_by_query(
        self,
        subject: str | None,
        relation: str | None,
        namespace: str | None,
        valid: int,
        known: int,
    ) -> GrainList:
        """:meth:`beliefs` by the general query (:func:`.inforce.beliefs_query`)."""
        texts, bindings = bound_texts(subject, relation, namespace, self.core.settings)
        bindings[Variable("asOf")] = millis_literal(known)
        bindings[Variable("validAt")] = millis_literal(valid)
        query = beliefs_query(texts)
        return self.grains_of(self.core.backend.query(query, bindings))

    def count_beliefs(
        self, *, valid_at: TimeLike = None, as_of: TimeLike = None
    ) -> int:
        """Count the beliefs :meth:`beliefs` would return for these times (a snapshot size).

        Where the store keeps the interval layer (an embedded store's writer),
        its beliefs' extents are counted, a test per set of extents they share;
        else (or now, where most beliefs have extents of their own, and the
        engine counts those held faster) one SPARQL COUNT."""
        core = self.core
        now = valid_at is None and as_of is None
        with core.lock:
            if core.intervals.ready(core.backend) is not None:
                beliefs = core.intervals.beliefs
                if not now or beliefs.alike * _ALIKE_AT_MOST <= len(beliefs):
                    valid = millis_or_now(valid_at, core.clock, "valid_at")
                    return beliefs.count_at(
                        valid, millis_or_now(as_of, core.clock, "as_of")
                    )
        if now and self.now_point() is None:
            # The beliefs of now are those held: one count the engine keeps cheap.
            return count_held(self.core.backend)
        known = millis_or_now(as_of, self.core.clock, "as_of")
        valid = millis_or_now(valid_at, self.core.clock, "valid_at")
        bindings = {
            Variable("asOf"): millis_literal(known),
            Variable("validAt"): millis_literal(valid),
        }
        rows = list(self.core.backend.query(BELIEFS_COUNT, bindings))
        return int(rows[0]["count"].value) if rows else 0

    def versions(
        self,
        subject: str | None = None,
        relation: str | None = None,
        object: Any = None,
        *,
        namespace: str | None = None,
    ) -> list[Version]:
        """When was this true: the extents in which each belief matching the
        pattern was in force, oldest system time first.

        ``subject`` and ``relation`` narrow as for :meth:`beliefs`; ``object`` is
        a grain's object text or an RDF term. A belief has at most two extents:
        until it was superseded or voided, and, once superseded, the part of its
        valid time before its successor's (see :func:`.inforce.extents`). It is
        in force at (V, T), as :meth:`beliefs` answers, exactly when one of its
        versions holds that point.

        >>> from oms_rdf import Belief, GrainStore
        >>> store = GrainStore()
        >>> old = store.put(Belief("ann", "works_at", "Acme", 0.9, created_at=1))
        >>> _ = store.supersede(old, {"type": "belief", "subject": "ann",
        ...     "relation": "works_at", "object": "Initech", "confidence": 0.9,
        ...     "created_at": 5, "valid_from": 3})
        >>> [(v.grain["object"], v.valid_from, v.valid_to)
        ...  for v in store.versions("ann", "works_at", "Acme")][-1]
        ('Acme', 1, 3)
        """
        texts, bindings = bound_texts(subject, relation, namespace, self.core.settings)
        rows = self.core.backend.query(versions_query(texts), bindings)
        found = []
        for row in rows:
            if isinstance(object, NamedNode | Literal | BlankNode):
                if unskolem(row["o"]) != object:
                    continue
            grain = self.core.grain_of(address_of(row["g"]), row["blob"])
            if object is not None and not isinstance(
                object, NamedNode | Literal | BlankNode
            ):
                if grain.fields.get("object") != object:
                    continue
            valid_to, system_to = (
                None if row[name] is None else literal_value(row[name])
                for name in ("validTo", "systemTo")
            )
            found.append(
                Version(
                    grain,
                    literal_value(row["validFrom"]),
                    valid_to,
                    literal_value(row["systemFrom"]),
                    system_to,
                )
            )
        return found

    def history(self, address: str | Grain) -> GrainList:
        """Return the supersession chain through a grain, oldest first (forks included)."""
        address = self.core.resolve(address)
        # A chain is a few grains: walking it by pattern beats the query (lookup.py).
        with self.core.lock:  # one view of the chain (see beliefs)
            return self._chronological(
                chain_rows(self.core.backend, grain_iri(address))
            )

    def ancestors(self, address: str | Grain) -> GrainList:
        """Return the versions before a grain, oldest first (not the grain itself).

        Every predecessor is followed: a grain that superseded two (a merge) has
        both lines before it, each back to its first version; a grain written by
        a change over a portion of valid time has the grain it replaced.
        """
        address = self.core.resolve(address)
        # Breadth first over the links, backwards; ``depth`` (hops from the
        # grain) orders versions with the same system time, the farther first.
        depth: dict[str, int] = {}
        frontier, seen = [address], {address}
        with self.core.lock:  # one view of the chain (see beliefs)
            while frontier:
                earlier = []
                for later in frontier:
                    node = grain_iri(later)
                    for older in list(earlier_versions(self.core.backend, node)):
                        found = address_of(older)
                        if found not in seen:  # a diamond, or a cycle imported
                            seen.add(found)
                            depth[found] = depth.get(later, 0) + 1
                            earlier.append(found)
                frontier = earlier
            grains = [self.core.get(a) for a in depth]
        grains.sort(key=lambda g: (system_from(g), -depth[g.address], g.address))
        return GrainList(grains, self.core.status)

    def derived(self, address: str | Grain) -> GrainList:
        """Return the grains derived from a grain, transitively, oldest first."""
        address = self.core.resolve(address)
        solutions = self.core.backend.query(
            QUERIES["derived"], {Variable("target"): grain_iri(address)}
        )
        return self._chronological(_triples(solutions))

    def _chronological(self, rows: Iterable[tuple[Any, Any, Any]]) -> GrainList:
        """The grains of ``(?g, ?sf, ?blob)`` rows, oldest system time first;
        at one system time (the parts of a change over a portion of valid time),
        the one valid first first."""
        # Compare times as values: lexical forms differ ("…00Z" vs "…00.5Z").
        found = [
            (literal_value(start), self.core.grain_of(address_of(node), blob))
            for node, start, blob in rows
            if start is not None  # an erased grain: only its address is left
        ]
        found.sort(key=lambda f: (f[0], valid_interval(f[1])[0], f[1].address))
        return GrainList((grain for _, grain in found), self.core.status)

    def grains_of(self, solutions: QuerySolutions) -> GrainList:
        """The grains of query solutions; a projected ``?blob`` spares a lookup."""
        names = {v.value for v in solutions.variables}
        return GrainList(
            (
                self.core.grain_of(
                    address_of(row["g"]), row["blob"] if "blob" in names else None
                )
                for row in solutions
            ),
            self.core.status,
        )


def namespaces_of(namespace: str | Sequence[str] | None) -> tuple[str | None, ...]:
    """The namespaces to gather knowledge from: None is every namespace.

    Raises:
        SchemaError: ERR_SCHEMA for an empty list, which would keep no
            namespace (read as none given, it would open every one).
    """
    if namespace is None or isinstance(namespace, str):
        return (namespace,)
    if not namespace:
        raise SchemaError(
            "namespace: expected a namespace, a list of them, or None for every "
            "one; found an empty list, which keeps none",
            path="namespace",
        )
    return tuple(dict.fromkeys(namespace))


def bound_texts(
    subject: str | None,
    relation: str | None,
    namespace: str | None,
    settings: MappingSettings = DEFAULT_SETTINGS,
) -> tuple[tuple[str, ...], dict[Variable, Any]]:
    """The patterns to write for the bound texts, most selective first, and bindings.

    Oxigraph keeps the written order of equally selective patterns, and binds only
    what the query projects, so only the bound texts are written. A subject is
    found by its text, or by ``rdf:subject`` when the text is the IRI itself; a
    relation by its ``rdf:predicate``.
    """
    bindings: dict[Variable, Any] = {}
    texts = []
    if subject is not None:
        by, term = subject_pattern(subject)
        name = "subjectTerm" if by == RDF.subject else "subject"
        bindings[Variable(name)] = term
        texts.append(name)
    if relation is not None:
        bindings[Variable("relation")] = relation_pattern(relation, settings)[1]
        texts.append("relation")
    if namespace is not None:
        bindings[Variable("namespace")] = Literal(namespace)
        texts.append("namespace")
    return tuple(texts), bindings


def _triples(solutions: QuerySolutions) -> Iterator[tuple[Any, Any, Any]]:
    return ((row["g"], row["sf"], row["blob"]) for row in solutions)
