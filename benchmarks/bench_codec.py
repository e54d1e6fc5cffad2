"""Codec throughput against the physical floor: msgpack.packb + sha256 on ready dicts.

Run: python -m benchmarks.bench_codec [N]
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import time
from collections.abc import Callable

import msgpack

import oms_rdf as oms
from benchmarks.data import beliefs
from oms_rdf.codec import _compact, encode_fields
from oms_rdf.schema import BELIEF


def median_seconds(fn: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(n: int = 100_000) -> None:
    data = beliefs(n)
    # Baseline input: payloads already compacted and sorted, ready for packb.
    ready = [_compact(encode_fields(d)[1], BELIEF.table) for d in data]
    blobs = [oms.encode(d) for d in data]
    payloads = [b[9:] for b in blobs]

    def base_encode() -> None:
        for w in ready:
            hashlib.sha256(msgpack.packb(w, use_bin_type=True)).hexdigest()

    def ours_encode() -> None:
        for d in data:
            oms.content_address(oms.encode(d))

    def base_decode() -> None:
        for p in payloads:
            msgpack.unpackb(p, raw=False)
            hashlib.sha256(p).hexdigest()

    def ours_decode() -> None:
        for b in blobs:
            oms.decode(b)
            oms.content_address(b)

    rows = [
        ("encode + content_address", base_encode, ours_encode),
        ("decode + address", base_decode, ours_decode),
    ]
    print(f"{'path':28} {'baseline s':>11} {'ours s':>9} {'ratio':>6}   (N={n})")
    for name, base, ours in rows:
        b, o = median_seconds(base), median_seconds(ours)
        print(f"{name:28} {b:11.3f} {o:9.3f} {o / b:6.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
