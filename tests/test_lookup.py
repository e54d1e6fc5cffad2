"""beliefs(subject=...) by pattern lookups answers exactly what beliefs.rq answers."""

from __future__ import annotations

import io
import os
import random
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyoxigraph import Variable

import oms_rdf as oms
from oms_rdf.backends.embedded import LocalBackend
from oms_rdf.io.container import write_mg
from oms_rdf.io.jsonl import dumps_jsonl
from oms_rdf.rdf.mapping import grain_iri
from oms_rdf.rdf.sparql import QUERIES
from oms_rdf.store import GrainStore
from oms_rdf.store.questions import _triples
from tests.test_temporal import NOW, day, story  # noqa: F401 - the fixture

SUBJECTS = ["alice", "bob", "carol", "dave", "eve", "frank", "grace", "heidi", "nobody"]
TIMES = [None, day(2019, 6, 1), day(2020, 2, 1), day(2021), day(2023, 3, 5),
         day(2024), day(2024, 1, 15), day(2024, 7, 1), day(2025, 6, 1), NOW]  # fmt: skip


def embedded_copy(store: GrainStore) -> GrainStore:
    """The same quads in an embedded store, for queries Virtuoso answers apart."""
    copy = LocalBackend()
    copy.add(store.backend.quads())
    return GrainStore(backend=copy, clock=store.clock)


def history_by_query(store: GrainStore, address: str) -> list[oms.Grain]:
    """history() as queries/history.rq answers it.

    Virtuoso 7.2 crashes (SIGSEGV) on this query, which the store never sends
    (history() makes pattern lookups); there, the query answers over an embedded
    copy of the same quads.
    """
    backend = store.backend
    if isinstance(backend, oms.VirtuosoBackend):
        copy = LocalBackend()
        copy.add(backend.quads())
        backend = copy
    solutions = backend.query(
        QUERIES["history"], {Variable("target"): grain_iri(address)}
    )
    return store.questions._chronological(_triples(solutions))


def both(
    store: GrainStore,
    subject: str,
    relation: str | None,
    namespace: str | None,
    valid_at: int | None,
    as_of: int | None,
) -> tuple[list[str], list[str]]:
    fast = store.beliefs(
        subject, relation, namespace=namespace, valid_at=valid_at, as_of=as_of
    )
    now = store.clock()
    general = store.questions.beliefs_by_query(
        subject, relation, namespace, now if valid_at is None else valid_at,
        now if as_of is None else as_of,
    )  # fmt: skip
    return [g.address for g in fast], [g.address for g in general]


# Over a server every beliefs query is a few requests (on Virtuoso some 20 ms):
# every other time there, all of them in process.
SERVER = os.environ.get("OMS_RDF_TEST_BACKEND")
STORY_TIMES = TIMES if SERVER is None else TIMES[::2]  # a quarter of the grid


def test_story_every_subject_and_time(story: tuple[GrainStore, dict[str, str]]) -> None:  # noqa: F811
    store, _ = story
    answered = 0
    for subject, valid_at, as_of in product(SUBJECTS, STORY_TIMES, STORY_TIMES):
        for relation, namespace in ((None, None), ("works_at", None), (None, "work")):
            fast, general = both(store, subject, relation, namespace, valid_at, as_of)
            assert fast == general, (subject, relation, namespace, valid_at, as_of)
            answered += bool(fast)
    assert answered > len(STORY_TIMES) ** 2  # not a comparison of empty answers


def test_story_answers_by_hand(story: tuple[GrainStore, dict[str, str]]) -> None:  # noqa: F811
    store, a = story
    # In March 2023 the store already knew of Initech (from 2023-03-10) ...
    assert [g.address for g in store.beliefs("alice", valid_at=day(2023, 3, 5))] == [
        a["initech"]
    ]
    # ... and on 2023-03-05 it still believed Acme, valid then.
    at = day(2023, 3, 5)
    assert [g.address for g in store.beliefs("alice", valid_at=at, as_of=at)] == [
        a["acme"]
    ]
    # Superseded in 2023, Acme still describes 2021.
    assert [g.address for g in store.beliefs("alice", valid_at=day(2021))] == [
        a["acme"]
    ]
    assert store.beliefs("carol") == []  # retracted
    assert (
        store.beliefs("carol", valid_at=day(2023), as_of=day(2023))[0].address
        == a["jazz"]
    )
    assert store.beliefs("frank") == []  # valid 2020-2021 only
    assert [g["object"] for g in store.beliefs("heidi", namespace="home")] == ["coffee"]


