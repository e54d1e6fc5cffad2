"""The command line where its output or its input is unusual: a pipe that closes,
a full disk, a link or a pipe to export to, text that is not UTF-8, wide text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from oms_rdf.cli.output import columns_of, cut, pad
from tests.test_cli import refused, run


def beliefs_file(tmp_path: Path, count: int, subject: str = "s") -> Path:
    source = tmp_path / "many.jsonl"
    lines = [json.dumps({"type": "belief", "subject": f"{subject}{i}", "relation": "r",
                         "object": f"o{i}", "confidence": 0.5,
                         "created_at": 1_700_000_000_000 + i}, ensure_ascii=False)
             for i in range(count)]  # fmt: skip
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return source


def oms_rdf(*args: str, stdout: int | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "oms_rdf", *args],
                            stdout=stdout, stderr=subprocess.PIPE)  # fmt: skip


def test_a_pipe_closed_early_ends_quietly_and_keeps_what_was_written(
    tmp_path: Path,
) -> None:
    """`oms-rdf --store new put many | head -1`: the put committed, then its
    output could not be written. The new store stays, and no error is printed."""
    db = tmp_path / "db"
    read, write = os.pipe()
    with oms_rdf("--store", str(db), "put", str(beliefs_file(tmp_path, 3000)),
                 stdout=write) as put:  # fmt: skip
        os.close(write)
        with os.fdopen(read, "rb") as reader:
            reader.readline()  # the first address, then the reader leaves
        assert put.stderr is not None
        said = put.stderr.read().decode()
    assert put.returncode == 141 and "error" not in said, said
    assert db.is_dir()
    listed = run("--store", str(db), "beliefs", "--json")
    assert len(json.loads(listed.stdout)) == 3000


def test_a_full_disk_for_the_output_is_an_error_but_the_new_store_stays(
    tmp_path: Path,
) -> None:
    db = tmp_path / "db"
    with open("/dev/full", "wb") as full:  # writes fail with ENOSPC
        with oms_rdf("--store", str(db), "put", str(beliefs_file(tmp_path, 50)),
                     stdout=full.fileno()) as put:  # fmt: skip
            assert put.stderr is not None
            said = put.stderr.read().decode()
    assert put.returncode == 1 and said.startswith("error: ERR_STORE: No space"), said
    assert len(json.loads(run("--store", str(db), "beliefs", "--json").stdout)) == 50


def test_export_writes_through_a_link_and_into_a_pipe(tmp_path: Path) -> None:
    db = tmp_path / "db"
    assert run("--store", str(db), "put", str(beliefs_file(tmp_path, 2))).exit_code == 0
    (tmp_path / "real").mkdir()
    link = tmp_path / "link.trig"
    link.symlink_to(tmp_path / "real" / "backup.trig")
    assert run("--store", str(db), "export", str(link)).exit_code == 0
    assert link.is_symlink() and (tmp_path / "real" / "backup.trig").stat().st_size > 0
    fifo = tmp_path / "pipe.nq"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert run("--store", str(db), "export", str(fifo)).exit_code == 0
    reader.join(timeout=30)
    assert fifo.is_fifo() and got and b"nih:sha-256;" in got[0]


def test_export_to_dev_stdout_is_standard_output(tmp_path: Path) -> None:
    """The summary went into the data, and where stdout was a file the export
    replaced it with a file of its own: what the shell wrote around it was lost."""
    db = tmp_path / "db"
    assert run("--store", str(db), "put", str(beliefs_file(tmp_path, 2))).exit_code == 0
    args = ("--store", str(db), "export", "/dev/stdout", "--format", "ntriples")
    piped = oms_rdf(*args, stdout=subprocess.PIPE)
    out, err = piped.communicate(timeout=60)
    assert piped.returncode == 0 and b"exported" not in out and b"exported 2" in err
    assert len(out.splitlines()) == 2 and all(
        line.endswith(b" .") for line in out.splitlines()
    )
    framed = tmp_path / "framed.nt"
    with framed.open("ab") as file:
        file.write(b"# HEADER\n")
        file.flush()
        oms_rdf(*args, stdout=file.fileno()).communicate(timeout=60)
        file.write(b"# FOOTER\n")
    lines = framed.read_bytes().splitlines()
    assert lines[0] == b"# HEADER" and lines[-1] == b"# FOOTER" and len(lines) == 4


def test_a_json_integer_past_python_s_digits_is_one_line(tmp_path: Path) -> None:
    grain = tmp_path / "big.json"
    grain.write_text('{"type": "belief", "subject": "a", "relation": "b", "object": "c",'
                     ' "confidence": 0.5, "created_at": 1, "n": ' + "9" * 5000 + "}")  # fmt: skip
    (tmp_path / "big_array.json").write_text("[" + grain.read_text() + "]")
    for args in (["encode", str(grain)], ["--store", str(tmp_path / "db"), "put",
                                          str(tmp_path / "big_array.json")]):  # fmt: skip
        refused(args, "ERR_RANGE", "4300")
    assert not (tmp_path / "db").exists()


def test_an_argument_that_is_not_utf8_is_refused_before_a_store_is_made(
    tmp_path: Path,
) -> None:
    latin1 = b"caf\xe9".decode("utf-8", "surrogateescape")  # as Python gives argv
    db = tmp_path / "db"
    refused(["--store", str(db), "update", 'INSERT DATA { <urn:a> <urn:b> "c" }',
             "--namespace", latin1], "ERR_SCHEMA", "UTF-8")  # fmt: skip
    refused(["--store", str(db), "beliefs", "--subject", latin1], "ERR_SCHEMA")
    assert not db.exists()


def test_audit_verify_takes_the_store_after_the_command(tmp_path: Path) -> None:
    db = tmp_path / "db"
    assert run("--store", str(db), "put", str(beliefs_file(tmp_path, 1))).exit_code == 0
    verified = run("audit", "verify", "--store", str(db))
    assert verified.exit_code == 0 and "audit ok" in verified.stdout


@pytest.mark.parametrize("text", ["", "# a comment", "PREFIX ex: <http://e/>"])
def test_a_query_without_an_operation_is_no_update(tmp_path: Path, text: str) -> None:
    db = tmp_path / "db"
    assert run("--store", str(db), "put", str(beliefs_file(tmp_path, 1))).exit_code == 0
    said = refused(["--store", str(db), "query", text], "ERR_QUERY", "not valid SPARQL")
    assert "update" not in said


def test_serve_refuses_a_file_as_its_store_as_every_command_does(
    tmp_path: Path,
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    refused(["serve", "--store", str(afile), "--port", "1"], "ERR_NOT_FOUND")
    db = tmp_path / "db"
    assert run("--store", str(db), "put", str(beliefs_file(tmp_path, 1))).exit_code == 0
    refused(["serve", "--store", str(db), "--port", "1", "--token-file",
             str(tmp_path / "none.json")], "ERR_NOT_FOUND", "token file")  # fmt: skip


def test_wide_text_is_measured_in_terminal_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert columns_of("東京") == 4 and columns_of("e\u0301") == 1
    assert cut("東京都東京都", 5) == "東京…" and columns_of(cut("東京都東京都", 5)) == 5
    assert columns_of(pad("東京", 6)) == 6
    monkeypatch.setenv("COLUMNS", "80")
    db = tmp_path / "db"
    wide = beliefs_file(tmp_path, 3, subject="東京都" * 10)
    assert run("--store", str(db), "put", str(wide)).exit_code == 0
    lines = run("--store", str(db), "beliefs").stdout.splitlines()
    assert len(lines) == 4 and all(columns_of(line) <= 80 for line in lines)
    starts = {columns_of(line[: line.index(word)]) for line, word in
              zip(lines, ["relation", "r", "r", "r"], strict=True)}  # fmt: skip
    assert len(starts) == 1  # the relation column lines up under its header


@pytest.mark.parametrize(
    "text",
    [
        '{"type":"belief","subject":"a","subject":"b","relation":"r","object":"o",'
        '"confidence":0.5,"created_at":"2024"}',
        '[{"type":"belief","subject":"a","relation":"r","object":"o","confidence":0.5,'
        '"created_at":"2024","context":{"k":1,"k":2}}]',
        '{"type":"belief","subject":"a","relation":"r","object":"o","confidence":0.5,'
        '"created_at":"2024"}\n{"type":"belief","type":"belief","subject":"b",'
        '"relation":"r","object":"o","confidence":0.5,"created_at":"2024"}',
    ],
)
def test_a_key_given_twice_is_refused_not_read_as_its_last(
    tmp_path: Path, text: str
) -> None:
    """Python's JSON reader kept the last of two values: the grain stored said
    subject "b" where the file also said "a"."""
    source = tmp_path / "dup.json"
    source.write_text(text)
    db = tmp_path / "db"
    refused(["--store", str(db), "put", str(source)], "ERR_CORRUPT", "given twice")
    assert not db.exists()


def test_a_parser_quoting_its_whole_input_is_cut_to_one_short_line(
    tmp_path: Path,
) -> None:
    """A 5 MB file of text named .rdf gave a 5 MB error line: the RDF/XML
    parser's message quoted its input whole."""
    from oms_rdf.errors import LONGEST_MESSAGE

    source = tmp_path / "big.rdf"
    source.write_text("x" * 5_000_000)
    said = refused(
        ["--store", str(tmp_path / "db"), "import", str(source)], "ERR_CORRUPT"
    )
    assert len(said) < LONGEST_MESSAGE + 100 and "characters in all" in said


