"""Protection policies (``invalidation_policy``, spec §8.3-§8.5): decide, never write.

The store gathers which policies protect a grain (its own; ``subtree`` policies of
its derivation ancestors within 16 hops; ``lineage`` policies of its supersession
chain) and asks :func:`check` whether an operation may proceed. A refusal is a
:class:`PolicyError` with ``ERR_INVALIDATION_DENIED``.

>>> check("supersede", [Protector("ab" * 32, {"mode": "locked"}, "own")], now_ms=0)
Traceback (most recent call last):
...
oms_rdf.errors.PolicyError: ERR_INVALIDATION_DENIED: supersede refused: grain abab… is locked (mode 'locked') (at $.invalidation_policy)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ErrorCode, PolicyError

__all__ = ["MAX_HOPS", "Protector", "check", "effective_mode", "is_protected"]

MAX_HOPS = 16  # spec §8.4: the derivation walk for subtree scope and chain injection
OPERATIONS = ("supersede", "retract", "contradict")
_NEEDS_SIGNATURES = ("quorum", "delegated", "consent_cascade")


@dataclass(frozen=True, slots=True)
class Protector:
    """A policy that applies to the target of an operation, and why it applies."""

    address: str
    policy: Any  # the grain's invalidation_policy value, as decoded
    via: str  # "own", "subtree ancestor", "lineage"


def effective_mode(policy: Any, now_ms: int) -> str:
    """Return the mode in force now; ``timed`` resolves to locked or its fallback.

    A policy that is not a map, or whose mode is not text, counts as ``locked``
    (fail-closed, spec §8.3).

    >>> effective_mode({"mode": "timed", "locked_until": 10, "fallback_mode": "open"}, 11_000)
    'open'
    >>> effective_mode({"mode": "whatever"}, 0)
    'locked'
    """
    if policy is None:
        return "open"
    if not isinstance(policy, Mapping):
        return "locked"
    mode = policy.get("mode", "open")
    if mode == "timed":
        until = policy.get("locked_until")
        if type(until) is not int or now_ms < until * 1000:  # locked_until is seconds
            return "locked"
        fallback = policy.get("fallback_mode", "open")
        return (
            "locked"
            if fallback == "timed"
            else effective_mode({"mode": fallback}, now_ms)
        )
    known = ("open", "soft_locked", "locked", "hold", *_NEEDS_SIGNATURES)
    return mode if isinstance(mode, str) and mode in known else "locked"


def is_protected(policy: Any, now_ms: int) -> bool:
    """Return whether a policy restricts invalidation now (any mode but ``open``)."""
    return effective_mode(policy, now_ms) != "open"


def check(
    operation: str,
    protectors: Iterable[Protector],
    *,
    now_ms: int,
    justification: str | None = None,
) -> list[str]:
    """Check an invalidation against every applicable policy.

    Args:
        operation: ``supersede``, ``retract`` or ``contradict``.
        protectors: the policies that apply to the target.
        now_ms: the store's clock, for ``timed`` policies.
        justification: the superseding grain's ``supersession_justification``, or
            the reason given for a retraction or contradiction.

    Returns:
        Notes for human review (``soft_locked`` grains that were overridden).

    Raises:
        PolicyError: ERR_INVALIDATION_DENIED when any policy refuses.
    """
    review: list[str] = []
    for p in protectors:
        mode = effective_mode(p.policy, now_ms)
        who = f"grain {p.address[:4]}…" + ("" if p.via == "own" else f" ({p.via})")
        raw = p.policy.get("mode") if isinstance(p.policy, Mapping) else p.policy
        if mode == "open":
            continue
        if mode == "soft_locked":
            if justification:
                review.append(
                    f"{who} is soft_locked; {operation} justified: {justification}"
                )
                continue
            raise _deny(
                f"{operation} refused: {who} is soft_locked; give a "
                "supersession_justification (or a reason) to override it, which is "
                "recorded for review"
            )
        if mode in _NEEDS_SIGNATURES:
            raise _deny(
                f"{operation} refused: {who} has mode {mode!r}, which needs signature "
                "checks this store does not implement yet"
            )
        if mode == "hold":
            raise _deny(
                f"{operation} refused: {who} is under a hold until it is lifted"
            )
        detail = "" if raw == mode else ", an unknown mode that fails closed to locked"
        if raw == "timed":
            detail = f" until {p.policy.get('locked_until')} (epoch seconds)"
        raise _deny(f"{operation} refused: {who} is locked (mode {raw!r}){detail}")
    return review


def _deny(message: str) -> PolicyError:
    return PolicyError(
        message, code=ErrorCode.INVALIDATION_DENIED, path="$.invalidation_policy"
    )
