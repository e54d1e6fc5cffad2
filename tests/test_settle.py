"""A large write leaves memory settled: an on-disk store's write buffers are in
its files, and the heap the write freed is back with the system."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

import oms_rdf as oms
from oms_rdf.backends.heap import give_back
from oms_rdf.store import core

T0 = 1_737_000_000_000


def tabled(path: Path) -> int:
    """The bytes of RocksDB's table files, where a flush writes its buffers (the
    engine compacts them in the background, so their names come and go)."""
    for _ in range(100):
        try:
            return sum(p.stat().st_size for p in path.iterdir() if p.suffix == ".sst")
        except FileNotFoundError:  # compacted away between listing and reading
            continue
    raise AssertionError(f"the table files of {path} kept changing")


@pytest.mark.parametrize("write", ["transaction", "put_many"])
def test_a_large_write_on_disk_writes_its_buffers_to_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    monkeypatch.setattr(core, "SETTLE_AFTER", 200)  # rows: 30 beliefs are past it
    path = tmp_path / "store"
    store = oms.GrainStore(path, clock=lambda: T0)
    store.put(oms.Belief("zed", "likes", "tea", 0.5, created_at=T0))
    small = tabled(path)  # one belief: its rows are in the write-ahead log only
    beliefs = [oms.Belief(f"s{i}", "r", f"o{i}", 0.5, created_at=T0) for i in range(30)]
    if write == "transaction":
        with store.transaction() as tx:
            for belief in beliefs:
                tx.put(belief)
    else:
        store.put_many(beliefs)
    # 30 beliefs' blobs alone are over 3 kB; in memory they would add nothing.
    assert tabled(path) > small + 3_000, "the write's buffers are in memory only"
    assert store.count_beliefs() == 31
    store.close()
    assert len(oms.GrainStore(path).beliefs("s29")) == 1


def test_the_heap_goes_back_where_the_c_library_can_give_it() -> None:
    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert give_back() is glibc
