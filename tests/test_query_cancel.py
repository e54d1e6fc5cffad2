"""A query past its time limit is stopped, whatever it is: over an on-disk store the
SPARQL endpoint asks each query of a worker process and kills it at the limit
(oms_rdf.http.isolation). Real on-disk stores in tmp_path, the real ASGI app
served by uvicorn on loopback, a real ``oms-rdf serve`` for the stop.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

import oms_rdf as oms
from oms_rdf import GrainStore
from oms_rdf.http.app import create_app
from oms_rdf.http.isolation import QueryProcesses
from oms_rdf.http.lanes import Job
from oms_rdf.http.results import QueryRequest, run_query
from oms_rdf.rdf.vocab import OMS
from tests.test_server import running

T0 = 1_700_000_000_000
DAY = 86_400_000
EX = "http://example.org/"
# Some 8e9 rows for 2,000 beliefs, counted in one step of pyoxigraph's evaluation.
CROSS = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }"
CHEAP = f"ASK {{ <{EX}s1> ?p ?o }}"


def many(path: Path, n: int = 2_000) -> GrainStore:
    store = GrainStore(path)
    store.put_many(
        oms.Belief(f"{EX}s{i}", EX + "p", f"{EX}o{i % 50}", 0.5, created_at=T0)
        for i in range(n)
    )
    return store


def cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def workers_of(process: psutil.Process) -> list[psutil.Process]:
    """This process's descendants: the zygote and its workers."""
    return process.children(recursive=True)


def gone(pids: list[int], within: float = 3.0) -> bool:
    """Whether none of ``pids`` exists (a zombie exists) within ``within`` s."""
    deadline = time.monotonic() + within
    while any(psutil.pid_exists(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, GrainStore, object]]:
    store = many(tmp_path / "db")
    app = create_app(store, query_timeout=2.0)
    assert app.state.isolated.ready(30)  # type: ignore[attr-defined]
    with running(app) as base:
        assert httpx.get(f"{base}/sparql", params={"query": CHEAP}).status_code == 200
        yield base, store, app
    app.state.isolated.close()
    store.close()


def test_an_aggregate_past_its_time_is_killed_and_frees_the_cpu(
    served: tuple[str, GrainStore, object],
) -> None:
    base, _store, app = served
    me = psutil.Process()
    began = time.monotonic()
    got = httpx.get(f"{base}/sparql", params={"query": CROSS}, timeout=60)
    took = time.monotonic() - began
    assert got.status_code == 503 and got.json()["code"] == "ERR_QUERY", got.text
    assert 2.0 <= took < 5.0, took
    time.sleep(0.3)
    spent = cpu(me)
    time.sleep(1.0)
    spent = cpu(me) - spent
    # In a thread the count would go on: a core's worth of CPU each second.
    assert spent < 0.4, spent
    isolated = app.state.isolated  # type: ignore[attr-defined]
    kept = set(isolated.pids)
    assert len(kept) <= 4
    running_ones = [p for p in workers_of(me) if p.pid in kept]
    assert all(p.status() != psutil.STATUS_ZOMBIE for p in workers_of(me))
    assert sum(cpu(p) for p in running_ones) < 5.0  # none counted on
    began = time.monotonic()
    cheap = httpx.get(f"{base}/sparql", params={"query": CHEAP})
    latency = time.monotonic() - began
    print(
        f"\n503 after {took:.2f} s (limit 2 s); the server's CPU in the next "
        f"second {spent:.3f} s; a cheap query then {latency * 1000:.1f} ms"
    )
    assert cheap.status_code == 200 and cheap.json()["boolean"] is True
    assert latency < 1.0, latency