def test_an_ipv6_address_is_written_in_brackets_in_a_url() -> None:
    from oms_rdf.cli.serving import url_of

    assert url_of("::1", 7878) == "http://[::1]:7878/"
    assert url_of("127.0.0.1", 7878) == "http://127.0.0.1:7878/"


def test_an_empty_token_file_is_refused(tmp_path: Path) -> None:
    """It served "read-only, open" by its banner, and answered every request 401."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text("{}")
    said = refused(["--store", str(tmp_path / "db"), "serve", "--token-file", str(tokens)],
                   "ERR_SCHEMA", "one token or more")  # fmt: skip
    assert "serving on" not in said


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["beliefs", "--valid-at", "2024", "--valid-at", "2030"], "--valid-at"),
        (["beliefs", "--valid-at=2024", "--valid-at", "2030"], "--valid-at"),
        (["export", "out.trig", "--grains", "--plain"], "--plain"),
        (["query", "ASK {}", "--format", "json", "--format", "csv"], "--format"),
    ],
)
def test_an_option_given_twice_is_refused_not_read_as_its_last(
    tmp_path: Path, args: list[str], named: str
) -> None:
    db = tmp_path / "db"
    assert run("--store", str(db), "put", str(beliefs_file(tmp_path, 1))).exit_code == 0
    refused(["--store", str(db), *args], "ERR_SCHEMA", f"{named} is given twice")
    assert not (tmp_path / "out.trig").exists()


def test_ctrl_c_during_an_import_into_a_new_path_leaves_nothing(tmp_path: Path) -> None:
    """It printed click's bare "Aborted!" with exit 1, and left an empty store."""
    import signal
    import time

    source = tmp_path / "many.nt"
    lines = (f'<http://e/s{i}> <http://e/p> "o{i}" .' for i in range(60_000))
    source.write_text("\n".join(lines) + "\n")
    db = tmp_path / "db"
    importing = oms_rdf("--store", str(db), "import", str(source))
    time.sleep(1.5)  # under way: its store made, its grains being written
    importing.send_signal(signal.SIGINT)
    _, err = importing.communicate(timeout=120)
    if importing.returncode == 0:  # finished before the signal: nothing to undo
        pytest.skip("the import ended before Ctrl-C came")
    said = err.decode()
    assert importing.returncode == 130, said
    assert said.startswith("error: ERR_STORE: interrupted"), said
    assert "Traceback" not in said and not db.exists()


