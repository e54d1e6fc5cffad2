"""SPARQL Update as belief operations: INSERT DATA adopts, DELETE DATA retracts.

A SPARQL user adds and removes knowledge without the grain API, and no policy can
be bypassed: ``INSERT DATA`` adopts each triple as a belief (the same mapping as
an import, put through ``put_many``), ``DELETE DATA`` retracts the current
beliefs that assert those triples through the policies, and an ``INSERT DATA``
that replaces a held triple supersedes it. A request is one
:meth:`~oms_rdf.store.GrainStore.transaction`: all of its operations are
checked, in order, before anything is written, and then written in one atomic
write with one ``update`` audit event, or (any refused) not at all.
A ``soft_locked`` belief is retracted only with the caller's ``reason``. Any
other update form (``DELETE/INSERT ... WHERE``, ``LOAD``, ``CLEAR``, ``DROP``, ...)
is refused: it would rewrite the store's graphs instead of revising beliefs. The
exceptions: ``DELETE { t } WHERE { t }`` over the same ground triples, which
means ``DELETE DATA`` when its WHERE has a solution, else nothing (rdflib's
``SPARQLUpdateStore`` removes triples that way);
and ``CREATE [SILENT] GRAPH g``, which writes nothing (a graph here is the
knowledge its beliefs put in it, none kept empty; rdflib's ``Dataset.graph()``
sends it) and is taken as ``SILENT``: whether ``g`` holds knowledge depends on
whose knowledge is asked, which CREATE never tells.

An inserted triple *replaces* a held one when they share subject, relation,
graph and namespace, differ in object, and the request deletes the held triple
too (in either order), or the relation is one of the store's functional
relations and one belief holds it: the new belief supersedes the held one.

With a portion of valid time ``[valid_from, valid_to)`` the request is about that
portion only (SQL:2011 ``FOR PORTION OF``, as ``supersede`` and ``retract`` with
the same arguments): ``DELETE DATA`` retracts the portion of each belief that
asserts the triple (the pieces outside it stay, as new grains derived from it),
a replacing insertion supersedes over the portion, and a new belief is valid
over the portion.

pyoxigraph reads the request (see :mod:`.update_syntax`); no rdflib is involved.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyoxigraph as ox

from ..codec.grain import Grain, system_from
from ..errors import ErrorCode, SchemaError, StoreError
from ..rdf.mapping import address_of, belief_terms
from ..rdf.terms import skolem
from ..rdf.vocab import OMS
from ..store import PREFIXES, RESERVED_GRAPHS, GrainStore
from ..store.admission import successor_fields
from ..store.grain_facts import stored_form
from ..store.lookup import believers
from ..store.portion import Portion, portion_of, valid_interval
from ..store.state import check_texts
from ..times import MAX_MS, TimeLike
from .adopt import adopted_grain, refuse_reserved
from .update_syntax import DataOperation, data_operations

__all__ = ["DataOperation", "UpdateReport", "data_operations", "update"]

_Claim = tuple[Any, Any, Any, Any]  # subject, predicate, object, knowledge graph


@dataclass
class UpdateReport:
    """What an update did: beliefs added, already believed, retracted, superseded."""

    added: int = 0
    believed: int = 0
    retracted: list[str] = field(default_factory=list)  # addresses
    not_believed: int = 0  # deleted triples no current belief asserted
    superseded: list[str] = field(default_factory=list)  # replaced by an insertion


def update(
    store: GrainStore,
    text: str,
    *,
    namespace: str | None = None,
    confidence: float = 1.0,
    by: str | None = None,
    reason: str | None = None,
    valid_from: TimeLike | None = None,
    valid_to: TimeLike | None = None,
    base_iri: str | None = None,
    default_alias: str | None = None,
) -> UpdateReport:
    """Apply an update request to ``store`` as belief operations (see the module).

    ``default_alias``: a graph name that means the default graph in this
    request (the HTTP endpoint's for rdflib's, which names it so).

    One request is one transaction. Every operation is parsed and checked first,
    in order, each seeing what the ones before it would do (a triple deleted and
    then inserted again is a new belief; one inserted and then deleted is not
    kept); then everything is written in one atomic write, with one ``update``
    audit event (actor ``by``) listing what it retracted and superseded. A
    refused request writes nothing; one that changes nothing writes nothing.

    ``reason`` is the caller's: it is recorded with each retraction and
    supersession and is the justification a ``soft_locked`` belief needs (spec
    §8.3). Without it a request that would retract or supersede a soft_locked
    belief is refused.

    Raises:
        QueryError: ERR_QUERY for malformed SPARQL or a refused update form.
        SchemaError: ERR_SCHEMA for inserted data a belief cannot hold (an RDF
            1.2 triple term), a reserved graph named in either form, or
            ``valid_to`` without ``valid_from``.
        PolicyError: ERR_INVALIDATION_DENIED when a policy protects a belief that
            the request would retract or supersede (soft_locked: without ``reason``).
        TimeRangeError: ERR_RANGE for an empty portion of valid time.
    """
    check_texts(namespace=namespace, by=by, reason=reason)
    # The prefixes a query may use undeclared; relative IRIs against base_iri.
    alias = None if default_alias is None else ox.NamedNode(default_alias)
    operations = data_operations(text, PREFIXES, base_iri, alias)
    portion = portion_of(valid_from, valid_to)
    while True:
        report = UpdateReport()
        try:
            with store.transaction(event="update", by=by, reason=reason) as tx:
                plan = _Plan(tx, namespace, confidence, portion, report)
                for operation in operations:
                    plan.run(operation)
                plan.apply(by=by, reason=reason)
        except _Again as again:  # nothing was written: the transaction was left
            _next_millisecond(store, again.at)
            continue
        return report


class _Again(Exception):  # noqa: N818 - not an error: the request is made again
    """A triple to insert whose grain has the bytes of a grain closed in the
    request's millisecond: made again at the next one (a grain is its bytes,
    and a closed one is never current again)."""

    def __init__(self, at: int) -> None:
        super().__init__(at)
        self.at = at


def _next_millisecond(store: GrainStore, at: int) -> None:
    """Wait for the store's clock to pass ``at`` (a millisecond, on a clock
    that moves).

    Raises:
        StoreError: ERR_CONFLICT when it has not moved on within a second.
    """
    deadline = time.monotonic() + 1.0
    while store.clock() <= at:
        if time.monotonic() > deadline:
            raise StoreError(
                f"a triple to insert was retracted or superseded in this same "
                f"millisecond ({at}), and its belief would be the same grain, which "
                "cannot be current again; the store's clock did not move on "
                "within a second: ask again once it has",
                code=ErrorCode.CONFLICT,
            )
        time.sleep(0.0005)


class _Plan:
    """A request's changes, checked in order and made at the end of its transaction."""

    def __init__(
        self,
        store: GrainStore,
        namespace: str | None,
        confidence: float,
        portion: Portion | None,
        report: UpdateReport,
    ) -> None:
        self.store, self.namespace, self.portion = store, namespace, portion
        self.confidence, self.report = confidence, report
        self.created = store.clock()  # the transaction's one system time
        self.empty = store.is_empty()  # then nothing is stored to look up
        self.new: dict[str, Grain] = {}  # address -> belief to put
        self.terms: dict[str, _Claim] = {}  # address -> what it asserts
        # what the new beliefs assert -> their addresses (a claim may have several,
        # one per namespace)
        self.claims: dict[_Claim, list[str]] = {}
        self.leaving: dict[str, None] = {}  # stored beliefs to retract, in order
        # subject, relation and graph of the beliefs to retract -> their addresses
        self.leaving_by: dict[tuple[Any, Any, Any], list[str]] = {}

    def run(self, operation: DataOperation) -> None:
        """Check one operation of the request, seeing what the ones before did."""
        if operation.kind == "insert":
            self.insert(operation.quads)
        elif operation.kind == "delete":
            self.delete(operation.quads)
        elif operation.kind == "delete_where":
            self.delete_matched(operation.quads)
        elif operation.graph is not None:
            self.create(operation.graph)

    def insert(self, quads: list[ox.Quad]) -> None:
        """Adopt each triple as a belief unless one (new, or stored and held)
        asserts it over all of the valid time inserted (the portion, else from
        now on)."""
        for quad in quads:
            grain = self._belief(quad)
            ns = grain.namespace
            claim = _claim_of(quad)
            if grain.address in self.leaving:
                # Deleted earlier in this request, and now the same bytes again:
                # the same belief, which stays (SPARQL: deleted, then inserted).
                self._keep(grain.address, claim)
                self.report.believed += 1
                continue
            if grain.address in self.new or self._pending(claim, ns):
                self.report.believed += 1
                continue
            held = self._stored(claim, ns)
            if any(self._holds_inserted(self.store.get(a)) for a in held):
                self.report.believed += 1
                continue
            if not self.empty and grain.address in self.store:
                raise _Again(self.created)  # closed: made in this millisecond
            self.new[grain.address] = grain
            self.terms[grain.address] = claim
            self.claims.setdefault(claim, []).append(grain.address)

    def _keep(self, address: str, claim: _Claim) -> None:
        """Take back the retraction of a held belief this request deleted."""
        del self.leaving[address]
        self.leaving_by[claim[0], claim[1], claim[3]].remove(address)

    def _holds_inserted(self, grain: Grain) -> bool:
        """Whether a held belief is valid over all the valid time an insertion
        is for: the portion, else from the request's time on."""
        start, end = self.portion or (self.created, None)
        low, high = valid_interval(grain)
        return low <= start and (high is None or (end is not None and end <= high))

    def _belief(self, quad: ox.Quad) -> Grain:
        grain = adopted_grain(
            quad,
            self.store,
            namespace=self.namespace,
            confidence=self.confidence,
            created=self.created,
        )
        if self.portion is None:
            return grain
        start, end = self.portion
        times = {"valid_from": start} | ({} if end is None else {"valid_to": end})
        return Grain.from_dict({**grain.fields, **times})

    def create(self, graph: ox.NamedNode) -> None:
        """``CREATE [SILENT] GRAPH``: nothing to write, nor to refuse. Whether a
        graph "exists" here depends on whose knowledge is asked (a token sees
        its namespaces' only), so CREATE never tells: it is taken as SILENT.

        Raises:
            SchemaError: ERR_SCHEMA for one of the store's reserved graphs.
        """
        if graph in RESERVED_GRAPHS:
            raise SchemaError(
                f"CREATE GRAPH {graph} names the store's reserved graph; only the "
                "store writes it",
                code=ErrorCode.SCHEMA,
            )

    def delete(self, quads: list[ox.Quad]) -> None:
        """Retract the current beliefs (new in this request, or stored) of each triple."""
        for quad in quads:
            refuse_reserved(quad)  # oms:current by name is not the default graph
            claim = _claim_of(quad)
            found = False
            for address in self._pending(claim, self.namespace):
                del self.new[address]  # never written
                self.claims[claim].remove(address)
                found = True
            for address in list(self._stored(claim, self.namespace)):
                if self.portion is None or self._overlaps(self.store.get(address)):
                    self.leaving[address] = None
                    key = (claim[0], claim[1], claim[3])
                    self.leaving_by.setdefault(key, []).append(address)
                    found = True
            self.report.not_believed += not found

    def delete_matched(self, quads: list[ox.Quad]) -> None:
        """``DELETE { t } WHERE { t }`` over ground triples: :meth:`delete` when
        the WHERE has its solution, every triple in the knowledge together at
        some time of the request's valid time (the portion, else now); else
        nothing, as SPARQL deletes nothing without a solution."""
        start, end = self.portion or (self.created, self.created + 1)
        spans = [self._asserted(_claim_of(q), start, end) for q in quads]
        # Where the spans of every triple meet, one of them begins.
        together = any(
            all(any(lo <= at < hi for lo, hi in held) for held in spans)
            for at in (lo for held in spans for lo, _hi in held)
        )
        if together:
            self.delete(quads)
        else:
            self.report.not_believed += len(quads)

    def _asserted(
        self, claim: _Claim, start: int, end: int | None
    ) -> list[tuple[int, int]]:
        """The spans of valid time ``[start, end)`` over which the knowledge
        holds ``claim``: all of it where a belief new in this request asserts
        it, else where a held belief does (asked of now, one known by now)."""
        stop = MAX_MS + 1 if end is None else end
        if self._pending(claim, self.namespace):
            return [(start, stop)]
        spans = []
        for address in self._stored(claim, self.namespace):
            grain = self.store.get(address)
            if self.portion is None and system_from(grain) > self.created:
                continue  # held, but it enters the knowledge later
            low, high = valid_interval(grain)
            low, high = max(low, start), stop if high is None else min(high, stop)
            if low < high:
                spans.append((low, high))
        return spans

    def _pending(self, claim: _Claim, namespace: str | None) -> list[str]:
        """The beliefs new in this request that assert ``claim``."""
        return [
            address
            for address in self.claims.get(claim, ())
            if namespace is None or self.new[address].namespace == namespace
        ]

    def _stored(self, claim: _Claim, namespace: str | None) -> Iterator[str]:
        """The stored beliefs held (of the namespace, if given) that assert
        ``claim`` and that this request does not retract."""
        backend = self.store.backend
        if self.empty or next(backend.quads(*claim), None) is None:
            return  # nobody asserts it now: the common case, one lookup
        facts = self.store.core.facts
        for node in list(believers(backend, ox.Quad(*claim), facts=facts)):
            address = address_of(node)
            if address in self.leaving:
                continue
            if namespace is None or self.store.get(address).namespace == namespace:
                yield address

    def _overlaps(self, grain: Grain) -> bool:
        """Whether a belief's valid time meets the request's portion (if any)."""
        if self.portion is None:
            return True
        low, high = valid_interval(grain)
        start, end = self.portion
        return (high is None or start < high) and (end is None or low < end)

    def _covers(self, grain: Grain) -> bool:
        """Whether the request's portion (if any) holds all of a belief's valid time."""
        if self.portion is None:
            return True
        low, high = valid_interval(grain)
        start, end = self.portion
        return start <= low and (end is None or (high is not None and high <= end))

    def apply(self, *, by: str | None, reason: str | None) -> None:
        """Make the changes, as operations of the request's transaction."""
        store, report = self.store, self.report
        pairs = self._replacements()
        replaced = {old for old, _new in pairs}
        cuts = self._cuts(pairs)
        leaving = [
            a for a in self.leaving if a not in replaced and cuts.get(a, 0) is not None
        ]
        whole = [a for a in leaving if a not in cuts and self._covers(store.get(a))]
        if whole:  # together: a triple two of them assert leaves the knowledge
            store.retract_all(whole, reason=reason or "", by=by)
        start, end = self.portion or (None, None)
        retracted_whole = set(whole)  # a set: one lookup per address below
        for address in leaving:
            if address not in retracted_whole:
                cut = cuts.get(address)
                store.retract(
                    address,
                    reason=reason or "",
                    by=by,
                    valid_from=start if cut is None else cut,
                    valid_to=end if cut is None else None,
                )
        report.retracted += leaving
        for old, new in pairs:
            # The inserted triple holds over the whole portion, as a new belief
            # would: given whole, as a grain, not completed from the old one's.
            successor = Grain.from_dict(successor_fields(old, new.fields, reason))
            store.supersede(
                old,
                successor,
                justification=reason,
                by=by,
                valid_from=start,
                valid_to=end,
            )
            report.superseded.append(old)
        taken = {new.address for _old, new in pairs}
        rest = [grain for address, grain in self.new.items() if address not in taken]
        if rest:
            store.put_many(rest)
        report.added = len(self.new)

    def _cuts(self, pairs: list[tuple[str, Grain]]) -> dict[str, int | None]:
        """Where the other held beliefs of a replaced triple are retracted from
        (without a portion): from the new belief's valid start, so that their
        past stays as the superseded one's does; None for one whose valid
        time ends before it, which is left as it is."""
        if self.portion is not None:
            return {}
        cuts: dict[str, int | None] = {}
        key_of = {a: key for key, found in self.leaving_by.items() for a in found}
        for old, new in pairs:
            key = key_of.get(old)  # none for a functional rival, not deleted
            others = [a for a in self.leaving_by[key] if a != old] if key else []
            start = valid_interval(new)[0]
            for other in others:
                low, high = valid_interval(self.store.get(other))
                if low >= start:
                    continue  # retracted whole: it said nothing before
                ends_before = high is not None and high <= start
                cuts[other] = None if ends_before else start
        return cuts

    def _replacements(self) -> list[tuple[str, Grain]]:
        """The held beliefs the new ones replace: (old address, new belief)."""
        pairs: list[tuple[str, Grain]] = []
        taken: set[str] = set()
        functional = self.store.functional_relations
        for address, grain in self.new.items():
            claim = self.terms[address]
            # The one in force where the new one begins (else the earliest) is
            # superseded; the others of the triple are retracted from there
            # (see _cuts).
            begins = valid_interval(grain)[0]
            deleted = sorted(
                (
                    old
                    for old in self.leaving_by.get((claim[0], claim[1], claim[3]), ())
                    if old not in taken and self._replaces(grain, old, claim)
                ),
                key=lambda old: _order(self.store.get(old), begins),
            )
            if not deleted and grain["relation"] in functional:
                # Not asked for by the request, so as any automatic revision: a
                # lower tier never replaces a higher one (put then disputes both).
                deleted = self._rivals(grain, claim, taken)
                tier = self.store.revision.entrenchment.tier
                if len(deleted) != 1 or tier(grain.fields) < tier(
                    self.store.get(deleted[0]).fields
                ):
                    deleted = []
            if deleted:
                taken.add(deleted[0])
                pairs.append((deleted[0], grain))
        return pairs

    def _replaces(self, grain: Grain, old: str, claim: _Claim) -> bool:
        """Whether ``grain`` asserts another object for a held belief's subject,
        relation and graph, in its namespace, over time the belief holds."""
        held = self.store.get(old)
        if held.namespace != grain.namespace or not self._overlaps(held):
            return False
        s, p, o, graph = claim
        hs, hp, ho, hg = belief_terms(held.fields, self.store.settings)
        return (hs, hp, hg or OMS.current) == (s, p, graph) and ho != o

    def _rivals(self, grain: Grain, claim: _Claim, taken: set[str]) -> list[str]:
        """The beliefs held on a functional relation that ``grain`` would replace."""
        at = None if self.portion is None else self.portion[0]
        found = []
        for held in self.store.beliefs(
            grain["subject"], grain["relation"], namespace=grain.namespace, valid_at=at
        ):
            address = held.address
            if address in taken or address in self.leaving or address in self.new:
                continue
            if not self.store.status(address).is_current:
                continue
            if self._replaces(grain, address, claim):
                found.append(address)
        return found


def _order(held: Grain, at: int) -> tuple[bool, int]:
    """Which held belief a new one valid from ``at`` supersedes first: one in
    force at ``at``, then the earliest."""
    low, high = valid_interval(held)
    return not (low <= at and (high is None or at < high)), low


def _claim_of(quad: ox.Quad) -> _Claim:
    """What a quad asserts, as the store keeps it: blank nodes skolemised, the
    default graph as the current knowledge."""
    graph = quad.graph_name
    return (
        skolem(quad.subject),
        quad.predicate,
        stored_form(skolem(quad.object)),  # "1"^^xsd:boolean is true, as stored
        OMS.current if isinstance(graph, ox.DefaultGraph) else skolem(graph),
    )
