"""What changed between two points, on each axis, on a hand-derived story."""

from __future__ import annotations

import pytest

import oms_rdf as oms

DAY = 86_400_000
T0 = 1_767_225_600_000
ANN, WORKS = "http://example.org/ann", "http://example.org/worksAt"


def belief(obj: str, *, at: int, valid: int) -> dict[str, object]:
    return {"type": "belief", "subject": ANN, "relation": WORKS,
            "object": f"http://example.org/{obj}", "confidence": 0.9,
            "created_at": at, "valid_from": valid}  # fmt: skip


def objects(grains: oms.GrainList) -> list[str]:
    return sorted(g["object"].rsplit("/", 1)[1] for g in grains)


@pytest.fixture
def store() -> oms.GrainStore:
    # Day 0: Ann works at Acme (since day 0). Day 10: we learn she moved to
    # Initech on day 5 (a late correction). Day 20: we learn she left Initech.
    store = oms.GrainStore(clock=lambda: T0 + 30 * DAY)
    acme = store.put(belief("acme", at=T0, valid=T0))
    initech = store.supersede(
        acme, belief("initech", at=T0 + 10 * DAY, valid=T0 + 5 * DAY)
    )
    store.retract(initech, reason="left", at=T0 + 20 * DAY)
    return store


def test_both_axes(store: oms.GrainStore) -> None:
    delta = store.changes(T0 + DAY, T0 + 12 * DAY)
    assert (objects(delta.entered), objects(delta.left)) == (["initech"], ["acme"])
    delta = store.changes(T0 + 12 * DAY, T0 + 25 * DAY)
    assert (objects(delta.entered), objects(delta.left)) == ([], ["initech"])
    assert objects(store.changes(T0 + 2 * DAY, T0 + 3 * DAY).entered) == []


def test_valid_time_as_known_later(store: oms.GrainStore) -> None:
    # As known on day 12: the world changed on day 5.
    delta = store.changes(T0 + 2 * DAY, T0 + 12 * DAY, axis="valid")
    assert (objects(delta.entered), objects(delta.left)) == (["initech"], ["acme"])


def test_what_the_store_learnt(store: oms.GrainStore) -> None:
    # About day 12: believed Acme on day 2, learnt Initech by day 12.
    delta = store.changes(T0 + 2 * DAY, T0 + 12 * DAY, axis="system")
    assert (objects(delta.entered), objects(delta.left)) == (["initech"], ["acme"])
    # As known on day 3, nothing changed between days 2 and 3.
    delta = store.changes(T0 + 2 * DAY, T0 + 3 * DAY, axis="valid")
    assert (objects(delta.entered), objects(delta.left)) == ([], [])


def test_an_unknown_axis_is_refused(store: oms.GrainStore) -> None:
    with pytest.raises(oms.SchemaError):
        store.changes(T0, T0 + DAY, axis="sideways")  # type: ignore[arg-type]
