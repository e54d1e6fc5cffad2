from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyoxigraph as ox
from click.testing import CliRunner

import oms_rdf as oms
from oms_rdf.cli import cli
from tests.conftest import load_vectors

V1 = load_vectors()[0]


def run(*args: str, stdin: str | bytes | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)


def test_encode_prints_address(tmp_path: Path) -> None:
    source = tmp_path / "g.json"
    source.write_text(json.dumps(V1["input"]))
    result = run("encode", str(source))
    assert result.exit_code == 0
    assert result.output.strip() == V1["address"]


def test_encode_hex_and_output(tmp_path: Path) -> None:
    out = tmp_path / "g.mg"
    result = run("encode", "-", "--hex", "-o", str(out), stdin=json.dumps(V1["input"]))
    assert result.output.strip() == V1["blob_hex"]
    assert out.read_bytes().hex() == V1["blob_hex"]


def test_decode_binary_and_hex(tmp_path: Path) -> None:
    blob = tmp_path / "g.mg"
    blob.write_bytes(bytes.fromhex(V1["blob_hex"]))
    assert json.loads(run("decode", str(blob)).output) == V1["input"]
    hex_text = " ".join(
        V1["blob_hex"][i : i + 2] for i in range(0, len(V1["blob_hex"]), 2)
    )
    assert json.loads(run("decode", "-", stdin=hex_text + "\n").output) == V1["input"]


def test_decode_shows_bytes_as_base64() -> None:
    blob = oms.encode({"type": "state", "context": {"b": b"\x00\x01"}, "created_at": 0})
    out = json.loads(run("decode", "-", stdin=blob).output)
    assert out["context"]["b"] == {"$base64": "AAE="}


def test_verify(tmp_path: Path) -> None:
    blob = tmp_path / "g.mg"
    blob.write_bytes(bytes.fromhex(V1["blob_hex"]))
    ok = run("verify", str(blob), V1["address"])
    assert ok.exit_code == 0 and V1["address"] in ok.output
    bad = CliRunner().invoke(cli, ["verify", str(blob), "0" * 64])
    assert bad.exit_code == 1
    assert bad.stderr.startswith("error: ERR_INTEGRITY: ")


def test_errors_are_one_line_with_code() -> None:
    result = CliRunner().invoke(cli, ["encode", "-"], input='{"type": "belief"}')
    assert result.exit_code == 1
    assert result.stderr == (
        "error: ERR_SCHEMA: missing required field 'created_at' (at $.created_at)\n"
    )
    result = CliRunner().invoke(cli, ["encode", "-"], input="not json")
    assert result.exit_code == 1 and result.stderr.startswith("error: ERR_CORRUPT: ")
    result = CliRunner().invoke(cli, ["decode", "-"], input=b"\x02" + b"\x00" * 12)
    assert result.exit_code == 1 and "ERR_VERSION" in result.stderr


def test_usage_errors_exit_2() -> None:
    assert CliRunner().invoke(cli, ["encode"]).exit_code == 2
    assert CliRunner().invoke(cli, ["nope"]).exit_code == 2


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["decode", str(tmp_path / "missing.mg")])
    assert result.exit_code != 0 and "missing.mg" in result.output + result.stderr


def test_demo_runs() -> None:
    result = run("demo")
    assert result.exit_code == 0
    assert "works_at" in result.output


