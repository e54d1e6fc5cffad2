"""The tools and resources of an MCP session over one store, in its namespaces.

Each tool is a method that checks the session's namespaces, then calls the store's
public methods; the server (:mod:`oms_rdf.http.mcp`) registers them and turns
their refusals into tool errors.
"""

from __future__ import annotations

import json
import queue
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from itertools import islice
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from pydantic import Field, Strict

from ...codec.grain import Grain, system_from
from ...codec.schema import BELIEF
from ...errors import (
    ErrorCode,
    NotFoundError,
    OmsError,
    PolicyError,
    QueryError,
    SchemaError,
)
from ...rdf.limits import check_query
from ...rdf.terms import GRAPH, PREDICATE_KIND, SUBJECT_KIND
from ...store import GrainStore
from ...times import span_millis, to_millis
from ..federation import is_federated
from ..isolation import Isolation, isolated_answer, isolation_for
from ..lanes import Cancelled, Job, Lane
from ..render import evidence_json, fact_json
from ..results import QueryRequest, run_query
from ..scope import scoped_grain
from .arguments import (
    MAX_ROWS,
    WHOLE,
    Address,
    Confidence,
    ContextMap,
    Namespace,
    Object,
    Protection,
    Query,
    SourceType,
    Span,
    Text,
    When,
)

__all__ = ["RECENT", "Memory"]

RECENT = 50  # beliefs in oms://beliefs/recent
_WORKERS = 2  # queries evaluated at once
_NTRIPLES = "application/n-triples"
_ACCEPT = f"application/sparql-results+json, {_NTRIPLES}"  # each form's own
_T = TypeVar("_T")
Row = TypeVar("Row")

# The update forms of SPARQL 1.1 Update §3, after the prologue: a clear refusal
# for them (the query parser refuses them anyway, with a less helpful message).
_UPDATE = re.compile(
    r"\A(?:\s|#[^\n\r]*[\n\r]|(?:PREFIX\s+[^\s:]*:\s*<[^>]*>)|(?:BASE\s+<[^>]*>))*"
    r"(INSERT|DELETE|LOAD|CLEAR|CREATE|DROP|COPY|MOVE|ADD|WITH)\b",
    re.IGNORECASE,
)


