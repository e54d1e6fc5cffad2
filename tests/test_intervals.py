"""The interval layer (store/intervals.py): a belief's extents are where the
in-force rules hold it, a triple's versions cut them into disjoint pieces, and
the store answers a query at a point from the layer exactly as the point's
knowledge answers it, kept up by the writes that follow."""

from __future__ import annotations

import io
import pickle
from collections import Counter
from itertools import product
from typing import Any

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf.backends.embedded import LocalBackend
from oms_rdf.rdf.terms import GENID
from oms_rdf.store.intervals import Extent, Intervals, rectangles, versions
from tests.test_lookup import link
from tests.test_time_travel import WORKS_AT, play
from tests.test_time_travel import steps as time_travel_steps

EX = "http://example.org/"
T0 = 1_700_000_000_000
DAY = 86_400_000

times = st.integers(0, 12)
ends = st.none() | st.integers(0, 12)


def in_force(
    v: int, t: int, vf: int, vt: int | None, sf: int, st_: int | None,
    void: int | None, next_from: int | None,
) -> bool:  # fmt: skip
    """The rules of oms_rdf.rdf.inforce.in_force, on numbers."""
    return (
        sf <= t
        and vf <= v
        and (vt is None or v < vt)
        and (void is None or t < void)
        and (st_ is None or t < st_ or (next_from is not None and v < next_from))
    )


def holds(extent: Extent, v: int, t: int) -> bool:
    sf, st_, vf, vt = extent
    return sf <= t and (st_ is None or t < st_) and vf <= v and (vt is None or v < vt)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(times, ends, times, ends, ends, ends), min_size=1, max_size=4)
)
def test_versions_hold_exactly_the_points_some_belief_is_in_force_at_once(
    beliefs: list[tuple[int, int | None, int, int | None, int | None, int | None]],
) -> None:
    extents = [e for b in beliefs for e in rectangles(*b)]
    pieces = versions(extents)
    for v in range(-1, 14):
        for t in range(-1, 14):
            wanted = any(in_force(v, t, *b) for b in beliefs)
            # Each belief's extents hold the point as the rules do ...
            for b in beliefs:
                assert any(holds(e, v, t) for e in rectangles(*b)) == in_force(v, t, *b)
            # ... and the versions hold it once where any belief does.
            assert sum(holds(p, v, t) for p in pieces) == (1 if wanted else 0), (v, t)


def story(backend: Any = None) -> oms.GrainStore:
    """People move between employers; one is retracted; one is corrected later."""
    clock = [T0]
    store = oms.GrainStore(backend=backend, clock=lambda: clock[0])
    lines = [f"<{EX}p{i}> <{EX}worksAt> <{EX}org{i % 3}> ." for i in range(9)]
    lines += [f"<{EX}org{i}> <{EX}partOf> <{EX}org{i + 1}> ." for i in range(3)]
    store.import_(io.BytesIO("\n".join(lines).encode()), format="ntriples")
    for day in range(1, 4):
        clock[0] = T0 + day * DAY
        (old,) = store.beliefs(f"{EX}p{day}", f"{EX}worksAt")
        fields = dict(old.fields) | {
            "object": f"{EX}org{day + 5}",
            "created_at": clock[0],
        }
        fields.pop("valid_from", None)
        store.supersede(old, fields)
    clock[0] = T0 + 4 * DAY
    (gone,) = store.beliefs(f"{EX}p7", f"{EX}worksAt")
    store.retract(gone, reason="left")
    clock[0] = T0 + 10 * DAY
    return store


