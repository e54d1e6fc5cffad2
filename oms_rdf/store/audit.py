"""The audit log: one event per change of the store, in a hash chain.

Each event (a node in graph ``oms:audit``) records the operation, its time and, as
given, the actor, target, result, reason, count and review notes: addresses and
the caller's words, never a grain's content. Events are chained:

- ``oms:chain`` names the chain (one per store; an import may bring others),
  ``oms:sequence`` numbers the event from 1, ``oms:previous`` holds the hash of
  the event before it ("" for the first);
- ``oms:hash`` is the SHA-256 of the event's canonical content: every property
  but the hash itself, each as its value (IRIs as text, times as epoch ms),
  sorted, as compact JSON; since an IRI and a string of the same text hash
  alike, the kind of each value is checked against the one the log writes
  (IRIs for the chain, type, target and result; literals for the rest);
- the chain node carries its head, ``oms:auditHead "<sequence> <hash>"``, which
  every append replaces in the same write. An import may add the head another
  copy of the chain had; every head must match its event.

So an edited event no longer matches its hash, a removed one leaves a gap, a
reordered one breaks a link, and a cut tail disagrees with the head.
:func:`verify` names the first bad event. A chain cannot prove that nobody cut
its tail *and* rewrote its head: keep the head hash that ``verify`` returns
somewhere else to detect that too.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyoxigraph as ox

from ..backends.base import Backend
from ..errors import IntegrityError
from ..rdf.mapping import (
    Row,
    grain_iri,
    literal_value,
    millis_literal,
    nt_literal,
    rows_to_nquads,
)
from ..rdf.vocab import OMS, XSD

_G = str(OMS.audit)
_P_CHAIN, _P_SEQUENCE = str(OMS.chain), str(OMS.sequence)
_P_PREVIOUS, _P_HASH, _P_HEAD = str(OMS.previous), str(OMS.hash), str(OMS.auditHead)
_P_HASH_IRI = OMS.hash.value
_P_AUDIT_CHAIN = str(OMS.auditChain)
_EVENT = str(OMS.AuditEvent)
_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
_INTEGER = XSD.integer.value
_P_OPERATION, _P_AT, _P_TARGET = str(OMS.operation), str(OMS.at), str(OMS.target)
_P_RESULT, _P_ACTOR, _P_REASON = str(OMS.result), str(OMS.actor), str(OMS.reason)
_P_COUNT, _P_NEEDS_REVIEW = str(OMS.count), str(OMS.needsReview)


@dataclass(frozen=True, slots=True)
class Head:
    """The last event of a chain: its chain IRI, sequence number and hash."""

    chain: str
    sequence: int
    hash: str


@dataclass(frozen=True, slots=True)
class AuditReport:
    """What :func:`verify` found: how many events, each chain's head, the first fault."""

    events: int
    heads: dict[str, str]  # chain IRI -> "<sequence> <hash>" of its last event
    problem: str | None = None  # the first bad event, named, and what is wrong

    @property
    def ok(self) -> bool:
        return self.problem is None


def current_head(backend: Backend) -> Head | None:
    """The head of the store's own chain, or None before its first event (one
    query: on a server, every write and search asks it).

    Virtuoso can show another client's write half made: its old head taken
    away, the new one not yet there. Where others write, a chain without a
    head is read again a few times before it is called broken."""
    for attempt in range(_HEADLESS_READS if backend.shared else 1):
        if attempt:
            time.sleep(0.01 * attempt)
        rows = list(backend.query(_HEAD_QUERY))
        if not rows:
            return None
        chain = rows[0]["chain"]
        heads = [
            _parse_head(row["head"])
            for row in rows
            if row["chain"] == chain and row["head"] is not None
        ]
        if heads:
            sequence, digest = max(heads)
            return Head(str(chain.value), sequence, digest)
    raise IntegrityError(f"the audit chain {chain} has no head")


_HEADLESS_READS = 5


