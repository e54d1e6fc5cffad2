"""What a new user of the command line hit: long listings, updates, locks, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from oms_rdf.cli import cli


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), env=env)


def _many(tmp_path: Path, n: int, width: int = 3000) -> str:
    db = str(tmp_path / "db")
    lines = tmp_path / "b.jsonl"
    lines.write_text(
        "".join(
            json.dumps(
                {
                    "type": "belief",
                    "subject": f"s{i:03}",
                    "relation": "says",
                    "object": f"o{i:03} " + "x" * width,
                    "confidence": 0.5,
                    "created_at": 1_700_000_000_000 + i,
                }
            )
            + "\n"
            for i in range(n)
        )
    )
    assert run("--store", db, "put", str(lines)).exit_code == 0
    return db


def test_beliefs_table_is_limited_and_fits_the_terminal(tmp_path: Path) -> None:
    db = _many(tmp_path, 60)
    got = run("--store", db, "beliefs", env={"COLUMNS": "100"})
    assert got.exit_code == 0, got.output
    lines = got.stdout.splitlines()
    assert len(lines) == 1 + 50  # the header and the default 50
    assert max(len(line) for line in lines) <= 100
    assert all("…" in line for line in lines[1:])  # the long object was cut
    assert "10 more beliefs not shown (60 in all)" in got.stderr
    few = run("--store", db, "beliefs", "--limit", "5", env={"COLUMNS": "200"})
    assert len(few.stdout.splitlines()) == 6
    assert max(len(line) for line in few.stdout.splitlines()) <= 200
    assert "55 more beliefs" in few.stderr


def test_beliefs_json_and_jsonl_print_full_rows(tmp_path: Path) -> None:
    db = _many(tmp_path, 60, width=5000)
    rows = json.loads(run("--store", db, "beliefs", "--json").stdout)
    assert len(rows) == 60  # JSON prints all unless --limit says otherwise
    assert all(len(r["object"]) == 5005 for r in rows)
    lines = run("--store", db, "beliefs", "--jsonl", "--limit", "7").stdout.splitlines()
    assert len(lines) == 7
    assert all(len(json.loads(line)["object"]) == 5005 for line in lines)
    assert sorted(json.loads(line)["subject"] for line in lines)[0].startswith("s")


INSERT = "INSERT DATA { <urn:x:alice> <urn:x:knows> <urn:x:bob> }"
ASK = "ASK { <urn:x:alice> <urn:x:knows> <urn:x:bob> }"


def test_update_command_applies_sparql_update(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    first = run("--store", db, "update", INSERT)
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("added 1, already believed 0")
    assert run("--store", db, "query", ASK).stdout.strip() == "true"
    again = run("--store", db, "update", INSERT)
    assert again.stdout.startswith("added 0, already believed 1")
    gone = run("--store", db, "update", INSERT.replace("INSERT", "DELETE"))
    assert gone.exit_code == 0 and "retracted 1" in gone.stdout
    assert run("--store", db, "query", ASK).stdout.strip() == "false"


def test_query_given_an_update_points_to_the_update_command(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run("--store", db, "update", INSERT).exit_code == 0
    got = run("--store", db, "query", INSERT)
    assert got.exit_code == 1
    assert got.stderr.startswith("error: ERR_QUERY: ")
    assert "this is an update, use `oms-rdf update`" in got.stderr
    assert "expected CONSTRUCT" not in got.stderr
    bad = run("--store", db, "query", "SELEKT ?s WHERE { ?s ?p ?o }")
    assert bad.stderr.startswith("error: ERR_QUERY: ")
    assert "oms-rdf update" not in bad.stderr  # not an update either


def test_a_second_writer_is_told_to_serve_the_store(tmp_path: Path) -> None:
    import oms_rdf as oms

    db = tmp_path / "db"
    grain = tmp_path / "g.json"
    grain.write_text(
        json.dumps(
            {
                "type": "belief",
                "subject": "a",
                "relation": "r",
                "object": "o",
                "confidence": 0.5,
                "created_at": 1_700_000_000_000,
            }
        )
    )
    with oms.GrainStore(str(db)):  # the first writer holds it
        got = run("--store", str(db), "put", str(grain))
        assert got.exit_code == 1
        assert got.stderr.startswith("error: ERR_STORE: ")
        assert "another process has it open for writing" in got.stderr
        assert "use `oms-rdf serve` to share one store between processes" in got.stderr
        reader = run("--store", str(db), "beliefs", "--json")
        assert reader.exit_code == 0 and json.loads(reader.stdout) == []


def test_file_errors_carry_a_code_and_the_users_path(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run("--store", db, "update", INSERT).exit_code == 0
    (tmp_path / "adir").mkdir()
    missing = str(tmp_path / "missing.ttl")
    nowhere = str(tmp_path / "nonexistent" / "x.ttl")
    cases = [
        (["import", missing], "ERR_NOT_FOUND", missing),
        (["export", nowhere], "ERR_NOT_FOUND", nowhere),
        (["import", str(tmp_path / "adir"), "--format", "turtle"], "ERR_STORE",
         str(tmp_path / "adir")),
        (["export", str(tmp_path / "adir"), "--format", "turtle"], "ERR_STORE",
         str(tmp_path / "adir")),
    ]  # fmt: skip
    for args, code, path in cases:
        got = run("--store", db, *args)
        assert got.exit_code == 1, args
        assert got.stderr.startswith(f"error: {code}: "), got.stderr
        assert path in got.stderr and ".partial" not in got.stderr, got.stderr
    assert not list(tmp_path.rglob("*.partial"))


def test_library_export_to_a_missing_folder_is_err_not_found(tmp_path: Path) -> None:
    import pytest

    import oms_rdf as oms
    from oms_rdf.errors import NotFoundError

    store = oms.GrainStore()
    with pytest.raises(NotFoundError, match="ERR_NOT_FOUND") as caught:
        store.export(str(tmp_path / "none" / "k.ttl"))
    assert ".partial" not in str(caught.value)


def test_json_grains_take_iso_times(tmp_path: Path) -> None:
    import oms_rdf as oms

    as_ms = {"type": "belief", "subject": "a", "relation": "r", "object": "o",
             "confidence": 0.5, "created_at": 1_704_067_200_000,
             "valid_from": 1_717_200_000_000, "context": {"created_at": "2024"}}  # fmt: skip
    as_iso = {**as_ms, "created_at": "2024-01-01T00:00:00Z", "valid_from": "2024-06-01"}
    source = tmp_path / "g.json"
    source.write_text(json.dumps(as_iso))
    address = oms.content_address(oms.encode(as_ms))
    assert run("encode", str(source)).stdout.strip() == address
    db = str(tmp_path / "db")
    put = run("--store", db, "put", str(source))
    assert put.exit_code == 0, put.output
    assert put.stdout.split()[0] == address
    got = json.loads(run("--store", db, "get", address).stdout)
    assert got["fields"]["valid_from"] == "2024-06-01T00:00:00.000Z"
    assert got["fields"]["context"] == {"created_at": "2024"}  # user data: untouched
    lines = tmp_path / "g.jsonl"
    lines.write_text(json.dumps({**as_iso, "object": "p"}) + "\n")
    assert run("--store", db, "put", str(lines)).exit_code == 0
    source.write_text(json.dumps({**as_iso, "valid_to": "next tuesday"}))
    for args in (["encode", str(source)], ["--store", db, "put", str(source)]):
        bad = run(*args)
        assert bad.exit_code == 1
        assert bad.stderr.startswith("error: ERR_SCHEMA: valid_to: expected ISO 8601")
        assert "valid_to" in bad.stderr and "next tuesday" in bad.stderr


def test_a_missing_grain_file_is_err_not_found(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.json")
    for args in (
        ["encode", missing],
        ["--store", str(tmp_path / "db"), "put", missing],
    ):
        got = run(*args)
        assert got.exit_code == 1
        assert got.stderr.startswith("error: ERR_NOT_FOUND: ") and missing in got.stderr


def test_search_and_history_tables_fit_the_terminal(tmp_path: Path) -> None:
    db = _many(tmp_path, 3)
    found = run("--store", db, "search", "o001", env={"COLUMNS": "90"})
    assert found.exit_code == 0 and "o001" in found.stdout
    assert max(len(line) for line in found.stdout.splitlines()) <= 90
    address = json.loads(run("--store", db, "beliefs", "--json").stdout)[0]["address"]
    chain = run("--store", db, "history", address, env={"COLUMNS": "90"})
    assert chain.exit_code == 0 and len(chain.stdout.splitlines()) == 2
    assert max(len(line) for line in chain.stdout.splitlines()) <= 90


def test_store_may_come_after_the_command(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    grain = tmp_path / "g.json"
    grain.write_text(
        json.dumps(
            {
                "type": "belief",
                "subject": "ann",
                "relation": "likes",
                "object": "tea",
                "confidence": 0.5,
                "created_at": "2024-01-01T00:00:00Z",
            }
        )
    )
    assert run("put", str(grain), "--store", db).exit_code == 0
    after = run("beliefs", "--json", "--store", db)
    before = run("--store", db, "beliefs", "--json")
    assert after.exit_code == 0, after.output
    assert [r["object"] for r in json.loads(after.stdout)] == ["tea"]
    assert after.stdout == before.stdout
    # Before and after the command is --store given twice: which one a command
    # (an erasure, say) works on is not for the order of words to decide.
    other = str(tmp_path / "other")
    twice = run("--store", db, "beliefs", "--store", other)
    assert twice.exit_code == 1 and "--store is given twice" in twice.output
    assert not Path(other).exists()
    env = run("beliefs", "--json", "--store", db, env={"OMS_RDF_STORE": other})
    assert env.exit_code == 0 and not Path(other).exists()  # the word beats the env
    ask = "ASK { ?s ?p ?o }"
    assert run("query", ask, "--store", db).stdout.strip() == "true"


def test_a_bad_json_lines_grain_is_named_by_its_line_counted_from_one(
    tmp_path: Path,
) -> None:
    good = {"type": "belief", "subject": "a", "relation": "r", "object": "o",
            "confidence": 0.5, "created_at": 1_700_000_000_000}  # fmt: skip
    lines = tmp_path / "b.jsonl"
    bad = {k: v for k, v in good.items() if k != "created_at"}
    # line 3 is blank: the bad grain is on line 4, the third grain
    lines.write_text(f"{json.dumps(good)}\n{json.dumps(good)}\n\n{json.dumps(bad)}\n")
    got = run("--store", str(tmp_path / "db"), "put", str(lines))
    assert got.exit_code == 1
    assert "b.jsonl:4: missing required field 'created_at'" in got.output
    assert "item" not in got.output
    assert not (tmp_path / "db").exists()  # nothing stored, no store made
