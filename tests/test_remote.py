"""The same store over real SPARQL servers started on loopback: Oxigraph server
(pip `oxigraph`) and Virtuoso 7 (Debian's `virtuoso-opensource`).

One story runs on every backend (embedded in memory, embedded on disk, Oxigraph
server, Virtuoso) and must give the same answers: bi-temporal beliefs,
supersession, retraction, SPARQL over the knowledge with time travel, the audit
chain, an export and an import, and an erasure.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.store.core import Core
from tests.servers import STARTERS, backend_for, clear, free_port, race, start_oxigraph

# Oxigraph server comes from pip (the [test] extra): the default tier. Virtuoso is a
# system package: the servers tier (skipped, naming it, where it is missing).
VIRTUOSO = pytest.mark.servers("virtuoso-opensource")
SERVERS = ["oxigraph", pytest.param("virtuoso", marks=VIRTUOSO)]

T0 = 1_700_000_000_000
DAY = 86_400_000
NOW = T0 + 100 * DAY


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Start servers of a kind on loopback, each on a fresh directory; stop them all."""
    running: list[subprocess.Popen[bytes]] = []

    def start(kind: str = "oxigraph") -> str:
        server, base = STARTERS[kind](tmp_path_factory.mktemp(kind))
        running.append(server)
        return base

    yield start
    for server in running:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def oxigraph_server(servers: Any) -> str:  # one Oxigraph server for a test
    base: str = servers()
    return base


