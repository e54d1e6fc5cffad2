"""SIGKILL at random points: every grain is wholly present or absent afterwards.

A child process runs a first ``put_many`` into an empty on-disk store (bulk
loader), supersessions, an import of JSON Lines and of N-Quads into the store
that now holds grains, and a second ``put_many``, in small chunks so that a kill
lands between chunks as often as inside one. The parent kills it with SIGKILL
after a random delay, opens the store (which undoes an interrupted write), and
checks it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.rdf.mapping import address_of
from oms_rdf.rdf.vocab import OMS, RDF
from oms_rdf.store.journal import JOURNAL

TRIALS = [6, pytest.param(24, marks=pytest.mark.soak)]  # kills: default tier, soak
WRITES = ("put_many", "supersede", "import jsonl", "import nquads", "put_many 2")
CHILD = """
import sys, oms_rdf as oms, oms_rdf.store.journal as journal
journal.CHUNK_ROWS = 400  # many chunks: many points between two of them
data, path = sys.argv[1], sys.argv[2]
store = oms.GrainStore(path)
def phase(name):
    print(name, flush=True)
batches = [[oms.Belief("s", "r", f"{b}-{i}", 0.5, created_at=i) for i in range(300)]
           for b in range(2)]
phase("put_many")
store.put_many(batches[0])
phase("supersede")
old = store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1))
store.supersede(old, oms.Belief("alice", "works_at", "Initech", 0.9, created_at=2))
phase("import jsonl")
store.import_(data + "/a.jsonl")
phase("import nquads")
store.import_(data + "/b.nq")
phase("put_many 2")
store.put_many(batches[1])
phase("done")
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sources")
    for name, fmt, subject in (("a.jsonl", "jsonl", "a"), ("b.nq", "nquads", "b")):
        source = oms.GrainStore()
        source.put_many(
            [oms.Belief(subject, "r", str(i), 0.5, created_at=i) for i in range(400)]
        )
        source.export(folder / name, format=fmt, grains=True)
    return folder


def addresses_in(path: Path) -> set[str]:
    """The grains an export holds (every format here has them in oms:blobs)."""
    found = set()
    if path.suffix == ".jsonl":
        for line in path.read_text().splitlines():
            found.add(oms.Grain.from_dict(json.loads(line)).address)  # no bytes fields
        return found
    for quad in ox.parse(path=str(path), format=ox.RdfFormat.N_QUADS):
        if quad.predicate == OMS.blob:
            found.add(address_of(quad.subject))  # type: ignore[arg-type]
    return found


def check(store: oms.GrainStore, groups: list[set[str]]) -> None:
    backend = store.backend
    assert next(backend.quads(JOURNAL, None, None, None), None) is None
    blobs = {
        address_of(q.subject) for q in backend.quads(None, OMS.blob, None, OMS.blobs)
    }  # type: ignore[arg-type]
    described = {
        address_of(q.subject)  # type: ignore[arg-type]
        for q in backend.quads(None, None, None, ox.DefaultGraph())
    }
    indexed = {
        address_of(q.subject)  # type: ignore[arg-type]
        for q in backend.quads(None, None, None, OMS.index)
        if q.subject.value.startswith("nih:")
    }
    # Wholly present or absent: fields and blob together, no index state for a ghost.
    assert described == blobs
    assert indexed <= blobs
    for address in blobs:
        assert next(backend.quads(None, RDF.type, None, ox.DefaultGraph()), None)
        store.get(address)  # the blob verifies
    for group in groups:  # each write is all or nothing
        assert len(group & blobs) in (0, len(group))
    # The knowledge layer is what the grains and the index make it.
    current = {str(q) for q in backend.quads(None, None, None, OMS.current)}
    store.rebuild_current()
    assert {str(q) for q in backend.quads(None, None, None, OMS.current)} == current
    store.beliefs("alice")
    store.history(next(iter(blobs))) if blobs else None