def test_store_commands(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    lines = tmp_path / "b.jsonl"
    old = {"type": "belief", "subject": "alice", "relation": "works_at", "object": "Acme",
           "confidence": 0.9, "created_at": 1_700_000_000_000}  # fmt: skip
    lines.write_text(json.dumps(old) + "\n")
    (line,) = run("--store", db, "put", str(lines)).output.splitlines()
    address = line.split()[0]
    assert line == f"{address}  belief alice works_at 'Acme'"  # what was stored
    new = tmp_path / "new.json"
    new.write_text(
        json.dumps({**old, "object": "Initech", "created_at": 1_750_000_000_000})
    )
    successor = run("--store", db, "supersede", address, str(new)).output.strip()
    table = run("--store", db, "beliefs", "--subject", "alice").output
    assert "Initech" in table and "Acme" not in table
    past = json.loads(
        run("--store", db, "beliefs", "--as-of", "2024-01-01", "--json").output
    )
    assert [r["object"] for r in past] == ["Acme"]
    assert "superseded" in run("--store", db, "history", successor).output
    got = json.loads(run("--store", db, "get", address[:10]).output)  # a prefix will do
    assert got["index"]["superseded_by"] == successor
    assert got["fields"]["created_at"] == "2023-11-14T22:13:20.000Z"  # ISO times
    assert got["index"]["system_to"] == "2025-06-15T15:06:40.000Z"  # 1_750_000_000_000
    csv_out = run("--store", db, "query", "SELECT ?o WHERE { ?s ?p ?o }",
                  "--format", "csv").output  # fmt: skip
    assert csv_out.splitlines() == ["o", "Initech"]
    assert (
        "retracted"
        in run("--store", db, "retract", successor, "--reason", "wrong").output
    )
    assert json.loads(run("--store", db, "beliefs", "--json").output) == []


def test_store_errors(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    missing = CliRunner().invoke(cli, ["--store", db, "get", "0" * 64])
    assert missing.exit_code == 1 and missing.stderr.startswith(
        "error: ERR_NOT_FOUND: "
    )
    assert CliRunner().invoke(cli, ["beliefs"]).exit_code == 2  # no --store


def test_export_and_import(tmp_path: Path) -> None:
    db, other = str(tmp_path / "db"), str(tmp_path / "other")
    source = tmp_path / "b.jsonl"
    rows = [{"type": "belief", "subject": "s", "relation": "r", "object": str(i),
             "confidence": 0.5, "created_at": i} for i in range(3)]  # fmt: skip
    source.write_text("\n".join(json.dumps(r) for r in rows))
    run("--store", db, "put", str(source))
    out = run("--store", db, "export", str(tmp_path / "all.trig"))
    assert out.output.strip() == "exported 3 grains"
    result = run("--store", other, "import", str(tmp_path / "all.trig"), "--quiet")
    assert (
        result.output.strip()
        == "imported 3 grains (" + result.output.split("(")[1].strip()
    )
    assert len(json.loads(run("--store", other, "beliefs", "--json").output)) == 3


def test_import_reports_skipped_records(tmp_path: Path) -> None:
    source = tmp_path / "b.jsonl"
    source.write_text('{"type": "belief"}\nnot json\n')
    bad = CliRunner().invoke(
        cli, ["--store", str(tmp_path / "db"), "import", str(source)]
    )
    assert bad.exit_code == 1 and bad.stderr.startswith("error: ERR_SCHEMA: line 1")
    skipped = CliRunner().invoke(
        cli, ["--store", str(tmp_path / "db"), "import", str(source), "--skip-invalid"]
    )
    assert skipped.exit_code == 0
    assert "skipped line 1" in skipped.stderr and "skipped line 2" in skipped.stderr
    assert "imported 0 grains" in skipped.stdout


def test_keygen_sign_verify_disclose(tmp_path: Path) -> None:
    key = tmp_path / "agent.key"
    did = run("keygen", "-o", str(key), "--seed", "01" * 32).output.strip()
    assert did.startswith("did:key:z6Mk") and (key.stat().st_mode & 0o777) == 0o600
    grain = tmp_path / "g.json"
    grain.write_text(json.dumps({**V1["input"], "user_id": "alice-123"}))
    envelope = tmp_path / "g.cose"
    address = run(
        "sign", str(grain), "--key", str(key), "-o", str(envelope)
    ).output.strip()
    assert (
        run("verify-signature", str(envelope)).output.strip()
        == f"ok {address} signed by {did}"
    )
    bad = bytearray(envelope.read_bytes())
    bad[-1] ^= 1
    (tmp_path / "bad.cose").write_bytes(bytes(bad))
    refused = CliRunner().invoke(cli, ["verify-signature", str(tmp_path / "bad.cose")])
    assert refused.exit_code == 1 and refused.stderr.startswith(
        "error: ERR_SIGNATURE: "
    )
    view = json.loads(run("disclose", str(grain), "--elide", "user_id").output)
    assert "user_id" not in view and view["_elided"]["user_id"].startswith(
        "sha256:48f1cf08"
    )
    unsigned = CliRunner().invoke(
        cli, ["sign", str(tmp_path / "plain.mg"), "--key", str(key)]
    )
    assert unsigned.exit_code != 0


def test_evidence_and_revise(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"type": "belief", "subject": "a", "relation": "r", "object": "1",
                               "confidence": 0.7, "created_at": 1000, "source_type": "user_explicit"}))  # fmt: skip
    address = run("--store", db, "put", str(old)).output.split()[0]
    out = run(
        "--store", db, "evidence", address, "--kind", "refuting", "--strength", "0.85"
    ).output
    assert out.startswith("accumulating  log ratio -1.7346")
    new = tmp_path / "new.json"
    new.write_text(json.dumps({"type": "belief", "subject": "a", "relation": "r", "object": "2",
                               "confidence": 0.9, "created_at": 2000, "source_type": "llm_generated"}))  # fmt: skip
    refused = CliRunner().invoke(cli, ["--store", db, "revise", address, str(new)])
    assert refused.exit_code == 1 and "lower tier" in refused.stderr
    forced = run("--store", db, "revise", address, str(new), "--force", "--by", "did:key:zAdmin",
                 "--authorized", "did:key:zAdmin")  # fmt: skip
    assert len(forced.output.strip()) == 64