def test_the_process_that_ran_a_timed_out_query_no_longer_exists(
    served: tuple[str, GrainStore, object],
) -> None:
    base, _store, app = served
    isolated = app.state.isolated  # type: ignore[attr-defined]
    before = set(isolated.pids)
    assert before, "a worker answered the fixture's query"
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.update(isolated.pids)
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        got = httpx.get(f"{base}/sparql", params={"query": CROSS}, timeout=60)
    finally:
        done.set()
        watcher.join()
    assert got.status_code == 503, got.text
    deadline = time.monotonic() + 2  # killed at the 503, within a poll of its job
    while not (seen | before) - set(isolated.pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    ran = (seen | before) - set(isolated.pids)  # the one killed (and no other)
    assert len(ran) == 1, (seen, before, isolated.pids)
    assert gone(list(ran)), [psutil.Process(p).status() for p in ran]


@pytest.mark.soak
def test_many_timeouts_leave_the_server_bounded_and_answering(tmp_path: Path) -> None:
    store = many(tmp_path / "db")
    app = create_app(store, query_timeout=0.5)
    assert app.state.isolated.ready(30)  # type: ignore[attr-defined]
    me = psutil.Process()
    with running(app) as base, httpx.Client(base_url=base, timeout=60) as client:
        assert client.get("/sparql", params={"query": CHEAP}).status_code == 200
        began = time.monotonic()
        assert client.get("/v1/facts", params={"limit": "5"}).status_code == 200
        baseline = time.monotonic() - began
        threads, fds = me.num_threads(), me.num_fds()
        for _ in range(12):  # three times the query lane's threads
            assert client.get("/sparql", params={"query": CROSS}).status_code == 503
        time.sleep(0.3)
        began = time.monotonic()
        cheap = client.get("/sparql", params={"query": CHEAP})
        latency = time.monotonic() - began
        began = time.monotonic()
        listing = client.get("/v1/facts", params={"limit": "5"})
        listed = time.monotonic() - began
        print(
            f"\nthreads {threads} → {me.num_threads()}, descriptors {fds} → "
            f"{me.num_fds()} after 12 timeouts; a cheap query {latency * 1000:.1f} "
            f"ms, a listing {listed * 1000:.1f} ms ({baseline * 1000:.1f} ms "
            "before)"
        )
        assert cheap.status_code == 200 and listing.status_code == 200
        assert latency < 0.5 and listed < 2 * baseline + 0.5, (latency, listed)
        assert me.num_threads() <= threads + 2, (threads, me.num_threads())
        assert me.num_fds() <= fds + 8, (fds, me.num_fds())  # a socket per worker
        descendants = workers_of(me)
        assert len(descendants) <= 1 + 4, descendants  # the zygote and its workers
        assert all(p.status() != psutil.STATUS_ZOMBIE for p in descendants)
    app.state.isolated.close()  # type: ignore[attr-defined]
    assert gone([p.pid for p in descendants])
    store.close()


# --- the same answer ----------------------------------------------------------------


def story(path: Path) -> GrainStore:
    """Beliefs over time, in two namespaces, superseded, retracted, bounded."""
    store = GrainStore(path, clock=lambda: T0 + 30 * DAY)
    for i in range(30):
        store.put(
            oms.Belief(
                f"{EX}p{i}",
                EX + "knows",
                f"{EX}p{(i * 7) % 30}",
                0.7,
                created_at=T0 + i * DAY,
                namespace="a" if i % 2 else "b",
            )
        )
    old = store.put(
        oms.Belief(
            EX + "ann", EX + "worksAt", EX + "acme", 0.9, created_at=T0, valid_from=T0
        )
    )
    store.supersede(
        old,
        oms.Belief(
            EX + "ann",
            EX + "worksAt",
            EX + "initech",
            0.9,
            created_at=T0 + 5 * DAY,
            valid_from=T0 + 5 * DAY,
        ),
    )
    gone_one = store.put(
        oms.Belief(EX + "bo", EX + "likes", "tea", 0.6, created_at=T0 + DAY)
    )
    store.retract(gone_one, reason="wrong")
    store.put(
        oms.Belief(
            EX + "cy",
            EX + "visits",
            EX + "paris",
            0.8,
            created_at=T0,
            valid_from=T0 + 2 * DAY,
            valid_to=T0 + 4 * DAY,
        )
    )
    return store


QUERIES = [
    "SELECT ?s ?p ?o WHERE { ?s ?p ?o } ORDER BY ?s ?p ?o",
    "SELECT ?s ?o WHERE { ?s ?p ?o }",
    "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
    f"SELECT ?o (COUNT(?s) AS ?n) WHERE {{ ?s <{EX}knows> ?o }} GROUP BY ?o ORDER BY ?o",
    "SELECT DISTINCT ?o WHERE { ?s ?p ?o FILTER(isIRI(?o)) } ORDER BY DESC(?o)",
    f"ASK {{ <{EX}ann> <{EX}worksAt> <{EX}acme> }}",
    f"CONSTRUCT {{ ?s <{EX}at> ?o }} WHERE {{ ?s <{EX}worksAt> ?o }}",
    f"DESCRIBE <{EX}ann>",
    "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g",
]
POINTS = [
    {},
    {"valid_at": T0 + 3 * DAY},
    {"as_of": T0 + 2 * DAY},
    {"valid_at": T0 + DAY, "as_of": T0 + 10 * DAY},
    {"namespaces": ("a",)},
    {"namespaces": ("a", "b"), "valid_at": T0 + 20 * DAY},
]
ACCEPT = [
    "*/*",
    "text/csv",
    "application/sparql-results+xml",
    "application/n-triples",
    "text/tab-separated-values",
    "application/ld+json",
]


def in_thread(store: GrainStore, asked: QueryRequest) -> tuple[bytes, str]:
    return run_query(store, asked)


def test_answers_through_a_process_are_the_answers_in_thread(tmp_path: Path) -> None:
    store = story(tmp_path / "db")
    # A worker's read-only opening keeps no interval layer, and the answers are
    # compared byte for byte, rows of unordered queries in the engine's order:
    # the writer's store answers its points from the grain layer too.
    store.core.backend.intervals = False
    isolated = QueryProcesses.serving(store, workers=2)
    assert isolated is not None and isolated.ready(30)
    try:
        compared = 0
        for n, query in enumerate(QUERIES):
            for point in POINTS:
                accept = ACCEPT[(n + compared) % len(ACCEPT)]
                asked = QueryRequest(text=query, accept=accept, **point)  # type: ignore[arg-type]
                try:
                    here: tuple[bytes, str] | str = in_thread(store, asked)
                except oms.OmsError as exc:
                    here = str(exc)  # not acceptable, say: the same refusal
                try:
                    there: tuple[bytes, str] | str | None = isolated.answer(
                        asked, Job()
                    )
                except oms.OmsError as exc:
                    there = str(exc)
                assert there == here, (query, point, accept)
                compared += 1
        # The dataset parameters, and a query's own faults, worded the same.
        asked = QueryRequest(
            text="SELECT ?s WHERE { ?s ?p ?o } ORDER BY ?s",
            default_graph_uris=[OMS.current.value],
            named_graph_uris=[],
        )
        assert isolated.answer(asked, Job()) == in_thread(store, asked)
        for bad in (
            "SELECT ?s WHERE { ?s ?p }",
            "SELECT ?s WHERE { ?s ?p ?o ",
        ):
            with pytest.raises(oms.OmsError) as here_error:
                in_thread(store, QueryRequest(text=bad))
            with pytest.raises(oms.OmsError) as there_error:
                isolated.answer(QueryRequest(text=bad), Job())
            assert type(there_error.value) is type(here_error.value)
            assert str(there_error.value) == str(here_error.value)
    finally:
        isolated.close()
        store.close()


def test_writes_after_the_opening_are_seen_by_the_next_query(tmp_path: Path) -> None:
    store = many(tmp_path / "db", n=10)
    app = create_app(store, query_timeout=20)
    assert app.state.isolated.ready(30)  # type: ignore[attr-defined]
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"

    def counted(base: str) -> int:
        got = httpx.get(
            f"{base}/sparql",
            params={"query": count},
            headers={"accept": "application/sparql-results+json"},
        )
        assert got.status_code == 200, got.text
        return int(got.json()["results"]["bindings"][0]["n"]["value"])

    with running(app) as base:
        assert counted(base) == 10
        for i in range(3):  # each write in the server's own store, then a query
            store.put(oms.Belief(f"{EX}new{i}", EX + "p", "x", 0.5, created_at=T0))
            assert counted(base) == 11 + i
        grain = store.beliefs(EX + "new0")[0]
        store.retract(grain, reason="gone")
        assert counted(base) == 12
        # An import is a bulk write: a worker reads it whole once it has ended.
        other = GrainStore()
        other.put_many(
            oms.Belief(f"{EX}imp{i}", EX + "p", "y", 0.5, created_at=T0)
            for i in range(40)
        )
        dump = tmp_path / "dump.nq"
        other.export(dump)
        store.import_(dump)
        assert counted(base) == 52
        # While a bulk write runs no worker can open the store: the count is
        # refused (tests/test_cancel_every_way.py), and answered once it ends.
        with store.backend.bulk_writing():  # type: ignore[attr-defined]
            refused = httpx.get(f"{base}/sparql", params={"query": count})
            assert refused.status_code == 503, refused.text
            assert refused.json()["code"] == "ERR_CONFLICT"
        assert counted(base) == 52
    app.state.isolated.close()  # type: ignore[attr-defined]
    store.close()


def test_a_worker_that_dies_is_a_500_and_the_next_query_is_answered(
    served: tuple[str, GrainStore, object],
) -> None:
    base, _store, app = served
    isolated = app.state.isolated  # type: ignore[attr-defined]
    before = set(isolated.pids)
    result: list[httpx.Response] = []
    asking = threading.Thread(
        target=lambda: result.append(
            httpx.get(f"{base}/sparql", params={"query": CROSS}, timeout=60)
        )
    )
    asking.start()
    time.sleep(0.5)  # the count under way (its limit is 2 s)
    assert isolated.pids, before
    for pid in isolated.pids:  # as the kernel's OOM killer would
        psutil.Process(pid).kill()
    asking.join()
    assert result[0].status_code == 500, result[0].text
    assert result[0].json()["code"] == "ERR_STORE"
    assert httpx.get(f"{base}/sparql", params={"query": CHEAP}).status_code == 200


def test_sigterm_stops_the_server_and_kills_a_running_query(tmp_path: Path) -> None:
    path = tmp_path / "db"
    many(path).close()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "oms_rdf",
        "serve",
        "--store",
        str(path),
        "--port",
        str(port),
        "--query-timeout",
        "60",
    ]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(base + "/", timeout=5)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        asking = threading.Thread(target=lambda: _quietly(base))
        asking.start()
        time.sleep(1.5)
        descendants = psutil.Process(server.pid).children(recursive=True)
        assert len(descendants) >= 2, descendants  # the zygote and the busy worker
        began = time.monotonic()
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
        took = time.monotonic() - began
        said = server.stderr.read() if server.stderr else ""
        print(f"\nstopped in {took:.2f} s with a query running")
        assert code == 0 and took < 5, (code, took, said)
        assert "abandoned" not in said, said  # the query's process was killed
        assert gone([p.pid for p in descendants]), descendants
        asking.join(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if server.stderr is not None:
            server.stderr.close()
    GrainStore(path).close()  # writable again: the lock went with the server


def _quietly(base: str) -> None:
    try:
        httpx.get(f"{base}/sparql", params={"query": CROSS}, timeout=30)
    except httpx.HTTPError:
        pass  # the server stopped under it


def test_memory_stores_fork_a_child_per_query() -> None:
    from oms_rdf.http.forking import ForkedQueries

    assert QueryProcesses.serving(GrainStore(), workers=2) is None
    app = create_app(GrainStore())
    assert isinstance(app.state.isolated, ForkedQueries)  # type: ignore[attr-defined]
