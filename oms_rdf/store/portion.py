"""Changes over a portion of valid time (SQL:2011 ``FOR PORTION OF``).

A correction that covers part of a belief's valid interval leaves the rest as it
was: ``supersede(old, new, valid_from=a, valid_to=b)`` and ``retract(old,
valid_from=a, valid_to=b)`` write the pieces of ``old`` outside ``[a, b)`` as new
grains, each derived from ``old``, in the same atomic write. A piece says what
``old`` said, over its own interval: the same claim, confidence, provenance and
policy; its system time is the change's. Pure: it decides the pieces, the store
writes them.

>>> from oms_rdf.codec.grain import Belief
>>> old = Belief("ann", "works_at", "Acme", 0.9, created_at=0, valid_from=0, valid_to=100)
>>> [(p["valid_from"], p.get("valid_to")) for p in pieces(old, 20, 50, at=10)]
[(0, 20), (50, 100)]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..codec.grain import Grain, system_from
from ..errors import ErrorCode, SchemaError, TimeRangeError
from ..times import TimeLike, to_millis
from .state import GrainLike

__all__ = [
    "Portion",
    "check_portion",
    "is_piece",
    "over_portion",
    "pieces",
    "portion_of",
    "rest_of",
    "valid_interval",
    "within",
]

Portion = tuple[int, int | None]  # [valid_from, valid_to); None: no end

# What a piece does not take over from the grain it is cut from: its times are
# its own, and it is derived from that grain alone, not superseding anything.
_NOT_CARRIED = frozenset(
    {
        "valid_from",
        "valid_to",
        "system_valid_from",
        "created_at",
        "derived_from",
        "supersession_justification",
        "supersession_auth",
    }
)


def valid_interval(grain: Grain) -> Portion:
    """The valid interval of a grain: ``valid_from`` (default its system time) to
    ``valid_to`` (None: no end)."""
    return grain.get("valid_from", system_from(grain)), grain.get("valid_to")


def within(portion: Portion, grain: Grain) -> Portion:
    """The part of a portion inside the grain's valid interval: the valid time
    of what replaces it there (SQL:2011: the updated row's period).

    >>> from oms_rdf.codec.grain import Belief
    >>> within((20, None), Belief("a", "r", "x", 0.9, created_at=0, valid_to=100))
    (20, 100)
    """
    low, high = valid_interval(grain)
    end = portion[1]
    if high is not None:
        end = high if end is None else min(end, high)
    return max(portion[0], low), end


def portion_of(
    valid_from: TimeLike | None, valid_to: TimeLike | None
) -> Portion | None:
    """The portion of valid time a change is for, or None for all of it.

    Raises:
        SchemaError: ERR_SCHEMA for ``valid_to`` without ``valid_from``, or a
            time :func:`oms_rdf.times.to_millis` refuses.
        TimeRangeError: ERR_RANGE for a portion that ends before it begins.
    """
    if valid_from is None:
        if valid_to is not None:
            raise SchemaError(
                "valid_to= needs valid_from=: a portion of valid time has a start",
                code=ErrorCode.SCHEMA,
            )
        return None
    start = to_millis(valid_from, "valid_from")
    end = None if valid_to is None else to_millis(valid_to, "valid_to")
    if end is not None and end <= start:
        raise TimeRangeError(
            f"a portion of valid time [{start}, {end}) must end after it begins"
        )
    return start, end


def check_portion(grain: Grain, start: int, end: int | None) -> None:
    """Refuse a portion that is empty or misses the grain's valid interval.

    Raises:
        TimeRangeError: ERR_RANGE, naming both intervals.
    """
    low, high = valid_interval(grain)
    if end is not None and end <= start:
        raise TimeRangeError(
            f"a portion of valid time [{start}, {end}) must end after it begins"
        )
    if (high is not None and start >= high) or (end is not None and end <= low):
        raise TimeRangeError(
            f"the portion [{start}, {_end(end)}) misses {grain.address[:12]}…'s valid "
            f"time [{low}, {_end(high)})"
        )


def pieces(
    grain: Grain, start: int, end: int | None, *, at: int, reason: str | None = None
) -> list[dict[str, Any]]:
    """The fields of the pieces of ``grain`` outside ``[start, end)``, at system
    time ``at``: none, one (before or after) or two."""
    low, high = valid_interval(grain)
    kept = {k: v for k, v in grain.fields.items() if k not in _NOT_CARRIED}
    kept |= {"created_at": at, "derived_from": [grain.address]}
    if reason:
        kept["supersession_justification"] = reason
    out: list[dict[str, Any]] = []
    if start > low:
        out.append({**kept, "valid_from": low, "valid_to": start})
    if end is not None and (high is None or end < high):
        piece = {**kept, "valid_from": end}
        if high is not None:
            piece["valid_to"] = high
        out.append(piece)
    return out


def is_piece(grain: Grain, parent: Grain) -> bool:
    """Whether ``grain`` is a piece of ``parent`` (:func:`pieces`): derived from
    it alone, saying what it says, over its own valid time."""
    if grain.get("derived_from") != [parent.address]:
        return False
    if grain.type_byte != parent.type_byte:
        return False
    said = [
        {k: v for k, v in g.fields.items() if k not in _NOT_CARRIED}
        for g in (grain, parent)
    ]
    return said[0] == said[1]


def rest_of(
    old: Grain, new: Grain, portion: Portion | None, at: int, reason: str | None
) -> list[dict[str, Any]]:
    """The fields of the pieces of ``old`` that stay when ``new`` replaces it
    for a portion of valid time only (none for all of it), at system time ``at``.

    Raises:
        SchemaError: ERR_SCHEMA when ``new`` is not valid over the portion.
    """
    if portion is None:
        return []
    if valid_interval(new) not in (portion, within(portion, old)):
        raise SchemaError(
            f"the new grain is valid over {valid_interval(new)}, not "
            f"the portion {within(portion, old)} it replaces the old one for",
            code=ErrorCode.SCHEMA,
        )
    return pieces(old, *portion, at=at, reason=reason)


def _end(end: int | None) -> str:
    return "∞" if end is None else str(end)


def over_portion(new: GrainLike, portion: Portion, old: Grain) -> GrainLike:
    """A mapping ``new`` valid over the portion within ``old``'s valid time (SQL:2011:
    the updated row's period is the intersection), unless it says otherwise."""
    if not isinstance(new, Mapping):
        return new
    start, end = within(portion, old)
    fields = dict(new)
    fields.setdefault("valid_from", start)
    if end is not None:
        fields.setdefault("valid_to", end)
    return fields