class Memory:
    """The tools and resources of one server over one store, in its namespaces."""

    def __init__(
        self, store: GrainStore, scope: tuple[str, ...] | None, query_timeout: float
    ) -> None:
        self.store = store
        self.scope = scope
        self.query_timeout = query_timeout
        self._lane: Lane | None = None  # made at the first query
        self._lock = threading.Lock()
        # Where a query runs so that it is killed at its limit (on disk the worker
        # processes start now, while the session starts).
        self._isolated: Isolation | None = isolation_for(store, workers=_WORKERS)
        self._closed = False

    def close(self) -> None:
        """Stop the queries running, kill their processes and let go of their
        threads (the next query makes them again)."""
        with self._lock:
            lane, self._lane = self._lane, None
            isolated, self._isolated = self._isolated, None
            self._closed = True
        if lane is not None:
            lane.close(grace=0)
        if isolated is not None:
            isolated.close()

    def isolated(self) -> Isolation | None:
        """The processes queries run in (made again after :meth:`close`)."""
        with self._lock:
            if self._closed:
                self._isolated = isolation_for(self.store, workers=_WORKERS)
                self._closed = False
            return self._isolated

    # --- the session's namespaces ------------------------------------------------

    def covers(self, namespace: str | None) -> bool:
        """Whether ``namespace`` is one of the session's."""
        return self.scope is None or namespace in self.scope

    def visible(self, grain: Grain) -> bool:
        """Whether ``grain`` is in the session's namespaces."""
        return self.covers(grain.namespace)

    def fact(self, ref: str) -> Grain:
        """The stored grain of ``ref``; one outside the session is not found."""
        return scoped_grain(self.store, ref, self.covers)

    def namespace(self, asked: str | None) -> str | None:
        """The namespace a write goes to: the one asked, else the session's only one."""
        if self.scope is None:
            return asked
        if asked is None:
            if len(self.scope) == 1:
                return self.scope[0]
            raise PolicyError(
                f"say which namespace to write: one of {list(self.scope)}",
                code=ErrorCode.INVALIDATION_DENIED,
                path="$.namespace",
            )
        self.readable(asked)
        return asked

    def shown(self, asked: str | None) -> bool:
        return asked is None or self.scope is None or asked in self.scope

    def readable(self, asked: str) -> None:
        if self.scope is not None and asked not in self.scope:
            raise PolicyError(
                f"this session may not use namespace {asked!r}; its namespaces are "
                f"{list(self.scope)}",
                code=ErrorCode.INVALIDATION_DENIED,
                path="$.namespace",
            )

    def writable(self, fields: dict[str, Any]) -> dict[str, Any]:
        grain: Grain = self.store.accept(fields)[0]  # refused here as put would
        self.readable(grain.namespace)
        return fields

    def facts(self, grains: Iterable[Grain], limit: int | None = None) -> list[Any]:
        seen = (g for g in grains if self.visible(g))
        return [fact_json(self.store, g, self.covers) for g in islice(seen, limit)]

    # --- tools -------------------------------------------------------------------

    def believe(
        self,
        subject: Text,
        relation: Text,
        object: Object,
        confidence: Confidence,
        namespace: Namespace | None = None,
        valid_from: When | None = None,
        valid_to: When | None = None,
        source_type: SourceType = "agent_inferred",
        context: ContextMap | None = None,
        invalidation_mode: Protection | None = None,
        justification: Text | None = None,
    ) -> dict[str, Any]:
        """Remember a belief: subject, relation, object, with a confidence in [0, 1].

        valid_from/valid_to bound when it is true in the world (default: from now
        on). A belief that conflicts with a current one on a functional relation
        may need a justification. Returns the belief as stored, with its address.
        """
        with self.store.writes_held():  # stamped now, written before any later
            fields = self.writable(
                _fields(
                    subject=subject,
                    relation=relation,
                    object=object,
                    confidence=confidence,
                    created_at=self.store.clock(),
                    namespace=self.namespace(namespace),
                    source_type=source_type,
                    valid_from=_when(valid_from, "valid_from"),
                    valid_to=_when(valid_to, "valid_to"),
                    context=context,
                    invalidation_policy=None
                    if invalidation_mode is None
                    else {"mode": invalidation_mode},
                )
            )
            address = self.store.put(fields, justification=justification)
        return fact_json(self.store, self.store.get(address), self.covers)

    def recall(
        self,
        query: Text,
        limit: Annotated[int, Strict(), Field(ge=1, le=100), WHOLE] = 10,
        namespace: Namespace | None = None,
        valid_at: When | None = None,
        as_of: When | None = None,
    ) -> dict[str, Any]:
        """Find the beliefs in force whose subject, relation or object match the words.

        Ranked best first (BM25; case and accents folded). With valid_at/as_of,
        among the beliefs of that point instead of now.
        """
        if not self.shown(namespace):
            return {"beliefs": []}  # another namespace is empty, as over HTTP
        hits = self.store.search(
            query,
            namespace=self.scope if namespace is None else namespace,
            limit=limit,
            valid_at=_when(valid_at, "valid_at"),
            as_of=_when(as_of, "as_of"),
        )
        return {"beliefs": self.facts(hits)}

    def beliefs_at(
        self,
        subject: Text | None = None,
        relation: Text | None = None,
        namespace: Namespace | None = None,
        valid_at: When | None = None,
        as_of: When | None = None,
        limit: Annotated[int, Strict(), Field(ge=1, le=1000), WHOLE] = 100,
    ) -> dict[str, Any]:
        """List the beliefs true at valid_at as known at as_of (both default to now).

        "What did we believe last Tuesday" is as_of=that day; "what was true then,
        as we knew it then" is valid_at and as_of both that day. Highest effective
        confidence first.
        """
        if not self.shown(namespace):
            return {"beliefs": []}  # another namespace is empty, as over HTTP
        grains = self.store.beliefs(
            subject,
            relation,
            namespace=namespace,
            valid_at=_when(valid_at, "valid_at"),
            as_of=_when(as_of, "as_of"),
        )
        return {"beliefs": self.facts(grains, limit)}

    def revise(
        self,
        address: Address,
        object: Object,
        confidence: Confidence | None = None,
        subject: Text | None = None,
        relation: Text | None = None,
        valid_from: When | None = None,
        valid_to: When | None = None,
        source_type: SourceType = "agent_inferred",
        context: ContextMap | None = None,
        justification: Text | None = None,
    ) -> dict[str, Any]:
        """Replace a belief by a new version, if it is entrenched at least as deeply.

        The new version keeps the old subject, relation and confidence unless
        given, and always its namespace. A user_explicit belief is not revised by an agent_inferred
        one (use supersede to override the tiers); a protected belief is refused
        by its policy (soft_locked needs a justification; locked never changes).
        """
        with self.successor(
            address,
            object,
            confidence,
            subject,
            relation,
            valid_from,
            valid_to,
            source_type,
            context,
        ) as (old, fields):
            new = self.store.revise(old, fields, justification=justification)
        return fact_json(self.store, self.store.get(new), self.covers)

    def supersede(
        self,
        address: Address,
        object: Object,
        confidence: Confidence | None = None,
        subject: Text | None = None,
        relation: Text | None = None,
        valid_from: When | None = None,
        valid_to: When | None = None,
        source_type: SourceType = "agent_inferred",
        context: ContextMap | None = None,
        justification: Text | None = None,
    ) -> dict[str, Any]:
        """Replace a belief by a new version, whatever the entrenchment tiers.

        As revise, but only the protection policies are asked: soft_locked needs a
        justification, locked and hold are refused (ERR_INVALIDATION_DENIED).
        """
        with self.successor(
            address,
            object,
            confidence,
            subject,
            relation,
            valid_from,
            valid_to,
            source_type,
            context,
        ) as (old, fields):
            new = self.store.supersede(old, fields, justification=justification)
        return fact_json(self.store, self.store.get(new), self.covers)

    @contextmanager
    def successor(
        self,
        address: str,
        object: Any,
        confidence: float | None,
        subject: str | None,
        relation: str | None,
        valid_from: str | int | None,
        valid_to: str | int | None,
        source_type: str,
        context: dict[str, Any] | None,
    ) -> Iterator[tuple[Grain, dict[str, Any]]]:
        """The belief at ``address`` and its new version's fields, stamped now,
        with the store held until the block has written it (no later-stamped
        write commits first)."""
        with self.store.writes_held():
            old = self.fact(address)
            if old.type_byte != BELIEF.byte:  # "fact" is a belief too (spec §4)
                raise SchemaError(
                    f"{address} is a {old.type}, not a belief", path="$.address"
                )
            fields = self.writable(
                _fields(
                    subject=subject or old.get("subject"),
                    relation=relation or old.get("relation"),
                    object=object,
                    confidence=old.get("confidence")
                    if confidence is None
                    else confidence,
                    created_at=self.store.clock(),
                    namespace=old.get("namespace"),
                    source_type=source_type,
                    valid_from=_when(valid_from, "valid_from"),
                    valid_to=_when(valid_to, "valid_to"),
                    context=_kept_context(old, context, subject, relation),
                    derived_from=[old.address],
                )
            )
            yield old, fields

    def retract(self, address: Address, reason: Text) -> dict[str, Any]:
        """Withdraw a belief without replacement, saying why (the reason is audited).

        A soft_locked belief is retracted only with a reason; a locked one never.
        """
        grain = self.fact(address)
        self.store.retract(grain, reason=reason)
        return fact_json(self.store, grain, self.covers)

    def evidence(
        self,
        address: Address,
        kind: Literal["supporting", "refuting"] = "supporting",
        strength: Annotated[
            float, Strict(), Field(ge=0.5, le=1.0, allow_inf_nan=False)
        ] = 0.8,
        note: Text | None = None,
    ) -> dict[str, Any]:
        """Record evidence for or against a belief; its effective confidence moves.

        A sequential test (SPRT) promotes or demotes the belief once enough evidence
        accumulates; the stated confidence never changes.
        """
        result = self.store.evidence(self.fact(address), kind, strength, note)
        return evidence_json(result)

    def history(self, address: Address) -> dict[str, Any]:
        """Show the supersession chain through a belief, oldest first."""
        return {"beliefs": self.facts(self.store.history(self.fact(address)))}

    def sparql(
        self,
        query: Query,
        valid_at: When | None = None,
        as_of: When | None = None,
        limit: Annotated[int, Strict(), Field(ge=1, le=MAX_ROWS), WHOLE] = 1000,
        valid_during: Span | None = None,
        system_during: Span | None = None,
    ) -> dict[str, Any]:
        """Run a read-only SPARQL query (SELECT, ASK, CONSTRUCT or DESCRIBE).

        Over the plain triples of the beliefs in force (subject, relation and
        object as IRIs or literals), or at a valid_at/as_of point. A range
        (valid_during, system_during) gives every triple in force at some time
        of it, each row with the extent it held in (?validFrom ?validTo
        ?systemFrom ?systemTo; an unbound end is open). SPARQL Update
        and SERVICE are refused (ERR_QUERY). At most limit rows or triples come
        back; truncated says whether there were more.
        """
        check_query(query)
        form = _UPDATE.match(query)
        if form:
            raise QueryError(
                f"sparql is read-only: {form.group(1).upper()} is SPARQL Update; "
                "change beliefs with believe, revise, supersede or retract"
            )
        if is_federated(query):
            raise QueryError(
                "SERVICE is refused: this server sends no requests elsewhere"
            )
        asked = QueryRequest(
            text=query,
            accept=_ACCEPT,
            valid_at=_when(valid_at, "valid_at"),
            as_of=_when(as_of, "as_of"),
            valid_during=_span(valid_during, "valid_during"),
            system_during=_span(system_during, "system_during"),
            namespaces=self.scope,
            limit=limit + 1,  # one more tells whether there were more
            timeout=self.query_timeout,
        )
        isolated = self.isolated()

        def answer(job: Job) -> dict[str, Any]:
            here = lambda: run_query(self.store, asked, job.check)  # noqa: E731
            return _answer(*isolated_answer(isolated, asked, job, here), limit)

        return self.within_time(answer)

    def within_time(self, work: Callable[[Job], _T]) -> _T:
        """Run a query on the query lane, refused (and stopped) at the time limit."""
        try:
            with self._lock:
                if self._lane is None:
                    self._lane = Lane("mcp-queries", workers=_WORKERS, backlog=16)
                job, future = self._lane.submit(work)
        except queue.Full:
            raise QueryError(
                "too many queries are running; try again when one has answered"
            ) from None
        try:
            return future.result(timeout=self.query_timeout)
        except (FutureTimeout, Cancelled):
            job.cancel()
            raise QueryError(
                f"the query ran past the time limit of {self.query_timeout:g} s and "
                "was stopped; narrow it or add a LIMIT"
            ) from None

    # --- resources ---------------------------------------------------------------

    def belief_resource(self, address: str) -> str:
        """One belief as JSON."""
        try:
            if not 8 <= len(address) <= 64:
                raise SchemaError(
                    f"expected an address or a prefix of 8+ hex, found {len(address)} "
                    "characters",
                    code=ErrorCode.HASH_FORMAT,
                )
            return json.dumps(fact_json(self.store, self.fact(address), self.covers))
        except NotFoundError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        except OmsError as exc:
            raise ResourceError(str(exc)) from None

    def recent_resource(self) -> str:
        """The beliefs most recently put that are in force now, newest first."""
        try:
            grains = [g for g in self.store.beliefs() if self.visible(g)]
        except OmsError as exc:
            raise ResourceError(str(exc)) from None
        grains.sort(key=system_from, reverse=True)
        return json.dumps({"beliefs": self.facts(grains, RECENT)})


