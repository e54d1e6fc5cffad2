"""oms-rdf mcp: an agent's session through the MCP SDK's own client.

Over the real transports: ``python -m oms_rdf mcp`` spawned by the SDK's stdio
client, and the streamable HTTP transport on a free loopback port; the namespace
and argument checks through the SDK's in-process transport on a real store.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

import oms_rdf as oms
from oms_rdf import GrainStore
from oms_rdf.http.mcp import create_server
from oms_rdf.store import Solutions
from tests.servers import free_port

TOOLS = {"believe", "recall", "beliefs_at", "revise", "supersede", "retract",
         "evidence", "history", "sparql"}  # fmt: skip
Session = Callable[[Client], Awaitable[None]]


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured answer; the test fails on a tool error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    answer = result.structured_content
    assert isinstance(answer, dict)
    return answer


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """The text of a tool error (the test fails if the call succeeds)."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text


def objects(answer: dict[str, Any]) -> list[Any]:
    return [b["fields"]["object"] for b in answer["beliefs"]]


async def believe_then_revise(client: Client) -> tuple[str, str, str]:
    """Believe, revise, and ask the past: as of the first belief's time it holds."""
    old = await call(client, "believe", subject="alice", relation="works_at",
                     object="Acme", confidence=0.9)  # fmt: skip
    await anyio.sleep(0.02)  # the revision is a later millisecond
    new = await call(client, "revise", address=old["id"][:12], object="Initech",
                     justification="she told us she moved")  # fmt: skip
    assert new["fields"]["derived_from"] == [old["id"]]
    assert new["fields"]["subject"] == "alice"  # kept from the old version
    now = await call(client, "beliefs_at", subject="alice")
    assert objects(now) == ["Initech"]
    then = await call(client, "beliefs_at", subject="alice", as_of=old["system_from"])
    assert objects(then) == ["Acme"]
    return old["id"], new["id"], old["system_from"]


async def agent_session(client: Client) -> None:
    """The scripted session: memory, revision, the past, a locked belief refused."""
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    old, new, then = await believe_then_revise(client)
    chain = await call(client, "history", address=new)
    assert [b["id"] for b in chain["beliefs"]] == [old, new]
    hits = await call(client, "recall", query="where does alice work")
    assert objects(hits) == ["Initech"]  # the superseded wording never comes back
    past = await call(client, "recall", query="alice", as_of=then)
    assert objects(past) == ["Acme"]

    locked = await call(client, "believe", subject="alice", relation="born_in",
                        object="Paris", confidence=1.0, invalidation_mode="locked")  # fmt: skip
    for tool, extra in (("revise", {"object": "Lyon"}),
                        ("supersede", {"object": "Lyon", "justification": "typo"}),
                        ("retract", {"reason": "wrong"})):  # fmt: skip
        text = await refused(client, tool, address=locked["id"], **extra)
        assert text.startswith("ERR_INVALIDATION_DENIED"), text
    born = await call(client, "beliefs_at", subject="alice", relation="born_in")
    assert objects(born) == ["Paris"]

    evidence = await call(client, "evidence", address=new, kind="supporting")
    assert evidence["id"] == new and evidence["log_ratio"] > 0
    ask = await call(client, "sparql", query="ASK { ?s ?p 'Initech' }")
    assert ask == {"form": "ask", "boolean": True}
    update = await refused(client, "sparql", query="INSERT DATA { <a:s> <a:p> 'o' }")
    assert update.startswith("ERR_QUERY") and "read-only" in update
    text = await refused(client, "believe", subject="x", relation="y", object="z",
                         confidence=1.5)  # fmt: skip
    assert text.startswith("ERR_RANGE") and "$.confidence" in text

    read = await client.read_resource(f"oms://belief/{new}")
    assert json.loads(read.contents[0].text)["id"] == new  # type: ignore[union-attr]
    recent = await client.read_resource("oms://beliefs/recent")
    listed_recent = json.loads(recent.contents[0].text)  # type: ignore[union-attr]
    assert [b["id"] for b in listed_recent["beliefs"]][:2] == [locked["id"], new]


AUDITED = """PREFIX oms: <https://w3id.org/oms-rdf/ns#>
SELECT ?operation ?reason WHERE { GRAPH oms:audit {
  ?e oms:operation ?operation . OPTIONAL { ?e oms:reason ?reason } } }"""