def test_put_accepts_envelopes_and_refuses_junk(tmp_path: Path) -> None:
    from oms_rdf.codec import signing

    key = signing.generate_key(seed=bytes(32))
    grain = oms.Belief("a", "b", "c", 0.5, created_at=0, signed=True)
    envelope = tmp_path / "g.cose"
    envelope.write_bytes(signing.sign(grain.blob, key))
    db = str(tmp_path / "db")
    assert run("--store", db, "put", str(envelope)).output.split()[0] == grain.address
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\xff\xfe\x00garbage")
    result = CliRunner().invoke(cli, ["--store", db, "put", str(junk)])
    assert result.exit_code == 1 and result.stderr.startswith("error: ERR_CORRUPT: ")


def test_query_forms_time_travel_and_errors(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    source = tmp_path / "people.ttl"
    source.write_text(
        "@prefix ex: <http://example.org/> .\n<alice> ex:knows <bob> .\n"
        '<bob> ex:name "Bob"@en .\n'
    )
    out = run(
        "--store", db, "import", str(source), "--base-iri", "http://example.org/p/"
    )
    assert "imported 2 grains" in out.output and "already believed 0" in out.output
    again = run(
        "--store", db, "import", str(source), "--base-iri", "http://example.org/p/"
    )
    assert "imported 0 grains" in again.output and "already believed 2" in again.output
    ask = run("--store", db, "query", "ASK { <http://example.org/p/alice> ?p ?o }")
    assert ask.output.strip() == "true"
    turtle = run(
        "--store", db, "query", "CONSTRUCT WHERE { ?s <http://example.org/name> ?o }"
    )
    assert (
        '<http://example.org/p/bob> <http://example.org/name> "Bob"@en' in turtle.output
    )
    before = run("--store", db, "query", "ASK { ?s ?p ?o }", "--as-of", "2000-01-01")
    assert before.output.strip() == "false"  # nothing was believed in 2000
    bad = CliRunner().invoke(
        cli, ["--store", db, "query", "SELECT ?s WHERE {\n  ?s ?p }"]
    )
    assert bad.exit_code == 1 and "ERR_QUERY" in bad.output and "2:" in bad.output
    plain = run("--store", db, "export", str(tmp_path / "k.ttl"))
    assert plain.stdout.strip() == "exported 2 triples"
    written = ox.Store()
    written.load(path=tmp_path / "k.ttl", format=ox.RdfFormat.TURTLE)
    alice = ox.NamedNode("http://example.org/p/alice")
    assert len(list(written.quads_for_pattern(alice, None, None))) == 1


def test_search_command(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    source = tmp_path / "g.json"
    source.write_text(json.dumps([
        {"type": "belief", "subject": "rate limiter", "relation": "uses",
         "object": "token bucket", "confidence": 0.9, "created_at": 1},
        {"type": "belief", "subject": "cache", "relation": "uses",
         "object": "LRU", "confidence": 0.9, "created_at": 2},
    ]))  # fmt: skip
    run("--store", db, "put", str(source))
    out = json.loads(run("--store", db, "search", "token", "--json").output)
    assert [row["subject"] for row in out] == ["rate limiter"]


def test_keygen_never_writes_over_a_file_and_empty_put_is_an_error(
    tmp_path: Path,
) -> None:
    key = tmp_path / "agent.key"
    key.write_text("old")
    key.chmod(0o644)
    assert run("keygen", "-o", str(key)).exit_code == 1
    assert key.read_text() == "old" and key.stat().st_mode & 0o777 == 0o644
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    result = CliRunner().invoke(
        cli, ["--store", str(tmp_path / "db"), "put", str(empty)]
    )
    assert result.exit_code == 1 and "no grain" in result.output


def _one_line_error(args: list[str], expected: str) -> None:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0]


def test_files_that_cannot_be_read_or_written_are_one_line_errors(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "db")
    grain = tmp_path / "g.json"
    grain.write_text(json.dumps(V1["input"]))
    (tmp_path / "adir").mkdir()
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    query = tmp_path / "bad.rq"
    query.write_bytes(b"SELECT \xff")
    missing = str(tmp_path / "missing.ttl")
    nowhere = str(tmp_path / "nodir" / "x")
    _one_line_error(["--store", store, "import", missing], "No such file or directory")
    _one_line_error(["--store", store, "import", str(tmp_path / "adir"), "--format", "turtle"], "Is a directory")  # fmt: skip
    assert not (tmp_path / "db").exists()  # a refused import makes no store
    run("--store", store, "put", str(grain))
    _one_line_error(["--store", store, "export", nowhere + ".ttl"], "ERR_NOT_FOUND: cannot export to")  # fmt: skip
    _one_line_error(["--store", store, "export", str(tmp_path / "adir"), "--format", "turtle"], "found a folder")  # fmt: skip
    _one_line_error(["keygen", "-o", nowhere + ".pem"], "No such file or directory")
    _one_line_error(["encode", str(grain), "-o", nowhere + ".bin"], "No such file or directory")  # fmt: skip
    _one_line_error(["--store", store, "put", str(deep)], "ERR_CORRUPT")
    _one_line_error(["query", f"@{query}"], "byte 7 of")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "db") == [
        "adir",
        "bad.rq",
        "deep.json",
        "g.json",
    ]  # fmt: skip  (no half-written file left behind)


