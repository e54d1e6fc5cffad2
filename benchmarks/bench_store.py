"""Store throughput and query latency, each against its baseline in the same run.

Run: python -m benchmarks.bench_store [N] [--disk]

- put_many: against pyoxigraph loading the same quads as N-Quads bytes
  (``Store().load`` in memory, ``Store(path).bulk_load`` on disk).
- beliefs(subject), a bi-temporal point query for one subject, history: medians.
- single put and supersede with the policy check on the loaded store: ops/s.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox

import oms_rdf as oms
from benchmarks.data import BASE_MS, beliefs


def median_ms(fn: Callable[[str], object], keys: list[str]) -> float:
    times = []
    for key in keys:
        start = time.perf_counter()
        fn(key)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main(n: int = 100_000, disk: bool = False) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="oms-bench-"))
    grains = [oms.Grain.from_dict(d) for d in beliefs(n)]
    store = oms.GrainStore(tmp / "ours" if disk else None)
    start = time.perf_counter()
    addresses = store.put_many(grains)
    ours = time.perf_counter() - start
    nquads = ox.serialize(store.backend.quads(), format=ox.RdfFormat.N_QUADS)
    start = time.perf_counter()
    if disk:
        ox.Store(str(tmp / "base")).bulk_load(nquads, format=ox.RdfFormat.N_QUADS)
        base_name = "Store(path).bulk_load"
    else:
        ox.Store().load(nquads, format=ox.RdfFormat.N_QUADS)
        base_name = "Store().load"
    base = time.perf_counter() - start
    where = "on disk" if disk else "in memory"
    print(f"N={n} beliefs, {where}, {len(store.backend)} quads")
    print(
        f"put_many            {ours:8.2f} s   {base_name} {base:.2f} s   ratio {ours / base:.2f}x"
    )

    subjects = sorted({g["subject"] for g in grains})[:300]
    mid = BASE_MS + n * 30_000
    rows = [
        ("beliefs(subject)", lambda s: store.beliefs(s)),
        (
            "bi-temporal point",
            lambda s: store.beliefs(s, valid_at=mid - 10**9, as_of=mid),
        ),
    ]
    for name, fn in rows:
        print(f"{name:19} median {median_ms(fn, subjects):.2f} ms")
    print(f"{'history':19} median {median_ms(store.history, addresses[:300]):.2f} ms")

    count = 2000
    extra = beliefs(count, seed=99)
    start = time.perf_counter()
    for fields in extra:
        store.put({**fields, "created_at": fields["created_at"] + n * 60_000})
    put_rate = count / (time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(count):
        old = store.get(addresses[i])
        new = {**old.to_dict(), "object": "changed", "created_at": old.created_at + 1}
        new.pop("derived_from", None)
        store.supersede(old, new)
    supersede_rate = count / (time.perf_counter() - start)
    print(f"single put          {put_rate:8.0f} ops/s")
    print(f"supersede + policy  {supersede_rate:8.0f} ops/s")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(args[0]) if args else 100_000, disk="--disk" in sys.argv)