def check_store(path: Path) -> None:
    """What the session wrote is in the store on disk, through the store's writes:
    the revision is audited with its justification, and the audit chain holds."""
    with GrainStore(path) as store:
        [now] = store.beliefs("alice", "works_at")
        assert now["object"] == "Initech"
        assert [g["object"] for g in store.history(now)] == ["Acme", "Initech"]
        assert store.verify_audit().ok
        rows = store.query(AUDITED, grains=True)
        assert isinstance(rows, Solutions)
        events = {(r["operation"].value, r["reason"].value if r["reason"] else None)
                  for r in rows}  # fmt: skip
        assert ("supersede", "she told us she moved") in events, events


def test_stdio_session(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "oms_rdf", "mcp", "--store", str(store)]
    )

    async def main() -> None:
        async with Client(params) as client:
            await agent_session(client)

    anyio.run(main)
    check_store(store)


def test_http_session(tmp_path: Path) -> None:
    store, port = tmp_path / "memory", free_port()
    command = [sys.executable, "-m", "oms_rdf", "mcp", "--store", str(store),
               "--http", "--port", str(port)]  # fmt: skip
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stderr is not None
            line = process.stderr.readline()  # once the port takes connections
            assert f"http://127.0.0.1:{port}/mcp" in line, line

            async def main() -> None:
                async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                    await believe_then_revise(client)

            anyio.run(main)
            # The SDK's DNS-rebinding guard is on: another Host or Origin is refused.
            hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            url, accept = (
                f"http://127.0.0.1:{port}/mcp",
                "application/json, text/event-stream",
            )
            for header, value, status in (
                ("host", "evil.example", 421),
                ("origin", "http://evil.example", 403),
            ):
                headers = {"accept": accept, header: value}
                assert (
                    httpx.post(url, json=hello, headers=headers).status_code == status
                )
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            finally:
                if process.poll() is None:
                    process.kill()
    assert process.returncode == 0
    check_store(store)


# --- in process: the session's namespaces and its argument checks -------------


def session(store: GrainStore, script: Session, **options: Any) -> None:
    async def main() -> None:
        async with Client(create_server(store, **options)) as client:
            await script(client)

    anyio.run(main)


def test_namespaces_bound_reads_and_writes() -> None:
    store = GrainStore()
    work = store.put({"type": "belief", "subject": "bob", "relation": "uses",
                      "object": "vim", "confidence": 0.8, "namespace": "work",
                      "created_at": 1})  # fmt: skip
    home = store.put({"type": "belief", "subject": "bob", "relation": "likes",
                      "object": "tea", "confidence": 0.8, "namespace": "home",
                      "created_at": 1})  # fmt: skip
    before = len(store)

    async def script(client: Client) -> None:
        mine = await call(client, "believe", subject="bob", relation="knows",
                          object="carol", confidence=0.7)  # fmt: skip
        assert mine["namespace"] == "work"  # the session's only namespace
        text = await refused(client, "believe", subject="bob", relation="knows",
                             object="dave", confidence=0.7, namespace="home")  # fmt: skip
        assert text.startswith("ERR_INVALIDATION_DENIED") and "home" in text
        for tool, extra in (("revise", {"object": "coffee"}), ("retract", {"reason": "x"}),
                            ("history", {}), ("evidence", {})):  # fmt: skip
            text = await refused(client, tool, address=home, **extra)
            assert text.startswith("ERR_NOT_FOUND"), (tool, text)
        listed = await call(client, "beliefs_at", subject="bob")
        assert sorted(objects(listed)) == ["carol", "vim"]
        hits = await call(client, "recall", query="bob tea vim")
        assert objects(hits) == ["vim"]
        for tool, extra in (("recall", {"query": "tea"}), ("beliefs_at", {})):
            other = await call(client, tool, namespace="home", **extra)
            assert other == {"beliefs": []}, tool  # as if it held nothing
        rows = await call(client, "sparql", query="SELECT ?o WHERE { ?s ?p ?o }")
        found = sorted(b["o"]["value"] for b in rows["results"]["bindings"])
        assert found == ["carol", "vim"]  # home's tea is not in the dataset
        with pytest.raises(MCPError, match="ERR_NOT_FOUND"):
            await client.read_resource(f"oms://belief/{home}")
        recent = await client.read_resource("oms://beliefs/recent")
        ids = {b["id"] for b in json.loads(recent.contents[0].text)["beliefs"]}  # type: ignore[union-attr]
        assert home not in ids and work in ids

    session(store, script, namespaces=["work"])
    assert len(store) == before + 1  # the refused writes wrote nothing
    assert store.status(home).status == "active"