QUERIES = [
    "SELECT ?s ?o WHERE { ?s <http://example.org/worksAt> ?o }",
    "SELECT ?o (COUNT(?s) AS ?n) WHERE { ?s <http://example.org/worksAt> ?o } GROUP BY ?o",
    "SELECT ?a ?b WHERE { ?a <http://example.org/partOf>+ ?b }",
    "SELECT ?s WHERE { ?s <http://example.org/worksAt> ?o "
    "FILTER NOT EXISTS { ?o <http://example.org/partOf> ?up } }",
    "ASK { <http://example.org/p1> <http://example.org/worksAt> <http://example.org/org6> }",
    "CONSTRUCT { ?o <http://example.org/staff> ?s } WHERE { ?s <http://example.org/worksAt> ?o }",
]
POINTS = [
    {"valid_at": T0 + 2 * DAY + 1, "as_of": T0 + 2 * DAY + 1},
    {"valid_at": T0 + DAY // 2, "as_of": T0 + 3 * DAY},  # a correction after the fact
    {"as_of": T0 + 5 * DAY},
    {"valid_at": T0 - DAY},  # before anything was valid
]


def answer(result: Any) -> Any:
    if isinstance(result, bool):
        return result
    if isinstance(result, oms.Solutions):
        names = sorted(v.value for v in result.variables)
        return Counter(tuple(str(row[n]) for n in names) for row in result)
    return {str(t) for t in result}


# What every question of the grain layer at a point reads: grain nodes' times.
GRAIN_LAYER = "https://w3id.org/oms-rdf/ns#systemFrom"


class Recording(LocalBackend):
    """The embedded backend, with the texts asked of it written down."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def query(self, sparql: str, substitutions: Any = None, **dataset: Any) -> Any:
        self.asked.append(sparql)
        return super().query(sparql, substitutions, **dataset)


@pytest.mark.parametrize("query", QUERIES)
def test_the_layer_answers_as_the_knowledge_of_the_point(query: str) -> None:
    backend = Recording()
    store = story(backend)
    store.core.intervals.read_at_question = 1
    store.query(query, valid_at=T0, as_of=T0)  # the layer is read here
    for point in POINTS:
        expected = answer(store.snapshot(**point).query(query))
        backend.asked.clear()
        assert answer(store.query(query, **point)) == expected, point
        assert not any(GRAIN_LAYER in text for text in backend.asked)


def test_the_layer_is_kept_up_by_writes_and_read_again_after_an_import() -> None:
    backend = Recording()
    store = story(backend)
    query, point = QUERIES[0], {"valid_at": T0 + 20 * DAY, "as_of": T0 + 20 * DAY}
    # One question at a point is answered by the grain layer; the second reads
    # the layer, and those after it are asked of it.
    store.query(query, **point)
    assert store.core.intervals.store is None
    assert any(GRAIN_LAYER in text for text in backend.asked)
    store.query(query, **point)
    layer = store.core.intervals.store
    assert layer is not None
    clock = store.core.clock
    moved = store.beliefs(f"{EX}p4", f"{EX}worksAt")[0]
    fields = dict(moved.fields) | {"object": f"{EX}org9", "created_at": clock() + 1}
    fields.pop("valid_from", None)
    store.supersede(moved, fields, valid_from=None)
    store.put(
        oms.Belief(f"{EX}p20", f"{EX}worksAt", f"{EX}org1", 0.9, created_at=clock())
    )
    got = answer(store.query(query, **point))
    assert got == answer(store.snapshot(**point).query(query))
    assert (f"<{EX}org9>", f"<{EX}p4>") in got  # rows are (?o, ?s)
    assert (f"<{EX}org1>", f"<{EX}p20>") in got
    assert store.core.intervals.store is layer  # caught up, not read again
    # An answer given before a write is the layer as it was then.
    begun = store.query(query, **point)
    store.put(
        oms.Belief(f"{EX}p22", f"{EX}worksAt", f"{EX}org1", 0.9, created_at=clock())
    )
    store.query(query, **point)  # the layer catches up meanwhile
    assert got == answer(begun)
    store.import_(
        io.BytesIO(f"<{EX}p21> <{EX}worksAt> <{EX}org2> .".encode()), format="ntriples"
    )
    assert store.core.intervals.store is None  # an import: read whole when next asked
    got = answer(store.query(query, **point))
    assert (f"<{EX}org2>", f"<{EX}p21>") in got


def test_a_store_with_many_extents_tests_them_in_the_query() -> None:
    """Past as many extents as a dataset should name, the query tests each
    version's extent, spelled in its graph's name; the answers are the same."""
    clock = [T0]
    backend = Recording()
    store = oms.GrainStore(backend=backend, clock=lambda: clock[0])
    for i in range(80):  # a write a day: eighty extents
        clock[0] = T0 + i * DAY
        store.put(oms.Belief(f"{EX}p{i}", f"{EX}worksAt", f"{EX}org{i % 5}", 0.9,
                             created_at=clock[0]))  # fmt: skip
    point = {"valid_at": T0 + 40 * DAY, "as_of": T0 + 50 * DAY}
    store.core.intervals.read_at_question = 1
    store.query(QUERIES[0], valid_at=T0, as_of=T0)  # the layer is read here
    for query in QUERIES:
        expected = answer(store.snapshot(**point).query(query))
        backend.asked.clear()
        assert answer(store.query(query, **point)) == expected, query
        assert not any(GRAIN_LAYER in text for text in backend.asked)
    assert len(store.core.intervals.extents) == 80


def test_the_layer_read_whole_keeps_every_kind_of_term() -> None:
    """The layer is read from the engine's text of the grain layer: numbers and
    booleans (written short there), languages, escapes and blank nodes come
    back the terms they were."""
    xsd = "http://www.w3.org/2001/XMLSchema#"
    objects = [
        f'"7"^^<{xsd}integer>', f'"-2.50"^^<{xsd}decimal>', f'"1.5E3"^^<{xsd}double>',
        f'"true"^^<{xsd}boolean>', '"tab\\tand\\nline \\"q\\""@en-GB', "_:someone",
        f'" 01 "^^<{xsd}integer>', '"plain"',
    ]  # fmt: skip
    lines = [f"<{EX}thing> <{EX}has> {o} ." for o in objects]
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    store.import_(io.BytesIO("\n".join(lines).encode()), format="ntriples")
    store.core.intervals.read_at_question = 1
    query = f"SELECT ?o WHERE {{ <{EX}thing> <{EX}has> ?o }}"
    point = {"valid_at": T0 + 1, "as_of": T0 + 1}
    got = answer(store.query(query, **point))
    assert store.core.intervals.store is not None  # asked of the layer
    assert got == answer(store.snapshot(**point).query(query))
    assert sum(got.values()) == len(objects)


def test_a_read_only_opening_keeps_no_layer(tmp_path: Any) -> None:
    """Beside its writer, a read-only opening would read the layer whole again
    after every write: its questions at a point are the grain layer's."""
    writer = story(LocalBackend(tmp_path / "db"))
    point = {"valid_at": T0 + 2 * DAY + 1, "as_of": T0 + 2 * DAY + 1}
    expected = answer(writer.snapshot(**point).query(QUERIES[0]))
    reader = oms.GrainStore(tmp_path / "db", read_only=True)
    for _ in range(3):
        assert answer(reader.query(QUERIES[0], **point)) == expected
    assert reader.core.intervals.store is None
    reader.close()
    writer.close()


def delta(
    store: oms.GrainStore, since: int, until: int, axis: str, *, layer: bool
) -> tuple[list[str], list[str]]:
    """``changes`` as the layer answers it, or as the grain layer's delta query
    does (the layer switched off for the call)."""
    store.backend.intervals = layer
    try:
        found = store.changes(since, until, axis=axis)  # type: ignore[arg-type]
    finally:
        store.backend.intervals = True
    return [g.address for g in found.entered], [g.address for g in found.left]


AXES = ("both", "valid", "system")


@settings(max_examples=40, deadline=None)
@given(
    history=time_travel_steps,
    probes=st.lists(st.tuples(st.integers(-40, 60), st.integers(0, 60)), min_size=1,
                    max_size=3),
)  # fmt: skip
def test_the_layer_kept_up_write_by_write_answers_as_the_point(
    history: list[Any], probes: list[tuple[int, int]]
) -> None:
    """Read once, then kept up by each write (puts, supersessions, retractions,
    contradictions) and asked after each one, the layer answers every point as
    that point's knowledge does; named, and tested pattern by pattern."""
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    layer = store.core.intervals
    layer.read_at_question = 1
    scan = f"SELECT ?s ?o WHERE {{ ?s <{WORKS_AT}> ?o }}"  # may name the graphs
    join = f"SELECT ?s ?o ?p WHERE {{ ?s <{WORKS_AT}> ?o . ?p <{WORKS_AT}> ?o }}"
    day = 0
    for step in [None, *history]:
        if step is not None:
            day = play(store, clock, day, step)
        for (valid_day, known_day), query in product(probes, (scan, join)):
            point = {"valid_at": T0 + valid_day * DAY, "as_of": T0 + known_day * DAY}
            expected = answer(store.snapshot(**point).query(query))
            assert answer(store.query(query, **point)) == expected, (step, point)
            layer.named_at_most = 0
            assert answer(store.query(query, **point)) == expected, (step, point)
            layer.named_at_most = Intervals.named_at_most
        # How many beliefs each point holds, and now: counted from the extents
        # the layer keeps, as the grain layer's COUNT counts them.
        for point in [
            {"valid_at": T0 + v * DAY, "as_of": T0 + k * DAY} for v, k in probes
        ] + [{}]:
            store.backend.intervals = False
            expected_count = store.count_beliefs(**point)
            store.backend.intervals = True
            assert store.count_beliefs(**point) == expected_count, (step, point)
        # What changed between two of the points: the beliefs' extents the layer
        # keeps give what the delta query over every bound gives, in its order.
        (a, _), (b, _) = probes[0], probes[-1]
        since, until = T0 + a * DAY, T0 + b * DAY
        for axis in AXES:
            expected = delta(store, since, until, axis, layer=False)
            assert delta(store, since, until, axis, layer=True) == expected, axis
    built = layer.store
    assert built is not None
    store.query(scan, valid_at=T0, as_of=T0)
    assert layer.store is built  # kept up, never read again


def test_a_forked_supersession_is_in_force_until_its_latest_successor() -> None:
    """Imported index state can give a grain two successors: it still describes
    the past up to the later of their valid starts, as the rules say."""
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    root = store.put(oms.Belief(f"{EX}y", f"{EX}r", f"{EX}v0", 0.5, created_at=T0,
                                valid_from=T0))  # fmt: skip
    clock[0] = T0 + 2 * DAY
    store.supersede(root, {"type": "belief", "subject": f"{EX}y", "relation": f"{EX}r",
                           "object": f"{EX}v1", "confidence": 0.5, "created_at": clock[0],
                           "valid_from": T0 + 3 * DAY})  # fmt: skip
    late = store.put(oms.Belief(f"{EX}y", f"{EX}r", f"{EX}v2", 0.5, created_at=clock[0],
                                valid_from=T0 + 5 * DAY))  # fmt: skip
    link(store, (root, late))  # a second successor, as an import could bring
    store.core.intervals.read_at_question = 1
    query = f"SELECT ?o WHERE {{ <{EX}y> <{EX}r> ?o }}"
    for valid_day in (1, 4, 6):
        for known_day in (1, 3):
            point = {"valid_at": T0 + valid_day * DAY, "as_of": T0 + known_day * DAY}
            expected = answer(store.snapshot(**point).query(query))
            assert answer(store.query(query, **point)) == expected, point
    # Known after both: the root is in force before the later successor's start.
    seen = answer(store.query(query, valid_at=T0 + 4 * DAY, as_of=T0 + 3 * DAY))
    assert (f"<{EX}v0>",) in seen


def test_a_write_larger_than_a_catch_up_has_the_layer_read_whole() -> None:
    """Catching one triple up costs about three grains read whole: a write of
    more triples than that share (past a floor) has the layer read again."""
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    layer = store.core.intervals
    layer.read_at_question = 1
    query = f"SELECT (COUNT(*) AS ?n) WHERE {{ ?s <{EX}worksAt> ?o }}"
    point = {"valid_at": T0 + DAY, "as_of": T0 + DAY}
    store.put(oms.Belief(f"{EX}p0", f"{EX}worksAt", f"{EX}org0", 0.9, created_at=T0))
    store.query(query, **point)
    small = layer.store
    clock[0] = T0 + 1
    beliefs = [
        oms.Belief(f"{EX}q{i}", f"{EX}worksAt", f"{EX}org1", 0.9, created_at=T0 + 1)
        for i in range(1_200)
    ]
    with store.transaction() as tx:  # one write, its rows seen
        for belief in beliefs:
            tx.put(belief)
    rows = list(store.query(query, **point))
    assert int(rows[0]["n"].value) == 1_201
    assert layer.store is not small  # read whole, not caught up triple by triple
    assert layer.versions == 1_201


def test_the_delta_of_the_layer_follows_rank_namespace_and_named_graphs() -> None:
    """The layer's delta orders by the rank evidence earned, keeps to a
    namespace, and counts beliefs of adopted named graphs, as the delta query."""
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    store.core.intervals.read_at_question = 1
    trig = f"<{EX}g> {{ <{EX}a> <{EX}r> <{EX}b> }} <{EX}a> <{EX}r> <{EX}c> ."
    store.import_(io.BytesIO(trig.encode()), format="trig")
    clock[0] = T0 + DAY
    low = store.put(oms.Belief(f"{EX}x", f"{EX}r", "low", 0.3, created_at=clock[0]))
    high = store.put(oms.Belief(f"{EX}x", f"{EX}s", "high", 0.8, created_at=clock[0]))
    other = store.put(oms.Belief(f"{EX}x", f"{EX}t", "elsewhere", 0.5,
                                 created_at=clock[0], namespace="other"))  # fmt: skip
    since, until = T0 - DAY, T0 + 2 * DAY
    entered, left = delta(store, since, until, "both", layer=True)
    # The two adopted triples first (confidence 1), then by confidence.
    assert entered[2:] == [high, other, low] and len(entered) == 5 and not left
    for _ in range(6):  # supporting evidence lifts the low belief's rank
        store.evidence(low, "supporting", strength=0.9)
    assert store.status(low).effective_confidence > 0.3
    for axis in AXES:
        expected = delta(store, since, until, axis, layer=False)
        assert delta(store, since, until, axis, layer=True) == expected, axis
        for namespace in ("other", "shared"):
            store.backend.intervals = False
            want = store.changes(since, until, axis=axis, namespace=namespace)
            store.backend.intervals = True
            got = store.changes(since, until, axis=axis, namespace=namespace)
            assert [g.address for g in got.entered] == [
                g.address for g in want.entered
            ], (axis, namespace)
    assert store.core.intervals.store is not None  # the layer answered
    assert [
        g.address for g in store.changes(since, until, namespace="other").entered
    ] == [other]


def test_a_scan_over_many_extents_names_the_graphs_in_force() -> None:
    """Past the extents a dataset names, a query of one scan still names the
    graphs in force where they are fewer than its predicate's versions (each a
    lookup, against a row filtered by its graph's name); a lookup, a join, a
    VALUES or a predicate with fewer versions tests the extents."""
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    first = []
    for i in range(80):  # a belief at a time: an extent each
        clock[0] = T0 + i * DAY
        first.append(store.put(oms.Belief(f"{EX}p{i}", f"{EX}worksAt", f"{EX}org{i % 5}",
                                          0.9, created_at=clock[0])))  # fmt: skip
    for i, old in enumerate(first[:40]):  # superseded: versions out of force later
        clock[0] = T0 + (80 + i) * DAY
        store.supersede(old, {"type": "belief", "subject": f"{EX}p{i}",
                              "relation": f"{EX}worksAt", "object": f"{EX}org9",
                              "confidence": 0.9, "created_at": clock[0]})  # fmt: skip
    clock[0] = T0 + 200 * DAY
    store.put(oms.Belief(f"{EX}p0", f"{EX}rare", "x", 0.9, created_at=clock[0]))
    layer = store.core.intervals
    layer.read_at_question = 1
    valid, known = T0 + 30 * DAY, T0 + 30 * DAY
    store.query(QUERIES[0], valid_at=valid, as_of=known)  # the layer is read here
    assert len(layer.extents) > layer.named_at_most

    def chosen(query: str) -> list[Any] | None:
        return layer.scan_graphs(query, valid, known)

    scan = f"SELECT ?o (COUNT(?s) AS ?n) WHERE {{ ?s <{EX}worksAt> ?o }} GROUP BY ?o"
    named = chosen(scan)
    assert named is not None and len(named) == 31  # in force then: p0..p30
    assert named == sorted(named, key=lambda g: g.value)  # the order of names
    assert layer.of_predicate[f"<{EX}worksAt>"] > len(named)
    prefixed = f"PREFIX ex: <{EX}> SELECT ?s ?o WHERE {{ ?s ex:worksAt ?o }}"
    assert chosen(prefixed) == named  # a prefixed name is its IRI
    for refused in [
        f"SELECT ?o WHERE {{ <{EX}p3> <{EX}worksAt> ?o }}",
        f"SELECT ?s ?d WHERE {{ ?s <{EX}worksAt> ?o . ?s <{EX}worksAt> ?d }}",
        f"SELECT ?o WHERE {{ VALUES ?s {{ <{EX}p3> }} ?s <{EX}worksAt> ?o }}",
        f"SELECT ?s WHERE {{ ?s <{EX}rare> ?o }}",  # 1 version: testing it is cheaper
    ]:
        assert chosen(refused) is None, refused
    for query in [scan, f"SELECT ?s WHERE {{ ?s <{EX}rare> ?o }}"]:
        for point in [{"valid_at": valid, "as_of": known}, {}]:
            expected = answer(store.snapshot(**point).query(query))
            assert answer(store.query(query, **point)) == expected, (query, point)


def test_the_delta_of_the_layer_keeps_to_a_namespace_spelt_with_control_characters() -> (
    None
):
    """The layer read whole takes each namespace from the engine's TSV, which
    writes some control characters raw; kept up write by write, from terms."""
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    store.core.intervals.read_at_question = 1
    odd = ["ctl\x01x", "del\x7fx", "", 'tab\tand "quote"']
    first = [
        store.put(oms.Belief(f"{EX}a{i}", f"{EX}r", "x", 0.5, created_at=T0, namespace=ns))
        for i, ns in enumerate(odd)
    ]  # fmt: skip
    since, until = T0 - DAY, T0 + 2 * DAY
    for ns, address in zip(odd, first, strict=True):  # the layer read whole
        assert delta(store, since, until, "both", layer=True)[0]  # it answers
        got = store.changes(since, until, namespace=ns)
        assert [g.address for g in got.entered] == [address], repr(ns)
    clock[0] = T0 + DAY
    later = [
        store.put(oms.Belief(f"{EX}b{i}", f"{EX}r", "y", 0.5, created_at=clock[0],
                             namespace=ns))
        for i, ns in enumerate(odd)
    ]  # fmt: skip
    for ns in odd:  # caught up write by write
        store.backend.intervals = False
        want = store.changes(since, until, namespace=ns)
        store.backend.intervals = True
        got = store.changes(since, until, namespace=ns)
        assert [g.address for g in got.entered] == [g.address for g in want.entered]
        assert len(got.entered) == 2, repr(ns)
    assert later


def test_beliefs_written_together_are_counted_by_their_extents() -> None:
    """Beliefs that share their extents (an import, a transaction) are counted
    a set of extents at a time, now and at any point, as the SPARQL COUNT does;
    where most have extents of their own, now is counted by the engine."""
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    lines = [f"<{EX}p{i}> <{EX}worksAt> <{EX}org{i % 3}> ." for i in range(60)]
    store.import_(io.BytesIO("\n".join(lines).encode()), format="ntriples")
    clock[0] = T0 + DAY
    with store.transaction() as tx:
        for old in store.beliefs()[:20]:
            tx.supersede(old, {**old.fields, "object": f"{EX}org9",
                               "created_at": clock[0]})  # fmt: skip
    clock[0] = T0 + 2 * DAY
    store.core.intervals.read_at_question = 1
    points = [
        {},
        {"valid_at": T0, "as_of": T0},
        {"as_of": T0 + DAY},
        {"valid_at": T0 - 1},
    ]
    for point in points:
        store.backend.intervals = False
        expected = store.count_beliefs(**point)
        store.backend.intervals = True
        assert store.count_beliefs(**point) == expected, point
    beliefs = store.core.intervals.beliefs
    assert beliefs.alike <= 3 < len(beliefs) == 80  # counted by its few sets
    assert store.count_beliefs() == 60 and store.count_beliefs(valid_at=T0 - 1) == 0


extent_strategy = st.tuples(
    st.integers(-5, 12), st.none() | st.integers(-5, 12),
    st.integers(-5, 12), st.none() | st.integers(-5, 12),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), extent_strategy), max_size=60),
    st.integers(0, 40),  # moves before a sort whole: both ways within one history
    st.tuples(st.integers(-6, 13), st.integers(-6, 13)),
)
def test_the_graphs_of_a_point_are_those_of_its_extents_in_name_order(
    moves: list[tuple[bool, Extent]], moves_per_sort: int, point: tuple[int, int]
) -> None:
    """Graphs named as extents come and go (the order kept in place, or sorted
    whole after many moves) are those a filter and a sort of the extents give."""
    from oms_rdf.store import intervals as module

    layer = Intervals()
    previous = module._MOVES_PER_SORT
    module._MOVES_PER_SORT = moves_per_sort
    try:
        layer.graphs_at(*point)  # sorted once: later moves are kept in place
        for adding, extent in moves:
            present = layer.extents[extent] > 0
            if adding and not present:
                layer._named.add(extent)
                layer.extents[extent] += 1
            elif not adding and present:
                layer.extents[extent] -= 1
                layer._named.remove(extent)
            layer._graphs_at.clear()
            valid, known = point
            expected = sorted(
                (e for e, n in layer.extents.items() if n > 0
                 and e[0] <= known and (e[1] is None or known < e[1])
                 and e[2] <= valid and (e[3] is None or valid < e[3])),
                key=module._name_order,
            )  # fmt: skip
            assert layer.graphs_at(valid, known) == [module._graph(e) for e in expected]
    finally:
        module._MOVES_PER_SORT = previous


