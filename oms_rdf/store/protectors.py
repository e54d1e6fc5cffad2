"""Who may refuse a change to a grain: the policies protecting it, and the valid
co-signers of a supersession (spec §8)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any

from pyoxigraph import Literal

from ..codec.grain import Grain, system_from
from ..codec.schema import CONSENT, GOAL
from ..codec.signing import supersession_draft, verify_supersession
from ..errors import SignatureError
from ..rdf.mapping import DEFAULT, address_of, grain_iri
from ..rdf.vocab import OMS
from .core import Core
from .policy import MAX_HOPS, Protector
from .portion import is_piece
from .questions import Questions
from .state import same_claim

__all__ = [
    "any_policy",
    "cosigners",
    "marked",
    "own_policy",
    "passed_on",
    "protectors",
    "subtree",
    "transition",
]

_CONSENT_DEFAULT = {"mode": "soft_locked"}


def protectors(core: Core, questions: Questions, address: str) -> list[Protector]:
    """The policies that protect a grain from a change: its own, those of its
    derivation ancestors with ``scope: subtree`` (within MAX_HOPS, spec §8.4,
    §8.5), and those with ``scope: lineage`` anywhere in its supersession chain;
    also those an erasure marked it with, that reached it through the grain
    erased (see :func:`passed_on`)."""
    grain = core.get(address)
    if not any_policy(core):
        # What protects a grain is a stored grain's policy, its own or passed on:
        # none here (its fields need not even be decoded), but a Consent's default.
        consent = grain.type_byte == CONSENT.byte
        return [_protector(grain, _CONSENT_DEFAULT, "own")] if consent else []
    out = []
    if (policy := own_policy(grain)) is not None:
        out.append(_protector(grain, policy, "own"))
    out += _goals_superseded(core, grain)
    ancestors: dict[str, int] = {}
    out += subtree(grain, lambda a: core.get(a) if a in core else None, ancestors)
    # lineage: policies anywhere in the supersession chain.
    chain = _lineage(core, questions, address)
    for member in chain.values():
        policy = member.get("invalidation_policy")
        if (
            member.address != address
            and isinstance(policy, Mapping)
            and policy.get("scope") == "lineage"
        ):
            out.append(_protector(member, policy, "lineage"))
    # What erasures marked on the grain, its ancestors and its chain: a grain
    # that joined after an erasure inherits through the grains marked then.
    found = {(p.address, p.via) for p in out}
    places = [(address, set(_PASSED_ON), 0)]
    places += [(a, {"subtree"}, hops) for a, hops in ancestors.items() if a != address]
    places += [(a, {"lineage"}, 0) for a in chain if a != address]
    for where, scopes, hops in places:
        for protector in marked(core, where, scopes, hops):
            if (protector.address, protector.via) not in found:
                found.add((protector.address, protector.via))
                out.append(protector)
    return out


_PASSED_ON = {"subtree": "subtree ancestor", "lineage": "lineage"}


def passed_on(core: Core, questions: Questions, address: str) -> dict[str, int]:
    """The grains whose policy of scope ``subtree`` or ``lineage`` protects a
    grain, each with its hops (a lineage's: 0): what an erasure marks the
    grains after it with (``oms:protectedBy``, ``oms:subtreeHops``), since the
    walks that find them go through the grain it erases."""
    found: dict[str, int] = {}
    for p in protectors(core, questions, address):
        if p.via in _PASSED_ON.values():
            found[p.address] = min(p.hops, found.get(p.address, p.hops))
    return found


def marked(
    core: Core, address: str, scopes: Container[str], hops: int = 0
) -> list[Protector]:
    """The protection an erasure kept for a grain ``hops`` above the one
    protected, of these scopes: each marking grain still stored, with its
    policy as it is now (a timed lock may have run out); a subtree's within
    MAX_HOPS of the grain protected, counted through the grain marked."""
    out: list[Protector] = []
    node = grain_iri(address)
    marks = list(core.backend.quads(node, OMS.protectedBy, None, OMS.index))
    if not marks:  # the common case: one lookup
        return out
    far = _hops(core, node)
    for quad in marks:
        marker = address_of(quad.object)  # type: ignore[arg-type]
        if marker not in core:
            continue  # erased too: its policy went with it
        grain = core.get(marker)
        policy = grain.get("invalidation_policy")
        scope = policy.get("scope") if isinstance(policy, Mapping) else None
        if not isinstance(scope, str) or scope not in _PASSED_ON or scope not in scopes:
            continue
        if scope == "lineage":
            out.append(_protector(grain, policy, "lineage"))
        elif (up := hops + far.get(marker, MAX_HOPS)) <= MAX_HOPS:
            out.append(Protector(marker, policy, "subtree ancestor",
                                 grain.get("author_did"), hops=up))  # fmt: skip
    return out


def _hops(core: Core, node: Any) -> dict[str, int]:
    """How far above a marked grain each subtree marker is (``"HEX N"``)."""
    found = {}
    for quad in core.backend.quads(node, OMS.subtreeHops, None, OMS.index):
        text = quad.object.value if isinstance(quad.object, Literal) else ""
        address, _, hops = text.partition(" ")
        if hops.isdigit():
            found[address] = int(hops)
    return found


def any_policy(core: Core) -> bool:
    """Whether a stored grain has an ``invalidation_policy`` (one lookup).
    Every policy a grain inherits (subtree, lineage, a goal's) is the field of
    another stored grain: in a store without one, the walks find nothing."""
    backend = core.backend
    if backend.remote:  # a pattern read there brings every match: an ASK stops
        return bool(backend.query(_ANY_POLICY))
    found = backend.quads(None, OMS.invalidationPolicy, None, DEFAULT)
    return next(found, None) is not None


_ANY_POLICY = f"ASK {{ ?grain {OMS.invalidationPolicy} ?policy }}"


def subtree(
    grain: Grain,
    find: Callable[[str], Grain | None],
    reached: dict[str, int] | None = None,
) -> list[Protector]:
    """The policies of a grain's derivation ancestors with ``scope: subtree``,
    within MAX_HOPS (spec §8.4, §8.5), each ancestor found by ``find`` (None:
    not held). A piece cut from a grain over a portion of valid time restates
    it (:func:`.portion.is_piece`): that step is no hop, or cutting a grain
    again and again would wear its protection away. ``reached`` is given the
    ancestors walked, with their hops."""
    out: list[Protector] = []
    hops, todo = {grain.address: 0}, deque([grain])
    while todo:  # breadth first, a step of no hop taken before the others
        child = todo.popleft()
        for parent in child.get("derived_from", ()):
            ancestor = find(parent)
            if ancestor is None:
                continue
            step = 0 if is_piece(child, ancestor) else 1
            far = hops[child.address] + step
            if far > MAX_HOPS or hops.get(parent, MAX_HOPS + 1) <= far:
                continue
            if parent not in hops:
                policy = ancestor.get("invalidation_policy")
                if isinstance(policy, Mapping) and policy.get("scope") == "subtree":
                    out.append(Protector(parent, policy, "subtree ancestor",
                                         ancestor.get("author_did"), hops=far))  # fmt: skip
            hops[parent] = far
            if reached is not None:
                reached[parent] = far
            (todo.appendleft if step == 0 else todo.append)(ancestor)
    return out


def _lineage(core: Core, questions: Questions, address: str) -> dict[str, Grain]:
    """The grains of the supersession chain through a grain (spec §8.4), by
    address: the chain the index links, and, through a grain written when part
    of another's valid time changed (a successor over a portion, or a piece the
    change kept), the chain of the grain it was cut from, which the index links
    by ``oms:supersededBy`` to the new grain only, and to the pieces by
    ``oms:splitInto``."""
    found: dict[str, Grain] = {}
    todo = [address]
    while todo:
        for member in [core.get(todo[-1]), *_chain(core, questions, todo.pop())]:
            if member.address not in found:
                found[member.address] = member
                todo += [p for p in _cut_from(core, member, found)]
    return found


def _chain(core: Core, questions: Questions, address: str) -> Iterable[Grain]:
    """The chain the index links through a grain: its history when something
    supersedes it, else its ancestors (cheap pattern lookups), else none."""
    node, backend = grain_iri(address), core.backend
    if next(backend.quads(node, OMS.supersededBy, None, OMS.index), None):
        return questions.history(address)
    if next(backend.quads(None, OMS.supersededBy, node, OMS.index), None):
        return questions.ancestors(address)
    return ()


def _cut_from(core: Core, grain: Grain, known: Container[str]) -> list[str]:
    """The grains (not in ``known``) that ``grain`` was cut from: those it
    derives from, of its claim, that left the current view at the very time it
    entered it (supersede and retract over a portion write it so)."""
    out = []
    for parent in grain.get("derived_from") or ():
        if parent in known or parent not in core:
            continue
        if not same_claim(core.get(parent), grain):
            continue
        if core.status(parent).system_to == system_from(grain):
            out.append(parent)
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
    back along the chain, while each step was such a transition (through goals
    that have no policy of their own but inherited one)."""
    if grain.type_byte != GOAL.byte:
        return []
    # Post-order over the earlier goals: what each inherited is known before
    # the goals after it are weighed (a chain of any length, no recursion).
    carried: dict[str, list[Protector]] = {}
    stack, entered = [grain], {grain.address}
    while stack:
        later = stack[-1]
        earlier = [g for g in _earlier(core, later) if g.type_byte == GOAL.byte]
        waiting = [g for g in earlier if g.address not in entered]
        if waiting:
            entered.update(g.address for g in waiting)
            stack += waiting
            continue
        stack.pop()
        state = later.get("goal_state")
        carried[later.address] = [
            protector
            for g in earlier
            for protector in [*_own_goal_policy(g), *carried.get(g.address, ())]
            if state in protector.allowed
        ]
    return carried[grain.address]


def _own_goal_policy(goal: Grain) -> list[Protector]:
    policy = goal.get("invalidation_policy")
    if policy is None:
        return []
    return [_protector(goal, policy, "inherited from the goal it replaced")]


def _earlier(core: Core, later: Grain) -> list[Grain]:
    """The grains ``later`` replaced: those the index says it superseded, and
    those it was cut from (see :func:`_cut_from`)."""
    node = grain_iri(later.address)
    replaced = [
        address_of(quad.subject)  # type: ignore[arg-type]
        for quad in list(core.backend.quads(None, OMS.supersededBy, node, OMS.index))
    ]
    replaced += _cut_from(core, later, replaced)
    return [core.get(a) for a in dict.fromkeys(replaced)]


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