@pytest.mark.parametrize(
    ("tool", "arguments", "code", "where"),
    [
        ("believe", {"subject": "", "relation": "r", "object": "o", "confidence": 1},
         "ERR_EMPTY", "$.subject"),
        ("believe", {"subject": "s", "relation": "r", "object": "o", "confidence": -0.1},
         "ERR_RANGE", "$.confidence"),
        ("believe", {"subject": "s", "relation": "r", "object": "o"},
         "ERR_SCHEMA", "$.confidence"),
        ("believe", {"subject": "s", "relation": "r", "object": "o", "confidence": 1,
                     "valid_from": "last tuesday"}, "ERR_SCHEMA", "valid_from"),
        ("believe", {"subject": "s" * 5000, "relation": "r", "object": "o",
                     "confidence": 1}, "ERR_SCHEMA", "$.subject"),
        ("believe", {"subject": "s", "relation": "r", "object": "o", "confidence": 1,
                     "invalidation_mode": "sealed"}, "ERR_SCHEMA", "$.invalidation_mode"),
        ("believe", {"subject": "s", "relation": "r", "object": "o", "confidence": 1,
                     "context": {"k": {"deep": 1}}}, "ERR_SCHEMA", "(at $.context.k)"),
        ("believe", {"subject": "s", "relation": "r", "object": "o" * 70_000,
                     "confidence": 1}, "ERR_SCHEMA", "(at $.object)"),
        ("recall", {"query": "x", "limit": 0}, "ERR_RANGE", "$.limit"),
        ("history", {"address": "ABCDEF0123"}, "ERR_HASH_FORMAT", "ABCDEF0123"),
        ("retract", {"address": "0" * 64, "reason": "x"}, "ERR_NOT_FOUND", "0" * 64),
        ("evidence", {"address": "0" * 12, "strength": 2}, "ERR_RANGE", "$.strength"),
        ("sparql", {"query": "SELECT * WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }"},
         "ERR_QUERY", "SERVICE"),
        ("sparql", {"query": "SELECT WHERE"}, "ERR_QUERY", "SPARQL"),
        ("sparql", {"query": "ASK " + "{" * 100 + "}" * 100}, "ERR_QUERY", "MAX_DEPTH"),
        # Numbers are numbers: a bool or a text is refused, never converted.
        ("believe", {"subject": "s", "relation": "r", "object": "o", "confidence": True},
         "ERR_SCHEMA", "$.confidence"),
        ("believe", {"subject": "s", "relation": "r", "object": "o", "confidence": "0.5"},
         "ERR_SCHEMA", "$.confidence"),
        ("recall", {"query": "x", "limit": "5"}, "ERR_SCHEMA", "$.limit"),
        ("beliefs_at", {"limit": 2.5}, "ERR_SCHEMA", "$.limit"),
        ("beliefs_at", {"limit": True}, "ERR_SCHEMA", "$.limit"),
        ("evidence", {"address": "0" * 12, "strength": "0.9"}, "ERR_SCHEMA", "$.strength"),
        # A time is text or whole epoch milliseconds, as the facts API takes it.
        ("beliefs_at", {"valid_at": True}, "ERR_SCHEMA", "$.valid_at"),
        ("beliefs_at", {"as_of": 1.5}, "ERR_SCHEMA", "$.as_of"),
        # An argument a tool does not take is refused, never ignored.
        ("believe", {"subject": "s", "relation": "r", "object": "o", "confidence": 1,
                     "bogus": 1}, "ERR_SCHEMA", "$.bogus"),
        ("supersede", {"address": "0" * 12, "object": "x", "namespace": "shared"},
         "ERR_SCHEMA", "$.namespace"),
    ],
)  # fmt: skip
def test_arguments_refused_with_the_spec_code(
    tool: str, arguments: dict[str, Any], code: str, where: str
) -> None:
    store = GrainStore()

    async def script(client: Client) -> None:
        text = await refused(client, tool, **arguments)
        assert text.startswith(f"{code}:"), text
        assert where in text, text

    session(store, script)
    assert store.is_empty()