@pytest.fixture(params=["memory", "disk", *SERVERS])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    opened: list[oms.GrainStore] = []

    def make(**options: Any) -> oms.GrainStore:
        if request.param == "memory":
            store = oms.GrainStore(**options)
        elif request.param == "disk":
            store = oms.GrainStore(tmp_path / f"store{len(opened)}", **options)
        else:
            base = request.getfixturevalue("servers")(request.param)
            store = oms.GrainStore(backend=backend_for(request.param, base), **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def two_clients(servers: Any) -> Iterator[Any]:
    """Two stores on one new server of a kind, as two processes would have."""
    opened: list[oms.GrainStore] = []

    def make(kind: str) -> tuple[oms.GrainStore, oms.GrainStore]:
        base = servers(kind)
        opened.extend(oms.GrainStore(backend=backend_for(kind, base)) for _ in "ab")
        return opened[-2], opened[-1]

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
    # Over a server, beliefs(subject) brings that subject's grains and their
    # successors in one request, and nothing else.
    copy = store.questions._subject_copy("alice")
    if copy is not None:
        nodes = {q.subject.value for q in copy.quads()}
        assert nodes == {f"nih:sha-256;{a}" for a in (acme, initech)}

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


@pytest.mark.parametrize("in_transaction", [False, True])
def test_a_superseded_belief_is_retracted_alike_on_every_backend(
    make_store: Any, in_transaction: bool
) -> None:
    """Taking back the past of a superseded belief ("Acme was never true"): the
    embedded store did it, a server refused it as lost to another writer."""
    now = [T0]
    store = make_store(clock=lambda: now[0])
    acme = store.put(job("Acme", T0))
    now[0] = T0 + 10 * DAY
    store.supersede(acme, job("Initech", T0 + 10 * DAY, valid_from=T0 + 10 * DAY))
    now[0] = T0 + 20 * DAY
    if in_transaction:
        with store.transaction() as tx:
            tx.retract(acme, reason="never true")
    else:
        store.retract(acme, reason="never true")
    state = store.status(acme)
    assert state.status == "retracted" and state.voided_at == T0 + 20 * DAY
    assert store.beliefs("alice", valid_at=T0 + DAY) == []  # its past is taken back
    then = store.beliefs("alice", valid_at=T0 + DAY, as_of=T0 + 15 * DAY)
    assert [g["object"] for g in then] == ["Acme"]  # as it was known before
    assert [g["object"] for g in store.beliefs("alice")] == ["Initech"]
    with pytest.raises(oms.PolicyError) as again:
        store.contradict(acme)
    assert again.value.code == "ERR_CONFLICT"
    assert store.verify_audit().ok


@pytest.mark.parametrize("kind", SERVERS)
def test_a_triple_another_belief_asserts_stays_after_a_lookup_and_a_retraction(
    kind: str, two_clients: Any
) -> None:
    """Two beliefs assert one triple, written by another client. A lookup of
    their subject reads them from a copy of some of their quads; retracting one
    then leaves the triple in the knowledge, where the other still asserts it."""
    theirs, mine = two_clients(kind)
    s, p, o = (f"http://example.org/{x}" for x in ("alice", "likes", "tea"))
    first = theirs.put(oms.Belief(s, p, o, 0.5, created_at=T0))
    second = theirs.put(oms.Belief(s, p, o, 0.6, created_at=T0 + 1))
    assert {g.address for g in mine.beliefs(s, p)} == {first, second}
    mine.retract(first, reason="said twice")
    ask = f"SELECT ?o WHERE {{ <{s}> <{p}> ?o }}"
    assert [r["o"].value for r in mine.query(ask)] == [o]
    mine.retract(second, reason="not at all")
    assert list(mine.query(ask)) == []


def test_a_server_error_is_a_store_error(oxigraph_server: str) -> None:
    backend = oms.SparqlBackend.oxigraph(oxigraph_server)
    with pytest.raises(oms.StoreError, match="HTTP 400"):
        backend.update("THIS IS NOT SPARQL")
    backend.close()
    gone = oms.SparqlBackend.oxigraph(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(oms.StoreError, match="failed"):
        oms.GrainStore(backend=gone)
    gone.close()


@pytest.mark.parametrize("kind", SERVERS)
def test_search_finds_what_other_clients_wrote_after_it_first_ran(
    kind: str, two_clients: Any
) -> None:
    mine, theirs = two_clients(kind)
    mine.put(oms.Belief("cache", "uses", "LRU eviction", 0.9, created_at=T0))
    assert [g["subject"] for g in mine.search("eviction")] == ["cache"]
    # One belief from another client: looked up by itself.
    bucket = theirs.put(
        oms.Belief("rate limiter", "uses", "token bucket", 0.9, created_at=T0)
    )
    assert [g.address for g in mine.search("token bucket")] == [bucket]
    # More than are looked up one by one: read with every blob.
    many = theirs.put_many([oms.Belief(f"service {i}", "calls", f"gadget{i}", 0.8,
                                       created_at=T0 + i) for i in range(100)])  # fmt: skip
    assert [g.address for g in mine.search("gadget42")] == [many[42]]
    # This client's own write, then another's retraction, each seen at once.
    own = mine.put(oms.Belief("queue", "uses", "token ring", 0.7, created_at=T0))
    assert {g.address for g in mine.search("token")} == {bucket, own}
    theirs.retract(bucket, reason="replaced")
    assert [g.address for g in mine.search("token")] == [own]


@pytest.mark.parametrize("kind", SERVERS)
def test_a_server_tells_which_grains_it_holds_in_batches(
    kind: str, servers: Any
) -> None:
    from oms_rdf.store import presence

    store = oms.GrainStore(backend=backend_for(kind, servers(kind)))
    held = store.put_many([oms.Belief(f"s{i}", "r", "o", 0.5, created_at=T0 + i)
                           for i in range(5)])  # fmt: skip
    absent = [f"{i:064x}" for i in range(3)]
    asked = [*held[::2], *absent] * 2  # repeats, and more than one batch
    saved, presence.BATCH = presence.BATCH, 2
    try:
        assert presence.stored_addresses(store.core.backend, asked) == set(held[::2])
    finally:
        presence.BATCH = saved
    store.close()


@pytest.mark.parametrize("kind", SERVERS)
def test_a_grain_another_client_erased_is_gone_for_every_client(
    kind: str, two_clients: Any
) -> None:
    mine, theirs = two_clients(kind)
    address = mine.put(oms.Belief("alice", "lives_in", "Lisbon", 0.9, created_at=T0))
    assert mine.get(address)["object"] == "Lisbon"  # now decoded and kept here
    theirs.erase(address, reason="the subject asked")
    with pytest.raises(oms.NotFoundError):
        mine.get(address)
    with pytest.raises(oms.NotFoundError):
        mine.supersede(address, job("Lisbon", T0 + DAY))
    # A write that checked the grain before the erasure is refused by its guard.
    other = mine.put(oms.Belief("bob", "lives_in", "Porto", 0.9, created_at=T0))
    mine.get(other)
    theirs.erase(other, reason="the subject asked")
    node = f"<nih:sha-256;{other}>"
    row = (node, "<https://w3id.org/oms-rdf/ns#status>",
           "<https://w3id.org/oms-rdf/ns#superseded>", "<https://w3id.org/oms-rdf/ns#index>")  # fmt: skip
    with pytest.raises(oms.StoreError) as refused:
        mine.core.write([], [row, *mine.core.audit_rows("retract", target=other)],
                        current=[other])  # fmt: skip
    assert refused.value.code == "ERR_CONFLICT"
    status = ox.NamedNode("https://w3id.org/oms-rdf/ns#status")
    assert not list(theirs.core.backend.quads(ox.NamedNode(f"nih:sha-256;{other}"),
                                              status, None, None))  # fmt: skip


@pytest.mark.parametrize("kind", SERVERS)
def test_the_command_line_works_over_a_server(
    kind: str, servers: Any, tmp_path: Path
) -> None:
    import json

    from click.testing import CliRunner

    from oms_rdf.cli import cli
    from tests.servers import VIRTUOSO_PASSWORD, VIRTUOSO_USER

    base = servers(kind)
    if kind == "oxigraph":
        where = ["--store", base]
    else:
        credentials = f"{VIRTUOSO_USER}:{VIRTUOSO_PASSWORD}@"
        where = ["--virtuoso", base.replace("://", f"://{credentials}")]

    def run(*args: str) -> Any:
        return CliRunner().invoke(cli, [*where, *args], catch_exceptions=False)

    source = tmp_path / "g.jsonl"
    source.write_text(json.dumps(job("Acme", T0)) + "\n")
    put = run("put", str(source))
    assert put.exit_code == 0 and "alice works_at 'Acme'" in put.output
    beliefs = run("beliefs", "--subject", "alice", "--json")
    assert json.loads(beliefs.output)[0]["object"] == "Acme"
    first = json.loads(beliefs.output)[0]["address"]
    # Supersede, history, retract, time travel, search and import, each over the server.
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(job("Initech", T0 + 10 * DAY, valid_from=T0 + 5 * DAY)))
    second = run("supersede", first[:12], str(moved)).output.strip()
    assert len(second) == 64
    assert first[:12] in run("history", second[:12]).output
    ask = "SELECT ?o WHERE { ?s ?p ?o }"
    assert "Acme" in run("query", ask, "--valid-at", str(T0 + DAY)).output
    assert "Initech" in run("query", ask, "--valid-at", str(T0 + 6 * DAY)).output
    assert "Initech" not in run("query", ask, "--valid-at", str(T0 + 6 * DAY),
                                "--as-of", str(T0 + DAY)).output  # fmt: skip
    found = json.loads(run("search", "initech", "--json").output)
    assert [g["address"] for g in found] == [second]
    lisbon = tmp_path / "lisbon.jsonl"
    lisbon.write_text(json.dumps({**job("Lisbon", T0), "relation": "lives_in"}) + "\n")
    assert run("import", str(lisbon)).exit_code == 0
    lives = json.loads(run("beliefs", "--subject", "alice", "--relation", "lives_in",
                           "--json").output)  # fmt: skip
    assert run("retract", lives[0]["address"][:12], "--reason", "moved").exit_code == 0
    assert json.loads(run("search", "lisbon", "--json").output) == []
    _serve_over(where, ask)
    assert run("query", ask).output.split() == ["o", "Initech"]
    out = tmp_path / "all.trig"
    assert run("export", str(out)).exit_code == 0
    other = oms.GrainStore()
    assert other.import_(out).added == 3
    assert [g["object"] for g in other.beliefs("alice")] == ["Initech"]
    assert run("audit", "verify").output.startswith("audit ok")
    if kind == "oxigraph":  # any server, named by its endpoints
        query = CliRunner().invoke(cli, ["--query-url", f"{base}/query", "--update-url",
                                         f"{base}/update", "query", ask])  # fmt: skip
        assert "Initech" in query.output
    else:  # a wrong password is refused, with the server's answer
        wrong = CliRunner().invoke(cli, ["--virtuoso", base.replace("://", "://oms:nope@"),
                                         "beliefs", "--subject", "alice"])  # fmt: skip
        assert wrong.exit_code == 1 and "401" in wrong.output


def _serve_over(where: list[str], ask: str) -> None:
    """``oms-rdf serve`` on the store a server holds: SPARQL at a point, and facts."""
    import os
    import signal

    port = free_port()
    command = [sys.executable, "-m", "oms_rdf", *where, "serve", "--port", str(port)]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}) as served:  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(300):
                try:
                    then = httpx.get(f"{base}/sparql", params={"query": ask, "valid_at": str(T0 + DAY)},
                                     headers={"accept": "application/sparql-results+json"})  # fmt: skip
                    break
                except httpx.TransportError:
                    assert served.poll() is None, (
                        served.stderr.read() if served.stderr else ""
                    )
                    time.sleep(0.1)
            objects = [b["o"]["value"] for b in then.json()["results"]["bindings"]]
            assert objects == ["Acme"]
            facts = httpx.get(f"{base}/v1/facts", params={"subject": "alice"}).json()
            assert [f["fields"]["object"] for f in facts["facts"]] == ["Initech"]
            served.send_signal(signal.SIGTERM)
            assert served.wait(timeout=30) == 0
        finally:
            if served.poll() is None:
                served.kill()


