"""Belief revision rules, pure: SPRT evidence, entrenchment tiers, functional relations.

**Evidence (SPRT, design §4).** Each grain keeps a log-likelihood ratio. A
supporting observation of strength s adds ln(s/(1-s)), a refuting one adds
ln((1-s)/s), with s clamped to [0.1, 0.9]. With alpha = 0.05 and beta = 0.10 the
boundaries are A = ln((1-beta)/alpha) ≈ 2.8904 and B = ln(beta/(1-alpha)) ≈ -2.2513. Crossing A
promotes the grain (effective confidence +0.10, capped at 0.95); crossing B demotes
it (-0.20, floored at 0.05). Each state is entered at most once, so there is no
double demotion; evidence never supersedes anything. The blob's confidence never
changes: the effective confidence lives in the index layer.

*Weak support.* Strength is how strongly an observation bears *in its own
direction*, so it must be at least 0.5: a "supporting" observation of strength
0.3 is really evidence against the claim. It is refused with ERR_RANGE and a
message saying to record it as refuting with strength 1 - s, rather than silently
counted one way or the other.

>>> state = SprtState()
>>> for _ in range(3):
...     state = state.observe("refuting", 0.85)
>>> state.status, round(state.log_ratio, 4)
('demoted', -5.2038)

**Entrenchment.** Provenance ranks beliefs: axioms (``axiomatic``,
``established_knowledge``, or a ``locked`` policy) > user-stated (``user_explicit``)
> system-inferred (``agent_inferred``, ``llm_generated``, ``consolidated``). Other
source types take a configurable tier (default: system-inferred). A revision may
only replace a belief of the same or a lower tier.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, Literal

from ..codec.grain import namespace_of, system_from
from ..errors import ErrorCode, PolicyError, SchemaError

__all__ = [
    "ALPHA",
    "BETA",
    "LOWER",
    "UPPER",
    "Entrenchment",
    "SprtState",
    "Tier",
    "check_observation",
    "conflicts",
]

ALPHA, BETA = 0.05, 0.10
UPPER = math.log((1 - BETA) / ALPHA)  # A: promote above
LOWER = math.log(BETA / (1 - ALPHA))  # B: demote below
PROMOTION, DEMOTION = 0.10, 0.20
CEILING, FLOOR = 0.95, 0.05
Kind = Literal["supporting", "refuting"]


@dataclass(frozen=True, slots=True)
class SprtState:
    """The sequential test of one grain: log ratio and which states it has entered."""

    log_ratio: float = 0.0
    status: str = "accumulating"  # accumulating | promoted | demoted
    entered: frozenset[str] = frozenset()

    def observe(self, kind: str, strength: float) -> SprtState:
        """Return the state after one observation.

        Raises:
            SchemaError: as :func:`check_observation`.
        """
        check_observation(kind, strength)
        s = min(0.9, max(0.1, float(strength)))
        step = math.log(s / (1 - s))
        ratio = self.log_ratio + (step if kind == "supporting" else -step)
        status = self.status
        if ratio >= UPPER and "promoted" not in self.entered:
            status = "promoted"
        elif ratio <= LOWER and "demoted" not in self.entered:
            status = "demoted"
        entered = self.entered | ({status} if status != "accumulating" else set())
        return replace(self, log_ratio=ratio, status=status, entered=frozenset(entered))

    def effective(self, confidence: float) -> float:
        """The confidence the store reports: the blob's, adjusted by the test's state."""
        if self.status == "promoted":
            return min(CEILING, confidence + PROMOTION)
        if self.status == "demoted":
            return max(FLOOR, confidence - DEMOTION)
        return confidence


class Tier(IntEnum):
    """Entrenchment tiers, lowest first."""

    SYSTEM_INFERRED = 1
    USER_STATED = 2
    AXIOM = 3


DEFAULT_TIERS: Mapping[str, Tier] = {
    "axiomatic": Tier.AXIOM,
    "established_knowledge": Tier.AXIOM,
    "user_explicit": Tier.USER_STATED,
    "agent_inferred": Tier.SYSTEM_INFERRED,
    "llm_generated": Tier.SYSTEM_INFERRED,
    "consolidated": Tier.SYSTEM_INFERRED,
}


@dataclass(frozen=True, slots=True)
class Entrenchment:
    """Tiers over ``source_type`` and protection; configurable per store.

    >>> Entrenchment().tier({"source_type": "user_explicit"})
    <Tier.USER_STATED: 2>
    """

    tiers: Mapping[str, Tier] = field(default_factory=lambda: dict(DEFAULT_TIERS))
    default: Tier = Tier.SYSTEM_INFERRED  # source types not listed, and none given

    def tier(self, fields: Mapping[str, Any]) -> Tier:
        """Return the tier of a grain's fields (a locked policy makes it an axiom)."""
        policy = fields.get("invalidation_policy")
        if isinstance(policy, Mapping) and policy.get("mode") == "locked":
            return Tier.AXIOM
        return Tier(self.tiers.get(fields.get("source_type", ""), self.default))

    def check(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """Refuse a revision that would let a lower tier replace a higher one.

        Raises:
            PolicyError: ERR_INVALIDATION_DENIED, naming both tiers.
        """
        old_tier, new_tier = self.tier(old), self.tier(new)
        if new_tier < old_tier:
            raise PolicyError(
                f"revision refused: the new belief is {_describe(new_tier, new)} and the "
                f"old one is {_describe(old_tier, old)}; a lower tier never replaces a "
                "higher one (use force=True as an authorized DID to override, audited)",
                code=ErrorCode.INVALIDATION_DENIED,
            )


def _describe(tier: Tier, fields: Mapping[str, Any]) -> str:
    source = fields.get("source_type", "no source_type")
    return f"{tier.name.lower().replace('_', '-')} (tier {int(tier)}, {source})"


def conflicts(new: Mapping[str, Any], others: list[Mapping[str, Any]]) -> list[int]:
    """Indexes of ``others`` that a belief on a functional relation contradicts.

    Two beliefs conflict when they share subject, relation and namespace, name
    different objects, and their valid intervals overlap (a past job that ended
    before the new one began is history, not a conflict).
    """
    key = (new.get("subject"), new.get("relation"), namespace_of(new))
    start, end = _valid(new)
    found = []
    for i, other in enumerate(others):
        if (other.get("subject"), other.get("relation"), namespace_of(other)) != key:
            continue
        if other.get("object") == new.get("object"):
            continue
        other_start, other_end = _valid(other)
        if start < other_end and other_start < end:
            found.append(i)
    return found


def _valid(fields: Mapping[str, Any]) -> tuple[float, float]:
    start = fields.get("valid_from", system_from(fields))
    end = fields.get("valid_to", math.inf)
    return float(start), float(end)


def check_observation(kind: str, strength: float) -> None:
    """Refuse an observation no test weighs.

    Raises:
        SchemaError: ERR_RANGE for a strength outside [0.5, 1], ERR_SCHEMA for an
            unknown kind (both are ValueErrors).
    """
    if kind not in ("supporting", "refuting"):
        raise SchemaError(
            f"evidence kind is 'supporting' or 'refuting'; found {kind!r}",
            code=ErrorCode.SCHEMA,
        )
    if (
        not isinstance(strength, int | float)
        or isinstance(strength, bool)
        or not 0.5 <= strength <= 1.0
    ):
        raise SchemaError(
            f"strength must be in [0.5, 1.0]; found {strength!r}. A {kind} observation "
            f"weaker than 0.5 points the other way: record it as "
            f"{'refuting' if kind == 'supporting' else 'supporting'} with strength 1 - s",
            code=ErrorCode.RANGE,
        )
