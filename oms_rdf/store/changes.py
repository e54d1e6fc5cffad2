"""What changed between two points: the beliefs that entered and left.

The delta of versioned-RDF benchmarks (DM), on both axes of a bi-temporal store.
Between ``since`` and ``until``:

- ``axis="both"`` (the default) compares what was believed true at each point,
  as believed then: ``(since, since)`` with ``(until, until)``;
- ``axis="valid"`` asks how the world changed, as known at ``until``:
  ``(valid since, as of until)`` with ``(until, until)``;
- ``axis="system"`` asks what the store learnt about the world at ``until``:
  ``(valid until, as of since)`` with ``(until, until)``.

Each side is what :meth:`GrainStore.beliefs` answers for its point, so the delta
has its semantics exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..errors import ErrorCode, SchemaError
from ..rdf.tables import GrainList
from .state import TimeLike, millis_or_now

if TYPE_CHECKING:
    from .questions import Questions

__all__ = ["Changes", "changes"]

Axis = Literal["both", "valid", "system"]


@dataclass(frozen=True, slots=True)
class Changes:
    """The beliefs in force at the second point and not the first (``entered``),
    and the other way (``left``), each ordered as :meth:`GrainStore.beliefs`."""

    entered: GrainList
    left: GrainList


def changes(
    questions: Questions,
    since: TimeLike,
    until: TimeLike = None,
    *,
    namespace: str | None = None,
    axis: Axis = "both",
) -> Changes:
    """The beliefs that entered and left between two points (see the module).

    Raises:
        SchemaError: ERR_SCHEMA for an unknown axis.
    """
    clock = questions.core.clock
    start, end = millis_or_now(since, clock), millis_or_now(until, clock)
    points = {
        "both": (start, start),
        "valid": (start, end),
        "system": (end, start),
    }
    if axis not in points:
        raise SchemaError(
            f"axis is one of {sorted(points)}; found {axis!r}", code=ErrorCode.SCHEMA
        )
    valid, known = points[axis]
    with questions.core.lock:  # both sides of one state of the store
        before = questions.beliefs(namespace=namespace, valid_at=valid, as_of=known)
        after = questions.beliefs(namespace=namespace, valid_at=end, as_of=end)
    was = {g.address for g in before}
    now = {g.address for g in after}
    status = questions.core.status
    return Changes(
        entered=GrainList([g for g in after if g.address not in was], status),
        left=GrainList([g for g in before if g.address not in now], status),
    )