@pytest.mark.parametrize("kind", SERVERS)
def test_a_supersession_that_lost_the_race_is_refused_and_writes_nothing(
    kind: str, servers: Any
) -> None:
    """Client A checks, client B supersedes the same grain, then A writes: A's write
    re-checks inside itself, finds the grain no longer current, and changes nothing."""
    base = servers(kind)
    a = oms.GrainStore(backend=backend_for(kind, base))
    b = oms.GrainStore(backend=backend_for(kind, base))
    head = a.put(oms.Belief("x", "r", "first", 0.9, created_at=1))
    writes = Core.write
    done: list[str] = []

    def b_goes_first(self: Core, *args: Any, **kwargs: Any) -> Any:
        if self is a.core and not done:  # after A's checks, before A's write
            done.append(
                b.supersede(head, {**job("by b", 2), "subject": "x", "relation": "r"})
            )
        return writes(self, *args, **kwargs)

    Core.write = b_goes_first  # type: ignore[method-assign]
    try:
        with pytest.raises(oms.StoreError, match="another writer") as info:
            a.supersede(head, {**job("by a", 2), "subject": "x", "relation": "r"})
    finally:
        Core.write = writes  # type: ignore[method-assign]
    assert info.value.code == oms.ErrorCode.CONFLICT
    assert a.status(head).superseded_by == done[0]
    assert len(a) == 2 and a.verify_audit().ok and a.verify_audit().events == 2
    # Another client's append moved the chain's head: A's next write follows it.
    a.put(oms.Belief("y", "r", "o", 0.5, created_at=1))
    assert a.verify_audit().ok and a.verify_audit().events == 3
    a.close()
    b.close()


