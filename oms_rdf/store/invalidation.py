"""Supersession, retraction, contradiction and verification, under the policies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyoxigraph import (
    Literal,
    Quad,
    Variable,
)

from ..errors import ErrorCode, PolicyError
from ..grain import Grain
from ..mapping import (
    Row,
    grain_iri,
    millis_literal,
    truthy_triple,
)
from ..policy import MAX_HOPS, Protector, check
from ..vocab import OMS
from ._common import (
    _QUERIES,
    VERIFICATION_ALIASES,
    VERIFICATIONS,
    GrainLike,
    TimeLike,
    _system_from,
    _to_millis,
    update_request,
)
from .questions import Questions


class Invalidation(Questions):
    """Index mutations, each checked against the protection policies, each atomic."""

    def _protectors(self, address: str) -> list[Protector]:
        grain = self.get(address)
        out = (
            [Protector(address, grain.get("invalidation_policy"), "own")]
            if grain.get("invalidation_policy") is not None
            else []
        )
        # subtree: policies of derivation ancestors within MAX_HOPS (spec §8.4, §8.5).
        frontier, seen = [grain], {address}
        for _ in range(MAX_HOPS):
            next_frontier = []
            for g in frontier:
                for parent in g.get("derived_from", ()):
                    if parent in seen or parent not in self:
                        continue
                    seen.add(parent)
                    ancestor = self.get(parent)
                    policy = ancestor.get("invalidation_policy")
                    if isinstance(policy, Mapping) and policy.get("scope") == "subtree":
                        out.append(Protector(parent, policy, "subtree ancestor"))
                    next_frontier.append(ancestor)
            frontier = next_frontier
        # lineage: policies anywhere in the supersession chain.
        for member in self.history(address):
            policy = member.get("invalidation_policy")
            if (
                member.address != address
                and isinstance(policy, Mapping)
                and policy.get("scope") == "lineage"
            ):
                out.append(Protector(member.address, policy, "lineage"))
        return out

    def _current_removal(self, grain: Grain) -> list[Quad]:
        """The oms:current triple of a grain leaving the current view, unless shared."""
        triple = truthy_triple(grain, self.settings)
        if triple is None:
            return []
        s, p, o = triple
        others = self.backend.query(
            _QUERIES["shared_claim"],
            {
                Variable("s"): s,
                Variable("p"): p,
                Variable("o"): o,
                Variable("self"): grain_iri(grain.address),
            },
        )
        return [] if bool(others) else [Quad(s, p, o, OMS.current)]

    def supersede(
        self,
        old: str | Grain,
        new: GrainLike,
        *,
        justification: str | None = None,
        by: str | None = None,
        auth: Sequence[Any] = (),
        signer: Any = None,
    ) -> str:
        """Replace ``old`` by ``new`` atomically; return the new address.

        A mapping ``new`` without ``derived_from`` gets ``derived_from: [old]`` (the
        spec's supersession shape) and, when given, ``justification`` as its
        ``supersession_justification``. The old grain is closed at the new grain's
        system time (``system_valid_from``, else ``created_at``); it keeps describing
        the past up to the new grain's ``valid_from``.

        Raises:
            NotFoundError: ``old`` is not stored.
            PolicyError: ERR_INVALIDATION_DENIED when a policy protecting ``old``
                refuses; ERR_CONFLICT when ``old`` is no longer current; ERR_RANGE
                when the new grain is older than ``old``.
        """
        if auth or signer is not None:
            raise PolicyError(
                "signed supersession (auth=, signer=) is not supported yet",
                code=ErrorCode.INVALIDATION_DENIED,
            )
        with self._lock:
            old_address = self._resolve(old)
            old_grain = self.get(old_address)
            state = self.status(old_address)
            if not state.is_current:
                raise PolicyError(
                    f"{old_address[:12]}… is not current ({state.status}, "
                    f"{state.verification}"
                    + (
                        f", superseded by {state.superseded_by[:12]}…"
                        if state.superseded_by
                        else ""
                    )
                    + "); supersede the current grain instead",
                    code=ErrorCode.CONFLICT,
                )
            if isinstance(new, Mapping):
                fields = dict(new)
                if fields.get("derived_from") is None:
                    fields["derived_from"] = [old_address]
                if (
                    justification is not None
                    and fields.get("supersession_justification") is None
                ):
                    fields["supersession_justification"] = justification
                new_grain = Grain.from_dict(fields)
            else:
                new_grain = self._grain(new)
            if new_grain.address == old_address:
                raise PolicyError(
                    "a grain cannot supersede itself", code=ErrorCode.CONFLICT
                )
            at = _system_from(new_grain)
            if at < _system_from(old_grain):
                raise PolicyError(
                    f"the new grain's system time {at} is before the old grain's "
                    f"{_system_from(old_grain)}; a successor cannot be older",
                    code=ErrorCode.RANGE,
                )
            review = check(
                "supersede",
                self._protectors(old_address),
                now_ms=self.clock(),
                justification=new_grain.get("supersession_justification")
                or justification,
            )
            insert: list[Quad | Row] = []
            exists = new_grain.address in self
            if not exists:
                self._check_put(new_grain, exempt=old_address)
                insert += self._new_rows(new_grain)
            node = grain_iri(old_address)
            idx = OMS.index
            delete = [
                Quad(node, OMS.status, OMS.active, idx),
                *self._current_removal(old_grain),
            ]
            insert += [
                Quad(node, OMS.status, OMS.superseded, idx),
                Quad(node, OMS.supersededBy, grain_iri(new_grain.address), idx),
                Quad(node, OMS.systemTo, millis_literal(at), idx),
                Quad(node, OMS.invalidationType, Literal("superseded"), idx),
            ]
            if by is not None:
                insert.append(Quad(node, OMS.invalidationInitiator, Literal(by), idx))
            reason = new_grain.get("supersession_justification") or justification
            if reason:
                insert.append(Quad(node, OMS.invalidationReason, Literal(reason), idx))
            insert += self._audit(
                "supersede",
                target=old_address,
                result=new_grain.address,
                actor=by,
                reason=reason,
                review=review,
            )
            self.backend.update(update_request(delete, insert))
        return new_grain.address

    def retract(
        self,
        address: str | Grain,
        *,
        reason: str,
        by: str | None = None,
        at: TimeLike = None,
    ) -> None:
        """Retract a grain without replacement: it answers for no valid time from ``at`` on.

        Raises:
            NotFoundError: not stored. PolicyError: refused by a policy
            (ERR_INVALIDATION_DENIED) or already retracted (ERR_CONFLICT).
        """
        self._void(address, "retract", reason=reason, by=by, at=at)

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
        self._void(address, "contradict", reason=reason, by=by, at=at)

    def _void(
        self,
        address: str | Grain,
        operation: str,
        *,
        reason: str | None,
        by: str | None,
        at: TimeLike,
    ) -> None:
        when = _to_millis(at, self.clock)
        with self._lock:
            address = self._resolve(address)
            grain = self.get(address)
            state = self.status(address)
            if state.voided_at is not None:
                raise PolicyError(
                    f"{address[:12]}… is already {'retracted' if state.status == 'retracted' else 'contradicted'}",
                    code=ErrorCode.CONFLICT,
                )
            if when < _system_from(grain):
                raise PolicyError(
                    f"cannot {operation} at {when}, before the grain entered the system at "
                    f"{_system_from(grain)}",
                    code=ErrorCode.RANGE,
                )
            review = check(
                operation,
                self._protectors(address),
                now_ms=self.clock(),
                justification=reason,
            )
            node, idx = grain_iri(address), OMS.index
            delete: list[Quad] = []
            insert = [Quad(node, OMS.voidedAt, millis_literal(when), idx)]
            if state.is_current:
                delete += self._current_removal(grain)
                insert.append(Quad(node, OMS.systemTo, millis_literal(when), idx))
            if operation == "retract":
                delete.append(Quad(node, OMS.status, getattr(OMS, state.status), idx))
                insert.append(Quad(node, OMS.status, OMS.retracted, idx))
                kind = "retraction"
            else:
                delete.append(
                    Quad(
                        node,
                        OMS.verificationStatus,
                        getattr(OMS, state.verification),
                        idx,
                    )
                )
                insert.append(Quad(node, OMS.verificationStatus, OMS.contradicted, idx))
                kind = "contradiction"
            if state.invalidation_type is None:
                insert.append(Quad(node, OMS.invalidationType, Literal(kind), idx))
                if reason:
                    insert.append(
                        Quad(node, OMS.invalidationReason, Literal(reason), idx)
                    )
                if by is not None:
                    insert.append(
                        Quad(node, OMS.invalidationInitiator, Literal(by), idx)
                    )
            insert += self._audit(
                operation,
                target=address,
                actor=by,
                reason=reason,
                at=when,
                review=review,
            )
            self.backend.update(update_request(delete, insert))

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
        status = VERIFICATION_ALIASES.get(status, status)
        if status == "contradicted":
            self.contradict(address, by=by, at=at)
            return
        if status not in ("unverified", "verified", "disputed"):
            raise PolicyError(
                f"verification status must be one of {list(VERIFICATIONS)}; found {status!r}",
                code=ErrorCode.SCHEMA,
            )
        when = _to_millis(at, self.clock)
        with self._lock:
            address = self._resolve(address)
            state = self.status(address)
            if state.verification == "contradicted":
                raise PolicyError(
                    f"{address[:12]}… is contradicted; a contradiction is not undone by "
                    "set_verification",
                    code=ErrorCode.CONFLICT,
                )
            node = grain_iri(address)
            delete = [
                Quad(
                    node,
                    OMS.verificationStatus,
                    getattr(OMS, state.verification),
                    OMS.index,
                )
            ]
            insert = [
                Quad(node, OMS.verificationStatus, getattr(OMS, status), OMS.index)
            ]
            insert += self._audit(
                "set_verification", target=address, actor=by, reason=status, at=when
            )
            self.backend.update(update_request(delete, insert))
