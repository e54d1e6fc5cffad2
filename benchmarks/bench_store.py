"""Store throughput: put_many against pyoxigraph loading the same quads as N-Quads.

Run: python -m benchmarks.bench_store [N]
"""

from __future__ import annotations

import statistics
import sys
import time

import pyoxigraph as ox

import oms_rdf as oms
from benchmarks.data import beliefs


def main(n: int = 100_000) -> None:
    grains = [oms.Grain.from_dict(d) for d in beliefs(n)]
    store = oms.GrainStore()
    start = time.perf_counter()
    store.put_many(grains)
    ours = time.perf_counter() - start
    nquads = ox.serialize(store.backend.quads(), format=ox.RdfFormat.N_QUADS)
    start = time.perf_counter()
    ox.Store().load(nquads, format=ox.RdfFormat.N_QUADS)
    base = time.perf_counter() - start
    print(f"put_many {n}: {ours:.2f}s; Store.load of the same {len(store.backend)} quads: "
          f"{base:.2f}s; ratio {ours / base:.2f}x")  # fmt: skip
    subjects = sorted({g["subject"] for g in grains})[:200]
    for name, fn in (
        ("beliefs(subject)", lambda s: store.beliefs(s)),
        (
            "point query (valid_at, as_of)",
            lambda s: store.beliefs(
                s,
                valid_at=1_735_689_600_000 + 10**9,
                as_of=1_735_689_600_000 + 2 * 10**9,
            ),
        ),
        (
            "history",
            lambda s: store.history(store.beliefs(s)[0]) if store.beliefs(s) else None,
        ),
    ):
        times = []
        for s in subjects:
            t = time.perf_counter()
            fn(s)
            times.append(time.perf_counter() - t)
        print(f"{name}: median {statistics.median(times) * 1000:.2f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
