"""Range questions where the store is served: ``?valid_during=``/``?system_during=``
over HTTP, ``--valid-during``/``--system-during`` on the command line and the MCP
``sparql`` tool's ``valid_during``/``system_during``, each ``START/END``.

The story is tests/test_versions.py's, with answers derived by hand there
(tests/test_ranges.py): Ann at Acme from day 0; on day 10 we learn she moved to
Initech on day 5; on day 20 the Initech belief is retracted.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from mcp import Client

import oms_rdf as oms
from oms_rdf.cli import cli
from oms_rdf.http.app import create_app
from oms_rdf.http.mcp import create_server
from oms_rdf.times import iso, span_millis, to_millis
from tests.helpers import running
from tests.test_ranges import ASK
from tests.test_versions import ANN, DAY, T0, WORKS, belief, story

Row = tuple[str, int | None, int | None, int | None, int | None]
EXTENT = ("validFrom", "validTo", "systemFrom", "systemTo")


def on(d: int) -> str:
    return iso(T0 + d * DAY)


def day(text: str | None) -> int | None:
    return None if not text else (to_millis(text) - T0) // DAY


def json_rows(body: dict[str, Any]) -> set[Row]:
    """The rows of SPARQL JSON results: the employer, and its extent in days."""
    out = set()
    for b in body["results"]["bindings"]:
        ends = (day(b[k]["value"]) if k in b else None for k in EXTENT)
        out.add((b["o"]["value"].rsplit("/", 1)[1], *ends))
    return out


# (valid_during, system_during, as_of) -> the rows tests/test_ranges.py derives.
CASES: list[tuple[str, str | None, int | None, set[Row]]] = [
    (f"{on(1)}/{on(8)}", None, None, {("acme", 0, 5, 10, None)}),
    (f"{on(6)}/{on(8)}", None, None, set()),
    (f"{on(1)}/{on(8)}", None, 12,
     {("acme", 0, 5, 10, None), ("initech", 5, None, 10, None)}),
    (f"{on(6)}/..", None, 2, {("acme", 0, None, 0, None)}),
    ("../..", "../..",  None,
     {("acme", 0, None, 0, 10), ("acme", 0, 5, 10, None),
      ("initech", 5, None, 10, 20)}),
]  # fmt: skip


@pytest.fixture(scope="module")
def served() -> Any:
    with running(create_app(story())) as base:
        yield base


@pytest.mark.parametrize(("valid", "system", "as_of", "want"), CASES)
def test_http_asks_a_range_as_the_store_does(
    served: str, valid: str, system: str | None, as_of: int | None, want: set[Row]
) -> None:
    params = {"query": ASK, "valid_during": valid}
    if system is not None:
        params["system_during"] = system
    if as_of is not None:
        params["as_of"] = on(as_of)
    answer = httpx.get(f"{served}/sparql", params=params,
                       headers={"accept": "application/sparql-results+json"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert json_rows(answer.json()) == want
    # The same question asked in process.
    here = story().query(
        ASK,
        valid_during=span_millis(valid),
        system_during=None if system is None else span_millis(system),
        as_of=None if as_of is None else T0 + as_of * DAY,
    )
    assert {(r["o"].value.rsplit("/", 1)[1],
             *(day(None if r[k] is None else r[k].value) for k in EXTENT))
            for r in here} == want  # fmt: skip


def test_http_system_time_alone_asks_at_valid_now(served: str) -> None:
    """``system_during`` without ``valid_during`` asks how what held at valid
    time now (day 30, the story's clock) changed across system time: Acme from
    day 0 until we learned of the move on day 10, Initech until its retraction."""
    answer = httpx.get(f"{served}/sparql", params={"query": ASK,
                       "system_during": "../.."})  # fmt: skip
    assert json_rows(answer.json()) == {("acme", 0, None, 0, 10),
                                        ("initech", 5, None, 10, 20)}  # fmt: skip


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"valid_during": on(1)}, "ERR_SCHEMA"),  # no "/"
        ({"valid_during": f"{on(1)}/{on(2)}/{on(3)}"}, "ERR_SCHEMA"),
        ({"valid_during": "yesterday/.."}, "ERR_SCHEMA"),
        ({"valid_during": f"{on(8)}/{on(1)}"}, "ERR_RANGE"),  # ends before it begins
        ({"valid_during": "../..", "valid_at": on(1)}, "ERR_QUERY"),
        ({"system_during": "../..", "as_of": on(1)}, "ERR_QUERY"),
        ({"valid_during": "../..", "default-graph-uri": ANN}, "ERR_QUERY"),
        ({"valid_during": ["../..", "../.."]}, "ERR_SCHEMA"),  # given twice
    ],
)
def test_http_refuses_a_range_it_cannot_answer_as_asked(
    served: str, params: dict[str, Any], code: str
) -> None:
    answer = httpx.get(f"{served}/sparql", params={"query": ASK, **params})
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == code


def test_the_library_refuses_a_range_over_a_narrowed_dataset() -> None:
    """Silently answering over the whole knowledge would answer another question."""
    store = story()
    for narrowed in ({"default_graph_uris": [ANN]}, {"named_graph_uris": []},
                     {"grains": True}):  # fmt: skip
        with pytest.raises(oms.QueryError, match="range question") as refused:
            store.query(ASK, valid_during=(None, None), **narrowed)
        assert refused.value.code == "ERR_QUERY"


def story_on_disk(path: Path) -> Path:
    """The story, written to an on-disk store at ``path``."""
    store = oms.GrainStore(path, clock=lambda: T0 + 30 * DAY)
    acme = store.put(belief("acme", at=T0, valid=T0))
    initech = store.supersede(
        acme, belief("initech", at=T0 + 10 * DAY, valid=T0 + 5 * DAY)
    )
    store.retract(initech, reason="left", at=T0 + 20 * DAY)
    store.close()
    return path


def test_an_aggregate_over_a_range_is_answered_by_a_query_worker(
    tmp_path: Path,
) -> None:
    """Over an on-disk store an aggregate runs in a worker process, sent the
    request as JSON: the ranges travel with it."""
    store = oms.GrainStore(story_on_disk(tmp_path / "store"))
    count = f"SELECT (COUNT(*) AS ?n) WHERE {{ <{ANN}> <{WORKS}> ?o }}"
    with running(create_app(store)) as base:
        for params, n in (({"valid_during": "../..", "system_during": "../.."}, 3),
                          ({"valid_during": f"{on(1)}/{on(8)}"}, 1),
                          ({}, 0)):  # fmt: skip
            answer = httpx.get(f"{base}/sparql", params={"query": count, **params},
                               headers={"accept": "text/csv"})  # fmt: skip
            assert answer.status_code == 200, answer.text
            assert answer.text.split() == ["n", str(n)], params
    store.close()


def test_the_command_line_asks_a_range(tmp_path: Path) -> None:
    path = story_on_disk(tmp_path / "store")
    for valid, system, as_of, want in CASES:
        args = ["--store", str(path), "query", ASK, "--format", "csv",
                "--valid-during", valid]  # fmt: skip
        args += [] if system is None else ["--system-during", system]
        args += [] if as_of is None else ["--as-of", on(as_of)]
        done = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert done.exit_code == 0, done.output
        got = {(r["o"].rsplit("/", 1)[1], *(day(r[k]) for k in EXTENT))
               for r in csv.DictReader(io.StringIO(done.output))}  # fmt: skip
        assert got == want, (valid, system, as_of)
    bad = CliRunner().invoke(cli, ["--store", str(path), "query", ASK,
                                   "--valid-during", on(1)])  # fmt: skip
    assert bad.exit_code != 0 and "ERR_SCHEMA" in bad.output
    assert "START/END" in bad.output
    inverted = CliRunner().invoke(
        cli, ["--store", str(path), "query", ASK, "--valid-during", f"{on(8)}/{on(1)}"]
    )
    assert inverted.exit_code == 1 and "ERR_RANGE" in inverted.output


def test_the_mcp_sparql_tool_asks_a_range() -> None:
    store = story()
    query = f"SELECT ?o ?validFrom ?validTo ?systemFrom ?systemTo WHERE {{ <{ANN}> <{WORKS}> ?o }}"

    async def main() -> None:
        async with Client(create_server(store)) as client:
            for valid, system, as_of, want in CASES:
                arguments: dict[str, Any] = {"query": query, "valid_during": valid}
                if system is not None:
                    arguments["system_during"] = system
                if as_of is not None:
                    arguments["as_of"] = on(as_of)
                result = await client.call_tool("sparql", arguments)
                assert not result.is_error, result.content
                answer = result.structured_content
                assert answer is not None
                assert json_rows(answer) == want, (valid, system, as_of)
            bad = await client.call_tool("sparql", {"query": query,
                                                    "valid_during": "2026"})  # fmt: skip
            assert bad.is_error
            assert json.dumps(bad.content[0].model_dump()).count("ERR_SCHEMA") == 1

    anyio.run(main)


def test_a_range_keeps_to_the_namespaces_asked_the_empty_one_too() -> None:
    """A token scoped to the namespace "" saw every namespace's triples in a
    range (the empty name was read as none given)."""
    from oms_rdf.http.app import Token

    store = oms.GrainStore(clock=lambda: T0 + 30 * DAY)
    for ns in ("a", "b", ""):
        store.put({"type": "belief", "subject": f"http://example.org/{ns or 'e'}",
                   "relation": WORKS, "object": "x", "confidence": 0.5,
                   "created_at": T0, "namespace": ns})  # fmt: skip
    q = "SELECT ?s WHERE { ?s ?p ?o }"

    def subjects(result: Any) -> set[str]:
        return {r["s"].value.rsplit("/", 1)[1] for r in result}

    for asked, want in (("", {"e"}), ([""], {"e"}), (["a", ""], {"a", "e"})):
        assert subjects(store.query(q, namespace=asked)) == want
        assert (
            subjects(store.query(q, namespace=asked, valid_during=(None, None))) == want
        )
    with pytest.raises(oms.SchemaError):
        store.query(q, namespace=[], valid_during=(None, None))
    with pytest.raises(oms.SchemaError):
        store.query(q, namespace=[])
    token = "t" * 24
    app = create_app(store, tokens={token: Token(namespaces=("",))})
    with running(app) as base:
        for params in ({}, {"valid_during": "../.."}, {"system_during": "../.."}):
            answer = httpx.get(f"{base}/sparql", params={"query": q, **params},
                               headers={"authorization": f"Bearer {token}"})  # fmt: skip
            rows = answer.json()["results"]["bindings"]
            assert {b["s"]["value"].rsplit("/", 1)[1] for b in rows} == {"e"}, params