@pytest.mark.parametrize(
    ("fractions", "until_inside"),
    [
        # One kill inside the import: a kill that lands before its first write
        # (the file is read and checked first) or after its end is tried again
        # elsewhere, each still checked. Later fractions for a busy machine, where
        # the import runs slower than when it was timed (all four earlier ones
        # once missed in a full parallel run).
        ((0.5, 0.7, 0.3, 0.9, 1.3, 1.8, 2.5), True),
        pytest.param((0.1, 0.3, 0.5, 0.7, 0.9, 1.5), False, marks=pytest.mark.soak),
    ],
    ids=["one-kill", "six-kills"],
)
@pytest.mark.parametrize("kind", SERVERS)
def test_killing_the_server_during_a_bulk_import_leaves_all_or_nothing(
    kind: str, fractions: tuple[float, ...], until_inside: bool, tmp_path: Path
) -> None:
    """A kill -9 of the server mid-import; after a restart on the same directory,
    opening the store finishes the story: the import is wholly there or absent."""
    import signal

    folder, port = tmp_path / "server", free_port()
    folder.mkdir()
    address: list[str] = []

    def serve() -> subprocess.Popen[bytes]:
        """The same directory and ports each time (Virtuoso keeps its own)."""
        if kind == "oxigraph":
            server, base = start_oxigraph(folder, port)
        else:
            server, base = STARTERS[kind](folder)
        address[:] = [base]
        return server

    source = oms.GrainStore()
    source.put_many(
        [oms.Belief("s", "r", str(i), 0.5, created_at=i) for i in range(3000)]
    )
    dump = tmp_path / "all.jsonl"
    source.export(dump)
    wanted = {g.address for g in source.beliefs("s")}

    program = (
        "import sys, oms_rdf as oms, oms_rdf.store.journal as j\n"
        "j.CHUNK_ROWS = 2000\n"
        "from tests.servers import backend_for\n"
        f"s = oms.GrainStore(backend=backend_for({kind!r}, sys.argv[1]))\n"
        "print('importing', flush=True)\n"
        f"s.import_({str(dump)!r})\n"
    )
    # How long the import itself takes, once it has started: the kills land inside.
    server = serve()
    base = address[0]
    timing = subprocess.Popen(
        [sys.executable, "-c", program, base], stdout=subprocess.PIPE
    )
    assert timing.stdout is not None and timing.stdout.readline() == b"importing\n"
    began = time.monotonic()
    timing.wait(timeout=120)
    span = time.monotonic() - began
    timing.stdout.close()
    cleaner = backend_for(kind, base)
    clear(cleaner)
    cleaner.close()
    server.send_signal(signal.SIGKILL)
    server.wait()
    outcomes, interrupted, kills = set(), 0, 0
    for fraction in fractions:
        kills += 1
        server = serve()
        store = oms.GrainStore(backend=backend_for(kind, base))
        store.put(oms.Belief("keep", "r", "o", 0.5, created_at=1))
        importer = subprocess.Popen(  # it fails when the server dies: stderr is noise
            [sys.executable, "-c", program, base],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert (
            importer.stdout is not None and importer.stdout.readline() == b"importing\n"
        )
        importer.stdout.close()
        time.sleep(fraction * span)
        server.send_signal(signal.SIGKILL)
        server.wait()
        importer.wait(timeout=60)
        store.close()
        server = serve()
        probe = backend_for(kind, base)
        journal = "ASK { GRAPH <https://w3id.org/oms-rdf/ns#index> { <https://w3id.org/oms-rdf/ns#journal> ?p ?o } }"
        interrupted += bool(probe.query(journal))  # the kill landed inside the import
        probe.close()
        again = oms.GrainStore(backend=backend_for(kind, base))  # recovers
        have = {g.address for g in again.beliefs("s")}
        assert have in (set(), wanted), (
            f"{len(have)} of {len(wanted)} grains after the kill"
        )
        assert [g["object"] for g in again.beliefs("keep")] == ["o"]
        assert again.verify_audit().ok
        outcomes.add(len(have))
        clear(again.backend)
        again.close()
        server.send_signal(signal.SIGKILL)
        server.wait()
        if until_inside and interrupted:
            break
    print(f"imports interrupted: {interrupted} of {kills}; found {sorted(outcomes)}")
    assert interrupted >= 1, "no kill landed inside the import"


@pytest.mark.parametrize("rounds", [20, pytest.param(200, marks=pytest.mark.soak)])
@pytest.mark.parametrize("kind", SERVERS)
def test_two_processes_racing_round_after_round_never_both_win(
    kind: str, rounds: int, servers: Any
) -> None:
    base = servers(kind)
    store = oms.GrainStore(backend=backend_for(kind, base))
    heads = store.put_many(
        [oms.Belief(f"race{i}", "r", "first", 0.9, created_at=1) for i in range(rounds)]
    )
    outcomes = race(kind, base, heads)
    for i, head in enumerate(heads):
        won = [o[i] for o in outcomes if len(o[i]) == 64]
        lost = [o[i] for o in outcomes if len(o[i]) != 64]
        assert len(won) == 1, f"round {i}: {outcomes[0][i]} / {outcomes[1][i]}"
        assert lost == ["ERR_CONFLICT"]
        assert store.status(head).superseded_by == won[0]
    assert len(store) == 2 * rounds  # no loser's successor was written
    successors = list(
        store.backend.quads(None, oms.rdf.vocab.OMS.supersededBy, None, None)
    )
    assert len(successors) == rounds
    assert store.verify_audit().ok and store.verify_audit().events == rounds + 1
    assert all(
        sum(len(o[i]) == 64 for i in range(rounds)) > 0 for o in outcomes
    )  # both won some
    store.close()


# In two halves, each one test, so that a tier's two workers share them: over
# Virtuoso the suites take minutes. The random histories are in test_lookup and
# test_rewrite, one in each half.
BEHAVIOUR = {
    "first-half": ["tests/test_temporal.py", "tests/test_time_travel.py",
                   "tests/test_policy.py", "tests/test_lookup.py"],
    "second-half": ["tests/test_revision.py", "tests/test_search.py",
                    "tests/test_rewrite.py", "tests/test_changes.py",
                    "tests/test_versions.py"],
}  # fmt: skip


# The default tier runs the suites' default tier over the server, less the random
# histories (conftest.py: SOAK_ON_A_SERVER), which run in process there; the soak
# tier runs what that left out, so each test runs over each server once.
SUITE = {"default": "not servers and not soak", "rest": "soak"}


@pytest.mark.parametrize(
    "suite", ["default", pytest.param("rest", marks=pytest.mark.soak)]
)
@pytest.mark.parametrize("half", BEHAVIOUR)
@pytest.mark.parametrize("kind", SERVERS)
def test_the_behaviour_suites_pass_on_a_server(
    kind: str, suite: str, half: str
) -> None:
    """The bi-temporal, time-travel, policy, revision, lookup, search, rewrite,
    changes and versions suites, with every in-memory store of theirs on a real server of this kind
    (see conftest.py)."""
    import os

    root = Path(__file__).parent.parent
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-W", "ignore::ResourceWarning", "-m", SUITE[suite], *BEHAVIOUR[half]],
        cwd=root, capture_output=True, text=True, timeout=1200,
        env={**os.environ, "OMS_RDF_TEST_BACKEND": kind},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


@VIRTUOSO
def test_virtuoso_refuses_what_it_cannot_hold_and_the_store_stays_as_it_was(
    servers: Any,
) -> None:
    """Virtuoso keeps no integer beyond 64 bits and no ill-typed literal (Oxigraph
    keeps both): such an import fails with ERR_STORE and leaves the store as it was."""
    store = oms.GrainStore(backend=backend_for("virtuoso", servers("virtuoso")))
    kept = store.put(oms.Belief("keep", "r", "o", 0.5, created_at=1))
    before = sorted(map(str, store.backend.quads()))
    for literal in ('"123456789012345678901234"^^xsd:integer', '"tRuE"^^xsd:boolean'):
        turtle = (
            "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
            f"<http://example.org/a> <http://example.org/n> {literal} .\n"
        )
        with pytest.raises(oms.StoreError) as info:
            store.import_(io.BytesIO(turtle.encode()), format="turtle")
        assert info.value.code == oms.ErrorCode.STORE
        assert sorted(map(str, store.backend.quads())) == before
    assert [g.address for g in store.beliefs("keep")] == [kept]
    assert store.verify_audit().ok
    embedded = oms.GrainStore()  # the same files are kept in process
    assert embedded.import_(io.BytesIO(turtle.encode()), format="turtle").added == 1
    # NaN doubles: Virtuoso 7.2 wrote such a request in part, and every later
    # write failed (its quad index broken); refused before it is sent.
    nan = ('PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> INSERT DATA { '
           '<http://example.org/a> <http://example.org/d> "1e0"^^xsd:double , '
           '"NaN"^^xsd:double , "NaN"^^xsd:float }')  # fmt: skip
    with pytest.raises(oms.StoreError) as info:
        store.update(nan)
    assert info.value.code == oms.ErrorCode.STORE and "NaN" in info.value.message
    assert sorted(map(str, store.backend.quads())) == before
    assert store.put(oms.Belief("later", "r", "o", 0.5, created_at=2))  # still writes
    assert embedded.update(nan).added == 3
    store.close()


@pytest.mark.parametrize("kind", SERVERS)
def test_graph_patterns_of_the_knowledge_see_none_of_the_stores_own_graphs(
    servers: Any, kind: str
) -> None:
    """With no adopted named graph, GRAPH ?g matches nothing, now or held: the
    request names no graph, and Virtuoso had then opened every graph."""
    store = oms.GrainStore(backend=backend_for(kind, servers(kind)),
                           clock=lambda: 10_000)  # fmt: skip
    clear(store.backend)
    store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1_000))
    ask = "SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"
    assert list(store.query(ask)) == list(store.query(ask, held=True)) == []
    store.put({"type": "belief", "subject": "bob", "relation": "likes",
               "object": "tea", "confidence": 0.9, "created_at": 2_000,
               "context": {"rdf:graph": "http://example.org/g1"}})  # fmt: skip
    for answer in (store.query(ask), store.query(ask, held=True)):
        assert [row["g"].value for row in answer] == ["http://example.org/g1"]
    store.close()


