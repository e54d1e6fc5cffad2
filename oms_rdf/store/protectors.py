"""Who may refuse a change to a grain: the policies protecting it, and the valid
co-signers of a supersession (spec §8)."""

from __future__ import annotations

from collections.abc import Mapping

from ..codec.grain import Grain
from ..codec.signing import supersession_draft, verify_supersession
from ..errors import SignatureError
from ..rdf.mapping import grain_iri
from ..rdf.vocab import OMS
from .core import Core
from .policy import MAX_HOPS, Protector
from .questions import Questions

__all__ = ["cosigners", "protectors"]


def protectors(core: Core, questions: Questions, address: str) -> list[Protector]:
    """The policies that protect a grain from a change: its own, those of its
    derivation ancestors with ``scope: subtree`` (within MAX_HOPS, spec §8.4,
    §8.5), and those with ``scope: lineage`` anywhere in its supersession chain."""
    grain = core.get(address)
    out = []
    if grain.get("invalidation_policy") is not None:
        out.append(
            Protector(
                address,
                grain.get("invalidation_policy"),
                "own",
                grain.get("author_did"),
            )
        )
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
    node = grain_iri(address)
    has_successor = next(
        core.backend.quads(node, OMS.supersededBy, None, OMS.index), None
    )
    chain = (
        questions.history(address) if has_successor else questions.ancestors(address)
    )
    for member in chain:
        policy = member.get("invalidation_policy")
        if (
            member.address != address
            and isinstance(policy, Mapping)
            and policy.get("scope") == "lineage"
        ):
            out.append(
                Protector(member.address, policy, "lineage", member.get("author_did"))
            )
    return out


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
