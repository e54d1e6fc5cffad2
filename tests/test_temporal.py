"""A belief history with answers derived by hand from design §4 (half-open valid
intervals; a supersession keeps the old grain describing the past up to the
successor's valid_from; retraction and contradiction void a grain from their time on).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import oms_rdf as oms
from oms_rdf.rdf.vocab import OMS
from oms_rdf.store import GrainStore


def day(y: int, m: int = 1, d: int = 1) -> int:
    return int(datetime(y, m, d, tzinfo=UTC).timestamp() * 1000)


NOW = day(2026, 6, 1)


def belief(s: str, r: str, o: str, c: float, created: int, **kw: object) -> oms.Grain:
    return oms.Belief(s, r, o, c, created_at=created, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def story() -> tuple[GrainStore, dict[str, str]]:
    store = GrainStore(clock=lambda: NOW)
    a: dict[str, str] = {}
    a["acme"] = store.put(
        belief("alice", "works_at", "Acme", 0.9, day(2020, 1, 5), valid_from=day(2020))
    )
    a["initech"] = store.supersede(
        a["acme"],
        {"type": "belief", "subject": "alice", "relation": "works_at", "object": "Initech",
         "confidence": 0.95, "created_at": day(2023, 3, 10), "valid_from": day(2023, 3, 1)},
    )  # fmt: skip
    a["paris"] = store.put(
        belief("bob", "lives_in", "Paris", 0.8, day(2024, 1, 2), valid_from=day(2024))
    )
    a["lyon"] = store.supersede(
        a["paris"],
        {"type": "belief", "subject": "bob", "relation": "lives_in", "object": "Lyon",
         "confidence": 0.9, "created_at": day(2024, 2, 1), "valid_from": day(2024)},
    )  # fmt: skip
    a["jazz"] = store.put(
        belief("carol", "likes", "jazz", 0.7, day(2022, 5, 1), valid_from=day(2022))
    )
    store.retract(a["jazz"], reason="never said so", at=day(2024, 6, 1))
    a["french"] = store.put(belief("dave", "speaks", "French", 0.6, day(2021)))
    store.contradict(a["french"], by="did:example:carol", at=day(2025))
    a["bike"] = store.put(belief("eve", "owns", "a bike", 0.5, day(2022)))
    store.set_verification(a["bike"], "disputed", at=day(2025, 2, 1))
    a["club"] = store.put(
        belief(
            "frank",
            "member_of",
            "Club",
            0.9,
            day(2019),
            valid_from=day(2020),
            valid_to=day(2021),
        )
    )
    a["python"] = store.put(
        belief("grace", "knows", "Python", 0.9, day(2019), valid_from=day(2019))
    )
    a["tea"] = store.put(
        belief("heidi", "prefers", "tea", 0.9, day(2023), namespace="work")
    )
    a["coffee"] = store.put(
        belief("heidi", "prefers", "coffee", 0.8, day(2023), namespace="home")
    )
    return store, a


def objects(store: GrainStore, *args: str, **kw: object) -> list[str]:
    return [g["object"] for g in store.beliefs(*args, **kw)]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("subject", "valid_at", "as_of", "expected"),
    [
        # job change: the old belief still answers for the past
        ("alice", None, None, ["Initech"]),
        ("alice", day(2021, 6, 1), None, ["Acme"]),
        ("alice", day(2023, 2, 15), None, ["Acme"]),
        ("alice", day(2023, 3, 5), None, ["Initech"]),
        ("alice", None, day(2022), ["Acme"]),
        (
            "alice",
            day(2023, 3, 5),
            day(2023, 3, 5),
            ["Acme"],
        ),  # successor not yet known
        ("alice", None, day(2019, 12, 1), []),
        # correction: the successor is valid from the same time, so it replaces entirely
        ("bob", day(2024, 1, 15), None, ["Lyon"]),
        ("bob", day(2024, 1, 15), day(2024, 1, 20), ["Paris"]),
        # retraction: no valid time answers after it
        ("carol", day(2023), None, []),
        ("carol", day(2023), day(2024, 5, 1), ["jazz"]),
        # contradiction
        ("dave", None, None, []),
        ("dave", day(2024, 12, 31), day(2024, 12, 31), ["French"]),
        # a disputed belief stays
        ("eve", None, None, ["a bike"]),
        # closed interval [2020, 2021), half-open; an open one
        ("frank", day(2020, 6, 1), None, ["Club"]),
        ("frank", day(2021), None, []),
        ("frank", day(2019, 12, 31), None, []),
        # both times default to now (design §5): as of mid-2020 the club was known,
        # but it is not true now; asked about mid-2020 itself, it was
        ("frank", None, day(2020, 6, 1), []),
        ("frank", day(2020, 6, 1), day(2020, 6, 1), ["Club"]),
        ("grace", day(2030), None, ["Python"]),
        # two namespaces, highest confidence first
        ("heidi", None, None, ["tea", "coffee"]),
    ],
)
def test_bitemporal_points(
    story: tuple[GrainStore, dict[str, str]], subject: str, valid_at: int | None,
    as_of: int | None, expected: list[str],
) -> None:  # fmt: skip
    store, _ = story
    assert objects(store, subject, valid_at=valid_at, as_of=as_of) == expected


def test_namespaces(story: tuple[GrainStore, dict[str, str]]) -> None:
    store, a = story
    assert objects(store, "heidi", "prefers", namespace="work") == ["tea"]
    assert objects(store, "heidi", namespace="home") == ["coffee"]
    tea, coffee = store.get(a["tea"]), store.get(a["coffee"])
    s1 = list(store.backend.quads(None, None, None, None))
    subjects = {
        q.object
        for q in s1
        if q.predicate.value.endswith("#subject")
        and q.subject.value.endswith((tea.address, coffee.address))
    }
    assert len(subjects) == 2  # one entity IRI per namespace


def test_index_states(story: tuple[GrainStore, dict[str, str]]) -> None:
    store, a = story
    acme = store.status(a["acme"])
    assert (acme.status, acme.superseded_by, acme.system_to) == (
        "superseded",
        a["initech"],
        day(2023, 3, 10),
    )
    jazz = store.status(a["jazz"])
    assert (jazz.status, jazz.voided_at, jazz.reason) == (
        "retracted",
        day(2024, 6, 1),
        "never said so",
    )
    french = store.status(a["french"])
    assert (french.status, french.verification, french.initiator) == (
        "active",
        "contradicted",
        "did:example:carol",
    )
    bike = store.status(a["bike"])
    assert (bike.verification, bike.is_current) == ("disputed", True)


def test_current_graph(story: tuple[GrainStore, dict[str, str]]) -> None:
    store, _ = story
    current = {
        (q.subject.value.rsplit("/", 1)[1], q.object.value)
        for q in store.backend.quads(None, None, None, OMS.current)
    }
    assert ("alice", "Initech") in current and ("alice", "Acme") not in current
    assert ("bob", "Lyon") in current and ("bob", "Paris") not in current
    assert not any(s in ("carol", "dave") for s, _ in current)
    assert ("eve", "a bike") in current


def test_history_and_derived(story: tuple[GrainStore, dict[str, str]]) -> None:
    store, a = story
    chain = [g.address for g in store.history(a["acme"])]
    assert chain == [a["acme"], a["initech"]]
    assert [g.address for g in store.history(a["initech"])] == chain
    assert [g.address for g in store.history(a["python"])] == [a["python"]]
    assert [g.address for g in store.derived(a["acme"])] == [a["initech"]]
    assert store.get(a["initech"])["derived_from"] == [a["acme"]]


def test_shared_claim_stays_current() -> None:
    # Two grains asserting the same triple: retracting one keeps the other's triple.
    store = GrainStore(clock=lambda: NOW)
    one = store.put(belief("ivan", "likes", "tea", 0.5, day(2020)))
    store.put(belief("ivan", "likes", "tea", 0.6, day(2021)))
    store.retract(one, reason="duplicate")
    assert len(list(store.backend.quads(None, None, None, OMS.current))) == 1
    assert objects(store, "ivan") == ["tea"]


def test_successor_older_than_predecessor_refused() -> None:
    store = GrainStore(clock=lambda: NOW)
    old = store.put(belief("x", "r", "1", 0.5, day(2022)))
    with pytest.raises(oms.PolicyError) as info:
        store.supersede(old, belief("x", "r", "2", 0.5, day(2021)))
    assert info.value.code == oms.ErrorCode.RANGE


def test_superseding_twice_is_a_conflict() -> None:
    store = GrainStore(clock=lambda: NOW)
    old = store.put(belief("x", "r", "1", 0.5, day(2022)))
    store.supersede(old, belief("x", "r", "2", 0.5, day(2023)))
    with pytest.raises(oms.PolicyError) as info:
        store.supersede(old, belief("x", "r", "3", 0.5, day(2024)))
    assert info.value.code == oms.ErrorCode.CONFLICT


def test_current_graph_rebuilds_to_the_same(
    story: tuple[GrainStore, dict[str, str]],
) -> None:
    store, _ = story
    maintained = {str(q) for q in store.backend.quads(None, None, None, OMS.current)}
    store.rebuild_current()
    assert {
        str(q) for q in store.backend.quads(None, None, None, OMS.current)
    } == maintained
    assert maintained


def test_history_includes_forks() -> None:
    # Forks arrive only through imported index state: two successors of one grain.
    store = GrainStore(clock=lambda: NOW)
    root = store.put(belief("x", "r", "0", 0.5, day(2020)))
    left = store.put(belief("x", "r", "left", 0.5, day(2021)))
    right = store.put(belief("x", "r", "right", 0.5, day(2022)))
    store.backend.update(
        "PREFIX oms: <https://w3id.org/oms-rdf/ns#> INSERT DATA { GRAPH oms:index { "
        f"<nih:sha-256;{root}> oms:supersededBy <nih:sha-256;{left}>, <nih:sha-256;{right}> . }} }}"
    )
    expected = [root, left, right]
    assert [g.address for g in store.history(right)] == expected
    assert [g.address for g in store.history(root)] == expected


@pytest.mark.parametrize(
    ("valid_at", "as_of"),
    [
        (None, None),
        (day(2021, 6, 1), None),
        (day(2024, 1, 15), day(2024, 1, 20)),
        (None, day(2019, 12, 1)),
    ],
)
def test_count_matches_beliefs(
    story: tuple[GrainStore, dict[str, str]], valid_at: int | None, as_of: int | None
) -> None:
    store, _ = story
    assert store.count_beliefs(valid_at=valid_at, as_of=as_of) == len(
        store.beliefs(valid_at=valid_at, as_of=as_of)
    )


def test_history_orders_by_time_value_not_text() -> None:
    # 10:00:00.500 sorts before 10:00:00 as text ("." < "Z"), after it as a time.
    store = GrainStore(clock=lambda: NOW)
    first = store.put(belief("x", "r", "1", 0.5, day(2024)))
    second = store.supersede(first, belief("x", "r", "2", 0.5, day(2024) + 500))
    third = store.supersede(second, belief("x", "r", "3", 0.5, day(2024) + 1000))
    assert [g.address for g in store.history(first)] == [first, second, third]
