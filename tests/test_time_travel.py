"""Time-travel SPARQL answers what beliefs() answers, on random histories.

Subjects, relations and objects are IRIs, so the SPARQL is the plain SPARQL a user
writes against their own vocabulary; beliefs(subject) answers by its own pattern
lookups (store/lookup.py), so the two paths are independent.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf import GrainStore

DAY = 86_400_000
T0 = 1_700_000_000_000
# Over a server (tests/test_remote.py) every example makes hundreds of requests:
# fewer examples there, as many as ever in process.
EXAMPLES = 40 if os.environ.get("OMS_RDF_TEST_BACKEND") is None else 12
PEOPLE = [f"http://example.org/people/{n}" for n in ("ann", "ben", "cat")]
WORKS_AT = "http://example.org/vocab#worksAt"
PLACES = [f"http://example.org/org/{n}" for n in ("acme", "initech", "globex", "hooli")]

# What a step does; "portion" and "cut" supersede and retract a week of the
# latest belief's valid time (FOR PORTION OF), from "valid from" days into it.
KINDS = ["put", "supersede", "retract", "contradict", "portion", "cut"]
# One step of a history: (kind, who, where, day the system learns it, valid from).
Step = tuple[str, int, int, int, int]
steps = st.lists(
    st.tuples(
        st.sampled_from(KINDS),
        st.integers(0, len(PEOPLE) - 1),
        st.integers(0, len(PLACES) - 1),
        st.integers(1, 3),
        st.integers(-30, 30),
    ),
    min_size=1,
    max_size=14,
)


def build(history: list[Step]) -> tuple[GrainStore, int]:
    """Play a history forward in system time; return the store and its last day."""
    clock = [T0]
    store = GrainStore(clock=lambda: clock[0])
    day = 0
    for step in history:
        day = play(store, clock, day, step)
    return store, day


def play(store: GrainStore, clock: list[int], day: int, step: Step) -> int:
    """One step of a history, its gap of days later; return its day."""
    kind, who, where, gap, valid = step
    day += gap
    clock[0] = T0 + day * DAY
    fields = {
        "type": "belief",
        "subject": PEOPLE[who],
        "relation": WORKS_AT,
        "object": PLACES[where],
        "confidence": 0.5 + where / 10,
        "created_at": clock[0],
        "valid_from": clock[0] + valid * DAY,
    }
    enact(store, kind, PEOPLE[who], WORKS_AT, fields)
    return day


def enact(
    store: GrainStore, kind: str, subject: str, relation: str, fields: dict[str, Any]
) -> None:
    """One step of a random history on the subject's latest belief: a put (also
    where it has none), a supersession, a retraction or a contradiction."""
    current = store.beliefs(subject, relation, valid_at=T0 + 10_000 * DAY)
    if kind == "put" or not current:
        store.put(fields)
    elif kind in ("portion", "cut"):
        start = current[0]["valid_from"] + abs(
            fields["valid_from"] - fields["created_at"]
        )
        week = {"valid_from": start, "valid_to": start + 7 * DAY}
        if kind == "cut":
            store.retract(current[0], reason="wrong that week", **week)
            return
        fields = {
            k: v for k, v in fields.items() if k not in ("valid_from", "valid_to")
        }
        store.supersede(current[0], fields, **week)
    elif kind == "supersede":
        store.supersede(current[0], fields)
    elif kind == "retract":
        store.retract(current[0], reason="wrong")
    else:
        store.contradict(current[0], reason="shown false")


@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(history=steps, probes=st.lists(st.tuples(st.integers(-40, 60), st.integers(0, 60)), min_size=1, max_size=6))  # fmt: skip
def test_time_travel_sparql_agrees_with_beliefs(
    history: list[Step], probes: list[tuple[int, int]]
) -> None:
    store, _ = build(history)
    for valid_day, known_day in probes:
        valid_at, as_of = T0 + valid_day * DAY, T0 + known_day * DAY
        rows = store.query(
            "SELECT ?s ?o WHERE { ?s <http://example.org/vocab#worksAt> ?o }",
            valid_at=valid_at,
            as_of=as_of,
        )
        assert isinstance(rows, oms.Solutions)
        by_sparql = sorted((r["s"].value, r["o"].value) for r in rows)
        by_beliefs = sorted(
            {
                (g["subject"], g["object"])
                for who in PEOPLE
                for g in store.beliefs(who, WORKS_AT, valid_at=valid_at, as_of=as_of)
            }
        )
        assert by_sparql == by_beliefs, (valid_day, known_day)


def test_the_headline_job_change() -> None:
    """A hand-derived story: the knowledge of each point, in plain SPARQL."""
    clock = [T0 + 100 * DAY]
    store = GrainStore(clock=lambda: clock[0])
    ann, acme, initech = PEOPLE[0], PLACES[0], PLACES[1]
    old = store.put({"type": "belief", "subject": ann, "relation": WORKS_AT,
                     "object": acme, "confidence": 0.9, "created_at": T0,
                     "valid_from": T0})  # fmt: skip
    store.supersede(old, {"type": "belief", "subject": ann, "relation": WORKS_AT,
                          "object": initech, "confidence": 0.9,
                          "created_at": T0 + 50 * DAY,
                          "valid_from": T0 + 40 * DAY})  # fmt: skip
    ask = f"SELECT ?o WHERE {{ <{ann}> <{WORKS_AT}> ?o }}"

    def objects(**point: int) -> list[str]:
        rows = store.query(ask, **point)
        assert isinstance(rows, oms.Solutions)
        return sorted(r["o"].value for r in rows)

    assert objects() == [initech]  # believed now
    assert objects(valid_at=T0 + 10 * DAY) == [acme]  # true then, as known now
    assert objects(valid_at=T0 + 45 * DAY, as_of=T0 + 45 * DAY) == [
        acme
    ]  # believed then
    assert objects(valid_at=T0 + 45 * DAY) == [initech]  # learned later
    assert objects(valid_at=T0 - DAY) == []  # before anything was true
    assert objects(as_of=T0 - DAY) == []  # before the store knew anything
    snap = store.snapshot(valid_at=T0 + 10 * DAY, as_of=T0 + 60 * DAY)
    assert [q.object.value for q in snap] == [acme]
    assert store.query("ASK { ?s ?p ?o }", as_of=T0 - DAY) is False
