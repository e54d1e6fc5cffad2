"""The command line's less travelled roads: each refusal is one line, each output form
prints what it says."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

import oms_rdf as oms
from oms_rdf.cli import cli
from oms_rdf.cli.output import dump_json
from oms_rdf.cli.progress import Bars
from tests.test_cli import V1, refused, run


def belief(obj: str, created_at: int) -> dict[str, object]:
    return {
        "type": "belief",
        "subject": "alice",
        "relation": "works_at",
        "object": obj,
        "confidence": 0.9,
        "created_at": created_at,
    }


def store_with(tmp_path: Path, *objects: str) -> tuple[str, list[str]]:
    db = str(tmp_path / "db")
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(json.dumps(belief(o, 1000 + i)) + "\n" for i, o in enumerate(objects))
    )
    put = run("--store", db, "put", str(source))
    assert put.exit_code == 0, put.output
    return db, [line.split()[0] for line in put.output.splitlines()]


def test_traceback_shows_the_library_error_itself() -> None:
    result = CliRunner().invoke(
        cli, ["--traceback", "decode", "-"], input=b"\x02" + b"\x00" * 12
    )
    assert result.exit_code == 1
    assert isinstance(result.exception, oms.DecodeError)
    assert result.exception.code == "ERR_VERSION"


def test_a_bad_seed_a_bad_key_and_a_bad_envelope_are_refused(tmp_path: Path) -> None:
    seed = CliRunner().invoke(
        cli, ["keygen", "-o", str(tmp_path / "k"), "--seed", "zz"]
    )
    assert seed.exit_code == 2 and "64 hex digits" in seed.stderr
    assert not (tmp_path / "k").exists()
    grain = tmp_path / "g.json"
    grain.write_text(json.dumps(V1["input"]))
    key = tmp_path / "not.key"
    key.write_text("not hex\n")
    refused(["sign", str(grain), "--key", str(key)], "ERR_SIGNATURE", str(key))
    junk = tmp_path / "junk.cose"
    junk.write_text("no envelope")
    refused(["verify-signature", str(junk)], "ERR_SIGNATURE", "nor its hex")


def test_sign_prints_the_envelope_as_hex_that_verify_signature_takes(
    tmp_path: Path,
) -> None:
    key = tmp_path / "agent.key"
    did = run("keygen", "-o", str(key), "--seed", "02" * 32).output.strip()
    grain = tmp_path / "g.json"
    grain.write_text(json.dumps(V1["input"]))
    envelope = run("sign", str(grain), "--key", str(key)).output.strip()
    bytes.fromhex(envelope)  # the envelope, as hex text
    verified = run("verify-signature", "-", stdin=envelope + "\n").output.strip()
    assert verified.startswith("ok ") and verified.endswith(f"signed by {did}")


def test_a_folder_given_as_a_file_is_err_store(tmp_path: Path) -> None:
    refused(["decode", str(tmp_path)], "ERR_STORE", str(tmp_path))


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('[{"type": "belief"} {"type": "belief"}]', "expected , or ]"),
        ('[{"type": "belief"}, nope]', "not JSON"),
        ("[] and more", "text after the JSON array"),
    ],
)
def test_a_malformed_json_array_names_the_place(text: str, found: str) -> None:
    refused(["put", "-"], "ERR_CORRUPT", found, stdin=text)


def test_an_exported_line_or_a_bad_grain_is_refused_by_put(tmp_path: Path) -> None:
    db, [address] = store_with(tmp_path, "Acme")
    run("--store", db, "retract", address, "--reason", "wrong")  # index state to carry
    exported = tmp_path / "all.jsonl"
    assert run("--store", db, "export", str(exported)).exit_code == 0
    said = refused(["--store", db, "put", str(exported)], "ERR_CORRUPT")
    assert "index state" in said and "oms-rdf import" in said
    refused(["--store", db, "put", "-"], "ERR_NO_TYPE", stdin='{"subject": "x"}')


def test_contradict_and_the_choice_of_json_or_jsonl(tmp_path: Path) -> None:
    db, [address] = store_with(tmp_path, "Acme")
    said = run("--store", db, "contradict", address, "--reason", "sensor fault")
    assert said.output.strip() == f"contradicted {address}"
    assert json.loads(run("--store", db, "beliefs", "--json").output) == []
    both = CliRunner().invoke(cli, ["--store", db, "beliefs", "--json", "--jsonl"])
    assert both.exit_code == 2 and "choose one" in both.stderr


def test_a_narrow_terminal_narrows_every_column_to_four(tmp_path: Path) -> None:
    db, [address] = store_with(tmp_path, "Acme Corporation")
    table = CliRunner(env={"COLUMNS": "10"}).invoke(cli, ["--store", db, "beliefs"])
    header, row = table.output.splitlines()
    assert header.split() == ["add…", "sub…", "rel…", "obj…", "con…", "val…", "val…"]
    assert row.startswith(address[:3] + "…")


def test_select_rows_print_as_a_table_and_as_json_with_blank_nodes(
    tmp_path: Path,
) -> None:
    db, _ = store_with(tmp_path, "Acme")
    query = 'SELECT ?b ?o WHERE { ?s ?p ?o BIND(BNODE("x") AS ?b) }'
    rows = json.loads(run("--store", db, "query", query, "--format", "json").output)
    assert [r["o"] for r in rows] == ["Acme"] and rows[0]["b"].startswith("_:")
    table = run("--store", db, "query", query).output.splitlines()
    assert table[0].split() == ["b", "o"] and table[1].split()[1] == "Acme"
    tsv = run("--store", db, "query", query, "--format", "tsv").output.splitlines()
    assert tsv[0] == "b\to"


def test_json_shows_sets_and_refuses_what_it_cannot_show() -> None:
    assert json.loads(dump_json({"s": frozenset({"b", "a"})})) == {"s": ["a", "b"]}
    with pytest.raises(TypeError, match="cannot show object as JSON"):
        dump_json(object())


def test_bars_show_each_phase_and_a_line_for_one_without_a_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with Bars() as stage:
        tick = stage("writing", 2)
        assert tick is not None
        tick(2)
        assert stage("compacting", None) is None
    said = capsys.readouterr()
    assert "writing grains" in said.err and "compacting the store…" in said.err
    assert said.out == ""


def test_serve_on_an_address_not_of_this_host_is_err_store(tmp_path: Path) -> None:
    db, _ = store_with(tmp_path, "Acme")
    said = refused(["--store", db, "serve", "--host", "192.0.2.1"], "ERR_STORE")
    assert "cannot serve on 192.0.2.1:7878" in said
    said = refused(
        ["--store", db, "serve", "--host", "no-such-host.invalid"],
        "ERR_STORE",
        "does not resolve",
    )


def test_mcp_over_http_on_a_port_in_use_makes_no_store(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    with socket.create_server(("127.0.0.1", 0)) as holder:
        port = str(holder.getsockname()[1])
        new = tmp_path / "memory"
        args = ["mcp", "--store", str(new), "--http", "--port", port]
        refused(args, "ERR_CONFLICT", "already in use")
    assert not new.exists()


def test_a_server_that_refuses_connections_is_one_line(tmp_path: Path) -> None:
    for where in (
        ["--store", "http://127.0.0.1:1"],
        ["--query-url", "http://127.0.0.1:1/query"],
        ["--virtuoso", "http://me:p%40ss@[::1]:1"],
    ):
        refused([*where, "beliefs"], "ERR_STORE", "Connection refused")


def test_a_refused_first_write_in_an_empty_folder_empties_it(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    bad = json.dumps({**V1["input"], "created_at": -5})
    refused(["--store", str(folder), "put", "-"], "ERR_RANGE", stdin=bad)
    assert list(folder.iterdir()) == []


def test_a_malformed_blob_line_names_its_line(tmp_path: Path) -> None:
    source = tmp_path / "lines.jsonl"
    source.write_text(json.dumps(V1["input"]) + "\n" + '{"$blob": "not base64!"}\n')
    refused(["put", str(source)], "ERR_CORRUPT", f"{source}:2")


# --- what a probe of the README's promises found -------------------------------------


def test_keygen_never_replaces_a_key(tmp_path: Path) -> None:
    key = tmp_path / "agent.key"
    first = run("keygen", "-o", str(key))
    assert first.exit_code == 0 and oct(key.stat().st_mode & 0o777) == "0o600"
    kept = key.read_text()
    refused(["keygen", "-o", str(key)], "ERR_STORE", "agent.key")
    assert key.read_text() == kept  # the first key, and its DID, are still there


@pytest.mark.parametrize("command", ["encode", "keygen"])
def test_a_folder_given_for_a_file_is_err_store(tmp_path: Path, command: str) -> None:
    grain = tmp_path / "g.json"
    grain.write_text(json.dumps(V1["input"]))
    args = [command, str(grain)] if command == "encode" else [command]
    refused([*args, "-o", str(tmp_path)], "ERR_STORE", str(tmp_path))


def test_a_parse_error_of_an_update_is_one_line_and_the_summary_names_supersessions(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "db")
    bad = "INSERT DATA { <http://ex.org/A> <http://ex.org/p> }"
    refused(["--store", db, "update", bad], "ERR_QUERY", "line 1, column")
    ex = "http://example.org/"
    assert (
        run(
            "--store",
            db,
            "update",
            f"INSERT DATA {{ <{ex}ann> <{ex}worksAt> <{ex}acme> }}",
        ).exit_code
        == 0
    )
    moved = run("--store", db, "update", f"DELETE DATA {{ <{ex}ann> <{ex}worksAt> <{ex}acme> }} ; "
                f"INSERT DATA {{ <{ex}ann> <{ex}worksAt> <{ex}initech> }}")  # fmt: skip
    assert moved.exit_code == 0 and "superseded 1" in moved.output, moved.output


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_numbers_that_are_not_finite_are_usage_errors(
    tmp_path: Path, value: str
) -> None:
    db, source = str(tmp_path / "db"), tmp_path / "t.nt"
    source.write_text("<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> .\n")
    for args in (["mcp", "--query-timeout", value],
                 ["import", str(source), "--confidence", value]):  # fmt: skip
        result = CliRunner().invoke(cli, ["--store", db, *args])
        assert result.exit_code == 2, (args, result.output)
        assert "finite" in result.stderr or "range" in result.stderr, result.stderr
    assert not Path(db).exists()


def test_a_blank_justification_is_none(tmp_path: Path) -> None:
    db, _ = store_with(tmp_path, "Acme")
    soft = tmp_path / "soft.json"
    soft.write_text(json.dumps({**belief("Hooli", 3000), "subject": "bo",
                                "invalidation_policy": {"mode": "soft_locked"}}))  # fmt: skip
    (locked,) = run("--store", db, "put", str(soft)).output.split()[:1]
    new = tmp_path / "new.json"
    new.write_text(json.dumps({**belief("Initech", 4000), "subject": "bo"}))
    refused(["--store", db, "supersede", locked, str(new), "--justification", "   "],
            "ERR_INVALIDATION_DENIED", "soft_locked")  # fmt: skip


def test_an_address_too_long_is_err_hash_length(tmp_path: Path) -> None:
    db, (address,) = store_with(tmp_path, "Acme")
    refused(["--store", db, "get", address + "00"], "ERR_HASH_LENGTH", "66")


def test_a_source_of_other_than_one_grain_is_the_data_s_error(tmp_path: Path) -> None:
    """supersede, revise and disclose take one grain: a file of none or two is
    refused with the spec's code and exit 1, as put refuses a bad file."""
    from tests.test_cli import V1, refused, run

    db = str(tmp_path / "db")
    address = run(
        "--store", db, "put", "-", stdin=json.dumps(V1["input"])
    ).output.strip()
    two = tmp_path / "two.json"
    two.write_text(json.dumps([V1["input"], {**V1["input"], "object": "other"}]))
    refused(["--store", db, "supersede", address[:12], str(two)], "ERR_SCHEMA",
            "expected one grain; found 2")  # fmt: skip
