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
has its semantics exactly: both are asked in one SPARQL query built from the
in-force definition (:func:`oms_rdf.rdf.inforce.delta_query`), which a query of
the grain layer can run too::

    from oms_rdf.rdf.inforce import delta_query
    store.query(delta_query(()), grains=True, validSince=t1, asOfSince=t1,
                validUntil=t2, asOfUntil=t2)   # datetimes

That query still reads every bound the store holds to find the few between the
points (Oxigraph has no range index). Where the store keeps the interval layer
(:mod:`.intervals`, an embedded store's writer), the same reasoning is asked of
the beliefs' extents the layer keeps, found by their bounds sorted
(:mod:`.belief_extents`): the cost is the change's, not the store's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ErrorCode, SchemaError
from ..rdf.inforce import delta_query
from ..rdf.mapping import address_of, millis_literal
from ..rdf.tables import GrainList
from .questions import bound_texts
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
    start, end = (
        millis_or_now(since, clock, "since"),
        millis_or_now(until, clock, "until"),
    )
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
    core = questions.core
    layered = _of_layer(questions, (valid, known), (end, end), namespace)
    if layered is not None:
        return layered
    if not core.backend.exact_optionals:
        return _two_points(questions, (valid, known), end, namespace)
    texts, bindings = bound_texts(None, None, namespace)
    written = tuple(millis_literal(t) for t in (valid, known, end, end))
    found: dict[str, list[Any]] = {"entered": [], "left": []}
    asked = delta_query(texts, written, lateral=core.backend.lateral_joins)
    for row in core.backend.query(asked, bindings):
        grain = core.grain_of(address_of(row["g"]), row["blob"])
        found[row["change"].value].append(grain)
    return Changes(
        entered=GrainList(found["entered"], core.status),
        left=GrainList(found["left"], core.status),
    )


def _of_layer(
    questions: Questions,
    since: tuple[int, int],
    until: tuple[int, int],
    namespace: str | None,
) -> Changes | None:
    """The delta from the beliefs' extents the interval layer keeps
    (:mod:`.belief_extents`): the beliefs with a bound between the two points,
    each tested at both. None where the layer does not answer."""
    core = questions.core
    with core.lock:  # the layer and the grains of one state of the store
        if core.intervals.ready(core.backend) is None:
            return None
        entered, left = core.intervals.beliefs.changed(since, until, namespace)
        return Changes(
            entered=GrainList(core.get_many(entered), core.status),
            left=GrainList(core.get_many(left), core.status),
        )


def _two_points(
    questions: Questions, since: tuple[int, int], until: int, namespace: str | None
) -> Changes:
    """The delta as the difference of the beliefs of the two points, for a
    backend that cannot evaluate :func:`delta_query` as written."""
    valid, known = since
    with questions.core.lock:  # both sides of one state of the store
        before = questions.beliefs(namespace=namespace, valid_at=valid, as_of=known)
        after = questions.beliefs(namespace=namespace, valid_at=until, as_of=until)
    was, now = {g.address for g in before}, {g.address for g in after}
    status = questions.core.status
    return Changes(
        entered=GrainList([g for g in after if g.address not in was], status),
        left=GrainList([g for g in before if g.address not in now], status),
    )
