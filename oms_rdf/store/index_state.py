"""A grain's index state, read from its quads in the index layer (graph
``oms:index``): what the store knows about it beside the blob."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyoxigraph import NamedNode, Quad

from ..rdf.mapping import NIH_PREFIX, literal_value
from ..rdf.sparql import lexical_value
from ..rdf.vocab import OMS
from .state import IndexState

__all__ = ["index_state"]


def index_state(address: str, quads: Iterable[Quad]) -> IndexState:
    """The index state of grain ``address`` from its quads in ``oms:index``
    (none: active, unverified, as the store writes a new grain)."""
    values: dict[str, Any] = {}
    every: dict[str, list[str]] = {}  # of the predicates a grain has several of
    for q in quads:
        values[q.predicate.value] = q.object
        every.setdefault(q.predicate.value, []).append(lexical_value(q.object))

    def text(p: NamedNode) -> str | None:
        term = values.get(p.value)
        return None if term is None else term.value

    def local(p: NamedNode, default: str) -> str:
        term = values.get(p.value)
        return default if term is None else term.value.rsplit("#", 1)[1]

    def number(p: NamedNode) -> Any:
        term = values.get(p.value)
        return None if term is None else literal_value(term)

    def addresses(p: NamedNode) -> tuple[str, ...]:
        return tuple(sorted(a.removeprefix(NIH_PREFIX) for a in every.get(p.value, ())))

    return IndexState(
        address=address,
        status=local(OMS.status, "active"),
        verification=local(OMS.verificationStatus, "unverified"),
        superseded_by=next(iter(addresses(OMS.supersededBy)), None),
        split_into=addresses(OMS.splitInto),
        system_to=number(OMS.systemTo),
        voided_at=number(OMS.voidedAt),
        invalidation_type=text(OMS.invalidationType),
        reason=text(OMS.invalidationReason),
        initiator=text(OMS.invalidationInitiator),
        signed_by=text(OMS.signedBy),
        log_ratio=number(OMS.logRatio) or 0.0,
        sprt_status=text(OMS.sprtStatus) or "accumulating",
        sprt_entered=frozenset(every.get(OMS.sprtEntered.value, ())),
        effective_confidence=number(OMS.effectiveConfidence),
        pending_erasure=number(OMS.pendingErasure),
        conflicts_with=addresses(OMS.conflictsWith),
        protected_by=addresses(OMS.protectedBy),
        subtree_hops=tuple(sorted(every.get(OMS.subtreeHops.value, ()))),
    )
