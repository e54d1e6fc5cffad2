"""What a killable query costs: a one-step query, a cheap ASK and an answer that
streams, each evaluated in the calling thread, against the same query in a child
forked for it (in memory) or in a worker process (on disk); the same cheap ASK
beside 20 threads that write (p50 and p99); and the Graph Store dump as a
CONSTRUCT against the snapshot it replaced.

Run: python -m benchmarks.bench_query_isolation [N]   (default 20000 beliefs)

Each figure is the median of its repetitions, measured in the same run as its
baseline (the in-thread evaluation); the ratio is the isolated time over it.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pyoxigraph as ox

import oms_rdf as oms
from oms_rdf.http.forking import ForkedQueries
from oms_rdf.http.isolation import QueryProcesses, isolated_answer
from oms_rdf.http.lanes import Cancelled, Job
from oms_rdf.http.results import QueryRequest, run_query

EX = "http://example.org/"
SMALL = QueryRequest(text=f"SELECT (COUNT(*) AS ?n) WHERE {{ <{EX}s1> ?p ?o }}")
WHOLE = QueryRequest(text="SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
CHEAP = QueryRequest(text=f"ASK {{ <{EX}s1> ?p ?o }}")
STREAMED = QueryRequest(text=f"SELECT ?s ?o WHERE {{ ?s <{EX}p> ?o }} LIMIT 200")
DUMP = QueryRequest(
    text="CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
    accept="application/n-triples",
    valid_at=1_800_000_000_000,
)


def timed_job(seconds: float = 10.0) -> Job:
    """A job cancelled after ``seconds``: a hung process is killed, not waited on."""
    job = Job()
    timer = threading.Timer(seconds, job.cancel)
    timer.daemon = True
    timer.start()
    return job


def at_most(work: Callable[[], object]) -> object:
    """``work()``; a worker killed at its job's 10 s counts as those 10 s."""
    try:
        return work()
    except Cancelled:
        return None


def median_ms(work: Callable[[], object], times: int) -> float:
    took = []
    for _ in range(times):
        began = time.perf_counter()
        work()
        took.append(time.perf_counter() - began)
    return statistics.median(took) * 1000


def filled(path: Path | None, n: int) -> oms.GrainStore:
    store = oms.GrainStore(path)
    store.put_many(
        oms.Belief(f"{EX}s{i}", EX + "p", f"{EX}o{i % 50}", 0.5, created_at=1)
        for i in range(n)
    )
    return store


KINDS = (("small count", SMALL), ("count of all", WHOLE), ("cheap ASK", CHEAP),
         ("streamed SELECT", STREAMED))  # fmt: skip
WRITERS = 20


def beside_writers(
    name: str, store: oms.GrainStore, here: Callable[[], object],
    there: Callable[[], object], times: int = 60,
) -> None:  # fmt: skip
    """The cheap ASK in thread and isolated while ``WRITERS`` threads put beliefs."""
    stop = threading.Event()

    def write(w: int) -> None:
        i = 0
        while not stop.is_set():
            store.put(oms.Belief(f"{EX}w{w}-{i}", EX + "p", "x", 0.5, created_at=1))
            i += 1

    threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    try:
        figures = []
        for work in (here, there):
            took = []
            for _ in range(times):
                began = time.perf_counter()
                work()
                took.append(time.perf_counter() - began)
            took.sort()
            figures.append(
                (took[len(took) // 2] * 1000, took[int(len(took) * 0.99)] * 1000)
            )
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    (p50, p99), (i50, i99) = figures
    print(f"{name:<44} p50 {p50:7.2f} / {i50:7.2f} ms  x{i50 / p50:.2f};  "
          f"p99 {p99:7.2f} / {i99:7.2f} ms  x{i99 / p99:.2f}")  # fmt: skip


def compare(name: str, here: Callable[[], object], there: Callable[[], object]) -> None:
    base, isolated = median_ms(here, 15), median_ms(there, 15)
    print(f"{name:<44} {base:8.2f} ms {isolated:8.2f} ms  x{isolated / base:.2f}")


def main(n: int = 20_000) -> None:
    me = psutil.Process()
    print(f"{n} beliefs; in thread, isolated, ratio (isolated / in thread)")
    memory = filled(None, n)
    forked = ForkedQueries(memory)
    rss = me.memory_info().rss / 2**20
    for label, asked in KINDS:
        compare(
            f"memory, fork per query ({rss:.0f} MB RSS): {label}",
            lambda a=asked: run_query(memory, a),  # type: ignore[misc]
            lambda a=asked: forked.answer(a, Job()),  # type: ignore[misc]
        )
    beside_writers(
        f"memory, {WRITERS} writers: ASK in a fork",
        memory,
        lambda: run_query(memory, CHEAP),
        lambda: forked.answer(CHEAP, timed_job()),
    )
    with tempfile.TemporaryDirectory() as folder:
        disk = filled(Path(folder) / "db", n)
        workers = QueryProcesses(Path(folder) / "db", workers=1)
        assert workers.ready(60)
        for label, asked in KINDS:
            compare(
                f"disk, worker process: {label}",
                lambda a=asked: run_query(disk, a),  # type: ignore[misc]
                lambda a=asked: workers.answer(a, Job()),  # type: ignore[misc]
            )
        beside_writers(
            f"disk, {WRITERS} writers: ASK as served",
            disk,
            lambda: run_query(disk, CHEAP),
            lambda: isolated_answer(
                workers, CHEAP, timed_job(), lambda: run_query(disk, CHEAP)
            ),
        )
        beside_writers(
            f"disk, {WRITERS} writers: ASK in a worker",
            disk,
            lambda: run_query(disk, CHEAP),
            lambda: at_most(lambda: workers.answer(CHEAP, timed_job())),
            times=10,
        )
        compare(
            "disk, /store at a point: snapshot vs CONSTRUCT",
            lambda: ox.serialize(
                [
                    ox.Triple(q.subject, q.predicate, q.object)
                    for q in disk.snapshot(valid_at=DUMP.valid_at)
                ],
                format=ox.RdfFormat.N_TRIPLES,
            ),
            lambda: workers.answer(DUMP, Job()),
        )
        workers.close()
        disk.close()
        server(Path(folder) / "ox", min(n, 2_000))


def server(folder: Path, n: int) -> None:
    """A query to Oxigraph server with and without a time limit (streamed and
    watched against its deadline, or read in one piece)."""
    from oms_rdf.store import time_limit
    from tests.servers import start_oxigraph

    process, base = start_oxigraph(folder)
    try:
        store = filled_remote(base, n)

        def limited(asked: QueryRequest) -> object:
            with time_limit(30):
                return run_query(store, asked)

        for label, asked in KINDS:
            compare(
                f"oxigraph server ({n}), time_limit: {label}",
                lambda a=asked: run_query(store, a),  # type: ignore[misc]
                lambda a=asked: limited(a),  # type: ignore[misc]
            )
        store.close()
    finally:
        process.kill()
        process.wait()


def filled_remote(base: str, n: int) -> oms.GrainStore:
    store = oms.GrainStore(backend=oms.SparqlBackend.oxigraph(base))
    store.put_many(
        oms.Belief(f"{EX}s{i}", EX + "p", f"{EX}o{i % 50}", 0.5, created_at=1)
        for i in range(n)
    )
    return store


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
