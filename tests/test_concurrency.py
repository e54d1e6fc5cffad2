"""Threads sharing one store: no torn read, no lost update, one successor per grain."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest

import oms_rdf as oms


@pytest.fixture(params=["memory", "disk"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> oms.GrainStore:
    return oms.GrainStore(None if request.param == "memory" else tmp_path / "store")


def test_a_reader_never_sees_a_subject_between_two_versions(
    store: oms.GrainStore,
) -> None:
    """alice always has exactly one current belief; a reader must always see one."""
    current = store.put(oms.Belief("alice", "works_at", "v0", 0.9, created_at=1))
    seen: list[int] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            seen.append(len(store.beliefs("alice", as_of=10**12)))
            time.sleep(
                0.0005
            )  # a pause, as between requests: Python locks are not fair

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for i in range(1, 200):
            new = oms.Belief("alice", "works_at", f"v{i}", 0.9, created_at=1 + i)
            current = store.supersede(current, new)
    finally:
        done.set()
        for reader in readers:
            reader.join()
    assert len(seen) > 50
    assert set(seen) == {1}, f"{seen.count(0)} of {len(seen)} reads saw no belief"
    assert [g.address for g in store.beliefs("alice", as_of=10**12)] == [current]


def test_racing_supersessions_leave_one_successor_and_lose_no_put(
    store: oms.GrainStore,
) -> None:
    rounds, threads = 60, 3
    heads = [
        store.put(oms.Belief(f"s{r}", "r", "first", 0.9, created_at=1))
        for r in range(rounds)
    ]
    barrier = threading.Barrier(threads)
    wins: list[list[str]] = [[] for _ in range(rounds)]
    refused: list[str] = []
    puts: list[str] = []

    def work(worker: int) -> None:
        for r, head in enumerate(heads):
            barrier.wait()
            new = oms.Belief(f"s{r}", "r", f"by {worker}", 0.9, created_at=2)
            try:
                wins[r].append(store.supersede(head, new))
            except oms.OmsError as exc:
                refused.append(type(exc).__name__)
            puts.append(
                store.put(oms.Belief(f"w{worker}", "r", str(r), 0.5, created_at=r))
            )

    pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    for r, head in enumerate(heads):
        assert len(wins[r]) == 1, f"round {r}: {len(wins[r])} winners"
        assert store.status(head).superseded_by == wins[r][0]
        assert [g.address for g in store.beliefs(f"s{r}", as_of=10**12)] == wins[r]
    assert len(refused) == rounds * (threads - 1)
    assert set(refused) <= {"PolicyError", "StoreError"}, set(refused)
    assert (
        all(address in store for address in puts) and len(set(puts)) == rounds * threads
    )


def test_a_transaction_is_its_own_threads_alone() -> None:
    """Its writes and its frozen clock were the store's: another thread asking
    about a grain the block made was told ERR_CONFLICT "of this transaction",
    its import was refused as part of it, and its clock stood still."""
    store = oms.GrainStore()
    made = oms.Belief("bob", "likes", "tea", 0.9, created_at=1_700_000_000_001)
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.transaction() as tx:
            tx.put(made)
            inside.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    inside.wait(10)
    try:
        with pytest.raises(oms.NotFoundError):  # not stored yet, for this thread
            store.status(made.address)
        assert store.core.pending is None
        first = store.clock()
        time.sleep(0.01)
        assert store.clock() > first  # the wall clock, not the block's
        imported: list[object] = []
        importer = threading.Thread(target=lambda: imported.append(store.import_(
            io.BytesIO(b"<http://e/a> <http://e/p> <http://e/b> .\n"), format="ntriples")))  # fmt: skip
        importer.start()
        time.sleep(0.05)
        assert not imported  # it waits for the transaction: writes take turns
    finally:
        release.set()
        holder.join(10)
    importer.join(10)
    assert len(imported) == 1 and len(store) == 2
    assert store.status(made.address).status == "active"


def test_a_write_does_not_wait_for_a_long_query_at_a_point() -> None:
    """A question at a point asked of the interval layer is begun under the
    store's lock and read after it: a write meanwhile commits at once, and the
    answer is the layer as the question found it."""
    ex = "http://example.org/"
    lines = [f"<{ex}s{i}> <{ex}p> <{ex}o{i}> ." for i in range(1500)]
    store = oms.GrainStore(clock=lambda: 10**12)
    store.import_(io.BytesIO("\n".join(lines).encode()), format="ntriples")
    store.core.intervals.read_at_question = 1
    point = {"valid_at": 10**12, "as_of": 10**12}
    store.query("ASK { ?s ?p ?o }", **point)  # the layer read: the next is asked of it
    slow = (
        "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f "
        "FILTER (STR(?c) = CONCAT(STR(?f), 'x')) }"
    )
    answers: list[object] = []
    asking = threading.Thread(
        target=lambda: answers.append(store.query(slow, **point).rows()[0]["n"].value)
    )
    asking.start()
    deadline = time.monotonic() + 60
    while not store.core.intervals.reading:  # until the question is being asked
        assert time.monotonic() < deadline and asking.is_alive()
        time.sleep(0.005)
    store.put(oms.Belief(f"{ex}s0", f"{ex}p", f"{ex}new", 0.9, created_at=10**12))
    assert asking.is_alive()  # the write did not wait for it
    layer = store.core.intervals.store
    mine = f"SELECT ?o WHERE {{ <{ex}s0> <{ex}p> ?o }}"
    expected = {f"<{ex}o0>", f"<{ex}new>"}
    # Asked meanwhile: the layer is not caught up under the question reading it.
    meanwhile = store.query(mine, **point)
    assert not meanwhile.reading  # read whole, as in process at a point always
    assert {str(r["o"]) for r in meanwhile} == expected
    assert store.core.intervals.dirty  # answered from the grain layer instead
    asking.join()
    assert answers == ["0"]
    assert {str(r["o"]) for r in store.query(mine, **point)} == expected
    assert store.core.intervals.store is layer and not store.core.intervals.dirty
