"""A reader in another process beside an import: a committed state, or a clear no.

An import goes in chunks through RocksDB's bulk loader, which publishes each one
as it goes; a read-only opening in another process used to see the chunks
written so far (partial counts, a grain whose blob was not there yet: a false
ERR_NOT_FOUND). Now the writer marks the store for the whole bulk write, and a
read-only opening either sees the store before the import, or after it, or is
refused with ERR_CONFLICT naming the store. Every reader runs under a memory
limit.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import oms_rdf as oms
from oms_rdf.backends.embedded import BULK_MARK
from oms_rdf.rdf.vocab import OMS, RDF
from oms_rdf.store.journal import JOURNAL

MEMORY_LIMIT = 3 << 30  # bytes of address space for each reader process

WRITER = """
import sys, oms_rdf as oms, oms_rdf.store.core as core, oms_rdf.store.journal as journal
path, source, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
journal.CHUNK_ROWS = rows  # many chunks: many points between two of them
core.COMPACT_AFTER = 0  # compacted at its end, as a large import is
store = oms.GrainStore(path)
print("open", flush=True)
report = store.import_(source)
store.close()
print("done", report.added, flush=True)
"""

# Opens the store read-only again and again until told to stop; prints what each
# opening saw: the numbers of grains, beliefs and triples, or the refusal.
READER = """
import json, os, sys, oms_rdf as oms
path, stop = sys.argv[1], sys.argv[2]
seen = []
while True:
    last = os.path.exists(stop)
    try:
        store = oms.GrainStore(path, read_only=True)
    except oms.OmsError as exc:
        seen.append(["refused", str(exc.code), str(exc)])
    else:
        try:
            triples = store.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
            n = int(next(iter(triples))[0].value)
            seen.append(["read", len(store), len(store.beliefs()), n])
        except oms.OmsError as exc:
            seen.append(["error", str(exc.code), str(exc)])
        finally:
            store.close()
    if last:
        break
print(json.dumps(seen))
"""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _turtle(path: Path, triples: int) -> Path:
    """Foreign RDF: every triple becomes a belief."""
    lines = ["@prefix ex: <http://example.org/> ."]
    lines += [f'ex:s{i} ex:p{i % 7} "value {i}" .' for i in range(triples)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run_beside_import(tmp_path: Path, triples: int, rows: int) -> tuple[list, int]:
    """Import in one process, read in another meanwhile; what the reader saw."""
    source = _turtle(tmp_path / "source.ttl", triples)
    store, stop = tmp_path / "store", tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store), str(source), str(rows)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "open"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(store), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=_limit_memory,
    )
    done = writer.communicate(timeout=120)[0].split()
    stop.touch()
    out, _ = reader.communicate(timeout=120)
    assert writer.returncode == 0 and done[0] == "done"
    assert reader.returncode == 0, "the reader died (out of memory?)"
    return json.loads(out), int(done[1])


def _check(seen: list, added: int, store: Path) -> None:
    whole = {(0, 0, 0), (added, added, added)}  # before the import, or after it
    reads = [tuple(s[1:]) for s in seen if s[0] == "read"]
    refused = [s for s in seen if s[0] == "refused"]
    errors = [s for s in seen if s[0] == "error"]
    assert errors == []  # never a false ERR_NOT_FOUND, nor any other failure
    assert set(reads) <= whole, sorted(set(reads) - whole)[:5]
    for _, code, message in refused:
        assert code == "ERR_CONFLICT"
        assert str(store) in message and "import" in message
        assert "retry when the import has ended" in message.lower()
        assert "oms-rdf serve" in message
    # The reader did land inside the import (else this test proves nothing), and
    # its last opening, after the import, saw all of it.
    assert refused, f"no opening landed inside the import: {seen[:3]}…"
    assert reads and reads[-1] == (added, added, added)


def test_a_reader_beside_an_import_sees_before_or_after_or_is_refused(
    tmp_path: Path,
) -> None:
    seen, added = _run_beside_import(tmp_path, triples=1200, rows=1000)
    assert added == 1200
    _check(seen, added, tmp_path / "store")
    assert not json.loads((tmp_path / "store" / BULK_MARK).read_text())["writing"]


CRASHING_WRITER = """
import os, signal, sys, oms_rdf as oms, oms_rdf.store.journal as journal
journal.CHUNK_ROWS = 1000
chunk, calls = journal.Journal._chunk, []
def killed_in_the_second(self, rows, loader, loading, tick):
    calls.append(1)
    if len(calls) == 2:
        if loading is not None:
            loading.result()  # the first chunk is in the store
        self.backend.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    return chunk(self, rows, loader, loading, tick)
