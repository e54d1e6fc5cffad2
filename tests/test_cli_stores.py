"""Which store a command opens: refusals of paths that hold none, new stores, held ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import oms_rdf as oms
from oms_rdf.cli import cli
from tests.test_cli import V1, refused, run


def test_read_commands_open_a_held_store_read_only(tmp_path: Path) -> None:
    import subprocess
    import sys

    db = tmp_path / "db"
    store = oms.GrainStore(db)
    address = store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1))
    store.flush()
    del store
    import gc

    gc.collect()
    holder = (
        "import sys, oms_rdf as oms\n"
        f"s = oms.GrainStore({str(db)!r})\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as writer:  # fmt: skip
        try:
            assert (
                writer.stdout is not None and writer.stdout.readline().strip() == "held"
            )
            runner = CliRunner()
            got = runner.invoke(cli, ["--store", str(db), "beliefs", "--json"])
            assert got.exit_code == 0, got.output
            assert "read-only" in got.stderr
            assert [g["object"] for g in json.loads(got.stdout)] == ["Acme"]
            assert (
                address
                in runner.invoke(cli, ["--store", str(db), "get", address]).stdout
            )
            for reading in (["subject-report", "alice"], ["audit", "verify"]):
                got = runner.invoke(cli, ["--store", str(db), *reading])
                assert got.exit_code == 0 and "read-only" in got.stderr, got.output
            refused = runner.invoke(
                cli, ["--store", str(db), "retract", address, "--reason", "x"]
            )
            assert refused.exit_code == 1 and "ERR_STORE" in refused.stderr
        finally:
            writer.communicate("", timeout=20)


BAD_URLS = [
    ["--store", "http://127.0.0.1:notaport"],
    ["--store", "http://127.0.0.1:70000"],
    ["--store", "http://127.0.0.1:0"],
    ["--store", "http://[::1"],
    ["--store", "http://:7878"],
    [
        "--store",
        "http://exa mple:99",
    ],  # a space: no host name, caught before connecting
    ["--query-url", "http://exa{mple/query"],
    ["--query-url", "http://127.0.0.1:x/query"],
    ["--query-url", "http://127.0.0.1:7878/query", "--update-url", "http://h:-1/u"],
    ["--query-url", "ftp://127.0.0.1/query"],
    ["--virtuoso", "http://127.0.0.1:x"],
]


@pytest.mark.parametrize("option", BAD_URLS, ids=lambda o: " ".join(o))
def test_a_malformed_server_url_is_one_line_error(option: list[str]) -> None:
    refused([*option, "beliefs"], "ERR_SCHEMA", repr(option[-1]), "expected http")


ADDRESS = "0" * 64
NEEDS_A_STORE = [
    ["beliefs"],
    ["get", ADDRESS],
    ["query", "ASK { ?s ?p ?o }"],
    ["history", ADDRESS],
    ["export", "-"],
    ["search", "x"],
    ["serve", "--port", "HELD"],  # a port in use: the store is checked first
    ["retract", ADDRESS, "--reason", "x"],
    ["contradict", ADDRESS],
    ["evidence", ADDRESS, "--kind", "refuting"],
    ["supersede", ADDRESS, "GRAIN"],
    ["revise", ADDRESS, "GRAIN"],
    ["erase", ADDRESS, "--reason", "x"],
    ["erase-subject", "alice", "--reason", "x"],
    ["subject-report", "alice"],
    ["process-erasures"],
    ["vacuum"],
    ["audit", "verify"],
]


@pytest.mark.parametrize("command", NEEDS_A_STORE, ids=lambda c: c[0])
def test_commands_refuse_a_store_path_that_does_not_exist(
    tmp_path: Path, command: list[str]
) -> None:
    import socket

    grain = tmp_path / "g.json"
    grain.write_text(json.dumps(V1["input"]))
    holder = socket.create_server(("127.0.0.1", 0))
    held = str(holder.getsockname()[1])
    args = [{"GRAIN": str(grain), "HELD": held}.get(a, a) for a in command]
    typo = tmp_path / "tpyo"
    said = refused(["--store", str(typo), *args], "ERR_NOT_FOUND", str(typo))
    assert "does not exist" in said
    assert not typo.exists()  # nothing was created
    if command[0] == "serve":
        refused([*args, "--store", str(typo)], "ERR_NOT_FOUND", str(typo))
    stranger = tmp_path / "photos"
    stranger.mkdir()
    (stranger / "cat.jpg").write_bytes(b"\xff\xd8")
    said = refused(["--store", str(stranger), *args], "ERR_NOT_FOUND", str(stranger))
    assert "not a store" in said
    assert sorted(p.name for p in stranger.iterdir()) == ["cat.jpg"]
    holder.close()


def test_put_and_import_create_a_store_and_refuse_a_folder_that_is_not_one(
    tmp_path: Path,
) -> None:
    grain = tmp_path / "g.json"
    grain.write_text(json.dumps(V1["input"]))
    assert run("--store", str(tmp_path / "a"), "put", str(grain)).exit_code == 0
    assert run("--store", str(tmp_path / "a"), "beliefs").exit_code == 0
    run("--store", str(tmp_path / "a"), "export", str(tmp_path / "all.trig"))
    imported = run("--store", str(tmp_path / "b"), "import", str(tmp_path / "all.trig"))
    assert imported.exit_code == 0 and (tmp_path / "b" / "CURRENT").is_file()
    (tmp_path / "empty").mkdir()  # an empty folder may become a store
    assert run("--store", str(tmp_path / "empty"), "put", str(grain)).exit_code == 0
    stranger = tmp_path / "photos"
    stranger.mkdir()
    (stranger / "cat.jpg").write_bytes(b"\xff\xd8")
    for args in (["put", str(grain)], ["import", str(tmp_path / "all.trig")]):
        said = refused(["--store", str(stranger), *args], "ERR_NOT_FOUND")
        assert str(stranger) in said and "not a store" in said
    assert sorted(p.name for p in stranger.iterdir()) == ["cat.jpg"]
    afile = tmp_path / "g.json"
    refused(["--store", str(afile), "put", str(grain)], "ERR_NOT_FOUND", "not a store")


def test_a_refused_first_write_leaves_no_store_behind(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**V1["input"], "created_at": -5}))
    new = tmp_path / "new"
    refused(["--store", str(new), "put", str(bad)], "ERR_RANGE")
    assert not new.exists()
    triples = tmp_path / "x.nt"
    triples.write_text(
        "<http://x/a> <http://x/b> <http://x/c> .\n<http://x/d> <http://x/b> .\n"
    )
    refused(["--store", str(new), "import", str(triples)], "ERR_CORRUPT")
    assert not new.exists()
    (tmp_path / "empty").mkdir()
    refused(["--store", str(tmp_path / "empty"), "put", str(bad)], "ERR_RANGE")
    assert list((tmp_path / "empty").iterdir()) == []  # emptied, kept
    existing = tmp_path / "db"
    run("--store", str(existing), "put", "-", stdin=json.dumps(V1["input"]))
    refused(["--store", str(existing), "put", str(bad)], "ERR_RANGE")
    assert (existing / "CURRENT").is_file()  # a store that was there stays
    assert (
        len(json.loads(run("--store", str(existing), "beliefs", "--json").output)) == 1
    )


def test_a_first_write_that_changes_nothing_leaves_no_store_behind(
    tmp_path: Path,
) -> None:
    nobody = "DELETE DATA { <http://x/a> <http://x/b> <http://x/c> }"
    new = tmp_path / "new"
    assert "not believed 1" in run("--store", str(new), "update", nobody).output
    assert not new.exists()
    (tmp_path / "empty").mkdir()
    run("--store", str(tmp_path / "empty"), "update", nobody)
    assert list((tmp_path / "empty").iterdir()) == []  # emptied, kept
    adds = "INSERT DATA { <http://x/a> <http://x/b> <http://x/c> }"
    run("--store", str(new), "update", adds)
    assert (new / "CURRENT").is_file()
    run("--store", str(new), "update", nobody.replace("/c>", "/d>"))
    assert (new / "CURRENT").is_file()  # a store that was there stays
    # A store in folders that do not exist yet: made with them, and a refused
    # first write takes them away again.
    deep = tmp_path / "x" / "y" / "store"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**V1["input"], "created_at": -5}))
    refused(["--store", str(deep), "put", str(bad)], "ERR_RANGE")
    assert not (tmp_path / "x").exists()
    run("--store", str(deep), "update", adds)
    assert (deep / "CURRENT").is_file()
    library = oms.GrainStore(tmp_path / "p" / "q" / "store")
    library.put(oms.Belief("a", "b", "c", 0.5, created_at=1))
    library.close()


def test_mcp_makes_a_store_only_where_nothing_is_and_says_so(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    stranger = tmp_path / "photos"
    stranger.mkdir()
    (stranger / "cat.jpg").write_bytes(b"\xff\xd8")
    for args in (["mcp", "--store", str(stranger)], ["--store", str(stranger), "mcp"]):
        said = refused(args, "ERR_NOT_FOUND", str(stranger), "not a store")
        assert "MCP" not in said
    assert sorted(p.name for p in stranger.iterdir()) == ["cat.jpg"]
    for place, args in (("new", ["mcp", "--store"]), ("other", ["--store"])):
        path = tmp_path / place
        args = [*args, str(path)] if place == "new" else [*args, str(path), "mcp"]
        made = CliRunner().invoke(cli, args, input="")  # stdio: ends at end of input
        assert made.exit_code == 0, made.output
        assert made.stderr == f"note: no store at {path}: making a new, empty one\n"
        assert (path / "CURRENT").is_file()
        again = CliRunner().invoke(cli, args, input="")
        assert again.exit_code == 0 and again.stderr == ""
