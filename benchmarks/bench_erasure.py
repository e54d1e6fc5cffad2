"""Erasure and vacuum on an on-disk store, against a raw dump and load of the same store.

Run: python -m benchmarks.bench_erasure [N]   (default 100000 beliefs)

The baseline is what any rewrite of the store must at least do: pyoxigraph's own
dump of every quad to N-Quads and its bulk load into a fresh on-disk store, in
the same run. ``vacuum()`` is that rewrite plus the crash-safe swap.
"""

from __future__ import annotations

import io
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyoxigraph as ox

import oms_rdf as oms
from benchmarks.data import beliefs

PERSON = "Person Under Erasure"


def main(n: int = 100_000) -> None:
    root = Path(tempfile.mkdtemp(prefix="oms-erasure-"))
    try:
        path = root / "store"
        store = oms.GrainStore(path)
        store.put_many(oms.Grain.from_dict(d) for d in beliefs(n))
        mentions = [
            oms.Belief(
                PERSON,
                "lives_in",
                f"city {i}",
                0.8,
                created_at=i,
                namespace=f"ns{i % 3}",
            )
            for i in range(20)
        ] + [
            oms.Belief(f"colleague {i}", "knows", PERSON, 0.7, created_at=i)
            for i in range(20)
        ]
        store.put_many(mentions)
        store.flush()
        quads = len(store.backend)

        start = time.perf_counter()
        report = store.subject_report(PERSON)
        reported = time.perf_counter() - start
        start = time.perf_counter()
        erased = store.erase_subject(PERSON, reason="benchmark")
        erasing = time.perf_counter() - start
        assert len(report.grains) == len(erased.erased) == 40

        # Baseline: a raw dump of every quad and a bulk load into a fresh store.
        start = time.perf_counter()
        buffer = io.BytesIO()
        store.backend.store.dump(buffer, ox.RdfFormat.N_QUADS)
        fresh = ox.Store(str(root / "raw"))
        fresh.bulk_load(buffer.getvalue(), ox.RdfFormat.N_QUADS)
        fresh.flush()
        del fresh
        raw = time.perf_counter() - start

        start = time.perf_counter()
        store.vacuum()
        vacuuming = time.perf_counter() - start
        store.close()
        print(
            f"on-disk store of {n:,} beliefs ({quads:,} quads); 40 grains name the person"
        )
        print(f"  subject_report          {reported * 1000:8.0f} ms")
        print(
            f"  erase_subject           {erasing * 1000:8.0f} ms  ({erasing / raw:.2f}x raw dump+load)"
        )
        print(
            f"  vacuum                  {vacuuming * 1000:8.0f} ms  ({vacuuming / raw:.2f}x raw dump+load)"
        )
        print(f"  raw dump + bulk load    {raw * 1000:8.0f} ms  (baseline)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
