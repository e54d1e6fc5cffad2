"""The same store over a real Oxigraph server (pip `oxigraph`), started on loopback.

One story runs on every backend (embedded in memory, embedded on disk, Oxigraph
server) and must give the same answers: bi-temporal beliefs, supersession,
retraction, SPARQL over the knowledge with time travel, the audit chain, an
export and an import, and an erasure.
"""

from __future__ import annotations

import io
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import oms_rdf as oms

T0 = 1_700_000_000_000
DAY = 86_400_000
NOW = T0 + 100 * DAY


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def oxigraph_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Start Oxigraph servers on loopback, each on a fresh directory; stop them all."""
    binary = shutil.which("oxigraph", path=str(Path(sys.executable).parent))
    assert binary is not None, "the [test] extra installs the oxigraph server"
    running: list[subprocess.Popen[bytes]] = []

    def start() -> str:
        port = free_port()
        folder = tmp_path_factory.mktemp("oxigraph")
        running.append(subprocess.Popen(
            [binary, "serve", "--location", str(folder), "--bind", f"127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ))  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                httpx.get(f"{base}/query", params={"query": "ASK {}"}, timeout=1)
                return base
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("the oxigraph server did not start")

    yield start
    for server in running:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def oxigraph_server(oxigraph_servers: Any) -> str:
    base: str = oxigraph_servers()
    return base


@pytest.fixture(params=["memory", "disk", "oxigraph-server"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    opened: list[oms.GrainStore] = []

    def make(**options: Any) -> oms.GrainStore:
        if request.param == "memory":
            store = oms.GrainStore(**options)
        elif request.param == "disk":
            store = oms.GrainStore(tmp_path / f"store{len(opened)}", **options)
        else:
            backend = oms.SparqlBackend.oxigraph(
                request.getfixturevalue("oxigraph_servers")()
            )
            store = oms.GrainStore(backend=backend, **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def job(company: str, t: int, **fields: Any) -> dict[str, Any]:
    return {"type": "belief", "subject": "alice", "relation": "works_at", "object": company,
            "confidence": 0.9, "created_at": t, **fields}  # fmt: skip


def test_one_story_gives_the_same_answers_on_every_backend(make_store: Any) -> None:
    store = make_store(clock=lambda: NOW)
    acme = store.put(job("Acme", T0))
    initech = store.supersede(
        acme, job("Initech", T0 + 10 * DAY, valid_from=T0 + 10 * DAY)
    )
    wrong = store.put(oms.Belief("bob", "lives_in", "Paris", 0.7, created_at=T0))
    store.retract(wrong, reason="never said", at=T0 + 20 * DAY)

    assert [g["object"] for g in store.beliefs("alice")] == ["Initech"]
    assert [g["object"] for g in store.beliefs("alice", valid_at=T0 + DAY)] == ["Acme"]
    assert [g["object"] for g in store.beliefs("alice", as_of=T0 + 5 * DAY)] == ["Acme"]
    assert store.beliefs("bob") == []
    assert [g["object"] for g in store.beliefs("bob", as_of=T0 + 15 * DAY)] == ["Paris"]
    assert [g.address for g in store.history(initech)] == [acme, initech]
    assert store.status(acme).superseded_by == initech

    ask = "SELECT ?o WHERE { ?s ?p ?o } ORDER BY ?o"
    assert [r["o"].value for r in store.query(ask)] == ["Initech"]
    then = store.query(ask, valid_at=T0 + DAY, as_of=T0 + 5 * DAY)
    assert [r["o"].value for r in then] == ["Acme", "Paris"]
    assert store.verify_audit().ok and store.verify_audit().events == 4

    buffer = io.BytesIO()
    store.export(buffer, format="trig")
    again = make_store(clock=lambda: NOW)
    again.import_(io.BytesIO(buffer.getvalue()), format="trig")
    assert [g["object"] for g in again.beliefs("alice")] == ["Initech"]
    assert again.status(wrong).status == "retracted"

    report = store.erase_subject("bob", reason="request")
    assert report.erased == [wrong] and wrong not in store
    assert store.beliefs("bob", as_of=T0 + 15 * DAY) == []
    assert store.verify_audit().ok


def test_a_server_error_is_a_store_error(oxigraph_server: str) -> None:
    backend = oms.SparqlBackend.oxigraph(oxigraph_server)
    with pytest.raises(oms.StoreError, match="HTTP 400"):
        backend.update("THIS IS NOT SPARQL")
    backend.close()
    gone = oms.SparqlBackend.oxigraph(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(oms.StoreError, match="failed"):
        oms.GrainStore(backend=gone)
    gone.close()


def test_the_command_line_works_over_a_server(
    oxigraph_server: str, tmp_path: Path
) -> None:
    import json

    from click.testing import CliRunner

    from oms_rdf.cli import cli

    def run(*args: str) -> Any:
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    source = tmp_path / "g.jsonl"
    source.write_text(json.dumps(job("Acme", T0)) + "\n")
    put = run("--store", oxigraph_server, "put", str(source))
    assert put.exit_code == 0 and "alice works_at 'Acme'" in put.output
    beliefs = run("--store", oxigraph_server, "beliefs", "--subject", "alice", "--json")
    assert json.loads(beliefs.output)[0]["object"] == "Acme"
    query = run("--query-url", f"{oxigraph_server}/query", "--update-url",
                f"{oxigraph_server}/update", "query", "SELECT ?o WHERE { ?s ?p ?o }")  # fmt: skip
    assert "Acme" in query.output
    out = tmp_path / "all.trig"
    assert run("--store", oxigraph_server, "export", str(out)).exit_code == 0
    other = oms.GrainStore()
    assert other.import_(out).added == 1
    assert run("--store", oxigraph_server, "audit", "verify").output.startswith(
        "audit ok"
    )


def test_a_supersession_that_lost_the_race_is_refused_and_writes_nothing(
    oxigraph_servers: Any,
) -> None:
    """Client A checks, client B supersedes the same grain, then A writes: A's write
    re-checks inside itself, finds the grain no longer current, and changes nothing."""
    base = oxigraph_servers()
    a = oms.GrainStore(backend=oms.SparqlBackend.oxigraph(base))
    b = oms.GrainStore(backend=oms.SparqlBackend.oxigraph(base))
    head = a.put(oms.Belief("x", "r", "first", 0.9, created_at=1))
    writes = oms.GrainStore._write
    done: list[str] = []

    def b_goes_first(self: oms.GrainStore, *args: Any, **kwargs: Any) -> Any:
        if self is a and not done:  # after A's checks, before A's write
            done.append(
                b.supersede(head, {**job("by b", 2), "subject": "x", "relation": "r"})
            )
        return writes(self, *args, **kwargs)

    oms.GrainStore._write = b_goes_first  # type: ignore[method-assign]
    try:
        with pytest.raises(oms.StoreError, match="another writer") as info:
            a.supersede(head, {**job("by a", 2), "subject": "x", "relation": "r"})
    finally:
        oms.GrainStore._write = writes  # type: ignore[method-assign]
    assert info.value.code == oms.ErrorCode.CONFLICT
    assert a.status(head).superseded_by == done[0]
    assert len(a) == 2 and a.verify_audit().ok and a.verify_audit().events == 2
    # Another client's append moved the chain's head: A's next write follows it.
    a.put(oms.Belief("y", "r", "o", 0.5, created_at=1))
    assert a.verify_audit().ok and a.verify_audit().events == 3
    a.close()
    b.close()
