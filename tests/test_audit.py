"""The audit log is a hash chain: edits, removals and reorderings are named."""

from __future__ import annotations

import io

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.rdf.vocab import OMS

NOW = 1_800_000_000_000


def busy_store() -> oms.GrainStore:
    store = oms.GrainStore(clock=lambda: NOW, functional_relations=["lives_in"])
    old = store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1))
    store.supersede(old, oms.Belief("alice", "works_at", "Initech", 0.9, created_at=2))
    wrong = store.put(oms.Belief("bob", "likes", "tea", 0.5, created_at=1))
    store.retract(wrong, reason="never said")
    store.put_many(
        [oms.Belief("carol", "r", str(i), 0.5, created_at=i) for i in range(3)]
    )
    store.evidence(store.beliefs("carol")[0], "supporting", 0.9)
    return store


def event(store: oms.GrainStore, sequence: int) -> ox.NamedNode:
    [quad] = store.backend.quads(None, OMS.sequence, ox.Literal(str(sequence),
                                 datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")), OMS.audit)  # fmt: skip
    return quad.subject  # type: ignore[return-value]


def test_every_change_appends_a_chained_event() -> None:
    store = busy_store()
    report = store.verify_audit()
    assert report.ok and report.events == 6
    [(_chain, head)] = report.heads.items()
    assert head.startswith("6 ")
    operations = [
        store.backend.quads(event(store, n), OMS.operation, None, OMS.audit)
        .__next__()
        .object.value
        for n in range(1, 7)
    ]
    assert operations == ["put", "supersede", "put", "retract", "put_many", "evidence"]


def test_an_edited_event_is_named() -> None:
    store = busy_store()
    node = event(store, 4)
    [reason] = store.backend.quads(node, OMS.reason, None, OMS.audit)
    store.backend.store.remove(reason)
    store.backend.add([ox.Quad(node, OMS.reason, ox.Literal("said it"), OMS.audit)])
    report = store.verify_audit()
    assert (
        not report.ok
        and "event 4 of chain" in report.problem
        and "changed" in report.problem
    )


def test_a_removed_event_is_named() -> None:
    store = busy_store()
    for quad in list(store.backend.quads(event(store, 3), None, None, OMS.audit)):
        store.backend.store.remove(quad)
    report = store.verify_audit()
    assert (
        not report.ok
        and "event 3 of chain" in report.problem
        and "missing" in report.problem
    )


def test_a_cut_tail_disagrees_with_the_head() -> None:
    store = busy_store()
    for quad in list(store.backend.quads(event(store, 6), None, None, OMS.audit)):
        store.backend.store.remove(quad)
    report = store.verify_audit()
    assert not report.ok and "removed" in report.problem


@pytest.mark.parametrize(("kept", "said"), [
    ({OMS.auditHead}, "ends at event 0, but its head says 6: events were removed"),
    (set(), "its events and head were removed"),  # the settings still name it
])  # fmt: skip
def test_a_chain_stripped_of_its_events_is_named(kept: set[object], said: str) -> None:
    """verify() looked only at chains with events: every event removed (and the
    head too) passed, and the store's next write then failed."""
    store = busy_store()
    for quad in list(store.backend.quads(None, None, None, OMS.audit)):
        if quad.predicate not in kept:
            store.backend.store.remove(quad)
    store.core.forget()
    report = store.verify_audit()
    assert not report.ok and said in report.problem, report.problem


def test_a_copied_event_is_named_by_its_own_number() -> None:
    store = busy_store()
    copy = ox.NamedNode("urn:uuid:00000000-0000-0000-0000-00000000beef")
    quads = list(store.backend.quads(event(store, 2), None, None, OMS.audit))
    store.backend.add([ox.Quad(copy, q.predicate, q.object, OMS.audit) for q in quads])
    report = store.verify_audit()
    assert not report.ok and "event 2 of chain" in report.problem
    assert "appears twice" in report.problem


def test_reordered_events_are_named() -> None:
    store = busy_store()
    two, three = event(store, 2), event(store, 3)
    integer = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
    for node, old, new in ((two, "2", "3"), (three, "3", "2")):
        store.backend.store.remove(
            ox.Quad(node, OMS.sequence, ox.Literal(old, datatype=integer), OMS.audit)
        )
        store.backend.add(
            [ox.Quad(node, OMS.sequence, ox.Literal(new, datatype=integer), OMS.audit)]
        )
    report = store.verify_audit()
    assert not report.ok and "event 2 of chain" in report.problem


@pytest.mark.parametrize("fmt", ["trig", "nquads"])
def test_the_chain_survives_export_and_import(fmt: str) -> None:
    store = busy_store()
    buffer = io.BytesIO()
    store.export(buffer, format=fmt)
    # Into an empty store the chain is kept as the source left it, and the
    # store's own events (the import, the put) begin a chain of their own.
    fresh = oms.GrainStore(clock=lambda: NOW)
    fresh.import_(io.BytesIO(buffer.getvalue()), format=fmt)
    fresh.put(oms.Belief("dave", "r", "o", 0.5, created_at=1))
    report = fresh.verify_audit()
    assert report.ok and report.events == 8  # six, the import, the put
    [(source, head)] = store.verify_audit().heads.items()
    own = {chain: top for chain, top in report.heads.items() if chain != source}
    assert report.heads[source] == head and next(iter(own.values())).startswith("2 ")
    # Into a store with its own chain, the imported chain is kept beside it.
    other = oms.GrainStore(clock=lambda: NOW)
    other.put(oms.Belief("erin", "r", "o", 0.5, created_at=1))
    other.import_(io.BytesIO(buffer.getvalue()), format=fmt)
    report = other.verify_audit()
    assert report.ok and len(report.heads) == 2 and report.events == 8


@pytest.mark.parametrize("fmt", ["trig", "nquads"])
def test_a_replica_takes_a_later_backup_after_an_earlier_one(fmt: str) -> None:
    """Monday's backup restored, the replica written to, then Tuesday's backup
    of the same source imported: the source's chain goes on where it stopped,
    and the replica's own events are no fork of it."""
    source = busy_store()
    monday, tuesday = io.BytesIO(), io.BytesIO()
    source.export(monday, format=fmt)
    replica = oms.GrainStore(clock=lambda: NOW)
    replica.import_(io.BytesIO(monday.getvalue()), format=fmt)
    replica.put(oms.Belief("dave", "r", "o", 0.5, created_at=1))
    source.put(oms.Belief("erin", "r", "o", 0.5, created_at=1))
    source.export(tuesday, format=fmt)
    replica.import_(io.BytesIO(tuesday.getvalue()), format=fmt)
    report = replica.verify_audit()
    [(chain, head)] = source.verify_audit().heads.items()
    assert report.ok and report.heads[chain] == head and head.startswith("7 ")
    assert {g["subject"] for g in replica.beliefs()} >= {"dave", "erin"}


def test_an_imported_chain_is_verified_before_it_is_kept() -> None:
    store = busy_store()
    node = event(store, 2)
    [reason] = store.backend.quads(node, OMS.operation, None, OMS.audit)
    store.backend.store.remove(reason)
    store.backend.add([ox.Quad(node, OMS.operation, ox.Literal("put"), OMS.audit)])
    buffer = io.BytesIO()
    store.export(buffer, format="trig")
    busy = oms.GrainStore()
    busy.put(oms.Belief("x", "r", "o", 0.5, created_at=1))
    for target in (oms.GrainStore(), busy):  # the fast restore, and the general path
        before = {str(q) for q in target.backend.quads()}
        with pytest.raises(oms.IntegrityError, match="event 2 of chain"):
            target.import_(io.BytesIO(buffer.getvalue()), format="trig")
        assert {str(q) for q in target.backend.quads()} == before


XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_JSON = "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON"


def _replace(store: oms.GrainStore, node: ox.NamedNode, prop: ox.NamedNode,
             *values: ox.Literal) -> None:  # fmt: skip
    for quad in list(store.backend.quads(node, prop, None, OMS.audit)):
        store.backend.store.remove(quad)
    store.backend.add([ox.Quad(node, prop, v, OMS.audit) for v in values])


def _typed(text: str, datatype: str) -> ox.Literal:
    return ox.Literal(text, datatype=ox.NamedNode(datatype))


HOSTILE_EVENTS = {
    # A sequence written as text beside the integers: sorting them raised TypeError.
    "text sequence": (OMS.sequence, [ox.Literal("2")], "sequence"),
    # Bytes (xsd:base64Binary) in an event: hashing it raised TypeError.
    "bytes": (OMS.reason, [_typed("AAEC", XSD + "base64Binary")], "bytes"),
    # Two maps for one property: sorting them raised TypeError.
    "maps": (OMS.reason, [_typed('{"a":1}', RDF_JSON), _typed('{"b":2}', RDF_JSON)],
             "dict"),
    # A map nested past Python's JSON reader: RecursionError.
    "deep map": (OMS.reason, [_typed("[" * 100_000 + "]" * 100_000, RDF_JSON)],
                 "nested"),
    "integer chain": (OMS.chain, [_typed("7", XSD + "integer")], "chain"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HOSTILE_EVENTS))
def test_a_value_the_log_never_writes_is_an_integrity_failure(case: str) -> None:
    prop, values, words = HOSTILE_EVENTS[case]
    store = busy_store()
    _replace(store, event(store, 2), prop, *values)
    report = store.verify_audit()
    assert not report.ok and words in str(report.problem)
    buffer = io.BytesIO()
    store.export(buffer, format="trig")
    fresh = oms.GrainStore(clock=lambda: NOW)
    before = {str(q) for q in fresh.backend.quads()}
    with pytest.raises(oms.IntegrityError) as info:
        fresh.import_(io.BytesIO(buffer.getvalue()), format="trig")
    assert info.value.code == oms.ErrorCode.INTEGRITY and words in str(info.value)
    assert {str(q) for q in fresh.backend.quads()} == before


def test_an_iri_and_a_literal_of_the_same_text_are_told_apart() -> None:
    """Hashed by their text alone, an event whose target became a string of the
    same text verified, and queries joining on the IRI no longer found it."""
    store = busy_store()
    node = event(store, 4)  # the retraction: a target and a reason
    [target] = store.backend.quads(node, OMS.target, None, OMS.audit)
    _replace(store, node, OMS.target, ox.Literal(target.object.value))
    report = store.verify_audit()
    assert not report.ok and "the log writes an IRI there" in str(report.problem)
    _replace(store, node, OMS.target, target.object)  # type: ignore[arg-type]
    assert store.verify_audit().ok
    _replace(store, node, OMS.reason, ox.NamedNode("urn:x:said"))  # type: ignore[arg-type]
    report = store.verify_audit()
    assert not report.ok and "the log writes a literal there" in str(report.problem)


def test_a_head_at_event_zero_is_named() -> None:
    store = busy_store()
    [(chain, head)] = store.verify_audit().heads.items()
    _, digest = head.split()
    node = ox.NamedNode(chain)
    for quad in list(store.backend.quads(node, OMS.auditHead, None, OMS.audit)):
        store.backend.store.remove(quad)
    store.backend.add(
        [ox.Quad(node, OMS.auditHead, ox.Literal(f"0 {digest}"), OMS.audit)]
    )
    report = store.verify_audit()
    assert not report.ok and "head" in str(report.problem)


def test_retract_all_is_one_event_at_one_time_that_lists_every_grain() -> None:
    readings = iter(range(NOW, NOW + 1000))  # the clock moves at every reading
    store = oms.GrainStore(clock=lambda: next(readings))

    def belief(subject: str, obj: str, namespace: str) -> str:
        grain = oms.Belief(
            subject, "likes", obj, 0.9, created_at=1, namespace=namespace
        )
        return store.put(grain)

    both = [belief("ann", "tea", "x"), belief("ann", "tea", "y")]  # one triple
    alone = belief("bob", "jam", "x")
    shared, keeper = belief("dan", "tea", "x"), belief("dan", "tea", "y")
    targets = [*both, alone, shared]
    before = store.verify_audit().events
    store.retract_all(targets, reason="cleanup", by="did:example:auditor")

    report = store.verify_audit()
    assert report.ok and report.events == before + 1
    retract = ox.Literal("retract")
    [node] = [q.subject for q in store.backend.quads(None, None, retract, OMS.audit)]

    def said(predicate: ox.NamedNode) -> set[str]:
        return {
            q.object.value
            for q in store.backend.quads(node, predicate, None, OMS.audit)
        }

    assert said(OMS.target) == {f"nih:sha-256;{a}" for a in targets}
    assert (said(OMS.reason), said(OMS.actor)) == ({"cleanup"}, {"did:example:auditor"})
    voided = {store.status(a).voided_at for a in targets}
    assert len(voided) == 1 and None not in voided  # one write, one system time
    # A triple leaves the knowledge when every belief of it leaves, not before.
    assert [g.address for g in store.beliefs()] == [keeper]
    rows = store.query("SELECT ?s ?o WHERE { ?s ?p ?o }")
    assert [(r["s"].value.rsplit("/", 1)[-1], r["o"].value) for r in rows] == [
        ("dan", "tea")
    ]