def test_put_reads_a_json_array_item_by_item_and_names_a_bad_one(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "db")
    good = {"type": "belief", "subject": "a", "relation": "r", "object": "o",
            "confidence": 0.5, "created_at": 1}  # fmt: skip
    source = tmp_path / "a.json"
    source.write_text(json.dumps([good, {**good, "object": "p"}]))
    assert len(run("--store", db, "put", str(source)).output.splitlines()) == 2
    source.write_text(json.dumps([good, {**good, "confidence": "high"}]))
    bad = run("--store", db, "put", str(source))
    assert bad.exit_code == 1 and "a.json[1]: expected a number" in bad.output
    assert "(at " in bad.output and "a.json[1]: $.confidence)" in bad.output
    source.write_text(json.dumps([good]) + " trailing")
    assert "text after the JSON array" in run("--store", db, "put", str(source)).output
    source.write_text('[{"type": "belief"} {"type": "belief"}]')
    assert f"(at {source}[1])" in run("--store", db, "put", str(source)).output


def refused(args: list[str], code: str, *found: str, stdin: str | None = None) -> str:
    """A refusal: one line ``error: CODE: ...`` on stderr, exit 1, no traceback."""
    result = CliRunner().invoke(cli, args, input=stdin, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: {code}: "), result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.output
    for text in found:
        assert text in result.stderr
    return str(result.stderr)


def test_deeply_nested_json_is_one_line_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    refused(["encode", str(deep)], "ERR_CORRUPT", "deep.json", "deeply")
    refused(["encode", "-"], "ERR_CORRUPT", stdin='{"a":' * 50_000 + "1" + "}" * 50_000)
    refused(["sign", str(deep), "--key", str(deep)], "ERR_CORRUPT", "deep.json")


def test_out_of_range_numbers_are_usage_errors(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    run("--store", db, "put", "-", stdin=json.dumps(V1["input"]))
    for port in ("99999", "0", "-1", "65536"):
        result = CliRunner().invoke(cli, ["--store", db, "serve", "--port", port])
        assert result.exit_code == 2, result.output
        assert "--port" in result.stderr and "serving on" not in result.stderr
    huge = CliRunner().invoke(
        cli, ["--store", db, "search", "x", "--limit", "99999999999999999999"]
    )
    assert huge.exit_code == 2 and "--limit" in huge.stderr
    assert "Traceback" not in huge.output
    assert run("--store", db, "search", "x", "--limit", "1000000").exit_code == 0


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_refuses_a_port_in_use_before_saying_it_serves(tmp_path: Path) -> None:
    import socket

    db = str(tmp_path / "db")
    run("--store", db, "put", "-", stdin=json.dumps(V1["input"]))
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = str(holder.getsockname()[1])
        result = CliRunner().invoke(
            cli, ["--store", db, "serve", "--port", port], catch_exceptions=False
        )
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        f"error: ERR_CONFLICT: cannot serve on 127.0.0.1:{port}: the address is "
        "already in use (another process listens there; choose another --port)\n"
    )
    unknown = CliRunner().invoke(
        cli, ["--store", db, "serve", "--host", "no-such-host.invalid"]
    )
    assert unknown.exit_code == 1 and "serving on" not in unknown.output
    assert unknown.stderr.startswith("error: ERR_STORE: cannot serve on ")
    assert "no-such-host.invalid" in unknown.stderr


def test_serve_says_serving_once_it_listens(tmp_path: Path) -> None:
    import signal
    import socket
    import subprocess
    import sys

    import httpx

    db = tmp_path / "db"
    store = oms.GrainStore(db)
    store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1))
    store.close()
    port = free_port()
    command = [sys.executable, "-m", "oms_rdf", "--store", str(db), "serve", "--port", str(port)]  # fmt: skip
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as server:
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            assert line.startswith(f"serving on http://127.0.0.1:{port}/"), line
            # No wait: the line comes once the port takes connections.
            socket.create_connection(("127.0.0.1", port), timeout=10).close()
            ask = httpx.get(f"http://127.0.0.1:{port}/sparql", timeout=10,
                            params={"query": 'ASK { ?s ?p "Acme" }'},
                            headers={"Accept": "application/sparql-results+json"})  # fmt: skip
            assert ask.status_code == 200 and ask.json()["boolean"] is True
        finally:
            server.send_signal(signal.SIGTERM)
            _, rest = server.communicate(timeout=20)
    assert server.returncode == 0, rest
    assert "Traceback" not in rest and "serving on" not in rest


def test_more_arguments_that_were_tracebacks_or_silent(tmp_path: Path) -> None:
    refused(["--store", "", "beliefs"], "ERR_SCHEMA", "--store", "''")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    # What a file holds is the data's fault, not the command line's: exit 1
    # with the spec's code, as put gives for the same file.
    refused(
        ["disclose", str(empty), "--elide", "x"],
        "ERR_SCHEMA",
        "expected one grain; found 0",
    )
    db = str(tmp_path / "db")
    run("--store", db, "put", "-", stdin=json.dumps(V1["input"]))
    for args in (["serve", "--query-timeout", "nan"], ["serve", "--query-timeout", "0"],
                 ["process-erasures", "--sla-days", "nan"],
                 ["process-erasures", "--sla-days", "-1"]):  # fmt: skip
        result = CliRunner().invoke(cli, ["--store", db, *args])
        assert result.exit_code == 2, (args, result.output)
        assert args[1] in result.stderr and "serving on" not in result.stderr
