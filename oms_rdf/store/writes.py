"""Putting grains into the store: conflicts on functional relations, consent withdrawal."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import TypeVar

from pyoxigraph import DefaultGraph, Literal, NamedNode, Quad, Variable

from ..codec.grain import Grain
from ..codec.schema import BELIEF, CONSENT
from ..errors import ConflictWarning, ErrorCode, OmsError, PolicyError, StoreError
from ..rdf.mapping import Row, address_of, grain_iri, millis_literal, subject_pattern
from ..rdf.sparql import QUERIES, as_rows, quad_row
from ..rdf.vocab import OMS
from .admission import accept, check_new
from .consent import foreign_withdrawal, is_withdrawal, withdrawals_of, withdraws
from .core import Core
from .erasure import erased_addresses, refuse_erased
from .invalidation import Invalidation
from .policy import effective_mode
from .presence import stored_grains
from .progress import Stage
from .revision import Entrenchment, conflicts
from .state import GrainLike, Signature, check_many, check_texts

T = TypeVar("T")


_GRAIN_LAYER = DefaultGraph()  # the grain layer: only the store writes there


class Writes:
    """put and put_many: conflicts on functional relations, consent withdrawal."""

    def __init__(
        self,
        core: Core,
        invalidation: Invalidation,
        entrenchment: Entrenchment,
        functional_relations: frozenset[str],
        auto_revise: bool,
    ) -> None:
        self.core = core
        self.invalidation = invalidation  # auto-revision supersedes
        self.entrenchment = entrenchment
        self.functional_relations = functional_relations
        self.auto_revise = auto_revise

    def put(self, item: GrainLike, /, *, justification: str | None = None) -> str:
        """Store a grain; return its address. Storing the same bytes again is a no-op.

        ``item`` is a :class:`Grain`, a mapping of fields, a blob, or the COSE_Sign1
        envelope of a signed grain (verified, kept, its signer recorded).

        A belief on one of the store's functional relations that disagrees with a
        current belief (same subject, relation and namespace, another object,
        overlapping valid time) either supersedes it, when the store auto-revises
        and entrenchment and protection allow, or both are marked ``disputed``,
        linked by ``oms:conflictsWith`` and reported with a :class:`ConflictWarning`.
        Auto-revision of a ``soft_locked`` rival needs a justification from the
        caller: the new grain's ``supersession_justification``, else
        ``justification`` (recorded with the supersession and flagged for review);
        without one the rival stays and both are disputed (spec §8.3).
        A consent withdrawal marks the grains whose ``processing_basis`` names the
        withdrawn consent and whose policy is ``consent_cascade`` as pending erasure
        (see :meth:`pending_erasure`); grains under a ``hold`` are not marked.

        Raises:
            DecodeError, EncodeError, SchemaError: the grain is invalid.
            SignatureError: a bad envelope, or a signed-flag grain without one.
            PolicyError: ERR_INVALIDATION_DENIED when ``derived_from`` names a current
                protected grain with the same subject, relation and namespace: that
                is a supersession, which must go through :meth:`supersede`.
        """
        check_texts(justification=justification)
        grain, signature = accept(item)
        with self.core.lock:
            if grain.address in self.core:
                return grain.address
            refuse_erased(self.core.backend, grain.address)  # erasure is one-way
            check_new(self.core, grain)
            if (foreign := foreign_withdrawal(self.core, grain)) is not None:
                raise foreign
            rivals = self._rivals(grain, self._made_rivals(grain))
            refusal = (
                self._auto_revise(grain, signature, rivals, justification)
                if rivals
                else None
            )
            if refusal == "":
                return grain.address  # superseded its one rival
            rows = self.core.rows_for(grain, signature)
            delete, extra = self._dispute(grain, rivals, refusal)
            extra += self._withdrawal(grain) + self._after_withdrawal(grain)
            extra += self._withdrawn_before(grain)
            rows += as_rows(self.core.audit_rows("put", target=grain.address))
            if extra:
                rows = [r for r in rows if r not in delete]
                self.core.write([d for d in delete if d not in rows], [*rows, *extra])
            else:
                self.core.write([], rows)
        return grain.address

    def put_many(
        self, items: Iterable[GrainLike], /, *, progress: Stage | None = None
    ) -> list[str]:
        """Store many grains in one atomic write; return their addresses in order.

        Conflicts on functional relations are marked as disputes (a batch never
        auto-revises); consent withdrawals cascade as in :meth:`put`.
        ``progress`` is told of each long phase as it begins: mapping the grains,
        then writing and compacting a large write (see :mod:`.progress`).

        Raises:
            as :meth:`put`; nothing is stored when any grain is refused.
        """
        check_many(items, "items")
        accepted = [_numbered(accept, i, item) for i, item in enumerate(items)]
        with self.core.lock:
            seen: set[str] = set()
            fresh: list[tuple[Grain, Signature | None]] = []
            empty = self.core.is_empty()  # then no grain is stored already: no lookups
            erased = erased_addresses(self.core.backend)  # a few tombstones, read once
            nodes = {str(grain_iri(g.address)) for g, _ in accepted}
            held = set() if empty else stored_grains(self.core.backend, nodes)
            for grain, signature in accepted:
                if grain.address in seen or str(grain_iri(grain.address)) in held:
                    continue
                if grain.address in erased:
                    refuse_erased(
                        self.core.backend, grain.address
                    )  # erasure is one-way
                seen.add(grain.address)
                fresh.append((grain, signature))
            delete, extra = self._checked(fresh, progress)
            # Every check has passed: the grains' rows are made as they are written.
            rows = (
                row
                for g, signature in fresh
                for row in self.core.rows_for(g, signature)
            )
            audit = as_rows(self.core.audit_rows("put_many", count=len(fresh)))
            bulk = empty or self.core.backend.shared
            if not extra and bulk and self.core.pending is None:
                # Too large for one transaction, perhaps (a server may take far less
                # in one request than in process): journalled, bulk-loaded on disk,
                # each chunk loaded while the next is made.
                with self.core.bulk(stage=progress) as journal:
                    journal.write(rows, grains=len(fresh))
                    journal.finish(audit, rebuild=False)  # the rows hold the knowledge
                return [g.address for g, _ in accepted]
            made = [*rows, *audit]
            if extra:
                # Verification marks of grains new in this batch are replaced in the
                # rows; those of stored grains are deleted by the same update.
                new_rows, dropped = set(made), set(delete)
                made = [r for r in made if r not in dropped]
                stored = [d for d in delete if d not in new_rows]
                self.core.write(stored, [*made, *extra])
            else:
                self.core.write([], made)
        return [g.address for g, _ in accepted]

    def _checked(
        self, fresh: list[tuple[Grain, Signature | None]], progress: Stage | None
    ) -> tuple[list[Row], list[Quad | Row]]:
        """Check a batch's new grains as :meth:`put` does, in order; return
        the rows their disputes take away and the rows they add beside their
        own (disputes, consent withdrawals honoured)."""
        delete: list[Row] = []
        extra: list[Quad | Row] = []
        batch = {g.address: g for g, _ in fresh}
        earlier: list[Grain] = []
        tick = None if progress is None else progress("mapping", len(fresh))
        consents = {a: g for a, g in batch.items() if g.type_byte == CONSENT.byte}
        withdrawn = {  # consents withdrawn in the batch: its dependents too
            g.get("prior_consent")
            for g in consents.values()
            if withdraws(self.core, g, consents)
        }
        for grain, _signature in fresh:
            check_new(self.core, grain, batch)
            if (refusal := foreign_withdrawal(self.core, grain, consents)) is not None:
                raise refusal
            if self.functional_relations or grain.type_byte == CONSENT.byte:
                rivals = self._rivals(grain, [*self._made_rivals(grain), *earlier])
                removed, added = self._dispute(grain, rivals)
                delete += removed
                extra += added + self._withdrawal(grain, consents)
                earlier.append(grain)
            extra += self._after_withdrawal(grain, withdrawn)
            extra += self._withdrawn_before(grain)
            if tick is not None:
                tick(1)
        return delete, extra

    # --- conflicts on functional relations --------------------------------------

    def _made_rivals(self, grain: Grain) -> list[Grain]:
        """The beliefs of the same subject an open transaction made so far: a
        put that contradicts one is refused in :meth:`_rivals` (neither marking
        it disputed nor superseding it can be written before the end)."""
        pending, subject = self.core.pending, grain.get("subject")
        if pending is None or grain.get("relation") not in self.functional_relations:
            return []
        return [g for g in pending.made.values() if g.get("subject") == subject]

    def _rivals(self, grain: Grain, batch: Sequence[Grain] = ()) -> list[Grain]:
        """Current beliefs (stored or earlier in the batch) this belief contradicts."""
        if (
            grain.type_byte != BELIEF.byte
            or grain.get("relation") not in self.functional_relations
        ):
            return []
        # The subject's current beliefs, by pattern: a handful of grains.
        by, term = subject_pattern(grain["subject"])
        stored = [
            self.core.get(address_of(q.subject))
            for q in self.core.backend.quads(None, by, term, _GRAIN_LAYER)
            if isinstance(q.subject, NamedNode)
            and next(
                self.core.backend.quads(q.subject, OMS.systemTo, None, OMS.index), None
            )
            is None
        ]
        # Beliefs only: another grain type with a subject and relation (an
        # event, say) asserts nothing a belief could dispute or revise.
        candidates = [
            g
            for g in [*stored, *batch]
            if g.address != grain.address and g.type_byte == BELIEF.byte
        ]
        found = [
            candidates[i]
            for i in conflicts(grain.fields, [g.fields for g in candidates])
        ]
        changed = self.core.pending.changed if self.core.pending is not None else ()
        for rival in found:
            if rival.address in changed:
                raise StoreError(
                    f"{grain.address[:12]}… contradicts {rival.address[:12]}… on the "
                    f"functional relation {grain['relation']!r}, and an earlier "
                    "operation of this transaction made or changed that one, so "
                    "neither a dispute nor a revision can be written: put both with "
                    "one put_many, or in transactions of their own",
                    code=ErrorCode.CONFLICT,
                )
        return found

    def _auto_revise(
        self,
        grain: Grain,
        signature: Signature | None,
        rivals: list[Grain],
        justification: str | None,
    ) -> str | None:
        """Supersede the one rival when the store auto-revises and the rules allow.

        ``justification`` is the caller's (put's): the store gives none of its own,
        so a soft_locked rival is superseded only when the caller justified it.

        Returns "" when it did; otherwise why not (recorded with the dispute), or
        None when the store does not auto-revise.
        """
        if not self.auto_revise:
            return None
        if len(rivals) != 1:
            return f"auto-revision refused: {len(rivals)} current rivals, not one"
        rival = rivals[0]
        mine, theirs = (self.entrenchment.tier(g.fields) for g in (grain, rival))
        if mine < theirs:
            return (
                f"auto-revision refused: entrenchment tier {mine} is below the "
                f"rival's {theirs}"
            )
        try:
            # A signed grain goes as its envelope: supersede checks it again.
            new = grain if signature is None else signature.envelope
            self.invalidation.supersede(rival, new, justification=justification)
        except PolicyError as exc:  # protected, or older than the rival
            return f"auto-revision refused: {exc.code}: {exc.message}"
        return ""

    def _dispute(
        self, grain: Grain, rivals: list[Grain], refusal: str | None = None
    ) -> tuple[list[Row], list[Quad | Row]]:
        """Mark a belief and its rivals disputed and linked, and warn; ``refusal``
        says why auto-revision did not settle it (in the warning and the audit).

        Returns the verification rows to remove and the quads to add.
        """
        if not rivals:
            return [], []
        # By address: the audit event is the same whatever order a backend reads.
        rivals = sorted(rivals, key=lambda r: r.address)
        idx, verification = OMS.index, OMS.verificationStatus
        node = grain_iri(grain.address)
        delete = [quad_row(Quad(node, verification, OMS.unverified, idx))]
        insert: list[Quad | Row] = [Quad(node, verification, OMS.disputed, idx)]
        for rival in rivals:
            other = grain_iri(rival.address)
            insert += [
                Quad(node, OMS.conflictsWith, other, idx),
                Quad(other, OMS.conflictsWith, node, idx),
            ]
            state = (
                self.core.status(rival.address) if rival.address in self.core else None
            )
            current = "unverified" if state is None else state.verification
            if current != "disputed":
                delete.append(
                    quad_row(Quad(other, verification, getattr(OMS, current), idx))
                )
                insert.append(Quad(other, verification, OMS.disputed, idx))
        names = ", ".join(f"{r['object']!r} ({r.address[:12]}…)" for r in rivals)
        rival_addresses = ", ".join(
            r.address for r in rivals
        )  # the audit keeps no content
        why = "" if refusal is None else f"; {refusal}"
        warnings.warn(
            ConflictWarning(
                f"{grain['subject']} {grain['relation']} {grain['object']!r} conflicts with "
                f"{names}; both are marked disputed (functional relation){why}"
            ),
            stacklevel=4,
        )
        insert += self.core.audit_rows(
            "conflict",
            target=grain.address,
            reason=f"conflicts with {rival_addresses}{why}",
        )
        return delete, insert

    def conflicts(self) -> list[tuple[str, str]]:
        """Return the disputed pairs recorded on functional relations, each once."""
        pairs = set()
        for q in self.core.backend.quads(None, OMS.conflictsWith, None, OMS.index):
            a, b = (
                address_of(t)  # type: ignore[arg-type]
                for t in (q.subject, q.object)
            )
            pairs.add((min(a, b), max(a, b)))
        return sorted(pairs)

    # --- consent withdrawal (consent_cascade, spec §8.3) ------------------------

    def honour_withdrawals(
        self, grains: Iterable[Grain], dependents: Iterable[Grain] = ()
    ) -> None:
        """Mark the dependents of consents an import withdrew, and the dependents
        it brought of consents withdrawn before, as ``put`` does (spec §5 Consent:
        a withdrawal is honoured at once), in one write after the import."""
        with self.core.lock:
            rows = [row for grain in grains for row in self._withdrawal(grain)]
            marked = {
                row.subject
                for row in rows
                if isinstance(row, Quad) and row.predicate == OMS.pendingErasure
            }
            for grain in dependents:
                if grain_iri(grain.address) not in marked and (
                    self.core.status(grain.address).pending_erasure is None
                ):
                    rows += self._after_withdrawal(grain)
            if rows:
                self.core.write([], rows)

    def _after_withdrawal(
        self, grain: Grain, withdrawn: Container[str] = ()
    ) -> list[Quad | Row]:
        """A ``consent_cascade`` grain whose processing basis was withdrawn
        already (or is by a grain arriving with it, ``withdrawn``): pending
        erasure from the start, as its elders are (spec §5 Consent: a
        withdrawal is honoured at once, for what comes later too)."""
        basis = grain.get("processing_basis")
        if (
            not isinstance(basis, str)
            or effective_mode(grain.get("invalidation_policy"), self.core.clock())
            != "consent_cascade"
        ):
            return []
        if basis not in withdrawn and not withdrawals_of(self.core, basis):
            return []
        now = self.core.clock()
        mark = Quad(
            grain_iri(grain.address), OMS.pendingErasure, millis_literal(now), OMS.index
        )
        return [mark, *self.core.audit_rows("consent_withdrawn", target=grain.address,
                                           reason="its processing basis was withdrawn before", count=1)]  # fmt: skip

    def _withdrawn_before(self, grain: Grain) -> list[Quad | Row]:
        """A Consent whose own withdrawal came first: its dependents are
        marked now, as the withdrawal would have marked them."""
        if grain.type_byte != CONSENT.byte or is_withdrawal(grain):
            return []
        mine = {grain.address: grain}
        found = withdrawals_of(self.core, grain.address, mine)
        return [row for w in found for row in self._withdrawal(w, mine)]

    def _withdrawal(
        self, grain: Grain, consents: Mapping[str, Grain] = {}
    ) -> list[Quad | Row]:
        """Pending-erasure marks for the dependents of the consent ``grain``
        withdraws, its own (:mod:`.consent`; ``consents``: arriving with it)."""
        if not withdraws(self.core, grain, consents):
            return []
        withdrawn = grain.get("prior_consent")
        now = self.core.clock()
        rows = self.core.backend.query(
            QUERIES["consent_dependents"], {Variable("consent"): Literal(withdrawn)}
        )
        quads: list[Quad | Row] = []
        marked = held = 0
        for row in rows:
            address = address_of(row["g"])
            mode = effective_mode(
                self.core.get(address).get("invalidation_policy"), now
            )
            if mode == "hold":
                held += 1  # a hold overrides consent withdrawal (spec §8.3)
            elif (
                mode == "consent_cascade"
                and self.core.status(address).pending_erasure is None
            ):
                quads.append(
                    Quad(
                        grain_iri(address),
                        OMS.pendingErasure,
                        millis_literal(now),
                        OMS.index,
                    )
                )
                marked += 1
        reason = f"{marked} grains pending erasure, {held} held"
        return quads + self.core.audit_rows(
            "consent_withdrawn", target=grain.address, reason=reason, count=marked
        )

    def pending_erasure(self) -> list[str]:
        """Addresses of grains pending erasure after their consent was withdrawn."""
        return sorted(
            address_of(q.subject)  # type: ignore[arg-type]
            for q in self.core.backend.quads(None, OMS.pendingErasure, None, OMS.index)
        )


def _numbered(accept: Callable[[GrainLike], T], index: int, item: GrainLike) -> T:
    """Accept one item of a batch; a refusal names the item's place in the batch."""
    try:
        return accept(item)
    except OmsError as exc:
        path = f"[{index}]{exc.path or ''}"
        raise type(exc)(
            f"item {index}: {exc.message}", code=exc.code, path=path
        ) from exc
