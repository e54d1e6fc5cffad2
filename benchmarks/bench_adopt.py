"""Adoption of a published vocabulary against ``pyoxigraph.Store().load`` of the same file.

Run: python -m benchmarks.bench_adopt [--repeat 3] [--source FILE]

The source defaults to schema.org as pySHACL ships it (``pyshacl/assets/schema.ttl``,
about 24k triples). Each repeat, in this process, loads the file into a fresh
``pyoxigraph.Store`` (the baseline) and adopts it into a fresh ``GrainStore``
(every triple a belief), in memory and on disk. It prints medians, the ratio of
adoption to load of the same repeat, the quads the store holds per triple
adopted, and the bytes on disk of both stores after they are closed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import pyoxigraph as ox

import oms_rdf as oms


def schema_org() -> Path:
    """The schema.org Turtle that pySHACL ships."""
    import pyshacl

    return Path(pyshacl.__file__).parent / "assets" / "schema.ttl"


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _load(source: Path, path: Path | None) -> tuple[float, int]:
    store = ox.Store(None if path is None else str(path))
    start = time.perf_counter()
    store.load(path=str(source), format=ox.RdfFormat.TURTLE)
    if path is not None:
        store.flush()
    took = time.perf_counter() - start
    triples = len(store)
    del store
    return took, triples


def _adopt(source: Path, path: Path | None) -> tuple[float, int]:
    store = oms.GrainStore(path)
    start = time.perf_counter()
    store.import_(source)
    took = time.perf_counter() - start
    quads = sum(1 for _ in store.core.backend.quads())
    store.close()
    return took, quads


def measure(source: Path, repeat: int) -> dict[str, float]:
    """Medians over ``repeat`` runs; ratios are adoption over load of the same run."""
    runs: dict[str, list[float]] = {}
    triples = quads = 0
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="oms-adopt-") as tmp:
            folder = Path(tmp)
            load_mem, triples = _load(source, None)
            adopt_mem, quads = _adopt(source, None)
            load_disk, _ = _load(source, folder / "raw")
            adopt_disk, _ = _adopt(source, folder / "ours")
            row = {
                "load_memory_s": load_mem,
                "adopt_memory_s": adopt_mem,
                "ratio_memory": adopt_mem / load_mem,
                "load_disk_s": load_disk,
                "adopt_disk_s": adopt_disk,
                "ratio_disk": adopt_disk / load_disk,
                "raw_disk_bytes": _size(folder / "raw"),
                "our_disk_bytes": _size(folder / "ours"),
            }
            row["ratio_disk_bytes"] = row["our_disk_bytes"] / row["raw_disk_bytes"]
            for key, value in row.items():
                runs.setdefault(key, []).append(value)
    out = {key: statistics.median(values) for key, values in runs.items()}
    out["triples"] = triples
    out["quads"] = quads
    out["quads_per_triple"] = quads / triples
    return out


def main() -> None:
    """Print the medians as JSON, then one line per ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--source", type=Path, default=None)
    args = parser.parse_args()
    source = args.source or schema_org()
    result = measure(source, args.repeat)
    print(json.dumps(result, indent=1))
    print(
        f"adoption / Store().load: {result['ratio_memory']:.1f}x in memory, "
        f"{result['ratio_disk']:.1f}x on disk; {result['quads_per_triple']:.2f} "
        f"quads per triple; disk {result['ratio_disk_bytes']:.1f}x pyoxigraph's"
    )


if __name__ == "__main__":
    main()
