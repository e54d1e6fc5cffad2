"""One transaction for one publication: all or nothing, at one system time, with
one audit event, under a failure at any step and under kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import oms_rdf as oms
from oms_rdf.rdf.vocab import OMS

T0 = 1_767_225_600_000
NOW = T0 + 1_000_000
ANN = "http://example.org/ann"


def dump(store: oms.GrainStore) -> list[str]:
    return sorted(str(q) for q in store.core.backend.quads())


def belief(subject: str, obj: str, at: int = T0, **more: Any) -> dict[str, Any]:
    return {"type": "belief", "subject": subject, "relation": "works_at", "object": obj,
            "confidence": 0.8, "created_at": at, **more}  # fmt: skip


def events(store: oms.GrainStore) -> list[str]:
    return [
        str(q.object.value)
        for q in store.core.backend.quads(None, OMS.operation, None, OMS.audit)
    ]


@pytest.fixture
def store() -> oms.GrainStore:
    ticks = iter(range(NOW, NOW + 10**6))  # a clock that moves at every look
    store = oms.GrainStore(clock=lambda: next(ticks))
    store.put(belief("ann", "Acme"))
    store.put(belief("bo", "Initech"))
    store.put(belief("cy", "Hooli", invalidation_policy={"mode": "locked"}))
    store.put(belief("ed", "Globex"))
    return store


def address(store: oms.GrainStore, subject: str) -> str:
    return store.beliefs(subject)[0].address


def publication(store: oms.GrainStore) -> list[Any]:
    """A publication's operations, as calls on the transaction."""
    ann, bo, cy = (address(store, s) for s in ("ann", "bo", "cy"))
    return [
        lambda tx: tx.supersede(ann, belief("ann", "Umbrella", T0 + 10)),
        lambda tx: tx.put(belief("di", "Acme", T0 + 10)),
        lambda tx: tx.retract(bo, reason="left"),
        lambda tx: tx.evidence(address(store, "ed"), kind="supporting", strength=0.7),
        lambda tx: tx.retract(cy, reason="wrong"),  # refused: locked
    ]


def test_a_publication_is_one_write_with_one_event(store: oms.GrainStore) -> None:
    before = len(events(store))
    steps = publication(store)[:4]
    with store.transaction() as tx:
        for step in steps:
            step(tx)
        assert sorted(g["subject"] for g in store.beliefs()) == [
            "ann",
            "bo",
            "cy",
            "ed",
        ]
        assert [g["object"] for g in store.beliefs("ann")] == ["Acme"]  # not yet
    assert sorted((g["subject"], g["object"]) for g in store.beliefs()) == [
        ("ann", "Umbrella"),
        ("cy", "Hooli"),
        ("di", "Acme"),
        ("ed", "Globex"),
    ]
    assert (
        events(store)[before:] == ["transaction"]
        or sorted(events(store)).count("transaction") == 1
    )
    assert len(events(store)) == before + 1
    assert store.verify_audit().ok
    assert store.status(address(store, "cy")).status == "active"  # untouched
    # One system time: the retraction's, the event's.
    (voided,) = store.core.backend.quads(None, OMS.voidedAt, None, OMS.index)
    (event,) = [
        q.subject
        for q in store.core.backend.quads(None, OMS.operation, None, OMS.audit)
        if q.object.value == "transaction"
    ]
    (when,) = store.core.backend.quads(event, OMS.at, None, OMS.audit)
    assert voided.object == when.object


@pytest.mark.parametrize("failing", range(5))
def test_a_failure_at_any_step_writes_nothing(
    store: oms.GrainStore, failing: int
) -> None:
    steps = publication(store)[:4]
    before = dump(store)

    def boom(tx: oms.GrainStore) -> None:
        raise RuntimeError("the publisher crashed")

    steps.insert(failing, boom)
    with pytest.raises(RuntimeError):
        with store.transaction() as tx:
            for step in steps:
                step(tx)
    assert dump(store) == before


def test_a_refused_operation_refuses_the_whole_transaction(
    store: oms.GrainStore,
) -> None:
    before = dump(store)
    with pytest.raises(oms.PolicyError) as caught:
        with store.transaction() as tx:
            for step in publication(store):
                step(tx)
    assert caught.value.code == "ERR_INVALIDATION_DENIED"
    assert dump(store) == before


