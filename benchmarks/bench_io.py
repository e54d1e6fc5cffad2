"""Export and import against pyoxigraph's raw dump/load of the same quads.

Run: python -m benchmarks.bench_io [N]
     python -m benchmarks.bench_io --make-file big.nq N   (an N-grain N-Quads export)
     python -m benchmarks.bench_io --stream big.nq        (peak RSS of importing it,
                                                           in a fresh process)
"""

from __future__ import annotations

import io
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pyoxigraph as ox

import oms_rdf as oms
from benchmarks.data import beliefs


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(n: int) -> None:
    store = oms.GrainStore()
    store.put_many(oms.Grain.from_dict(d) for d in beliefs(n))
    print(f"N={n} grains, {len(store.backend)} quads")
    for fmt, rdf in (("trig", ox.RdfFormat.TRIG), ("nquads", ox.RdfFormat.N_QUADS)):
        ours_out, raw_out = io.BytesIO(), io.BytesIO()
        export_s = timed(partial(store.export, ours_out, format=fmt))
        dump_s = timed(partial(store.backend.store.dump, raw_out, rdf))
        data = ours_out.getvalue()
        import_s = timed(
            partial(oms.GrainStore().import_, io.BytesIO(data), format=fmt)
        )
        load_s = timed(partial(ox.Store().load, data, format=rdf))
        print(f"{fmt:7} export {export_s:6.2f} s vs dump {dump_s:6.2f} s: {export_s / dump_s:5.2f}x   "
              f"import {import_s:6.2f} s vs load {load_s:6.2f} s: {import_s / load_s:5.2f}x")  # fmt: skip
    for fmt in ("mg", "jsonl", "turtle"):
        out = io.BytesIO()
        export_s = timed(partial(store.export, out, format=fmt))
        data = out.getvalue()
        import_s = timed(
            partial(oms.GrainStore().import_, io.BytesIO(data), format=fmt)
        )
        print(
            f"{fmt:7} export {export_s:6.2f} s   import {import_s:6.2f} s   ({len(data) / 1e6:.0f} MB)"
        )


def make_file(path: Path, n: int) -> None:
    """Write an N-Quads export of n grains, built in batches of 50k."""
    batch = 50_000
    with open(path, "wb") as out:
        for start in range(0, n, batch):
            part = oms.GrainStore()
            part.put_many(
                oms.Grain.from_dict(d)
                for d in beliefs(min(batch, n - start), seed=start)
            )
            part.export(out, format="nquads")


def stream(path: Path) -> None:
    """Import a file into an on-disk store that already holds a grain (so the
    streaming two-pass path runs) and report the peak RSS of this process."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tmp = Path(tempfile.mkdtemp(prefix="oms-stream-"))
    target = oms.GrainStore(tmp / "store")
    target.put(oms.Belief("seed", "is", "here", 1.0, created_at=0))
    seconds = timed(lambda: target.import_(path, format="nquads"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    size = path.stat().st_size
    print(f"streaming import of {size / 1e9:.2f} GB into an on-disk store: {seconds:.0f} s, "
          f"peak RSS {peak / 1e6:.0f} MB (at start {before / 1e6:.0f} MB)")  # fmt: skip


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--make-file" in sys.argv:
        make_file(Path(args[0]), int(args[1]))
    elif "--stream" in sys.argv:
        stream(Path(args[0]))
    else:
        main(int(args[0]) if args else 100_000)