def test_a_point_past_every_bound_a_graph_can_spell_is_answered() -> None:
    from oms_rdf.store import intervals as module

    layer = Intervals()
    open_ended, closed = (0, None, 0, None), (0, 5, 0, 5)
    layer.extents.update([open_ended, closed])
    far = 10**20  # beyond the largest time a graph's name spells
    assert layer.graphs_at(far, far) == [module._graph(open_ended)]
    assert layer.graphs_at(1, 1) == [module._graph(closed), module._graph(open_ended)]


def _skolem_versions(layer: Intervals) -> int:
    assert layer.store is not None
    return sum(
        any(
            isinstance(t, ox.NamedNode) and t.value.startswith(GENID)
            for t in (q.subject, q.object)
        )
        for q in layer.store
    )


def test_blank_nodes_come_back_from_the_layer_as_they_come_and_go() -> None:
    """The layer's answers skip looking for stored blank nodes while it holds
    none: its count of versions naming one stays exact, read whole from the
    grain layer's text and kept up from terms, and a blank node written later
    is given back as one."""
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    lines = f"<{EX}a> <{EX}knows> <{EX}b> .\n_:x <{EX}knows> <{EX}c> .\n"
    store.import_(io.BytesIO(lines.encode()), format="ntriples")
    layer = store.core.intervals
    layer.read_at_question = 1
    query = f"SELECT ?s ?o WHERE {{ ?s <{EX}knows> ?o }}"

    def asked(day: int) -> list[tuple[str, ...]]:
        point = {"valid_at": T0 + day * DAY, "as_of": T0 + day * DAY}
        expected = answer(store.snapshot(**point).query(query))
        rows = store.query(query, **point)
        assert answer(rows) == expected
        assert layer.blank == _skolem_versions(layer)
        return sorted(
            (type(row["s"]).__name__, type(row["o"]).__name__) for row in rows
        )

    assert asked(0) == [("BlankNode", "NamedNode"), ("NamedNode", "NamedNode")]
    assert layer.blank == 1  # read whole, from text
    (blank,) = [
        g for g in store.beliefs(relation=f"{EX}knows") if g["subject"].startswith("_:")
    ]
    clock[0] = T0 + DAY
    store.retract(blank.address, reason="no longer known")
    assert asked(1) == [("NamedNode", "NamedNode")]
    assert asked(0)[0][0] == "BlankNode"  # its past is kept, and given back
    clock[0] = T0 + 2 * DAY
    store.put(oms.Belief(subject="_:y", relation=f"{EX}knows", object=f"{EX}d",
                         confidence=0.9, created_at=clock[0]))  # fmt: skip
    assert asked(2) == [("BlankNode", "NamedNode"), ("NamedNode", "NamedNode")]
    assert layer.blank == 2  # kept up, from terms
    fresh = oms.GrainStore(clock=lambda: clock[0])
    fresh.core.intervals.read_at_question = 1
    fresh.put(oms.Belief(subject=f"{EX}a", relation=f"{EX}knows", object=f"{EX}b",
                         confidence=0.9, created_at=T0))  # fmt: skip
    rows = fresh.query(query, valid_at=T0, as_of=T0)
    assert fresh.core.intervals.blank == 0  # answered as the engine reads it
    (row,) = rows
    assert (row[0], row[-1], len(row)) == (row["s"], row["o"], 2)
    with pytest.raises(IndexError):
        row[2]