def test_a_refusal_caught_in_the_block_is_its_operation_alone(
    store: oms.GrainStore,
) -> None:
    """As documented: caught inside the block, a refusal writes nothing of its
    operation, and the block's other operations are written at its end."""
    *written, refused = publication(store)
    with store.transaction() as tx:
        for step in written:
            step(tx)
        with pytest.raises(oms.PolicyError):
            refused(tx)
    assert events(store).count("transaction") == 1
    assert [g["object"] for g in store.beliefs("ann")] == ["Umbrella"]
    assert store.beliefs("bo") == [] and store.beliefs("di")
    assert store.status(address(store, "cy")).status == "active"


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ("evidence", "evidence"),
        ("verified", "disputed"),
        ("verified", "contradict"),
        ("contradict", "verified"),
        ("retract", "evidence"),
        ("evidence", "retract"),
    ],
)
def test_marks_on_a_grain_are_changes_of_it(
    store: oms.GrainStore, first: str, then: str
) -> None:
    """Evidence and verification marks change a grain as a supersession does: a
    second change of it in one transaction is refused, not half applied."""
    ed = address(store, "ed")

    def change(tx: oms.GrainStore, what: str) -> None:
        if what == "evidence":
            tx.evidence(ed, kind="supporting", strength=0.9)
        elif what == "retract":
            tx.retract(ed, reason="x")
        elif what == "contradict":
            tx.contradict(ed, reason="x")
        else:
            tx.set_verification(ed, what)

    before = dump(store)
    with pytest.raises(oms.OmsError) as caught:
        with store.transaction() as tx:
            change(tx, first)
            change(tx, then)
    assert caught.value.code == "ERR_CONFLICT"
    assert dump(store) == before


def test_an_operation_on_a_grain_the_transaction_changed_is_refused(
    store: oms.GrainStore,
) -> None:
    ann = address(store, "ann")
    before = dump(store)
    with pytest.raises(oms.StoreError) as caught:
        with store.transaction() as tx:
            tx.supersede(ann, belief("ann", "Umbrella", T0 + 10))
            tx.retract(ann, reason="twice")
    assert caught.value.code == "ERR_CONFLICT"
    assert dump(store) == before


@pytest.mark.parametrize("auto_revise", [False, True])
@pytest.mark.parametrize("many", [False, True])
def test_a_put_contradicting_one_made_earlier_is_refused(
    auto_revise: bool, many: bool
) -> None:
    """On a functional relation, two puts of one transaction each saw the store
    without the other: both stayed current, neither disputed nor revised."""
    store = oms.GrainStore(clock=lambda: NOW, functional_relations=["works_at"],
                           auto_revise=auto_revise)  # fmt: skip
    before = dump(store)
    with pytest.raises(oms.StoreError) as caught:
        with store.transaction() as tx:
            tx.put(belief("ann", "Acme"))
            later = belief("ann", "Initech", T0 + 1)
            tx.put_many([later]) if many else tx.put(later)
    assert caught.value.code == "ERR_CONFLICT" and "functional" in caught.value.message
    assert dump(store) == before
    with store.transaction() as tx:  # in one put_many, they are disputed as ever
        with pytest.warns(oms.ConflictWarning):
            tx.put_many([belief("ann", "Acme"), belief("ann", "Initech", T0 + 1)])
    assert len(store.conflicts()) == 1


@pytest.mark.parametrize(
    "close",
    [
        lambda tx, a, b: (tx.retract(a, reason="x"), tx.contradict(b)),
        lambda tx, a, b: (tx.retract(a, reason="x"), tx.retract(b, reason="y")),
        lambda tx, a, b: (
            tx.supersede(a, belief(ANN, "Umbrella", T0 + 10)),
            tx.supersede(b, belief(ANN, "Umbrella", T0 + 10, namespace="work")),
        ),
    ],
)
def test_a_triple_every_believer_of_which_a_transaction_closes_leaves(
    close: Any,
) -> None:
    """Two beliefs (one per namespace) hold one triple, and each operation sees
    the store as the transaction found it, where the other still holds it: the
    triple leaves all the same, as it does without a transaction."""
    store = oms.GrainStore(clock=lambda: NOW)
    a = store.put(belief(ANN, "Acme"))  # an IRI: the same subject in each namespace
    b = store.put(belief(ANN, "Acme", namespace="work"))
    ask = "SELECT ?o WHERE { ?s ?p ?o FILTER(STRENDS(STR(?o), 'Acme')) }"
    assert len(list(store.query(ask))) == 1
    with store.transaction() as tx:
        close(tx, a, b)
    assert list(store.query(ask)) == []
    assert list(store.query(ask, held=True)) == []
    store.core.rebuild_current()  # the knowledge made again from the grains
    assert list(store.query(ask)) == []