def test_sparql_answers_are_capped() -> None:
    store = GrainStore()
    for n in range(5):
        store.put({"type": "belief", "subject": f"s{n}", "relation": "r",
                   "object": "o", "confidence": 0.5, "created_at": 1})  # fmt: skip

    async def script(client: Client) -> None:
        rows = await call(
            client, "sparql", query="SELECT ?s WHERE { ?s ?p ?o }", limit=3
        )
        assert len(rows["results"]["bindings"]) == 3 and rows["truncated"] is True
        graph = await call(client, "sparql", query="CONSTRUCT WHERE { ?s ?p ?o }")
        assert graph["form"] == "graph" and graph["truncated"] is False
        assert graph["ntriples"].count(" .\n") == 5

    session(store, script)
    assert query_threads_end()  # the session's end let go of its query threads


def test_an_answer_one_row_over_its_limit_is_truncated() -> None:
    store = GrainStore()
    for n in range(4):
        store.put({"type": "belief", "subject": f"s{n}", "relation": "r",
                   "object": "o", "confidence": 0.5, "created_at": 1})  # fmt: skip

    async def script(client: Client) -> None:
        rows = await call(
            client, "sparql", query="SELECT ?s WHERE { ?s ?p ?o }", limit=3
        )
        assert len(rows["results"]["bindings"]) == 3 and rows["truncated"] is True
        graph = await call(client, "sparql", query="CONSTRUCT WHERE { ?s ?p ?o }",
                           limit=4)  # fmt: skip
        assert graph["truncated"] is False and graph["ntriples"].count(" .\n") == 4

    session(store, script)