def bulk_head(backend: Backend, own: bool) -> tuple[Head | None, list[Row]]:
    """The head a bulk write's closing event extends, and the rows to delete.

    A store without a chain of its ``own`` when the write began keeps a chain
    the write brought (a restored export's) as it was, and begins its own:
    extended, the brought chain would fork from the source's later events,
    which a later export of the source brings.
    """
    head = current_head(backend)
    if head is None or own:
        return head, []
    pointer = str(OMS.settings), _P_AUDIT_CHAIN, f"<{head.chain}>", str(OMS.index)
    return None, [pointer]


_HEAD_QUERY = (
    f"SELECT ?chain ?head WHERE {{ GRAPH {OMS.index} {{ {OMS.settings} "
    f"{OMS.auditChain} ?chain }} OPTIONAL {{ GRAPH {OMS.audit} {{ ?chain "
    f"{OMS.auditHead} ?head }} }} }}"
)


def event_rows(
    operation: str,
    at: int,
    *,
    target: str | None = None,
    targets: Sequence[str] = (),
    result: str | None = None,
    actor: str | None = None,
    reason: str | None = None,
    count: int | None = None,
    review: Sequence[str] = (),
) -> list[Row]:
    """The rows of one audit event at epoch-ms ``at``, N-Triples text like a
    grain's rows; :func:`seal` chains it when it is written. ``target`` is the
    grain the event is about; ``targets``, the grains of one write about several."""
    node = f"<urn:uuid:{uuid.uuid4()}>"
    rows = [
        (node, _TYPE, _EVENT, _G),
        (node, _P_OPERATION, nt_literal(operation), _G),
        (node, _P_AT, str(millis_literal(at)), _G),
    ]
    about = targets if target is None else [target, *targets]
    rows += [(node, _P_TARGET, str(grain_iri(a)), _G) for a in about]
    if result is not None:
        rows.append((node, _P_RESULT, str(grain_iri(result)), _G))
    if actor is not None:
        rows.append((node, _P_ACTOR, nt_literal(actor), _G))
    if reason is not None:
        rows.append((node, _P_REASON, nt_literal(reason), _G))
    if count is not None:
        rows.append((node, _P_COUNT, nt_literal(str(count), _INTEGER), _G))
    rows += [(node, _P_NEEDS_REVIEW, nt_literal(note), _G) for note in review]
    return rows


def seal(
    rows: Sequence[Row], head: Head | None
) -> tuple[list[Row], list[Row], Head | None]:
    """Chain the audit events among ``rows`` after ``head``.

    Returns the rows to delete (the old head), the rows to add (each event's
    sequence, link and hash, the new head, and the chain pointer when the chain
    starts) and the new head. Events are chained in the order they first appear.
    """
    events: dict[str, list[Row]] = {}
    for row in rows:
        if row[3] == _G and row[1] == _TYPE and row[2] == _EVENT:
            events[row[0]] = []
    if not events:
        return [], [], head
    for row in rows:
        if row[0] in events:
            events[row[0]].append(row)
    delete: list[Row] = []
    insert: list[Row] = []
    if head is None:
        chain = f"urn:uuid:{uuid.uuid4()}"
        sequence, previous = 0, ""
        insert.append((str(OMS.settings), _P_AUDIT_CHAIN, f"<{chain}>", str(OMS.index)))
    else:
        chain, sequence, previous = head.chain, head.sequence, head.hash
        delete.append((f"<{chain}>", _P_HEAD, nt_literal(f"{sequence} {previous}"), _G))
    for node, event in events.items():
        sequence += 1
        links = [
            (node, _P_CHAIN, f"<{chain}>", _G),
            (node, _P_SEQUENCE, nt_literal(str(sequence), _INTEGER), _G),
            (node, _P_PREVIOUS, nt_literal(previous), _G),
        ]
        previous = digest(_content(_quads([*event, *links])))
        insert += [*links, (node, _P_HASH, nt_literal(previous), _G)]
    insert.append((f"<{chain}>", _P_HEAD, nt_literal(f"{sequence} {previous}"), _G))
    return delete, insert, Head(chain, sequence, previous)


