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

from ..errors import ErrorCode, PolicyError

__all__ = ["MAX_HOPS", "Protector", "check", "effective_mode", "is_protected"]

MAX_HOPS = 16  # spec §8.4: the derivation walk for subtree scope and chain injection
_SIGNATURE_MODES = ("quorum", "delegated")


@dataclass(frozen=True, slots=True)
class Protector:
    """A policy that applies to the target of an operation, and why it applies."""

    address: str
    policy: Any  # the grain's invalidation_policy value, as decoded
    via: str  # "own", "subtree ancestor", "lineage", "inherited from the goal it replaced"
    author: str | None = None  # the protected grain's author_did, for key separation
    # A protected goal's: the states it may move to on its own (allowed_transitions,
    # spec §8.6), and how many satisfaction_evidence entries "satisfied" needs.
    allowed: frozenset[str] = frozenset()
    evidence_required: int = 0
    hops: int = 0  # a subtree ancestor's: how far up it is (at most MAX_HOPS)


def effective_mode(policy: Any, now_ms: int) -> str:
    """Return the mode in force now; ``timed`` resolves to locked or its fallback.

    A policy that is not a map, or whose mode is missing or not a known mode,
    counts as ``locked`` (fail-closed, spec §8.3: a policy is never read as
    permissive; ``open`` is written, not assumed).

    >>> effective_mode({"mode": "timed", "locked_until": 10, "fallback_mode": "open"}, 11_000)
    'open'
    >>> effective_mode({"mode": "whatever"}, 0), effective_mode({"scope": "grain"}, 0)
    ('locked', 'locked')
    """
    if policy is None:
        return "open"
    if not isinstance(policy, Mapping):
        return "locked"
    mode = policy.get("mode")
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
    known = (
        "open",
        "soft_locked",
        "locked",
        "hold",
        "consent_cascade",
        *_SIGNATURE_MODES,
    )
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
    quoted: str | None = None,
    signer: str | None = None,
    cosigners: Iterable[str] = (),
    requester: str | None = None,
    reaching: str | None = None,
    evidence: int = 0,
) -> list[str]:
    """Check an invalidation against every applicable policy.

    Args:
        operation: ``supersede``, ``retract`` or ``contradict``.
        protectors: the policies that apply to the target.
        now_ms: the store's clock, for ``timed`` policies.
        justification: the superseding grain's ``supersession_justification``, or
            the reason given for a retraction or contradiction.
        quoted: how a review note names the justification (default: itself).
        signer: the DID whose COSE signature over the superseding grain verified
            (``delegated``).
        cosigners: the DIDs with a valid ``supersession_auth`` signature (``quorum``).
        requester: who asks (``by=``, else the signer), for key separation.
        reaching: for a goal superseded by a goal, the state the new one is in.
        evidence: how many ``satisfaction_evidence`` entries the new goal cites.

    Returns:
        Notes for human review (``soft_locked`` grains that were overridden, goals
        that moved on their own).

    Raises:
        PolicyError: ERR_INVALIDATION_DENIED when any policy refuses;
            ERR_EVIDENCE_REQUIRED when a protected goal becomes ``satisfied`` with
            fewer evidence entries than its ``evidence_required``.
    """
    review: list[str] = []
    approvals = frozenset(cosigners)
    protectors = list(protectors)
    for p in protectors:
        mode = effective_mode(p.policy, now_ms)
        who = f"grain {p.address[:4]}…" + ("" if p.via == "own" else f" ({p.via})")
        raw = p.policy.get("mode") if isinstance(p.policy, Mapping) else p.policy
        if mode in ("open", "consent_cascade"):
            continue  # consent_cascade governs erasure, not supersession (spec §8.3)
        if operation == "supersede" and _allowed(p, mode, raw, reaching):
            review.append(
                f"{who} is {mode}; the goal may move to {reaching!r} on its own"
            )
            continue
        if mode == "soft_locked":
            if justification and justification.strip():  # blank says nothing
                review.append(
                    f"{who} is soft_locked; {operation} justified: "
                    f"{justification if quoted is None else quoted}"
                )
                continue
            raise _deny(
                f"{operation} refused: {who} is soft_locked; give a "
                "supersession_justification (or a reason) to override it, which is "
                "recorded for review"
            )
        if mode == "delegated":
            _delegated(operation, who, p, signer)
            continue
        if mode == "quorum":
            _quorum(operation, who, p, approvals)
            continue
        if mode == "hold":
            raise _deny(
                f"{operation} refused: {who} is under a hold until it is lifted"
            )
        detail = "" if raw == mode else ", an unknown mode that fails closed to locked"
        if raw == "timed":
            detail = _timed(p.policy, now_ms)
        if requester is not None and requester == p.author:
            detail += "; and the requester is the grain's own author (key separation, spec §8.7)"
        raise _deny(f"{operation} refused: {who} is locked (mode {raw!r}){detail}")
    if reaching == "satisfied":
        _evidence(protectors, evidence, now_ms)
    return review