@pytest.mark.parametrize("kind", SERVERS)
def test_booleans_and_times_come_back_as_the_embedded_store_gives_them(
    servers: Any, kind: str
) -> None:
    """Virtuoso keeps literals by value: it wrote true as 1 and 20.01 seconds as
    20.010."""
    xsd = "http://www.w3.org/2001/XMLSchema#"
    stores = [oms.GrainStore(clock=lambda: 10_000),
              oms.GrainStore(backend=backend_for(kind, servers(kind)),
                             clock=lambda: 10_000)]  # fmt: skip
    clear(stores[1].backend)
    ask = "SELECT ?o ?systemFrom WHERE { ?s ?p ?o }"
    answers = []
    for store in stores:
        for n, (value, datatype) in enumerate(
            [
                ("true", "boolean"),
                ("false", "boolean"),
                ("2024-01-02T03:04:05.5Z", "dateTime"),
            ]
        ):
            store.put({"type": "belief", "subject": f"s{n}", "relation": "r",
                       "object": value, "confidence": 0.9, "created_at": 1_010,
                       "context": {"rdf:datatype": xsd + datatype}})  # fmt: skip
        got = store.query(ask, valid_during=(None, None))
        answers.append(sorted((str(r["o"]), str(r["systemFrom"])) for r in got))
        store.close()
    assert answers[0] == answers[1]
    assert ('"true"^^<' + xsd + "boolean>") in {o for o, _ in answers[1]}


