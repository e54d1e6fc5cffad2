"""Supersession, retraction, contradiction and verification, under the policies."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pyoxigraph import Quad

from ..codec.grain import Grain, system_from
from ..codec.signing import SigningKey, sign
from ..errors import ErrorCode, PolicyError, SchemaError, TimeRangeError
from ..rdf.mapping import (
    BELIEF_BYTE,
    Row,
    address_of,
    grain_iri,
    truthy_triple,
)
from ..rdf.vocab import OMS
from .admission import accept, check_new, successor_fields
from .core import Core
from .index_rows import split_rows, superseded_rows, voided_rows
from .lookup import believers
from .policy import check
from .portion import (
    check_portion,
    over_portion,
    pieces,
    portion_of,
    rest_of,
)
from .protectors import cosigners, protectors, transition
from .questions import Questions
from .state import (
    VERIFICATION_ALIASES,
    VERIFICATIONS,
    GrainLike,
    Signature,
    TimeLike,
    check_many,
    check_not_before,
    check_signing,
    check_texts,
    millis_or_now,
)


@dataclass(frozen=True, slots=True)
class _Authority:
    """What a supersession brings to the policies: the new grain, its verified
    signature, who asks and why."""

    grain: Grain
    signature: Signature | None
    by: str | None
    reason: str | None  # what the policies weigh: the grain's, else the caller's
    said: str | None  # the caller's own words, the only ones recorded


@dataclass(slots=True, kw_only=True)
class Change:
    """One write, checked and not yet made: what it deletes and inserts, the grains
    it takes out of the knowledge (still current: re-checked) and all it changes."""

    delete: list[Quad | Row] = field(default_factory=list)
    insert: list[Quad | Row] = field(default_factory=list)
    current: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)


class Invalidation:
    """Index mutations, each checked against the protection policies, each atomic."""

    def __init__(self, core: Core, questions: Questions) -> None:
        self.core = core
        self.questions = questions  # a grain's chain, for the lineage policies

    def _current_removal(
        self, grain: Grain, leaving: frozenset[str] = frozenset()
    ) -> list[Quad]:
        """The knowledge quad of a grain leaving the current view, unless shared.

        ``leaving``: addresses of grains leaving in the same write, which keep
        nothing current (the grain itself never does; it need not be in it); so
        do those an earlier operation of the open transaction takes out.
        """
        me, core = grain_iri(grain.address), self.core
        # What a belief node asserts is kept by node: its terms are not built again.
        belief = grain.type_byte == BELIEF_BYTE
        quad = core.facts.knowledge(core.backend, me) if belief else None
        quad = quad or truthy_triple(grain, core.settings)
        if quad is None:
            return []
        closed = core.pending.closed if core.pending is not None else ()
        for other in believers(core.backend, quad, leaving, core.facts):
            if other != me and address_of(other) not in closed:
                return []  # another belief held asserts it: the triple stays
        return [quad]

    def supersede(
        self,
        old: str | Grain,
        new: GrainLike,
        *,
        justification: str | None = None,
        by: str | None = None,
        auth: Sequence[bytes] = (),
        signer: SigningKey | None = None,
        valid_from: TimeLike = None,
        valid_to: TimeLike = None,
    ) -> str:
        """Replace ``old`` by ``new`` atomically; return the new address.

        With ``valid_from`` (and ``valid_to``; none: no end), ``new`` replaces
        ``old`` for that portion of valid time only (SQL:2011 ``FOR PORTION OF``):
        a mapping ``new`` takes the portion as its valid time, and the pieces of
        ``old`` outside it are written as new grains derived from ``old``, in the
        same write, under the same policy check (see :mod:`.portion`).

        A mapping ``new`` without ``derived_from`` gets ``derived_from: [old]`` (the
        spec's supersession shape), ``justification`` as its
        ``supersession_justification`` and ``auth`` (co-signatures from
        :func:`oms_rdf.codec.signing.sign_supersession`) as its ``supersession_auth``.
        With ``signer`` the new grain is encoded with the signed flag and wrapped
        in a COSE_Sign1 envelope by that key; ``new`` may also be such an envelope.
        The old grain is closed at the new grain's system time; it keeps
        describing the past up to the new grain's ``valid_from``.

        Raises:
            NotFoundError: ``old`` is not stored.
            PolicyError: ERR_INVALIDATION_DENIED when a policy protecting ``old``
                refuses (``delegated`` needs a signer in ``authorized``, ``quorum``
                needs ``threshold`` valid co-signatures); ERR_CONFLICT when ``old``
                is no longer current; ERR_RANGE when the new grain is older.
            SignatureError: a bad envelope, or the signed flag and envelope disagree.
        """
        check_texts(justification=justification, by=by)
        check_signing(signer, auth)
        portion = portion_of(valid_from, valid_to)
        with self.core.lock:
            old_address = self.core.resolve(old)
            old_grain = self.core.get(old_address)
            self._require_current(old_address)
            if portion is not None:
                check_portion(old_grain, *portion)
                new = over_portion(new, portion, old_grain)
            new_grain, signature = self._successor(
                old_address, new, justification, auth, signer
            )
            if new_grain.address == old_address:
                raise PolicyError(
                    "a grain cannot supersede itself", code=ErrorCode.CONFLICT
                )
            if new_grain.address in self.core:
                self._require_current(new_grain.address, "successor")
            at = system_from(new_grain)
            if at < system_from(old_grain):
                raise TimeRangeError(
                    f"the new grain's system time {at} is before the old grain's "
                    f"{system_from(old_grain)}; a successor cannot be older",
                    code=ErrorCode.RANGE,
                )
            # The policies weigh the new grain's justification, else the
            # caller's; the index, the audit and the review notes record the
            # caller's words only: the grain's are its content, erased with it.
            reason = new_grain.get("supersession_justification") or justification
            authority = _Authority(new_grain, signature, by, reason, justification)
            review = self._authorized(old_grain, authority)
            rest = [
                accept(p)[0] for p in rest_of(old_grain, new_grain, portion, at, reason)
            ]
            if new_grain.address not in self.core:
                # A merge names other current grains of the claim too: those the
                # caller may supersede as well are no supersession in disguise.
                check_new(
                    self.core,
                    new_grain,
                    exempt=old_address,
                    may_replace=lambda a: self._may_replace(a, authority),
                )
            self._write_supersession(
                old_grain, new_grain, signature, at, by, justification, review, rest
            )
        return new_grain.address

    def _authorized(self, old: Grain, authority: _Authority) -> list[str]:
        """Check that the policies protecting ``old`` let ``authority`` supersede
        it; return their notes for review.

        Raises:
            PolicyError: ERR_INVALIDATION_DENIED, as :func:`.policy.check`.
        """
        new = authority.grain
        # A signature speaks for this supersession only when the grain it signs
        # derives from the old one: else any grain an authorized key ever signed
        # could take any grain it protects out.
        bound = old.address in (new.get("derived_from") or ())
        signed = authority.signature
        signed_by = None if signed is None or not bound else signed.did
        return check(
            "supersede",
            protectors(self.core, self.questions, old.address),
            now_ms=self.core.clock(),
            justification=authority.reason,
            quoted=authority.said or "(the new grain's supersession_justification)",
            signer=signed_by,
            cosigners=cosigners(new, old.address),
            requester=authority.by or signed_by,
            **transition(old, new),
        )

    def _may_replace(self, address: str, authority: _Authority) -> bool:
        """Whether ``authority`` could supersede the stored grain ``address``."""
        try:
            self._authorized(self.core.get(address), authority)
        except PolicyError:
            return False
        return True

    def _require_current(
        self, address: str, role: str = "grain", doing: str = "supersede"
    ) -> None:
        # (No local keeps the lookup's iterator: the error below would hold it in a
        # cycle, and pyoxigraph refuses to drop it on a thread the collector runs.)
        ends = self.core.backend.quads
        if next(ends(grain_iri(address), OMS.systemTo, None, OMS.index), None) is None:
            return  # current: no system end (the full state is read only to explain)
        state = self.core.status(address)
        if not state.is_current:
            successor = (
                f", superseded by {state.superseded_by[:12]}…"
                if state.superseded_by
                else ""
            )
            fix = (
                f"{doing} the current grain instead"
                if role == "grain"
                else "a stored successor must be current (a closed one would "
                "leave no grain current, or close a circle)"
            )
            raise PolicyError(
                f"the {role} {address[:12]}… is not current ({state.status}, "
                f"{state.verification}{successor}); {fix}",
                code=ErrorCode.CONFLICT,
            )

    def _successor(
        self,
        old_address: str,
        new: GrainLike,
        justification: str | None,
        auth: Sequence[bytes],
        signer: SigningKey | None,
    ) -> tuple[Grain, Signature | None]:
        """The superseding grain in the spec's shape, signed when a signer is given."""
        if isinstance(new, Mapping):
            fields = successor_fields(old_address, new, justification, auth)
            grain = Grain.from_dict(fields, signed=signer is not None)
        elif auth:
            raise SchemaError(
                "auth= is written into the new grain's supersession_auth, so the new grain "
                "must be given as a mapping of fields",
                code=ErrorCode.SCHEMA,
            )
        elif signer is not None and isinstance(new, Grain):
            grain = new
        else:
            if signer is not None:
                raise SchemaError(
                    "signer= needs a mapping or a Grain to sign", code=ErrorCode.SCHEMA
                )
            return accept(new)
        if signer is None:
            return accept(grain)
        return grain, Signature(sign(grain.blob, signer), signer.did)

    def _write_supersession(
        self,
        old_grain: Grain,
        new_grain: Grain,
        signature: Signature | None,
        at: int,
        by: str | None,
        reason: str | None,
        review: list[str],
        rest: Sequence[Grain] = (),
    ) -> None:
        """One atomic update: the new grain (if new), the pieces of the old grain
        that stay (``rest``, for a portion of valid time), and the old grain's
        index change."""
        old_address = old_grain.address
        insert: list[Quad | Row] = []
        if new_grain.address not in self.core:  # checked by supersede
            insert += self.core.rows_for(new_grain, signature)
        insert += self._pieces_rows(old_address, rest, by, reason, new_grain)
        # The index names the new grain as the successor (the spec's
        # superseded_by) also over a portion: the old grain's oms:splitInto rows
        # then tell the in-force rule that it describes no valid time once closed.
        removed, added = superseded_rows(
            str(grain_iri(old_address)),
            str(grain_iri(new_grain.address)),
            at,
            by,
            reason,
        )
        delete: list[Quad | Row] = [*removed, *self._current_removal(old_grain)]
        insert += added
        insert += self.core.audit_rows(
            "supersede",
            target=old_address,
            result=new_grain.address,
            actor=by,
            reason=reason,
            review=review,
        )
        self.core.write(
            delete, insert, current=[old_address]
        )  # one successor, whoever races

    def retract(
        self,
        address: str | Grain,
        *,
        reason: str,
        by: str | None = None,
        at: TimeLike = None,
        valid_from: TimeLike = None,
        valid_to: TimeLike = None,
    ) -> None:
        """Retract a grain without replacement: it answers for no valid time from ``at`` on.

        With ``valid_from`` (and ``valid_to``; none: no end), only that portion
        of its valid time is retracted (SQL:2011 ``FOR PORTION OF``): the pieces
        outside it are written as new grains derived from it, from ``at`` on, in
        the same write (see :mod:`.portion`).

        Raises:
            NotFoundError: not stored. PolicyError: refused by a policy
            (ERR_INVALIDATION_DENIED) or already retracted (ERR_CONFLICT);
            ERR_RANGE for a portion that misses the grain's valid time.
        """
        portion = portion_of(valid_from, valid_to)
        if portion is None:
            self._void([address], "retract", reason=reason, by=by, at=at)
            return
        with self.core.lock:
            grain = self.core.get(self.core.resolve(address))
            # Its pieces are written current: a closed grain's would come back.
            self._require_current(grain.address, doing="retract a portion of")
            check_portion(grain, *portion)
            # The pieces start as it ends.
            when = millis_or_now(at, self.core.clock, "at")
            change = self.plan_void(
                [grain.address],
                "retract",
                reason=reason,
                justification=reason,
                by=by,
                at=when,
            )
            rest = [
                accept(p)[0] for p in pieces(grain, *portion, at=when, reason=reason)
            ]
            rows = self._pieces_rows(grain.address, rest, by, reason)
            self.core.write(
                change.delete, [*change.insert, *rows], current=change.current
            )

    def _pieces_rows(
        self,
        address: str,
        rest: Sequence[Grain],
        by: str | None,
        reason: str | None,
        new: Grain | None = None,
    ) -> list[Quad | Row]:
        """The rows of the pieces a change over a portion of valid time keeps of a
        grain, each checked as put checks a new grain, and audited; and, when
        there are pieces, the grain's links to them and to the ``new`` grain."""
        parts = [*rest, new] if rest and new is not None else list(rest)
        nodes = dict.fromkeys(str(grain_iri(g.address)) for g in parts)
        rows: list[Quad | Row] = [*split_rows(str(grain_iri(address)), list(nodes))]
        for piece in rest:
            if piece.address in self.core:
                continue
            check_new(self.core, piece, exempt=address)
            rows += self.core.rows_for(piece)
            rows += self.core.audit_rows(
                "portion", target=address, result=piece.address, actor=by, reason=reason
            )
        return rows

    def contradict(
        self,
        address: str | Grain,
        *,
        by: str | None = None,
        reason: str | None = None,
        at: TimeLike = None,
    ) -> None:
        """Mark a grain contradicted: it leaves the current view and answers for no valid time from ``at`` on.

        Raises:
            NotFoundError: not stored. PolicyError: refused by a policy
            (ERR_INVALIDATION_DENIED) or already contradicted (ERR_CONFLICT).
        """
        self._void([address], "contradict", reason=reason, by=by, at=at)

    def retract_all(
        self,
        addresses: Iterable[str | Grain],
        *,
        reason: str,
        by: str | None = None,
        at: TimeLike = None,
    ) -> None:
        """Retract several grains in one atomic write: all of them, or (refused)
        none, at one system time, with one audit event that lists them.

        Raises:
            as :meth:`retract`, for the first grain refused; nothing is retracted.
        """
        self._void(addresses, "retract", reason=reason, by=by, at=at)

    def _void(
        self,
        addresses: Iterable[str | Grain],
        operation: str,
        *,
        reason: str | None,
        by: str | None,
        at: TimeLike,
    ) -> None:
        """Retract or contradict grains in one atomic write, after every check."""
        with self.core.lock:
            change = self.plan_void(
                addresses, operation, reason=reason, justification=reason, by=by, at=at
            )
            if self.core.pending is not None:  # a superseded one changes too
                self.core.pending.touch(sorted(set(change.targets) - {*change.current}))
            if change.targets:  # none asked: nothing to write, not even an event
                self.core.write(change.delete, change.insert, current=change.current)

    def plan_void(
        self,
        addresses: Iterable[str | Grain],
        operation: str,
        *,
        reason: str | None,
        justification: str | None,
        by: str | None = None,
        at: TimeLike = None,
    ) -> Change:
        """Check retracting or contradicting grains; return the write, unwritten.

        For a request that writes this together with other changes in one atomic
        write (SPARQL Update): hold ``core.lock`` from this call to the
        ``core.write(change.delete, [*change.insert, ...], current=change.current)``
        that ends it. ``reason`` is recorded; ``justification`` is what the
        policies weigh (a ``soft_locked`` grain needs one): the caller's words,
        never the store's.

        Raises:
            as :meth:`retract`, for the first grain refused.
        """
        if operation not in ("retract", "contradict"):
            raise SchemaError(
                f"expected 'retract' or 'contradict'; found {operation!r}",
                code=ErrorCode.SCHEMA,
            )
        check_many(addresses, "addresses")
        check_texts(reason=reason, justification=justification, by=by)
        targets = list(dict.fromkeys(self.core.resolve(a) for a in addresses))
        leaving = frozenset(targets)
        # One write: one system time, and one audit event that lists every grain.
        when = millis_or_now(at, self.core.clock, "at")
        change, review = Change(targets=targets), []
        for address in targets:
            removed, added, notes, held = self._void_change(
                address,
                operation,
                when=when,
                reason=reason,
                justification=justification,
                by=by,
                leaving=leaving,
            )
            change.delete += removed
            change.insert += added
            review += notes
            change.current += [address] if held else []  # the write re-checks them
        change.insert += self.core.audit_rows(
            operation,
            targets=targets,
            actor=by,
            reason=reason,
            at=when,
            review=list(dict.fromkeys(review)),
        )
        return change

    def _void_change(
        self,
        address: str,
        operation: str,
        *,
        when: int,
        reason: str | None,
        justification: str | None,
        by: str | None,
        leaving: frozenset[str],
    ) -> tuple[list[Quad | Row], list[Quad | Row], list[str], bool]:
        """Check a retraction or contradiction at ``when``; return the quads to
        delete and insert, the policies' notes for review, and whether the grain
        is current (held in the knowledge), as the write must find it."""
        grain = self.core.get(address)
        state = self.core.status(address)
        if state.voided_at is not None:
            raise PolicyError(
                f"{address[:12]}… is already {'retracted' if state.status == 'retracted' else 'contradicted'}",
                code=ErrorCode.CONFLICT,
            )
        # Its system start as its node's facts keep it: no decoding of its fields.
        since = self.core.facts.system_start(self.core.backend, grain_iri(address))
        check_not_before(
            when, system_from(grain) if since is None else since, operation
        )
        review = check(
            operation,
            protectors(self.core, self.questions, address),
            now_ms=self.core.clock(),
            justification=justification,
        )
        removed, added = voided_rows(
            str(grain_iri(address)), state, operation, when, reason, by
        )
        delete: list[Quad | Row] = [*removed]
        if state.is_current:
            # ``leaving`` as it is: the grain itself never keeps its triple (see
            # _current_removal), and a copy with it added per grain made a batch
            # of N retractions cost N copies of an N-set.
            delete += self._current_removal(grain, leaving)
        return delete, [*added], review, state.is_current

    def set_verification(
        self,
        address: str | Grain,
        status: str,
        *,
        by: str | None = None,
        at: TimeLike = None,
    ) -> None:
        """Set the verification status: ``unverified``, ``verified`` or ``disputed``.

        ``contradicted`` (or its 1.6 spelling ``contested``) goes through
        :meth:`contradict` and its policy check. Disputed and verified grains stay
        current.

        Raises:
            PolicyError: ERR_SCHEMA for an unknown status; as :meth:`contradict`.
        """
        check_texts(status=status, by=by)
        status = VERIFICATION_ALIASES.get(status, status)
        if status == "contradicted":
            self.contradict(address, by=by, at=at)
            return
        if status not in ("unverified", "verified", "disputed"):
            raise SchemaError(
                f"verification status must be one of {list(VERIFICATIONS)}; found {status!r}",
                code=ErrorCode.SCHEMA,
            )
        when = millis_or_now(at, self.core.clock, "at")
        with self.core.lock:
            address = self.core.resolve(address)
            since = system_from(self.core.get(address))
            check_not_before(when, since, "set_verification")
            state = self.core.status(address)
            if state.verification == "contradicted":
                raise PolicyError(
                    f"{address[:12]}… is contradicted; a contradiction is not undone by "
                    "set_verification",
                    code=ErrorCode.CONFLICT,
                )
            node, idx, p = grain_iri(address), OMS.index, OMS.verificationStatus
            delete = [Quad(node, p, getattr(OMS, state.verification), idx)]
            insert: list[Quad | Row] = [Quad(node, p, getattr(OMS, status), idx)]
            insert += self.core.audit_rows(
                "set_verification", target=address, actor=by, reason=status, at=when
            )
            if self.core.pending is not None:  # a transaction's: one change a grain
                self.core.pending.touch([address])
            self.core.write(delete, insert)