def test_transactions_do_not_nest(store: oms.GrainStore) -> None:
    with pytest.raises(oms.StoreError):
        with store.transaction(), store.transaction():
            pass


CHILD = """
import sys, oms_rdf as oms
store = oms.GrainStore(sys.argv[1])
for i in range(10_000):
    with store.transaction() as tx:
        for j in range(3):
            tx.put({"type": "belief", "subject": f"tx{i}", "relation": "part",
                    "object": f"p{j}", "confidence": 0.5, "created_at": 1 + i})
    print(i, flush=True)
"""


def test_a_kill_during_transactions_leaves_each_whole_or_absent(tmp_path: Path) -> None:
    path = tmp_path / "store"
    oms.GrainStore(path).close()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdout is not None
    done = 0
    began = time.monotonic()
    while done < 20 and time.monotonic() - began < 60:
        line = child.stdout.readline()
        if line:
            done = int(line.split()[0]) + 1
    time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    store = oms.GrainStore(path, clock=lambda: 10**13)
    parts: dict[str, int] = {}
    for grain in store.beliefs():
        parts[grain["subject"]] = parts.get(grain["subject"], 0) + 1
    assert len(parts) >= done >= 20
    assert set(parts.values()) == {3}
    assert store.verify_audit().ok
    store.close()


# --- a failure injected at each step of a transaction's commit -------------------

_STEPS = ("update", "load", "query", "quads", "quads_of", "bulk_load")


class InjectedError(Exception):
    """The failure injected into one backend call of a commit."""


def _inject(store: oms.GrainStore, plan: dict[str, Any]) -> None:
    """Count every backend call of the store (the real on-disk backend) and raise
    ``InjectedError`` at call ``plan['at']``, before it runs or after it returned."""
    backend = store.core.backend
    for name in _STEPS:
        real = getattr(backend, name)

        def call(*args: Any, _real: Any = real, **kw: Any) -> Any:
            plan["calls"] += 1
            mine = plan["calls"] == plan["at"]
            if mine and plan["when"] == "before":
                raise InjectedError
            out = _real(*args, **kw)
            if mine:
                raise InjectedError
            return out

        setattr(backend, name, call)


def _state(store: oms.GrainStore) -> tuple[list[str], int]:
    """The grains and index, and how many audit events (their ids, and the
    chain's, are random)."""
    quads = store.core.backend.quads()
    kept = sorted(
        str(q)
        for q in quads
        if q.graph_name != OMS.audit and q.predicate != OMS.auditChain
    )
    return kept, len(events(store))


def _published(
    path: Path, plan: dict[str, Any] | None
) -> tuple[oms.GrainStore, tuple[list[str], int]]:
    """A publication committed on an on-disk store, with ``plan``'s failure
    injected from the commit on; and the store's state before the commit."""
    store = oms.GrainStore(path, clock=lambda: NOW)  # one clock value: same rows
    store.put(belief("ann", "Acme"))
    store.put(belief("bo", "Initech"))
    ann, bo = address(store, "ann"), address(store, "bo")
    block = store.transaction()
    tx = block.__enter__()
    tx.supersede(ann, belief("ann", "Umbrella", T0 + 10))
    tx.put(belief("di", "Acme", T0 + 10))
    tx.retract(bo, reason="left", valid_from=T0 + 5)
    before = _state(store)
    if plan is not None:
        _inject(store, plan)  # every backend call of the commit
    try:
        block.__exit__(None, None, None)
    except InjectedError:
        pass
    return store, before


def test_a_failure_at_each_step_of_the_commit_leaves_all_or_nothing(
    tmp_path: Path,
) -> None:
    plain, _ = _published(tmp_path / "plain", None)
    after = _state(plain)
    plain.close()
    counted = {"at": 0, "calls": 0, "when": "before"}
    _published(tmp_path / "count", counted)[0].close()
    assert counted["calls"] >= 1  # the commit's reads and its one write
    seen = set()
    for at in range(1, counted["calls"] + 1):
        for when in ("before", "after"):
            path = tmp_path / f"{at}-{when}"
            store, before = _published(path, {"at": at, "calls": 0, "when": when})
            store.close()
            with oms.GrainStore(path) as reopened:
                state = _state(reopened)
                assert reopened.verify_audit().ok
            assert state in (before, after), (at, when)
            seen.add("all" if state == after else "nothing")
    assert seen == {"all", "nothing"}  # a failure before the write, and after it
