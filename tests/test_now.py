"""One meaning of now: what SPARQL sees by default is the knowledge in force now on
both axes, as the clock moves, exactly as ``valid_at=now, as_of=now``."""

from __future__ import annotations

import io
from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oms_rdf as oms

DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01
EX = "http://example.org/"
ALL = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"


class Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def belief(s: str, o: str, **times: int) -> oms.Belief:
    return oms.Belief(EX + s, EX + "worksAt", EX + o, 0.9, created_at=T0, **times)


def triples(answer: object) -> set[tuple[str, ...]]:
    return {tuple(str(t) for t in row) for row in answer}  # type: ignore[attr-defined]


@pytest.fixture
def story() -> tuple[oms.GrainStore, Clock, dict[str, str]]:
    clock = Clock(T0 + 10 * DAY)
    store = oms.GrainStore(clock=clock)
    grains = {
        "ended": store.put(belief("ann", "acme", valid_to=T0 + 5 * DAY)),
        "ahead": store.put(belief("bo", "initech", valid_from=T0 + 20 * DAY)),
        "open": store.put(belief("cy", "umbrella")),
        "window": store.put(
            belief("di", "hooli", valid_from=T0 + 5 * DAY, valid_to=T0 + 15 * DAY)
        ),
    }
    old = store.put(belief("ed", "acme"))
    # A successor valid only from day 30: the old belief still describes now.
    grains["next"] = store.supersede(
        old, oms.Belief(EX + "ed", EX + "worksAt", EX + "initech", 0.9,
                        created_at=T0 + DAY, valid_from=T0 + 30 * DAY)
    )  # fmt: skip
    grains["old"] = old
    return store, clock, grains


def at_now(
    store: oms.GrainStore, clock: Clock, query: str = ALL
) -> set[tuple[str, ...]]:
    return triples(store.query(query, valid_at=clock.now, as_of=clock.now))


def test_the_default_graph_is_the_knowledge_in_force_now(story) -> None:  # type: ignore[no-untyped-def]
    store, clock, _ = story
    subjects = {s for s, _, _ in triples(store.query(ALL))}
    assert subjects == {f"<{EX}cy>", f"<{EX}di>", f"<{EX}ed>"}
    assert triples(store.query(ALL)) == at_now(store, clock)
    assert (f"<{EX}ed>", f"<{EX}worksAt>", f"<{EX}acme>") in triples(store.query(ALL))


def test_the_default_graph_follows_the_clock_with_no_write(story) -> None:  # type: ignore[no-untyped-def]
    store, clock, _ = story
    seen = []
    for day in (1, 4, 5, 10, 15, 19, 20, 29, 30, 40):
        clock.now = T0 + day * DAY
        now = triples(store.query(ALL))
        assert now == at_now(store, clock), day
        seen.append(sorted(s for s, _, _ in now))
    assert seen[0] == sorted(f"<{EX}{s}>" for s in ("ann", "cy", "ed"))
    assert f"<{EX}di>" not in seen[-1] and f"<{EX}bo>" in seen[-1]
    clock.now = T0 + 40 * DAY
    assert (f"<{EX}ed>", f"<{EX}worksAt>", f"<{EX}initech>") in triples(
        store.query(ALL)
    )


def test_counts_search_snapshot_and_exports_agree_with_now(story) -> None:  # type: ignore[no-untyped-def]
    store, clock, grains = story
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    assert [int(r[0].value) for r in store.query(count)] == [3]
    snap = {(q.subject, q.object) for q in store.snapshot()}
    assert snap == {
        (q.subject, q.object)
        for q in store.snapshot(valid_at=clock.now, as_of=clock.now)
    }
    assert len(snap) == 3
    assert {g.address for g in store.search("acme")} == {grains["old"]}
    out = io.BytesIO()
    store.export(out, format="ntriples")
    exported = {
        str(q.subject) for q in ox.parse(out.getvalue(), format=ox.RdfFormat.N_TRIPLES)
    }
    assert exported == {f"<{EX}cy>", f"<{EX}di>", f"<{EX}ed>"}


def test_held_asks_for_the_knowledge_held_whatever_its_valid_time(story) -> None:  # type: ignore[no-untyped-def]
    store, _, grains = story
    held = {s for s, _, _ in triples(store.query(ALL, held=True))}
    assert held == {f"<{EX}{s}>" for s in ("ann", "bo", "cy", "di", "ed")}
    assert grains["ended"] in {g.address for g in store.search("acme", held=True)}
    assert len(list(store.snapshot(held=True))) == 5


def test_a_store_whose_beliefs_all_hold_now_takes_the_held_knowledge() -> None:
    store = oms.GrainStore()
    store.put(belief("cy", "umbrella"))
    assert store.questions.now_point() is None
    store.put(belief("ann", "acme", valid_to=T0 + DAY))
    assert store.questions.now_point() is not None


# --- the law, on random histories, while the clock moves ---------------------------

PEOPLE = [f"{EX}{n}" for n in ("ann", "ben", "cat")]
PLACES = [f"{EX}{n}" for n in ("acme", "initech", "globex")]
history = st.lists(
    st.tuples(
        st.sampled_from(["put", "supersede", "retract"]),
        st.integers(0, 2),  # who
        st.integers(0, 2),  # where
        st.integers(0, 3),  # days until the system learns it
        st.integers(-5, 5),  # valid from, in days from then
        st.one_of(st.none(), st.integers(1, 8)),  # valid for so many days
    ),
    min_size=1,
    max_size=10,
)
QUERIES = [
    ALL,
    "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
    f"SELECT ?s WHERE {{ ?s <{EX}worksAt> <{EX}acme> }}",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=history, probes=st.lists(st.integers(-2, 25), min_size=1, max_size=8))