def digest(content: dict[str, list[Any]]) -> str:
    text = json.dumps(
        content, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode()).hexdigest()


def verify(backend: Backend) -> AuditReport:
    """Check every chain in the store; the report names the first bad event."""
    events: dict[Any, list[ox.Quad]] = {}
    for quad in backend.quads(None, None, None, OMS.audit):
        events.setdefault(quad.subject, []).append(quad)
    try:
        chains, heads = _chains(events)
    except IntegrityError as fault:
        return AuditReport(len(events), {}, fault.message)
    total = sum(len(c) for c in chains.values())
    found: dict[str, str] = {}
    # A chain is known by its events or by its head alone (its events all
    # removed), and the store's own by the pointer in its settings too.
    own = [_text(q.object) for q in backend.quads(OMS.settings, OMS.auditChain,
                                                  None, OMS.index)]  # fmt: skip
    for chain in sorted(chains.keys() | heads.keys() | set(own)):
        try:
            found[chain] = _check_chain(
                chain, chains.get(chain, []), heads.get(chain, [])
            )
        except IntegrityError as fault:
            return AuditReport(total, found, fault.message)
    return AuditReport(total, found)


class _Event(NamedTuple):
    """One chained event, as :func:`verify` reads it."""

    sequence: int
    hash: str
    content: dict[str, list[Any]]
    node: Any


def _chains(
    events: dict[Any, list[ox.Quad]],
) -> tuple[dict[str, list[_Event]], dict[str, list[tuple[int, str]]]]:
    """The events of each chain, and each chain's heads (sequence, hash).

    Raises:
        IntegrityError: naming the first event that cannot be read or placed.
    """
    chains: dict[str, list[_Event]] = {}
    heads: dict[str, list[tuple[int, str]]] = {}
    for node, quads in events.items():
        try:
            if any(q.predicate == OMS.auditHead for q in quads):
                heads[_text(node)] = [
                    _parse_head(q.object) for q in quads if q.predicate == OMS.auditHead
                ]
                continue
            content = _content(quads)
            hashes = [_text(q.object) for q in quads if q.predicate == OMS.hash]
        except IntegrityError as exc:
            raise IntegrityError(f"event {node.value}: {exc.message}") from None
        chain_of = content.get(OMS.chain.value, [])
        numbers = content.get(OMS.sequence.value, [])
        if len(chain_of) != 1 or len(numbers) != 1 or len(hashes) != 1:
            raise IntegrityError(f"event {node.value} is not chained")
        if not isinstance(chain_of[0], str):
            raise IntegrityError(
                f"event {node.value} names its chain as {chain_of[0]!r}, not an IRI"
            )
        if type(numbers[0]) is not int:
            raise IntegrityError(
                f"event {node.value} has sequence {numbers[0]!r}, not an xsd:integer"
            )
        event = _Event(numbers[0], hashes[0], content, node)
        chains.setdefault(chain_of[0], []).append(event)
    return chains, heads


def _check_chain(
    chain: str, chained: list[_Event], heads: list[tuple[int, str]]
) -> str:
    """Check one chain's links, hashes and heads; return its head as verify gives it.

    Raises:
        IntegrityError: naming the first bad event of the chain.
    """
    chained.sort(key=lambda e: e.sequence)
    previous = ""
    for expected, event in enumerate(chained, 1):
        where = f"event {event.sequence} of chain {chain} ({event.node.value})"
        if event.sequence < 1:
            raise IntegrityError(f"{where} is numbered from 1: it has no place")
        if event.sequence < expected:
            raise IntegrityError(f"{where} appears twice")
        if event.sequence > expected:
            raise IntegrityError(f"event {expected} of chain {chain} is missing")
        if event.content.get(OMS.previous.value) != [previous]:
            raise IntegrityError(f"{where} does not follow the event before it")
        if digest(event.content) != event.hash:
            raise IntegrityError(f"{where} was changed: its hash does not match")
        previous = event.hash
    last = len(chained)
    for sequence, hash_ in heads:
        if sequence < 1:
            raise IntegrityError(
                f"the head of chain {chain} names event {sequence}; events count from 1"
            )
        if sequence > last:
            raise IntegrityError(
                f"chain {chain} ends at event {last}, but its head says {sequence}: "
                "events were removed"
            )
        if chained[sequence - 1].hash != hash_:
            raise IntegrityError(
                f"event {sequence} of chain {chain} does not match the head recorded "
                "for it"
            )
    if not heads:
        what = "its events and head were removed" if not chained else "it has no head"
        raise IntegrityError(f"chain {chain}: {what}")
    return f"{last} {previous}"