@pytest.mark.parametrize("trials", TRIALS)
def test_sigkill_at_random_points_leaves_every_write_whole_or_absent(
    data: Path, tmp_path: Path, trials: int
) -> None:
    rng = random.Random(20261201)
    groups = [
        {
            oms.Belief("s", "r", f"{b}-{i}", 0.5, created_at=i).address
            for i in range(300)
        }
        for b in range(2)
    ]
    groups += [addresses_in(data / "a.jsonl"), addresses_in(data / "b.nq")]
    phases: list[str] = []
    # Each trial waits for the child to begin one of its writes, then kills it a
    # random moment later: the kill points spread over every phase whatever the
    # machine's load (a time drawn from one timing run bunched them at the end).
    for trial in range(trials):
        path = tmp_path / f"store-{trial}"
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(data), str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert child.stdout is not None
        target, reached = WRITES[trial % len(WRITES)], []
        while (line := child.stdout.readline().decode().strip()) and line != target:
            reached.append(line)
        reached.append(line)
        time.sleep(rng.uniform(0.0, 0.3))
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate()
        reached += out.decode().split("\n")
        phases.append([p for p in reached if p][-1] if any(reached) else "start")
        store = oms.GrainStore(path)
        try:
            check(store, groups)
        finally:
            store.close()
    # The kills landed in several phases, not all before or after the work.
    assert len(set(phases) - {"start", "done"}) >= 3, phases


VACUUM_CHILD = """
import sys, oms_rdf as oms
store = oms.GrainStore(sys.argv[1])
print("vacuum", flush=True)
store.vacuum()
print("done", flush=True)
"""


def vacuum_source(path: Path) -> tuple[set[str], str]:
    """A store with an erased grain: what it holds, and the erased text."""
    store = oms.GrainStore(path)
    store.put_many(
        [oms.Belief("s", "r", f"o{i}", 0.5, created_at=i) for i in range(3000)]
    )
    secret = "Quentin Erased-Person"
    store.erase(
        store.put(oms.Belief(secret, "r", "o", 0.5, created_at=1)), reason="request"
    )
    kept = {
        address_of(q.subject)
        for q in store.backend.quads(None, OMS.blob, None, OMS.blobs)
    }  # type: ignore[arg-type]
    store.close()
    return kept, secret


def check_vacuumed_or_not(path: Path, kept: set[str]) -> None:
    """The store opens whole, old or new: the same grains, a good audit chain."""
    store = oms.GrainStore(path)
    try:
        blobs = {
            address_of(q.subject)
            for q in store.backend.quads(None, OMS.blob, None, OMS.blobs)
        }  # type: ignore[arg-type]
        assert blobs == kept
        assert store.verify_audit().ok
        assert len(store.beliefs("s")) == 3000
    finally:
        store.close()
    leftovers = [
        p.name for p in path.parent.iterdir() if p.name.startswith(path.name + ".")
    ]
    assert leftovers == []


@pytest.mark.parametrize("stage", ["copying", "ready", "old moved", "new moved"])
def test_a_vacuum_interrupted_at_each_stage_leaves_old_or_new(
    tmp_path: Path, stage: str
) -> None:
    import shutil

    path = tmp_path / "store"
    kept, secret = vacuum_source(path)
    staging, ready = (
        path.with_name("store.vacuum"),
        path.with_name("store.vacuum-ready"),
    )
    copy = oms.GrainStore(staging)  # what the vacuum writes: a fresh copy
    copy.backend.store.bulk_extend(oms.GrainStore(path, read_only=True).backend.store)
    copy.close()
    if stage != "copying":
        ready.write_bytes(b"")
    if stage in ("old moved", "new moved"):
        path.rename(path.with_name("store.vacuum-old"))
    if stage == "new moved":
        staging.rename(path)
    check_vacuumed_or_not(path, kept)
    files = [
        f for f in path.rglob("*") if f.is_file() and secret.encode() in f.read_bytes()
    ]
    assert bool(files) == (stage == "copying")  # the old store still has the bytes
    shutil.rmtree(path)


