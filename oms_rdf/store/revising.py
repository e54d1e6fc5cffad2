"""Belief revision in the store: evidence (SPRT), entrenchment-ranked revision, lineage."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from pyoxigraph import Literal, NamedNode, Quad

from ..codec.grain import Grain, system_from
from ..codec.signing import SigningKey, is_envelope
from ..errors import ErrorCode, PolicyError, SchemaError
from ..rdf.mapping import grain_iri, literal_value, millis_literal
from ..rdf.vocab import OMS, RDF, XSD
from .admission import accept
from .core import Core
from .invalidation import Invalidation
from .policy import effective_mode
from .revision import LOWER, UPPER, Entrenchment, SprtState, check_observation
from .state import GrainLike, TimeLike, check_not_before, check_texts, millis_or_now

__all__ = ["EvidenceEvent", "EvidenceResult", "Revision"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceResult:
    """The state of a grain's sequential test after one observation."""

    address: str
    log_ratio: float
    status: str  # accumulating | promoted | demoted
    effective_confidence: float
    upper: float = UPPER  # promote at or above
    lower: float = LOWER  # demote at or below
    changed: bool = False  # this observation moved the status


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceEvent:
    """One recorded observation, and the grain's test just after it."""

    at: int  # epoch ms
    kind: str  # supporting | refuting
    strength: float
    log_ratio: float
    status: str  # accumulating | promoted | demoted
    effective_confidence: float
    note: str | None = None
    by: str | None = None


def _double(value: float) -> Literal:
    return Literal(repr(float(value)), datatype=XSD.double)


@dataclass(frozen=True, slots=True)
class Observation:
    """One observation for or against a grain, as :meth:`Revision.evidence` takes it."""

    kind: str  # supporting | refuting
    strength: float
    at: int  # epoch ms
    note: str | None
    by: str | None


def _evidence_quads(
    node: NamedNode,
    observed: Observation,
    before: SprtState,
    after: SprtState,
    effective: float,
) -> list[Quad]:
    """The index quads of one observation: its own node (time, kind, strength,
    note, who), and the grain's test state just after it."""
    idx = OMS.index
    event = NamedNode(f"urn:uuid:{uuid.uuid4()}")
    insert = [
        Quad(event, RDF.type, OMS.Evidence, idx),
        Quad(event, OMS.evidenceFor, node, idx),
        Quad(event, OMS.evidenceKind, Literal(observed.kind), idx),
        Quad(event, OMS.strength, _double(observed.strength), idx),
        Quad(event, OMS.at, millis_literal(observed.at), idx),
        Quad(event, OMS.logRatio, _double(after.log_ratio), idx),
        Quad(node, OMS.logRatio, _double(after.log_ratio), idx),
        Quad(node, OMS.sprtStatus, Literal(after.status), idx),
        Quad(node, OMS.effectiveConfidence, _double(effective), idx),
    ]
    if after.status != before.status:
        insert.append(Quad(node, OMS.sprtEntered, Literal(after.status), idx))
    if observed.note is not None:
        insert.append(Quad(event, OMS.note, Literal(observed.note), idx))
    if observed.by is not None:
        insert.append(Quad(event, OMS.actor, Literal(observed.by), idx))
    return insert


def _event_fields(values: dict[Any, Any]) -> dict[str, Any]:
    """The recorded fields of one evidence node, by their EvidenceEvent names."""
    return {
        "at": literal_value(values[OMS.at]),
        "kind": values[OMS.evidenceKind].value,
        "strength": float(values[OMS.strength].value),
        "log_ratio": float(values[OMS.logRatio].value),
        "note": values[OMS.note].value if OMS.note in values else None,
        "by": values[OMS.actor].value if OMS.actor in values else None,
    }


def _fields_of(new: GrainLike) -> Mapping[str, Any]:
    """The fields of a revision's new grain, to rank; its signature, if any, is
    checked where it is superseded (a grain with the signed flag may come bare
    with ``signer=``, which signs it there).

    Raises:
        SchemaError: ERR_SCHEMA for what is no grain; as :func:`.admission.accept`
            for bytes.
    """
    if isinstance(new, Grain):
        return new.fields
    if isinstance(new, bytes | bytearray | memoryview):
        data = bytes(new)
        return (accept(data)[0] if is_envelope(data) else Grain.from_blob(data)).fields
    if isinstance(new, Mapping):
        return new
    raise SchemaError(
        "expected a Grain, a mapping of fields, blob bytes or a COSE_Sign1 envelope "
        f"as the new grain; found {type(new).__name__}"
    )