@VIRTUOSO
def test_virtuoso_keeps_same_term_a_test_at_a_point(servers: Any) -> None:
    """At a point the query is rewritten onto grain subqueries; Virtuoso took a
    sameTerm against an IRI beside them for a binding (every triple matched)."""
    store = oms.GrainStore(backend=backend_for("virtuoso", servers("virtuoso")),
                           clock=lambda: 10_000)  # fmt: skip
    store.update(
        "INSERT DATA { <http://e/a> <http://e/p> 1 . <http://e/a> <http://e/q> 'x' }"
    )
    at = {"valid_at": 10_000}
    assert (
        store.query("ASK { ?s ?p ?o FILTER(sameTerm(?s, <http://e/zzz>)) }", **at)
        is False
    )
    rows = store.query(
        "SELECT ?p WHERE { ?s ?p ?o FILTER(sameTerm(?p, <http://e/q>)) }", **at
    )
    assert [str(row[0]) for row in rows] == ["<http://e/q>"]
    store.close()


@VIRTUOSO
def test_virtuoso_reads_a_graph_larger_than_it_answers_at_once_in_shares(
    servers: Any,
) -> None:
    """Virtuoso answers at most 2**20 rows at once: a larger graph is read in
    shares of its subjects. With small shares, the export is still every quad, once."""
    store = oms.GrainStore(backend=backend_for("virtuoso", servers("virtuoso")))
    store.put_many(
        [oms.Belief("s", "r", str(i), 0.5, created_at=i) for i in range(400)]
    )
    whole = sorted(map(str, store.backend.quads()))
    store.backend.max_rows = 397  # as if so set in virtuoso.ini: 256 shares
    paged = sorted(map(str, store.backend.quads()))
    assert paged == whole and len(whole) > 9 * 397
    assert len(set(paged)) == len(paged)
    store.close()


