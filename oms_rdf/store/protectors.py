"""Who may refuse a change to a grain: the policies protecting it, and the valid
co-signers of a supersession (spec §8)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..codec.grain import Grain
from ..codec.schema import CONSENT, GOAL
from ..codec.signing import supersession_draft, verify_supersession
from ..errors import SignatureError
from ..rdf.mapping import address_of, grain_iri
from ..rdf.vocab import OMS
from .core import Core
from .policy import MAX_HOPS, Protector
from .questions import Questions

__all__ = ["cosigners", "own_policy", "protectors", "transition"]

_CONSENT_DEFAULT = {"mode": "soft_locked"}


def protectors(core: Core, questions: Questions, address: str) -> list[Protector]:
    """The policies that protect a grain from a change: its own, those of its
    derivation ancestors with ``scope: subtree`` (within MAX_HOPS, spec §8.4,
    §8.5), and those with ``scope: lineage`` anywhere in its supersession chain."""
    grain = core.get(address)
    out = []
    if (policy := own_policy(grain)) is not None:
        out.append(_protector(grain, policy, "own"))
    out += _goals_superseded(core, grain)
    # subtree: policies of derivation ancestors within MAX_HOPS (spec §8.4, §8.5).
    frontier, seen = [grain], {address}
    for _ in range(MAX_HOPS):
        next_frontier = []
        for g in frontier:
            for parent in g.get("derived_from", ()):
                if parent in seen or parent not in core:
                    continue
                seen.add(parent)
                ancestor = core.get(parent)
                policy = ancestor.get("invalidation_policy")
                if isinstance(policy, Mapping) and policy.get("scope") == "subtree":
                    out.append(
                        Protector(
                            parent,
                            policy,
                            "subtree ancestor",
                            ancestor.get("author_did"),
                        )
                    )
                next_frontier.append(ancestor)
        frontier = next_frontier
    # lineage: policies anywhere in the supersession chain. A current grain has
    # no successor, so its chain is its ancestors: cheap pattern lookups.
    node, backend = grain_iri(address), core.backend
    chain: Iterable[Grain] = ()  # a first version nothing replaced yet: none
    if next(backend.quads(node, OMS.supersededBy, None, OMS.index), None):
        chain = questions.history(address)
    elif next(backend.quads(None, OMS.supersededBy, node, OMS.index), None):
        chain = questions.ancestors(address)
    for member in chain:
        policy = member.get("invalidation_policy")
        if (
            member.address != address
            and isinstance(policy, Mapping)
            and policy.get("scope") == "lineage"
        ):
            out.append(_protector(member, policy, "lineage"))
    return out


def own_policy(grain: Grain) -> Any:
    """A grain's ``invalidation_policy``; a Consent without one is ``soft_locked``
    (spec §8.3, Consent rule 4)."""
    policy = grain.get("invalidation_policy")
    if policy is None and grain.type_byte == CONSENT.byte:
        return _CONSENT_DEFAULT
    return policy


def _protector(grain: Grain, policy: Any, via: str) -> Protector:
    """The protection a grain's policy gives, with a goal's own terms (§8.6)."""
    if grain.type_byte != GOAL.byte:
        return Protector(grain.address, policy, via, grain.get("author_did"))
    allowed = grain.get("allowed_transitions")
    need = grain.get("evidence_required")
    return Protector(
        grain.address,
        policy,
        via,
        grain.get("author_did"),
        frozenset(s for s in allowed if isinstance(s, str)) if allowed else frozenset(),
        need if type(need) is int else 0,
    )


def _goals_superseded(core: Core, grain: Grain) -> list[Protector]:
    """The policies a goal inherits (goal laundering, spec §8.6): a goal that
    replaced a protected goal by a transition the old one allowed on its own was
    not authorized under its policy, so that policy still protects it; and so on
    back along the chain, while each step was such a transition."""
    out: list[Protector] = []
    frontier, seen = [grain], {grain.address}
    while frontier:
        later = frontier.pop()
        if later.type_byte != GOAL.byte:
            continue
        node = grain_iri(later.address)
        for quad in list(core.backend.quads(None, OMS.supersededBy, node, OMS.index)):
            earlier = core.get(address_of(quad.subject))  # type: ignore[arg-type]
            policy = earlier.get("invalidation_policy")
            if earlier.address in seen or policy is None:
                continue
            seen.add(earlier.address)
            inherited = _protector(
                earlier, policy, "inherited from the goal it replaced"
            )
            if later.get("goal_state") in inherited.allowed:
                out.append(inherited)
                frontier.append(earlier)
    return out


def transition(old: Grain, new: Grain) -> dict[str, Any]:
    """For a goal superseded by a goal, the state it reaches and the evidence it
    cites (a protected goal's own transitions, spec §8.6)."""
    if old.type_byte != GOAL.byte or new.type_byte != GOAL.byte:
        return {}
    evidence = new.get("satisfaction_evidence")
    return {
        "reaching": new.get("goal_state"),
        "evidence": len(evidence) if isinstance(evidence, list) else 0,
    }


def cosigners(grain: Grain, old_address: str) -> frozenset[str]:
    """DIDs with a valid co-signature of this supersession in ``supersession_auth``."""
    entries = grain.get("supersession_auth") or ()
    if not entries:
        return frozenset()
    draft = supersession_draft(grain.fields)
    valid = set()
    for entry in entries:
        try:
            valid.add(verify_supersession(entry, old_address, draft))
        except SignatureError:
            continue  # an invalid entry counts for nothing; the threshold decides
    return frozenset(valid)