def test_query_is_the_query_of_now_as_the_clock_moves(
    steps: list[tuple[str, int, int, int, int, int | None]], probes: list[int]
) -> None:
    clock = Clock(T0)
    store = oms.GrainStore(clock=clock)
    day = 0
    for kind, who, where, gap, valid, length in steps:
        day += gap
        clock.now = T0 + day * DAY
        start = clock.now + valid * DAY
        fields = {"type": "belief", "subject": PEOPLE[who], "relation": EX + "worksAt",
                  "object": PLACES[where], "confidence": 0.8, "created_at": clock.now,
                  "valid_from": start,
                  "valid_to": None if length is None else start + length * DAY}  # fmt: skip
        current = [
            g
            for g in store.query(
                f"SELECT ?g WHERE {{ ?g rdf:subject <{PEOPLE[who]}> }}", grains=True
            )
        ]
        if kind == "put" or not current:
            store.put({k: v for k, v in fields.items() if v is not None})
        else:
            address = str(current[0]["g"].value).removeprefix("nih:sha-256;")
            if store.status(address).status != "active":
                store.put({k: v for k, v in fields.items() if v is not None})
            elif kind == "supersede":
                store.supersede(
                    address, {k: v for k, v in fields.items() if v is not None}
                )
            else:
                store.retract(address, reason="wrong")
    for probe in probes:
        clock.now = T0 + probe * DAY
        for query in QUERIES:
            assert Counter(map(str, map(list, store.query(query)))) == Counter(
                map(
                    str,
                    map(list, store.query(query, valid_at=clock.now, as_of=clock.now)),
                )
            ), (probe, query)
        assert store.count_beliefs() == store.count_beliefs(
            valid_at=clock.now, as_of=clock.now
        )
        now = {(q.subject, q.object) for q in store.snapshot()}
        assert now == {
            (q.subject, q.object)
            for q in store.snapshot(valid_at=clock.now, as_of=clock.now)
        }
        assert {g.address for g in store.search("acme", limit=50)} == {
            g.address
            for g in store.search("acme", limit=50, valid_at=clock.now, as_of=clock.now)
        }


@pytest.mark.parametrize(
    "time",
    [{"as_of": 5}, {"valid_at": 5}, {"as_of": "now"}, {"valid_during": (None, None)}],
)
def test_held_is_of_now_and_refuses_a_time(story, time) -> None:  # type: ignore[no-untyped-def]
    # held=True with a time was answered as the point, held left out: as_of=now
    # then gave other triples than held=True alone.
    store, clock, _ = story
    time = {k: clock.now if v == "now" else v for k, v in time.items()}
    asks = [lambda: store.query(ALL, held=True, **time)]
    if "valid_during" not in time:  # a range is a question of query() only
        asks += [
            lambda: store.snapshot(held=True, **time),
            lambda: store.search("acme", held=True, **time),
        ]
    for ask in asks:
        with pytest.raises(oms.QueryError) as info:
            ask()
        assert info.value.code == "ERR_QUERY"
        assert "valid_during=(None, None)" in str(info.value)


def test_held_follows_the_clock_across_system_times_ahead() -> None:
    # Without forward_only a grain may enter the store's past only later (its
    # created_at ahead of the clock), and a retraction may be dated ahead. The
    # knowledge held at T is then not oms:current: entered by T, not closed by T.
    clock = Clock(T0)
    store = oms.GrainStore(clock=clock)
    store.put(belief("ann", "acme"))
    # Asked once first: the later writes must tell the watch of now they moved it.
    assert len(list(store.query(ALL, held=True))) == 1
    store.put(oms.Belief(EX + "bo", EX + "worksAt", EX + "initech", 0.9,
                         created_at=T0 + 5 * DAY))  # fmt: skip
    cy = store.put(belief("cy", "umbrella"))
    store.retract(cy, reason="moved", at=T0 + 3 * DAY)
    dd = store.put(belief("dd", "hooli"))
    store.supersede(dd, oms.Belief(EX + "dd", EX + "worksAt", EX + "initech", 0.9,
                                   created_at=T0 + 7 * DAY))  # fmt: skip
    expected = {  # by hand, from the times above
        T0: {"ann acme", "cy umbrella", "dd hooli"},
        T0 + 3 * DAY - 1: {"ann acme", "cy umbrella", "dd hooli"},
        T0 + 3 * DAY: {"ann acme", "dd hooli"},
        T0 + 5 * DAY: {"ann acme", "bo initech", "dd hooli"},
        T0 + 7 * DAY - 1: {"ann acme", "bo initech", "dd hooli"},
        T0 + 7 * DAY: {"ann acme", "bo initech", "dd initech"},
    }

    def pairs(terms: object) -> set[str]:
        return {
            f"{s.value.removeprefix(EX)} {o.value.removeprefix(EX)}"
            for s, o in terms  # type: ignore[attr-defined]
        }

    for now, held in expected.items():
        clock.now = now
        asked = {
            "query": pairs((r["s"], r["o"]) for r in store.query(ALL, held=True)),
            "query, namespace": pairs(
                (r["s"], r["o"])
                for r in store.query(ALL, held=True, namespace="shared")
            ),
            "snapshot": pairs((q.subject, q.object) for q in store.snapshot(held=True)),
            "search": {
                f"{g['subject'].removeprefix(EX)} {g['object'].removeprefix(EX)}"
                for g in store.search("worksAt", held=True, limit=50)
            },
        }
        for way, answer in asked.items():
            assert answer == held, (now - T0, way)