journal.Journal._chunk = killed_in_the_second
store = oms.GrainStore(sys.argv[1])
store.import_(sys.argv[2])
"""


def test_an_import_killed_midway_is_refused_to_readers_until_undone(
    tmp_path: Path,
) -> None:
    source = _turtle(tmp_path / "source.ttl", 1000)
    store = tmp_path / "store"
    killed = subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(store), str(source)])  # fmt: skip
    assert killed.returncode == -signal.SIGKILL
    # The store holds the first chunk: a reader is refused, told the writer is gone.
    with pytest.raises(oms.StoreError) as refusal:
        oms.GrainStore(store, read_only=True)
    assert refusal.value.code == oms.ErrorCode.CONFLICT
    assert "interrupted" in str(refusal.value) and str(store) in str(refusal.value)
    # A store marked by no file (an older writer's) is refused by its open journal.
    copy = tmp_path / "unmarked"
    shutil.copytree(store, copy)
    (copy / BULK_MARK).unlink()
    with pytest.raises(oms.StoreError) as journal_open:
        oms.GrainStore(copy, read_only=True)
    assert journal_open.value.code == oms.ErrorCode.CONFLICT
    assert "journal is open" in str(journal_open.value)
    # The next writable opening undoes the import and clears the mark; readers then
    # see the store as it was before the import.
    for path in (store, copy):
        oms.GrainStore(path).close()
        mark = path / BULK_MARK
        assert mark.exists() == (path == store)
        assert path == copy or not json.loads(mark.read_text())["writing"]
        reader = oms.GrainStore(path, read_only=True)
        try:
            assert len(reader) == 0
            assert (
                next(reader.backend.quads(JOURNAL, RDF.type, OMS.Journal), None) is None
            )
        finally:
            reader.close()


def test_an_unreadable_mark_is_refused_and_reset_by_a_writable_open(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    oms.GrainStore(store).close()
    (store / BULK_MARK).write_bytes(b"\x00 not json")
    with pytest.raises(oms.StoreError) as refusal:
        oms.GrainStore(store, read_only=True)
    assert refusal.value.code == oms.ErrorCode.STORE
    assert BULK_MARK in str(refusal.value) and "for writing" in str(refusal.value)
    oms.GrainStore(store).close()  # as the refusal says
    assert json.loads((store / BULK_MARK).read_text())["writing"] is False
    oms.GrainStore(store, read_only=True).close()


def test_a_reader_opened_before_the_import_keeps_its_view(tmp_path: Path) -> None:
    source = _turtle(tmp_path / "source.ttl", 500)
    store = tmp_path / "store"
    oms.GrainStore(store).close()
    reader = oms.GrainStore(store, read_only=True)
    try:
        writer = subprocess.run(
            [sys.executable, "-c", WRITER, str(store), str(source), "1000"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert writer.stdout.split()[-1] == "500"
        # Opened before the import: as of its opening, through the compaction.
        assert len(reader) == 0 and reader.beliefs() == []
    finally:
        reader.close()
    after = oms.GrainStore(store, read_only=True)
    try:
        assert len(after) == 500 and len(after.beliefs()) == 500
    finally:
        after.close()


def _schema_org() -> Path:
    pyshacl = pytest.importorskip("pyshacl")
    path = Path(pyshacl.__file__).parent / "assets" / "schema.ttl"
    if not path.exists():
        pytest.skip("pyshacl ships no copy of schema.org here")
    return path


@pytest.mark.soak
def test_cli_beliefs_beside_a_schema_org_import(tmp_path: Path) -> None:
    """The probe's case: `oms-rdf import schema.ttl`, `oms-rdf beliefs` beside it."""
    cli = [sys.executable, "-m", "oms_rdf", "--store", str(tmp_path / "store")]
    importing = subprocess.Popen(
        [*cli, "import", str(_schema_org())], stdout=subprocess.PIPE, text=True
    )
    mark = tmp_path / "store" / BULK_MARK
    deadline = time.monotonic() + 60
    while not mark.exists():  # the import holds the store: readers go read-only
        assert time.monotonic() < deadline and importing.poll() is None
        time.sleep(0.05)
    outcomes = []
    while True:
        last = importing.poll() is not None
        reader = subprocess.run(
            [*cli, "beliefs", "--json"], capture_output=True, text=True,
            preexec_fn=_limit_memory, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        if reader.returncode == 0:
            outcomes.append(("read", len(json.loads(reader.stdout or "[]"))))
        else:
            outcomes.append(("refused", reader.returncode, reader.stderr.strip()))
        if last:
            break
    out, _ = importing.communicate()
    added = int(out.split("imported ")[1].split()[0])
    for outcome in outcomes:
        if outcome[0] == "read":
            assert outcome[1] in (0, added), outcome
        else:  # exit 1 with the clear error, never a crash or ERR_NOT_FOUND
            assert outcome[1] == 1 and "error: ERR_CONFLICT" in outcome[2], outcome
    assert ("read", added) == outcomes[-1]
    assert any(o[0] == "refused" for o in outcomes), outcomes