@VIRTUOSO
def test_virtuoso_answers_every_query_form_as_documented(servers: Any) -> None:
    """Each query form answers over Virtuoso (it writes results in the first type
    a request accepts, whatever the form). Where Virtuoso differs: it writes a
    double in an answer with 6 significant digits, and its DESCRIBE also gives
    the triples that point at the resource; every other term is as embedded."""
    data = (
        b'<http://e/a> <http://e/p> "0.12345678901234567"'
        b"^^<http://www.w3.org/2001/XMLSchema#double> .\n"
        b'<http://e/a> <http://e/q> "text"@en .\n'
        b"<http://e/a> <http://e/r> <http://e/b> .\n"
        b"<http://e/c> <http://e/r> <http://e/a> .\n"
    )
    double = "http://www.w3.org/2001/XMLSchema#double"

    def rounded(term: Any) -> str:
        if (
            getattr(term, "datatype", None) is not None
            and term.datatype.value == double
        ):
            return f"double {float(term.value):.6g}"
        return str(term)

    answers = []
    for backend in (None, backend_for("virtuoso", servers("virtuoso"))):
        store = oms.GrainStore(backend=backend)
        store.import_(io.BytesIO(data), format="nquads")
        built = store.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
        described = store.query("DESCRIBE <http://e/a>")
        assert isinstance(built, oms.Triples) and isinstance(described, oms.Triples)
        solutions = store.query("SELECT ?o WHERE { <http://e/a> ?p ?o }")
        assert isinstance(solutions, oms.Solutions)
        rows = solutions.rows()
        answers.append(
            {
                "built": sorted(
                    (str(t.subject), str(t.predicate), rounded(t.object)) for t in built
                ),
                "described": {(str(t.subject), rounded(t.object)) for t in described},
                "selected": sorted(rounded(r["o"]) for r in rows),
                "asked": store.query("ASK { <http://e/c> ?p <http://e/a> }"),
                "doubles": sorted(
                    r["o"].value for r in rows if rounded(r["o"]) != str(r["o"])
                ),
            }
        )
        store.close()
    embedded, virtuoso = answers
    for key in ("built", "selected", "asked"):
        assert virtuoso[key] == embedded[key], key
    assert virtuoso["described"] == embedded["described"] | {
        ("<http://e/c>", "<http://e/a>")
    }
    assert embedded["doubles"] == [repr(0.12345678901234567)]
    assert virtuoso["doubles"] == ["0.123457"]


# --- Virtuoso's dialect, checked without a Virtuoso ---------------------------------
# The query text it writes and the answers it reads back are plain functions of
# their input: the default tier checks them here; the servers tier runs them live.

XSD_DOUBLE = ox.NamedNode("http://www.w3.org/2001/XMLSchema#double")


def offline_virtuoso() -> Any:
    """A Virtuoso backend pointed at a closed port: it never sends a request here."""
    return oms.VirtuosoBackend(f"http://127.0.0.1:{free_port()}")


def test_virtuoso_answers_are_read_in_the_standard_form() -> None:
    backend = offline_virtuoso()
    ask = b'{"head": {"vars": ["__ASK_RETVAL"]}, "results": {"bindings": [%s]}}'
    yes = b'{"__ASK_RETVAL": {"type": "literal", "value": "1"}}'
    no = b'{"__ASK_RETVAL": {"type": "literal", "value": "0"}}'
    assert bool(backend._results(ask % yes)) is True
    assert bool(backend._results(ask % no)) is False
    assert bool(backend._results(ask % b"")) is False
    blank = (
        b'{"head": {"vars": ["s"]}, "results": {"bindings": '
        b'[{"s": {"type": "bnode", "value": "nodeID://b1001"}}]}}'
    )
    [row] = list(backend._results(blank))
    assert row["s"] == ox.BlankNode("b1001")


def test_virtuoso_reads_doubles_exactly_from_their_extra_column() -> None:
    backend = offline_virtuoso()
    rounded = ox.Literal("0.1", datatype=XSD_DOUBLE)
    exact = {"o": rounded, "exact": ox.Literal("0.10000000000000001")}
    assert backend._object(exact) == ox.Literal("0.1", datatype=XSD_DOUBLE)
    third = {"o": rounded, "exact": ox.Literal("0.33333333333333331")}
    assert backend._object(third) == ox.Literal(repr(1 / 3), datatype=XSD_DOUBLE)
    text = ox.Literal("not a double")
    assert backend._object({"o": text, "exact": ox.Literal("")}) == text
    assert backend._object({"o": text, "exact": None}) == text
    assert backend._object({"o": rounded, "exact": ox.Literal("inf")}) == rounded