def check(backend: Backend) -> None:
    """Raise IntegrityError (ERR_INTEGRITY) naming the first bad event, if any."""
    report = verify(backend)
    if not report.ok:
        raise IntegrityError(f"the audit log fails its hash chain: {report.problem}")


def _content(quads: Iterable[ox.Quad]) -> dict[str, list[Any]]:
    """An event as {property IRI: sorted values}, without its own hash."""
    content: dict[str, list[Any]] = {}
    for quad in quads:
        value = quad.object
        iri = quad.predicate.value in _IRI_VALUED
        if iri != isinstance(value, ox.NamedNode) or not (
            iri or isinstance(value, ox.Literal)
        ):
            # Hashed as their text, an IRI and a literal would look alike: the
            # kind of each value is the log's, checked here instead.
            raise IntegrityError(
                f"an audit value of <{quad.predicate.value}> is {_short(value)}; the "
                f"log writes {'an IRI' if iri else 'a literal'} there"
            )
        if isinstance(value, ox.Literal):
            try:
                plain: Any = literal_value(value)
            except (TypeError, ValueError):
                raise IntegrityError(
                    f"an audit value is not valid for its type: {value}"
                ) from None
            except RecursionError:
                raise IntegrityError(
                    f"an audit value of <{quad.predicate.value}> is JSON nested too "
                    "deeply to read; the log writes only text, integers and times"
                ) from None
            if not isinstance(plain, _LOGGED):
                # The log writes text, IRIs, integers and times; anything else
                # (bytes, maps, lists) was put there by hand, and would not hash.
                raise IntegrityError(
                    f"an audit value of <{quad.predicate.value}> is a "
                    f"{type(plain).__name__} ({_short(value)}); the log writes only "
                    "text, integers and times"
                )
        else:
            plain = _text(value)
        content.setdefault(quad.predicate.value, []).append(plain)
    for values in content.values():
        kind = type(values[0])
        if all(type(v) is kind for v in values):
            values.sort()  # the order below, without a key per value
        else:
            values.sort(key=lambda v: (type(v).__name__, v))
    content.pop(_P_HASH_IRI, None)
    return content


_LOGGED = (str, int, float)  # bool is an int: sorted and hashed alike
# The properties whose values the log writes as IRIs; every other is a literal.
_IRI_VALUED = frozenset(
    p.value for p in (OMS.chain, OMS.target, OMS.result, ox.NamedNode(_TYPE[1:-1]))
)


def _short(term: Any) -> str:
    text = str(term)
    return text if len(text) <= 80 else text[:77] + "..."


def _quads(rows: Sequence[Row]) -> list[ox.Quad]:
    return list(ox.parse(rows_to_nquads(rows).encode(), ox.RdfFormat.N_QUADS))


def _text(term: Any) -> str:
    """The text of an IRI, a blank node or a literal of the log."""
    value = getattr(term, "value", None)
    if not isinstance(value, str):  # an RDF 1.2 triple term, written by hand
        raise IntegrityError(f"an audit value is a triple term: {term}")
    return value


def _parse_head(term: Any) -> tuple[int, str]:
    sequence, _, hash_ = _text(term).partition(" ")
    if not sequence.isdigit() or len(hash_) != 64:
        raise IntegrityError(
            f"an audit head must be '<sequence> <sha-256>', not {term}"
        )
    return int(sequence), hash_