def test_a_blank_node_a_query_brings_is_given_back_from_the_layer() -> None:
    """A layer with no stored blank node still gives back the one a binding
    or an IRI() built under the store's prefix makes, as the grain layer does;
    and its rows pickle as any row does."""
    store = oms.GrainStore(clock=lambda: T0)
    store.put(oms.Belief(f"{EX}a", f"{EX}knows", f"{EX}b", 0.9, created_at=T0))
    store.core.intervals.read_at_question = 1
    point = {"valid_at": T0, "as_of": T0}
    bound = f"SELECT ?x ?o WHERE {{ ?s <{EX}knows> ?o }}"
    minted = (f'SELECT ?x WHERE {{ ?s <{EX}knows> ?o BIND(IRI("{GENID}zz") AS ?x) }}')  # fmt: skip
    (row,) = store.query(bound, substitutions={"x": ox.BlankNode("b1")}, **point)
    assert store.core.intervals.store is not None  # asked of the layer
    assert row["x"] == ox.BlankNode("b1")
    (row,) = store.query(minted, **point)
    assert row["x"] == ox.BlankNode("zz")
    written = f"SELECT ?x WHERE {{ ?s <{EX}knows> ?o VALUES ?x {{ <{GENID}zz> }} }}"
    (row,) = store.query(written, **point)
    assert row["x"] == ox.BlankNode("zz")
    (row,) = store.query(f"SELECT ?s ?o WHERE {{ ?s <{EX}knows> ?o }}", **point)
    again = pickle.loads(pickle.dumps(row))
    assert list(again) == list(row) and again["o"] == ox.NamedNode(f"{EX}b")