def test_virtuoso_writes_bound_terms_into_the_query_body() -> None:
    backend = offline_virtuoso()
    x = ox.Variable("x")
    term = ox.NamedNode("http://example.org/a")
    bound = backend._bind("SELECT ?s WHERE { ?s ?p ?x } GROUP BY ?x", {x: term})
    assert bound == "SELECT ?s WHERE { ?s ?p <http://example.org/a> } GROUP BY ?x"
    # Braces in strings and comments do not close the body; a backslash in a
    # term is written as it is.
    text = "ASK WHERE { ?s ?p \"}\" # }\n FILTER (?x != '{') }"
    odd = ox.Literal("a\\b")
    assert backend._bind(text, {x: odd}) == text.replace("?x", '"a\\\\b"')
    triple = "ASK WHERE { ?s ?p '''}''' . ?s ?q ?x }"
    assert backend._bind(triple, {x: term}).endswith("?q <http://example.org/a> }")
    # A nested SELECT may project the variable: the standard VALUES block.
    nested = "SELECT ?x WHERE { { SELECT ?x WHERE { ?x ?p ?o } } }"
    assert "VALUES (?x) { (<http://example.org/a>) }" in backend._bind(
        nested, {x: term}
    )
    assert backend._bind("ASK { ?s ?p ?o }", {}) == "ASK { ?s ?p ?o }"
    unclosed = "ASK WHERE { ?s ?p ?x"
    assert (
        backend._bind(unclosed, {x: term}) == "ASK WHERE { ?s ?p <http://example.org/a>"
    )


def test_virtuoso_reads_a_hash_inside_an_iri_as_part_of_the_iri() -> None:
    """A # in an IRI starts no comment: the body still ends at its own brace, so
    the GROUP BY after it keeps its variables (it had the bound terms, which
    Virtuoso refuses, once the store's queries spelled IRIs out in full)."""
    backend = offline_virtuoso()
    x = ox.Variable("x")
    term = ox.Literal(
        "1", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
    )
    text = "SELECT (COUNT(?s) AS ?n) ?x WHERE { ?s <http://example.org/ns#p> ?x } GROUP BY ?x"
    assert backend._bind(text, {x: term}) == text.replace("?x }", f"{term} }}")
    less = "ASK WHERE { ?s ?p ?o FILTER (?o < ?x) } GROUP BY ?x"
    assert backend._bind(less, {x: term}).endswith(f"(?o < {term}) }} GROUP BY ?x")


@pytest.mark.parametrize(
    ("query", "triples"),
    [
        ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", True),
        ("describe <http://e.org/a>", True),
        ("SELECT * WHERE { ?s ?p ?o }", False),
        ("ASK { ?s ?p ?o }", False),
        ("# CONSTRUCT\nSELECT * WHERE { ?s ?p 'CONSTRUCT' }", False),
        ('PREFIX c: <http://e.org/SELECT>\nCONSTRUCT WHERE { ?s ?p "SELECT" }', True),
        ("INSERT DATA { <urn:a> <urn:b> <urn:c> }", False),
    ],
)
def test_virtuoso_asks_for_the_media_type_of_the_query_form(
    query: str, triples: bool
) -> None:
    from oms_rdf.backends import virtuoso

    assert virtuoso._answers_triples(query) is triples


def test_virtuoso_names_its_dataset_in_every_query() -> None:
    backend = offline_virtuoso()
    backend._graphs = {"urn:g1", "urn:g2"}  # as read from the server
    params = backend._dataset_params({})
    assert params == [
        ("default-graph-uri", backend.graph.value),
        ("named-graph-uri", "urn:g1"),
        ("named-graph-uri", "urn:g2"),
    ]
    mine = ox.NamedNode("urn:mine")
    asked = backend._dataset_params({"default_graph": mine, "named_graphs": [mine]})
    assert asked == [("default-graph-uri", "urn:mine"), ("named-graph-uri", "urn:mine")]
    query = backend.grains_query(["<urn:a>", "<urn:b>"])
    assert "FILTER (?g IN (<urn:a>, <urn:b>))" in query


def test_a_server_backend_declares_what_it_cannot_do() -> None:
    backend = offline_virtuoso()
    assert (backend.shared, backend.remote, backend.path) == (True, True, None)
    backend.flush()
    backend.optimize()
    with backend.bulk_writing():
        pass
    with pytest.raises(oms.StoreError, match="cannot be vacuumed") as refused:
        backend.vacuum()
    assert refused.value.code == oms.ErrorCode.STORE
    local = oms.backends.LocalBackend()
    assert (local.shared, local.remote, local.path) == (False, False, None)
    assert local.grains_query(["<urn:a>"]) == oms.SparqlBackend.oxigraph(
        "http://127.0.0.1:1"
    ).grains_query(["<urn:a>"])
