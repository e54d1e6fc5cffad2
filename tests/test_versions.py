"""When was this true: the extents of a triple's beliefs, by the API and SPARQL.

A hand-derived story first; then, on random histories, a belief is in force at a
point (as ``beliefs()`` answers) exactly when one of its versions holds it.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf.store.questions import Version
from tests.test_time_travel import KINDS, enact

DAY = 86_400_000
T0 = 1_767_225_600_000
ANN, WORKS = "http://example.org/ann", "http://example.org/worksAt"


def belief(obj: str, *, at: int, valid: int, **more: object) -> dict[str, object]:
    return {"type": "belief", "subject": ANN, "relation": WORKS,
            "object": f"http://example.org/{obj}", "confidence": 0.9,
            "created_at": at, "valid_from": valid, **more}  # fmt: skip


def story() -> oms.GrainStore:
    # Day 0: Ann works at Acme (since day 0). Day 10: we learn she moved to
    # Initech on day 5. Day 20: the Initech belief is retracted.
    store = oms.GrainStore(clock=lambda: T0 + 30 * DAY)
    acme = store.put(belief("acme", at=T0, valid=T0))
    initech = store.supersede(
        acme, belief("initech", at=T0 + 10 * DAY, valid=T0 + 5 * DAY)
    )
    store.retract(initech, reason="left", at=T0 + 20 * DAY)
    return store


def days(v: Version) -> tuple[str, int, int | None, int, int | None]:
    def day(t: int | None) -> int | None:
        return None if t is None else (t - T0) // DAY

    return (v.grain["object"].rsplit("/", 1)[1], day(v.valid_from),  # type: ignore[return-value]
            day(v.valid_to), day(v.system_from), day(v.system_to))  # fmt: skip


def extents(
    versions: list[Version],
) -> set[tuple[str, int, int | None, int, int | None]]:
    return {days(v) for v in versions}


def test_the_versions_of_a_story() -> None:
    store = story()
    # Acme: valid from day 0 on, as known from day 0 to day 10; from day 10 on,
    # valid only up to day 5 (Initech's start). Initech: valid from day 5 on, as
    # known from day 10 until its retraction on day 20.
    assert extents(store.versions(ANN, WORKS)) == {
        ("acme", 0, None, 0, 10),
        ("acme", 0, 5, 10, None),
        ("initech", 5, None, 10, 20),
    }
    only = store.versions(ANN, WORKS, "http://example.org/initech")
    assert [days(v) for v in only] == [("initech", 5, None, 10, 20)]
    assert store.versions("http://example.org/nobody") == []


def test_a_valid_end_bounds_both_extents() -> None:
    store = oms.GrainStore(clock=lambda: T0 + 30 * DAY)
    old = store.put(belief("acme", at=T0, valid=T0, valid_to=T0 + 8 * DAY))
    store.supersede(old, belief("initech", at=T0 + 10 * DAY, valid=T0 + 12 * DAY))
    # Superseded on day 10 by a belief valid from day 12: Acme's valid end (day 8)
    # comes first, so its second extent is as long as the first.
    assert extents(store.versions(ANN, WORKS)) == {
        ("acme", 0, 8, 0, 10),
        ("acme", 0, 8, 10, None),
        ("initech", 12, None, 10, None),
    }


Step = tuple[str, int, int, int, int | None]
steps = st.lists(
    st.tuples(
        st.sampled_from(KINDS),
        st.integers(0, 2),
        st.integers(1, 3),
        st.integers(-6, 6),
        st.one_of(st.none(), st.integers(1, 8)),
    ),
    min_size=1,
    max_size=10,
)


def build(history: list[Step]) -> oms.GrainStore:
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    day = 0
    for kind, where, gap, valid, length in history:
        day += gap
        clock[0] = T0 + day * DAY
        start = clock[0] + valid * DAY
        more = {} if length is None else {"valid_to": start + length * DAY}
        fields = belief(f"org{where}", at=clock[0], valid=start, **more)
        enact(store, kind, ANN, WORKS, fields)
    return store


# Over a server (the soak tier) each example is hundreds of round trips.
@settings(
    max_examples={None: 40, "virtuoso": 2}.get(
        os.environ.get("OMS_RDF_TEST_BACKEND"), 8
    ),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(history=steps)
def test_a_belief_is_in_force_where_a_version_holds(history: list[Step]) -> None:
    store = build(history)
    versions = store.versions(ANN, WORKS)
    for known in range(0, 34, 3):
        for valid in range(-8, 40, 3):
            v_at, t_at = T0 + valid * DAY, T0 + known * DAY
            by_beliefs = {g.address for g in store.beliefs(valid_at=v_at, as_of=t_at)}
            by_versions = {v.grain.address for v in versions if v.holds(v_at, t_at)}
            assert by_versions == by_beliefs, (valid, known)