def _stated(grain: Grain) -> float:
    """The confidence a grain states; absent, a number's nominal default, 0
    (spec §2.1)."""
    confidence: float = grain.get("confidence", 0.0)
    return confidence


def _effective(grain: Grain, state: SprtState, at: int) -> float:
    """The confidence a grain has after the test reached ``state`` at ``at``: its
    stated one moved by what the test decided, unless it was ``locked`` then (an
    axiom keeps what it states)."""
    locked = effective_mode(grain.get("invalidation_policy"), at) == "locked"
    return _stated(grain) if locked else state.effective(_stated(grain))


def _in_order(
    tied: list[dict[str, Any]], state: SprtState
) -> list[tuple[dict[str, Any], SprtState]]:
    """Observations recorded in one millisecond, in the order their recorded log
    ratios follow one from the other from ``state``, each with the state after it.

    A depth-first search, since two orders can agree at one step (a refutation
    and a support can leave equal ratios) and only one all through; events alike
    (kind, strength, ratio) are tried once at a step. When no order agrees
    exactly (a ratio rounded elsewhere), the closest is taken at each step.
    """
    path: list[tuple[dict[str, Any], SprtState]] = []
    frames = [(state, tied, iter(tied), set[tuple[Any, ...]]())]
    while frames:
        now, left, candidates, tried = frames[-1]
        if not left:
            return path
        for event in candidates:
            alike = (event["kind"], event["strength"], event["log_ratio"])
            if alike not in tried and _distance(now, event) <= 1e-9:
                tried.add(alike)
                after = now.observe(event["kind"], event["strength"])
                path.append((event, after))
                rest = [e for e in left if e is not event]
                frames.append((after, rest, iter(rest), set()))
                break
        else:  # no event agrees here: back one step
            frames.pop()
            if path:
                path.pop()
    ordered, left = [], list(tied)
    while left:  # the closest at each step
        event = min(left, key=lambda e: _distance(state, e))
        state = state.observe(event["kind"], event["strength"])
        ordered.append((event, state))
        left.remove(event)
    return ordered


def _distance(state: SprtState, event: dict[str, Any]) -> float:
    """How far the recorded ratio of ``event`` is from observing it at ``state``."""
    recorded: float = event["log_ratio"]
    return abs(state.observe(event["kind"], event["strength"]).log_ratio - recorded)