@pytest.mark.parametrize("stage", ["copying", "ready"])
def test_a_second_opener_leaves_a_running_vacuum_alone(
    tmp_path: Path, stage: str
) -> None:
    """Any process opening a store (a CLI read tries a writable open first) used
    to finish a vacuum it found half made before RocksDB refused it: it deleted
    the owner's copy, or swapped the folders under the owner, whose later writes
    then left a store no one could open."""
    path = tmp_path / "store"
    kept, _secret = vacuum_source(path)
    owner = oms.GrainStore(path)
    staging = path.with_name("store.vacuum")  # the owner's vacuum, under way
    copy = ox.Store(str(staging))
    copy.bulk_extend(owner.backend.store)
    copy.flush()
    del copy
    if stage == "ready":
        path.with_name("store.vacuum-ready").write_bytes(b"")
    other = subprocess.run(
        [sys.executable, "-m", "oms_rdf", "--store", str(path), "beliefs", "--jsonl"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "another process holds this store" in other.stderr, other.stderr
    assert staging.is_dir()  # untouched: the vacuum is the owner's
    assert path.with_name("store.vacuum-ready").exists() == (stage == "ready")
    added = owner.put(oms.Belief("t", "r", "late", 0.5, created_at=5000))
    owner.close()
    shutil.rmtree(staging)  # as the owner's vacuum would have had it, had it failed
    path.with_name("store.vacuum-ready").unlink(missing_ok=True)
    check_vacuumed_or_not(path, kept | {added})


def test_a_forked_child_leaves_its_parents_writer_lock(tmp_path: Path) -> None:
    """The child's copy of the store removed the lock file when it closed (or at
    its exit): a second process could then take the lock, and finish a vacuum
    of the parent's that was still running."""
    path = tmp_path / "store"
    store = oms.GrainStore(path)
    store.put(oms.Belief("ann", "works_at", "Acme", 0.9, created_at=1))
    child = os.fork()
    if child == 0:  # pragma: no cover - the child only lets go of its copy
        try:  # what its close() or its exit runs (a flush here would wait on
            store.backend._release()  # a RocksDB mutex a parent thread held)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    assert path.with_name("store.lock").exists()
    other = subprocess.run(
        [sys.executable, "-c", f"import oms_rdf as oms; oms.GrainStore({str(path)!r})"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert other.returncode != 0 and "another process has it open" in other.stderr
    store.put(oms.Belief("bo", "works_at", "Acme", 0.9, created_at=2))
    store.close()
    assert not path.with_name("store.lock").exists()


@pytest.mark.parametrize("kills", [3, pytest.param(8, marks=pytest.mark.soak)])
def test_sigkill_during_vacuum_leaves_old_or_new(tmp_path: Path, kills: int) -> None:
    import shutil

    rng = random.Random(7)
    source = tmp_path / "source"
    kept, _secret = vacuum_source(source)
    start = time.monotonic()
    trial = tmp_path / "timing"
    shutil.copytree(source, trial)
    subprocess.run(
        [sys.executable, "-c", VACUUM_CHILD, str(trial)],
        check=True,
        capture_output=True,
    )
    span = time.monotonic() - start
    for n in range(kills):
        path = tmp_path / f"vacuum-{n}"
        shutil.copytree(source, path)
        child = subprocess.Popen([sys.executable, "-c", VACUUM_CHILD, str(path)],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
        time.sleep(rng.uniform(0.2, 1.0) * span)
        child.send_signal(signal.SIGKILL)
        child.communicate()
        check_vacuumed_or_not(path, kept)


def test_a_second_store_object_in_the_same_process_is_told_so(tmp_path: Path) -> None:
    """It was told that another process had the store open."""
    path = tmp_path / "store"
    first = oms.GrainStore(path)
    with pytest.raises(oms.StoreError) as info:
        oms.GrainStore(path)
    assert "this process has it open" in str(info.value)
    assert "another process" not in str(info.value)
    first.close()
    oms.GrainStore(path).close()  # once closed, it opens again