def as_a_user_who_may_only_read(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run the command line as a user without write access (nobody, when the
    tests run as root, who may write anything)."""
    import shutil

    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv is not None, "util-linux's setpriv runs a command as nobody"
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    command = [*prefix, sys.executable, "-m", "oms_rdf", *args]
    return subprocess.run(command, capture_output=True, timeout=60, check=False)


def test_a_store_this_user_may_only_read_is_read_and_refuses_a_write() -> None:
    """It could not be opened at all, with a hint that another process held it."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp())  # under /tmp: nobody may reach it
    try:
        folder.chmod(0o755)
        db = folder / "db"
        assert (
            run("--store", str(db), "put", str(beliefs_file(folder, 2))).exit_code == 0
        )
        for path in [db, *db.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        read = as_a_user_who_may_only_read("--store", str(db), "beliefs", "--json")
        assert read.returncode == 0, read.stderr
        assert len(json.loads(read.stdout)) == 2
        wrote = as_a_user_who_may_only_read(
            "--store", str(db), "put", str(folder / "many.jsonl")
        )
        said = wrote.stderr.decode()
        assert wrote.returncode == 1 and "cannot be written here" in said, said
        assert "another process" not in said
    finally:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        shutil.rmtree(folder)


@pytest.mark.parametrize("command", ["import", "put"])
def test_an_empty_path_is_refused_as_empty(tmp_path: Path, command: str) -> None:
    """The system reads "" as the current folder: "Is a directory: " named nothing."""
    db = tmp_path / "db"
    refused(["--store", str(db), command, ""], "ERR_EMPTY", "found an empty one")
    assert not db.exists()


def test_stdin_is_imported_in_the_format_given_and_needs_one(tmp_path: Path) -> None:
    """Without --format, stdin was read as N-Quads: Turtle got "not valid N-Quads"."""
    db = tmp_path / "db"
    turtle = "@prefix e: <http://e/> .\ne:a e:b 'c' .\n"
    refused(["--store", str(db), "import", "-"], "ERR_SCHEMA", "needs --format",
            stdin=turtle)  # fmt: skip
    assert not db.exists()
    done = run("--store", str(db), "import", "-", "--format", "turtle", stdin=turtle)
    assert done.exit_code == 0 and "imported 1 grains" in done.stdout, done.output


def test_every_help_keeps_its_example_lines_apart() -> None:
    """Click rewraps a docstring's paragraphs: two example commands must not
    run together on one line of ``--help``."""
    import click

    from oms_rdf.cli import cli

    def helps(command: click.Command, name: str) -> Iterator[tuple[str, str]]:
        with click.Context(command, info_name=name) as ctx:
            yield name, command.get_help(ctx)
        if isinstance(command, click.Group):
            for sub, inner in command.commands.items():
                yield from helps(inner, f"{name} {sub}")

    shown = list(helps(cli, "oms-rdf"))
    assert len(shown) > 20
    for name, text in shown:
        for line in text.splitlines():
            assert line.count("oms-rdf ") <= 1, (name, line)