def query_threads_end(within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while any(t.name.startswith("mcp-queries") for t in threading.enumerate()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_query_past_the_time_limit_is_refused() -> None:
    store = GrainStore()
    for n in range(40):
        store.put({"type": "belief", "subject": f"s{n}", "relation": "r",
                   "object": f"o{n}", "confidence": 0.5, "created_at": 1})  # fmt: skip
    # A row every few milliseconds, 17 s for the 10,000 of the limit: the answer
    # is stopped between rows, at the time limit.
    slow = ("SELECT * WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f . ?g ?s ?h . ?i ?t ?j "
            "FILTER(CONCAT(STR(?j), STR(?h)) = 'o1o1') }")  # fmt: skip

    async def script(client: Client) -> None:
        started = time.monotonic()
        text = await refused(client, "sparql", query=slow, limit=10_000)
        assert text.startswith("ERR_QUERY") and "time limit" in text
        assert time.monotonic() - started < 5
        quick = await call(client, "sparql", query="ASK { ?s ?p 'o1' }")
        assert quick["boolean"] is True  # the lane is free again

    session(store, script, query_timeout=0.2)


def test_an_empty_namespace_is_a_usage_error_before_the_store_opens(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from oms_rdf.cli import cli

    store = tmp_path / "memory"
    result = CliRunner().invoke(cli, ["mcp", "--store", str(store), "--namespace", " "])
    assert result.exit_code == 2, result.output
    assert "--namespace" in result.output and not store.exists()


def test_a_literal_with_a_line_separator_is_one_triple_of_the_answer() -> None:
    """N-Triples keeps U+2028, U+2029 and U+0085 as they are in a literal: the
    answer was cut there, mid-literal, and said truncated."""
    store = GrainStore()
    store.put({"type": "belief", "subject": "alice", "relation": "note",
               "object": "one\u2028two\u2029three\u0085four", "confidence": 0.9,
               "created_at": 1})  # fmt: skip

    async def script(client: Client) -> None:
        graph = await call(client, "sparql", query="CONSTRUCT WHERE { ?s ?p ?o }",
                           limit=1)  # fmt: skip
        assert graph["truncated"] is False and graph["ntriples"].count(" .\n") == 1
        assert "one\u2028two\u2029three\u0085four" in graph["ntriples"]

    session(store, script)


def test_revise_takes_a_fact_and_keeps_the_terms_an_adopted_belief_names() -> None:
    """ "fact" is the spec's other name for a belief; and a kept subject or
    relation of adopted RDF stays the IRI it was, not a minted entity."""
    store = GrainStore()
    fact = store.put({"type": "fact", "subject": "user", "relation": "prefers",
                      "object": "dark mode", "confidence": 0.9, "created_at": 1})  # fmt: skip
    store.update(
        'INSERT DATA { <http://example.org/cafe\u0301> <http://example.org/likes> "tea" }'
    )
    [adopted] = store.beliefs("http://example.org/cafe\u0301")
    subject_of = "SELECT ?s WHERE { ?s <http://example.org/likes> ?o }"
    before = [row["s"] for row in store.query(subject_of)]

    async def script(client: Client) -> None:
        await call(client, "revise", address=fact, object="light mode")
        await call(client, "revise", address=adopted.address, object="coffee")

    session(store, script)
    assert [g["object"] for g in store.beliefs("user")] == ["light mode"]
    assert [row["s"] for row in store.query(subject_of)] == before
    assert [str(row["o"].value) for row in store.query(
        "SELECT ?o WHERE { ?s <http://example.org/likes> ?o }")] == ["coffee"]  # fmt: skip


def test_the_tool_schemas_refuse_what_the_tools_refuse() -> None:
    async def script(client: Client) -> None:
        tools = (await client.list_tools()).tools
        assert tools and all(
            t.input_schema.get("additionalProperties") is False for t in tools
        )
        # The limits' bounds in JSON Schema's own words, which clients check.
        limits = {
            t.name: t.input_schema["properties"]["limit"]
            for t in tools
            if "limit" in t.input_schema["properties"]
        }
        assert limits.keys() >= {"recall", "beliefs_at", "sparql"}
        for name, limit in limits.items():
            assert limit["minimum"] == 1 and limit["maximum"] >= 100, name
            assert "ge" not in limit and "le" not in limit, name

    session(GrainStore(), script)

    async def whole(client: Client) -> None:  # JSON Schema's "integer" takes 5.0
        for tool, arguments in (("recall", {"query": "tea", "limit": 5.0}),
                                ("beliefs_at", {"limit": 2.0}),
                                ("sparql", {"query": "ASK {}", "limit": 10.0})):  # fmt: skip
            await call(client, tool, **arguments)

    session(GrainStore(), whole)
    with pytest.raises(oms.SchemaError):
        create_server(GrainStore(), namespaces="work")


def test_a_belief_is_stamped_with_the_store_held() -> None:
    """The tools stamped created_at before taking the store: a call stamped later
    could commit first (the SDK runs tools on threads), and on a forward_only
    store the earlier one was refused with ERR_RANGE."""
    from oms_rdf.http.mcp.memory import Memory

    now = {"ms": 1_000}
    stamped, overtaken = threading.Event(), threading.Event()

    def clock() -> int:
        now["ms"] += 1
        at = now["ms"]
        if threading.current_thread().name == "first" and not stamped.is_set():
            stamped.set()
            overtaken.wait(1)  # the other call would commit meanwhile
        return at

    store = GrainStore(clock=clock, forward_only=True)
    memory = Memory(store, None, 5.0)
    made: dict[str, str] = {}

    def believe(name: str, subject: str) -> None:
        try:
            made[name] = memory.believe(subject, "works_at", "Acme", 0.9)["id"]
        except oms.OmsError as exc:
            made[name] = exc.code
        if name == "second":
            overtaken.set()

    first = threading.Thread(target=believe, args=("first", "ann"), name="first")
    first.start()
    stamped.wait(5)
    second = threading.Thread(target=believe, args=("second", "bo"), name="second")
    second.start()
    first.join(10)
    second.join(10)
    memory.close()
    assert all(len(a) == 64 for a in made.values()) and len(made) == 2, made


def test_a_time_is_text_or_epoch_milliseconds() -> None:
    store = GrainStore(clock=lambda: 1_717_243_200_000)
    store.put(oms.Belief("alice", "likes", "tea", 0.9, created_at=1_717_243_200_000))

    async def script(client: Client) -> None:
        before, after = 1_717_243_199_999, 1_717_243_200_000
        for as_of, held in ((before, []), (after, ["tea"])):
            number = await call(client, "beliefs_at", subject="alice", as_of=as_of)
            text = await call(
                client, "beliefs_at", subject="alice", as_of=f"ms:{as_of}"
            )
            assert objects(number) == objects(text) == held

    session(store, script)