# Over a server (OMS_RDF_TEST_BACKEND) each example makes thousands of requests.
@settings(max_examples={None: 10, "virtuoso": 2}.get(SERVER, 5), deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_histories(seed: int) -> None:
    random_history(seed)


# The long run is for the store's own logic, in process; over a server (whose
# requests make each example over a minute on Virtuoso) a few more examples than the
# default tier's.
@pytest.mark.soak
@settings(max_examples={None: 100, "virtuoso": 1}.get(SERVER, 8), deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_histories_at_length(seed: int) -> None:
    random_history(seed)


def random_history(seed: int) -> None:
    """A random history of 30 changes; every question of a grid, both ways."""
    rng = random.Random(seed)
    clock = [day(2020)]
    store = GrainStore(clock=lambda: clock[0])
    current: list[str] = []
    times = [day(2020) + i * 86_400_000 * 30 for i in range(40)]
    for step in range(30):
        clock[0] = times[step]
        action = rng.random()
        if action < 0.45 or not current:
            fields = {
                "type": "belief",
                "subject": rng.choice(["ann", "ben"]),
                "relation": rng.choice(["likes", "knows"]),
                "object": f"thing-{step}",
                "confidence": rng.choice([0.5, 0.7, 0.7, 0.9]),  # ties on purpose
                "created_at": clock[0],
                "namespace": rng.choice(["a", "b"]),
                "valid_from": rng.choice(times[:35]),
            }
            if rng.random() < 0.3:
                fields["valid_to"] = (
                    fields["valid_from"] + rng.randrange(1, 10) * 86_400_000 * 30
                )
            current.append(store.put(fields))
        elif action < 0.7:
            old = store.get(current.pop(rng.randrange(len(current))))
            new = {**old.to_dict(), "object": f"changed-{step}", "created_at": clock[0],
                   "valid_from": rng.choice(times)}  # fmt: skip
            new.pop("derived_from", None)
            new.pop("valid_to", None)
            if rng.random() < 0.5:  # over a portion of its valid time
                start, end = old.get("valid_from", clock[0]), old.get("valid_to")
                if end is None or end - start > 86_400_000:
                    start += 86_400_000
                new.pop("valid_from")
                stop = start + rng.randrange(1, 4) * 86_400_000 * 30
                made = store.supersede(old, new, valid_from=start, valid_to=stop)
                current += store.status(old).split_into or [made]
                continue
            current.append(store.supersede(old, new))
        elif action < 0.8:
            store.retract(current.pop(rng.randrange(len(current))), reason="wrong")
        elif action < 0.9:
            store.contradict(current.pop(rng.randrange(len(current))))
        else:
            target = rng.choice(current)
            store.evidence(target, rng.choice(["supporting", "refuting"]), 0.9)
    answered = 0
    for subject, valid_at, as_of in product(["ann", "ben"], times[::3], times[::3]):
        relation = rng.choice([None, "likes", "knows"])
        namespace = rng.choice([None, "a", "b"])
        fast, general = both(store, subject, relation, namespace, valid_at, as_of)
        assert fast == general
        answered += len(fast)
    assert answered > 0
    for grain in store.beliefs_by_status("superseded") + store.beliefs_by_status(
        "active"
    ):
        assert store.history(grain) == history_by_query(store, grain.address)


@pytest.mark.parametrize("subject", ["", "café", 'quote " and \\ backslash'])
def test_subjects_are_matched_as_exact_text(subject: str) -> None:
    store = GrainStore(clock=lambda: day(2026))
    address = store.put(
        oms.Belief(subject or "x", "is", "y", 0.9, created_at=day(2025))
    )
    found = store.beliefs(subject or "x")
    assert [g.address for g in found] == [address]
    assert store.beliefs((subject or "x") + " ") == []


def test_story_history_by_pattern_equals_query(
    story: tuple[GrainStore, dict[str, str]],  # noqa: F811
) -> None:
    store, a = story
    for address in a.values():
        assert store.history(address) == history_by_query(store, address)
    assert [g.address for g in store.history(a["initech"])] == [a["acme"], a["initech"]]


def link(store: GrainStore, *pairs: tuple[str, str]) -> None:
    # Forks and cycles arrive only through imported index state.
    triples = " ".join(
        f"<nih:sha-256;{old}> oms:supersededBy <nih:sha-256;{new}> ."
        for old, new in pairs
    )
    store.backend.update(
        "PREFIX oms: <https://w3id.org/oms-rdf/ns#> "
        f"INSERT DATA {{ GRAPH oms:index {{ {triples} }} }}"
    )


def test_history_forks_joins_and_cycles_match_the_query() -> None:
    store = GrainStore(clock=lambda: NOW)
    g = [
        store.put(oms.Belief("x", "r", str(i), 0.5, created_at=day(2020 + i)))
        for i in range(6)
    ]
    # 0 -> 1, 0 -> 2 (fork), 1 -> 3, 2 -> 3 (join); 4 <-> 5 (cycle)
    link(
        store,
        (g[0], g[1]),
        (g[0], g[2]),
        (g[1], g[3]),
        (g[2], g[3]),
        (g[4], g[5]),
        (g[5], g[4]),
    )
    for address in g:
        assert store.history(address) == history_by_query(store, address)
    assert [x.address for x in store.history(g[3])] == g[:4]
    assert store.history(g[4]) == []  # a cycle has no first version
    # Beliefs under the same odd index state (links without system ends).
    for valid_at, as_of in product(
        [None, day(2021), day(2023, 6, 1)], [None, day(2022)]
    ):
        fast, general = both(store, "x", None, None, valid_at, as_of)
        assert fast == general


@pytest.mark.parametrize(
    "times",
    [
        {"valid_from": -62_135_596_800_000},  # 0001-01-01, the first time it holds
        {"valid_to": 253_402_300_799_999},  # the last
        {"valid_from": 0, "valid_to": 1},
    ],
)
def test_times_at_the_edges_of_xsd_datetime_answer_as_the_query_does(
    times: dict[str, int],
) -> None:
    store = GrainStore(clock=lambda: day(2026))
    fields = {"type": "belief", "subject": "zed", "relation": "is", "object": "odd",
              "confidence": 0.9, "created_at": day(2025), **times}  # fmt: skip
    store.put(fields)
    store.put(oms.Belief("zed", "is", "plain", 0.8, created_at=day(2025)))
    # Virtuoso compares an xsd:integer with an xsd:dateTime where SPARQL has an
    # error: there, beliefs(subject) answers as SPARQL and the embedded store do.
    asked = (
        embedded_copy(store)
        if isinstance(store.backend, oms.VirtuosoBackend)
        else store
    )
    for valid_at, as_of in product([None, day(2000), 5], [None, day(2025, 6, 1)]):
        fast = [g.address for g in store.beliefs("zed", valid_at=valid_at, as_of=as_of)]
        general = both(asked, "zed", None, None, valid_at, as_of)[1]
        assert fast == general, (valid_at, as_of)


def write_mg_bytes(blobs: list[bytes]) -> bytes:
    out = io.BytesIO()
    write_mg(blobs, out)
    return out.getvalue()


@pytest.mark.parametrize(
    "times",
    [
        {"valid_from": -62_135_596_800_001},  # a millisecond before year 1
        {"valid_to": 253_402_300_800_000},  # year 10000
        {"system_valid_from": 300_000_000_000_000},
    ],
)
def test_times_no_xsd_datetime_can_write_are_refused(times: dict[str, int]) -> None:
    """Kept as integers, they made every comparison of the time-travel rules an
    error: the now view and the same point asked explicitly disagreed."""
    store = GrainStore(clock=lambda: day(2026))
    fields = {"type": "belief", "subject": "zed", "relation": "is", "object": "odd",
              "confidence": 0.9, "created_at": day(2025), **times}  # fmt: skip
    [name] = times
    with pytest.raises(oms.SchemaError) as info:
        store.put(fields)
    assert info.value.code == "ERR_RANGE" and info.value.path == f"$.{name}"
    assert len(store) == 0
    grain = oms.Grain.from_dict(fields)  # the codec keeps it; an import refuses it
    for fmt in ("jsonl", "mg"):
        line = dumps_jsonl(grain).encode() + b"\n"
        data = line if fmt == "jsonl" else write_mg_bytes([grain.blob])
        with pytest.raises(oms.SchemaError) as refused:
            store.import_(io.BytesIO(data), format=fmt)
        assert refused.value.code == "ERR_RANGE"
        report = store.import_(io.BytesIO(data), format=fmt, skip_invalid=True)
        assert report.added == 0 and len(store) == 0 and report.skipped


def test_forked_supersession_with_system_end_matches_the_query() -> None:
    # A grain superseded through the API, then given a second successor by
    # imported index state: the query answers it once, whichever successors keep it.
    store = GrainStore(clock=lambda: NOW)
    root = store.put(
        oms.Belief("y", "r", "0", 0.5, created_at=day(2020), valid_from=day(2020))
    )
    store.supersede(root, {"type": "belief", "subject": "y", "relation": "r", "object": "1",
                           "confidence": 0.5, "created_at": day(2022), "valid_from": day(2023)})  # fmt: skip
    late = store.put(
        oms.Belief("y", "r", "2", 0.5, created_at=day(2022), valid_from=day(2024))
    )
    link(store, (root, late))
    for valid_at, as_of in product(
        [None, day(2021), day(2023, 6, 1), day(2024, 6, 1)],
        [None, day(2021), day(2023)],
    ):
        fast, general = both(store, "y", None, None, valid_at, as_of)
        assert fast == general, (valid_at, as_of)
    # Before both successors' valid_from, the root is one belief, listed once
    # (it was listed once per successor).
    assert both(store, "y", None, None, day(2021), None)[0].count(root) == 1
