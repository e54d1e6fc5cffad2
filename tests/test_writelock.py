"""The write lock of a store several processes write: taken, waited for, given back.

A second writer that finds the lock held waits until the first gives it back; a
holder older than the lease, or one the lock cannot read, belongs to a writer that
died and is removed; a lock that is never given back is an ERR_CONFLICT that
leaves the other writer's holder where it was.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.backends.embedded import LocalBackend
from oms_rdf.codec.grain import now_ms
from oms_rdf.rdf.sparql import update_request
from oms_rdf.rdf.vocab import OMS
from oms_rdf.store import writelock
from oms_rdf.store.writelock import LEASE_MS, WRITER, acquire, release
from tests.servers import start_oxigraph


def holders(backend: LocalBackend) -> list[ox.Quad]:
    return list(backend.quads(WRITER, OMS.holder, None, OMS.index))


def holder(text: str) -> ox.Quad:
    return ox.Quad(WRITER, OMS.holder, ox.Literal(text), OMS.index)


def test_a_second_writer_waits_until_the_first_gives_the_lock_back() -> None:
    backend = LocalBackend()
    first = acquire(backend)
    assert holders(backend) == [first]
    got: list[tuple[float, ox.Quad]] = []

    def second() -> None:
        mine = acquire(backend)
        got.append((time.monotonic(), mine))

    waiter = threading.Thread(target=second)
    waiter.start()
    time.sleep(0.2)
    assert got == []  # still waiting: the first holds it
    assert holders(backend) == [first]  # the waiter took its own holder back
    released = time.monotonic()
    release(backend, first)
    waiter.join(timeout=10)
    assert len(got) == 1 and got[0][0] >= released
    assert holders(backend) == [got[0][1]] and got[0][1] != first
    release(backend, got[0][1])
    assert holders(backend) == []


def test_release_leaves_the_store_alone_when_the_write_took_the_holder() -> None:
    backend = LocalBackend()
    mine = acquire(backend)
    backend.update(update_request([mine], []))  # as the write carrying it does
    before = sorted(map(str, backend.quads()))
    release(backend, mine)  # nothing to give back
    assert sorted(map(str, backend.quads())) == before


@pytest.mark.parametrize(
    "dead",
    [
        pytest.param(lambda: f"{now_ms() - LEASE_MS - 1} abc", id="past its lease"),
        pytest.param(lambda: "not a time", id="unreadable"),
    ],
)
def test_a_dead_writers_holder_is_removed_by_the_next(dead: Callable[[], str]) -> None:
    backend = LocalBackend()
    stale = holder(dead())
    backend.add([stale])
    mine = acquire(backend)  # at once: no wait for a dead writer
    assert holders(backend) == [mine]


def test_a_lock_never_given_back_is_a_conflict_that_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(writelock, "ATTEMPTS", 3)  # 500 attempts take seconds
    backend = LocalBackend()
    other = holder(f"{now_ms() + LEASE_MS} live")  # alive for the whole test
    backend.add([other])
    with pytest.raises(oms.StoreError) as caught:
        acquire(backend)
    assert caught.value.code == oms.ErrorCode.CONFLICT
    assert "3 attempts" in str(caught.value)
    assert holders(backend) == [other]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    process, base = start_oxigraph(tmp_path_factory.mktemp("oxigraph"))
    yield base
    process.terminate()
    process.wait(timeout=30)


def test_two_stores_writing_one_server_at_once_both_land_on_one_chain(
    server: str,
) -> None:
    stores = [
        oms.GrainStore(backend=oms.SparqlBackend.oxigraph(server)) for _ in range(2)
    ]
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def write(n: int) -> None:
        try:
            start.wait()
            for i in range(5):
                stores[n].put(oms.Belief(f"w{n}", "r", f"o{i}", 0.5, created_at=i + 1))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        check_both_landed(stores, errors)
    finally:
        for store in stores:
            store.close()


def check_both_landed(
    stores: list[oms.GrainStore], errors: list[BaseException]
) -> None:
    assert errors == []
    assert sorted(g["object"] for g in stores[0].beliefs("w1")) == [
        f"o{i}" for i in range(5)
    ]
    report = stores[1].verify_audit()
    assert report.ok, report.problem
    assert report.events == 10 and len(report.heads) == 1
    assert list(stores[0].backend.quads(WRITER, OMS.holder, None, OMS.index)) == []