class Revision:
    """Evidence (SPRT) and entrenchment-ranked revision."""

    def __init__(
        self,
        core: Core,
        invalidation: Invalidation,
        entrenchment: Entrenchment,
        authorized: frozenset[str],
    ) -> None:
        self.core = core
        self.invalidation = invalidation  # a revision is a supersession
        self.entrenchment = entrenchment
        self.authorized = authorized  # DIDs that may force a revision

    def evidence(
        self,
        address: str | Grain,
        kind: str = "supporting",
        strength: float = 0.8,
        note: str | None = None,
        *,
        at: TimeLike = None,
        by: str | None = None,
    ) -> EvidenceResult:
        """Record an observation for or against a grain and update its SPRT state.

        Each event is its own node in ``oms:index`` (time, kind, strength, note); the
        grain's log ratio, status and effective confidence are updated in the same
        atomic write. The blob's confidence never changes, and evidence never
        supersedes anything.

        A grain whose policy is ``locked`` now (an axiom) keeps its stated
        confidence: the observation and the test's state are recorded, for a
        person to weigh, but evidence does not promote or demote an axiom; only
        what may revise it (nothing, while it is locked) could change it.

        Raises:
            SchemaError: ERR_RANGE for a strength outside [0.5, 1] (see
                :mod:`oms_rdf.store.revision` on weak support), ERR_SCHEMA for an
                unknown kind.
            PolicyError: ERR_CONFLICT for a grain that is superseded, retracted or
                contradicted.
        """
        check_texts(kind=kind, note=note, by=by)
        check_observation(kind, strength)  # before the grain's state is weighed
        when = millis_or_now(at, self.core.clock, "at")
        with self.core.lock:
            address = self.core.resolve(address)
            grain = self.core.get(address)
            check_not_before(when, system_from(grain), "record evidence")
            state = self.core.status(address)
            if not state.is_current:
                raise PolicyError(
                    f"evidence refused: {address[:12]}… is {state.status}"
                    f"{', ' + state.verification if state.verification == 'contradicted' else ''}; "
                    "evidence bears on current beliefs only",
                    code=ErrorCode.CONFLICT,
                )
            before = SprtState(
                state.log_ratio,
                state.sprt_status,
                state.sprt_entered,
            )
            after = before.observe(kind, strength)
            effective = _effective(grain, after, when)
            node, idx = grain_iri(address), OMS.index
            observed = Observation(kind, strength, when, note, by)
            insert = _evidence_quads(node, observed, before, after, effective)
            kept = (OMS.logRatio, OMS.sprtStatus, OMS.effectiveConfidence)
            delete = [
                q
                for q in self.core.backend.quads(node, None, None, idx)
                if q.predicate in kept
            ]
            reason = (
                f"{kind} {strength:g}: {after.status}"  # the note stays in the index
            )
            rows = self.core.audit_rows(
                "evidence", target=address, actor=by, reason=reason, at=when
            )
            if self.core.pending is not None:  # a transaction's: one change a grain
                self.core.pending.touch([address])
            self.core.write(delete, [*insert, *rows])
        return EvidenceResult(
            address=address,
            log_ratio=after.log_ratio,
            status=after.status,
            effective_confidence=effective,
            changed=after.status != before.status,
        )

    def evidence_log(self, address: str | Grain) -> list[EvidenceEvent]:
        """Return the observations recorded for a grain, oldest first, each with the
        log ratio, status and effective confidence the grain had just after it.

        Observations made in the same millisecond are put in the order their
        recorded log ratios follow one from the other.
        """
        address = self.core.resolve(address)
        grain = self.core.get(address)
        idx = OMS.index
        events = []
        for q in self.core.backend.quads(
            None, OMS.evidenceFor, grain_iri(address), idx
        ):
            values: dict[Any, Any] = {
                p.predicate: p.object
                for p in self.core.backend.quads(q.subject, None, None, idx)
            }
            events.append(_event_fields(values))
        events.sort(key=lambda e: e["at"])
        log, state = [], SprtState()
        while events:
            tied = [e for e in events if e["at"] == events[0]["at"]]
            for event, after in _in_order(tied, state):
                events.remove(event)
                status = {
                    "status": after.status,
                    "effective_confidence": _effective(grain, after, event["at"]),
                }
                log.append(EvidenceEvent(**event | status))
                state = after
        return log

    def effective_confidence(self, address: str | Grain) -> float:
        """The grain's confidence as the store reports it: adjusted by earned evidence."""
        address = self.core.resolve(address)
        state = self.core.status(address)
        if state.effective_confidence is not None:
            return state.effective_confidence
        return _stated(self.core.get(address))

    def revise(
        self,
        old: str | Grain,
        new: GrainLike,
        *,
        force: bool = False,
        by: str | None = None,
        justification: str | None = None,
        signer: SigningKey | None = None,
    ) -> str:
        """Supersede ``old`` by ``new`` only if ``new`` is entrenched at least as deeply.

        Tiers (:class:`oms_rdf.store.revision.Entrenchment`): axioms > user-stated >
        system-inferred. ``force=True`` overrides the tiers (never the protection
        policies) when ``by`` is one of the store's ``authorized`` DIDs; the
        override is audited. ``justification`` is given to :meth:`supersede` as
        is: forcing does not justify overriding a ``soft_locked`` grain.

        Raises:
            PolicyError: ERR_INVALIDATION_DENIED when the tiers refuse, or ``force``
                comes from a DID the store does not authorize; as :meth:`supersede`.
        """
        check_texts(by=by, justification=justification)
        old_grain = self.core.get(self.core.resolve(old))
        fields = _fields_of(new)
        if force:
            if by is None or by not in self.authorized:
                raise PolicyError(
                    f"force=True needs by= one of the store's authorized DIDs; {by!r} is not",
                    code=ErrorCode.INVALIDATION_DENIED,
                )
            # Forcing overrides the tiers, never a policy: a soft_locked grain
            # still needs the caller's justification (spec §8.3). The supersession
            # and its audit are one write: a transaction of their own, or of the
            # caller's.
            tier = self.entrenchment.tier
            tiers = f"{tier(old_grain.fields).name} -> {tier(fields).name}"
            with ExitStack() as own:
                if self.core.pending is None:
                    own.enter_context(
                        self.core.transaction(event="revise(force)", actor=by)
                    )
                address = self.invalidation.supersede(
                    old_grain, new, justification=justification, by=by, signer=signer
                )
                rows = self.core.audit_rows(
                    "revise(force)",
                    target=old_grain.address,
                    result=address,
                    actor=by,
                    reason=f"entrenchment overridden: {tiers}",
                    review=[f"revise(force) by {by}: entrenchment overridden: {tiers}"],
                )
                self.core.write([], rows)
            return address
        self.entrenchment.check(old_grain.fields, fields)
        return self.invalidation.supersede(
            old_grain, new, justification=justification, by=by, signer=signer
        )