def _fields(**fields: Any) -> dict[str, Any]:
    """A belief's fields, the unset ones left out (defaults are never written)."""
    return {"type": "belief", **{k: v for k, v in fields.items() if v is not None}}


def _when(value: str | int | None, name: str) -> int | None:
    return None if value is None else to_millis(value, name)


def _span(value: str | None, name: str) -> tuple[int | None, int | None] | None:
    return None if value is None else span_millis(value, name)


def _kept_context(
    old: Grain,
    context: dict[str, Any] | None,
    subject: str | None,
    relation: str | None,
) -> dict[str, Any] | None:
    """The context of a new version: the caller's, with what the old belief
    records of the terms it keeps (an adopted subject or relation written as
    N-Triples, its named graph), so they name the same terms; the caller's win."""
    before = old.get("context")
    kept: dict[str, Any] = {}
    if isinstance(before, dict):
        for key, keeps in ((SUBJECT_KIND, subject is None),
                           (PREDICATE_KIND, relation is None), (GRAPH, True)):  # fmt: skip
            if keeps and key in before:
                kept[key] = before[key]
    merged = {**kept, **(context or {})}
    return merged or None


def _answer(body: bytes, media: str, limit: int) -> dict[str, Any]:
    """A query's answer (serialised, at most ``limit + 1`` rows) as the tool's
    JSON, at most ``limit`` rows, and whether there were more."""
    if media == _NTRIPLES:  # one triple a line
        # Lines end in "\n" only: str.splitlines would also cut at U+2028,
        # U+2029 and U+0085, which N-Triples leaves as they are in a literal.
        lines = [line + "\n" for line in body.decode().split("\n") if line]
        kept = "".join(lines[:limit])
        return {"form": "graph", "ntriples": kept, "truncated": len(lines) > limit}
    answer = json.loads(body)
    if "boolean" in answer:
        return {"form": "ask", "boolean": answer["boolean"]}
    rows = answer["results"]["bindings"]
    answer["results"]["bindings"] = rows[:limit]
    return {"form": "solutions", **answer, "truncated": len(rows) > limit}