def _timed(policy: Mapping[str, Any], now_ms: int) -> str:
    """Why a timed policy locks now: its time, or the fallback in force after it."""
    until = policy.get("locked_until")
    if type(until) is not int or now_ms < until * 1000:
        return f" until {until} (epoch seconds)"
    fallback = policy.get("fallback_mode", "open")
    why = {"locked": "locked", "timed": "a timed fallback counts as locked"}.get(
        fallback, "an unknown mode, which fails closed to locked"
    )
    return (
        f"; it unlocked at {until} (epoch seconds) and its fallback_mode "
        f"{fallback!r} is in force ({why})"
    )


def _allowed(p: Protector, mode: str, raw: Any, reaching: str | None) -> bool:
    """Whether a goal's transition is one it lists as its own to make (spec §8.6):
    never past a hold, nor past a mode this store does not know (fail-closed)."""
    return reaching in p.allowed and mode != "hold" and raw in (mode, "timed")


def _evidence(protectors: list[Protector], evidence: int, now_ms: int) -> None:
    """A protected goal made ``satisfied`` cites its ``evidence_required`` (§8.6)."""
    for p in protectors:
        need = p.evidence_required
        if need > evidence and is_protected(p.policy, now_ms):
            raise PolicyError(
                f"goal {p.address[:4]}… is protected and needs {need} "
                f"satisfaction_evidence entries to become satisfied; the new goal "
                f"cites {evidence}",
                code=ErrorCode.EVIDENCE_REQUIRED,
                path="$.satisfaction_evidence",
            )


def _authorized(policy: Mapping[str, Any]) -> frozenset[str]:
    names = policy.get("authorized", ())
    return (
        frozenset(n for n in names if isinstance(n, str))
        if isinstance(names, list)
        else frozenset()
    )


def _delegated(operation: str, who: str, p: Protector, signer: str | None) -> None:
    authorized = _authorized(p.policy)
    if operation != "supersede":
        raise _deny(
            f"{operation} refused: {who} is delegated; only a signed supersession by one of {sorted(authorized)} can invalidate it"
        )
    if signer is None:
        raise _deny(
            f"supersede refused: {who} is delegated; the new grain must be COSE-signed by one of {sorted(authorized)}"
        )
    if signer not in authorized:
        raise _deny(
            f"supersede refused: {who} is delegated to {sorted(authorized)}; the new grain is signed by {signer}"
        )


def _quorum(operation: str, who: str, p: Protector, approvals: frozenset[str]) -> None:
    authorized = _authorized(p.policy)
    threshold = p.policy.get("threshold")
    if operation != "supersede":
        raise _deny(f"{operation} refused: {who} needs a quorum-signed supersession")
    if type(threshold) is not int or threshold < 1:
        raise _deny(
            f"supersede refused: {who} has a quorum policy without a threshold >= 1 (fails closed)"
        )
    valid = (approvals & authorized) - {p.author}
    if len(valid) < threshold:
        own = (
            " (the grain's own author does not count: key separation, spec §8.7)"
            if p.author in approvals
            else ""
        )
        raise _deny(
            f"supersede refused: {who} needs {threshold} signatures from {sorted(authorized)} "
            f"in supersession_auth; {len(valid)} valid{own}"
        )


def _deny(message: str) -> PolicyError:
    return PolicyError(
        message, code=ErrorCode.INVALIDATION_DENIED, path="$.invalidation_policy"
    )
