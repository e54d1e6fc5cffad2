"""SPARQL Update against importing the same triples, and against raw pyoxigraph.

For N triples (N subjects, a name and an employer each, as IRIs and literals),
in the same run and process, each on a fresh in-memory store:

- ``INSERT DATA`` of the N triples through ``GrainStore.update``;
- ``GrainStore.import_`` of the same triples as N-Triples (the baseline: the
  update's target is at most 2x this);
- ``pyoxigraph.Store.update`` of the same ``INSERT DATA`` (no beliefs at all);
- ``DELETE DATA`` of all N from a store holding them, beside ``retract_all`` of
  their beliefs (the target for both update forms: at most 2x the import).

Run: python -m benchmarks.bench_update [N ...]   (default 1000 10000)
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable

import pyoxigraph as ox

import oms_rdf as oms

EX = "http://example.org/"
CLOCK = 1_700_000_000_000


def triples(n: int) -> list[str]:
    """N-Triples lines, half IRI objects and half literals."""
    lines = []
    for i in range(n):
        if i % 2:
            lines.append(f"<{EX}p{i}> <{EX}worksAt> <{EX}org{i % 97}> .")
        else:
            lines.append(f'<{EX}p{i}> <{EX}name> "Person {i}"@en .')
    return lines


def best(fn: Callable[[], object], rounds: int = 3) -> float:
    """The fastest of a few runs (each on its own fresh state)."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run(n: int) -> dict[str, float]:
    lines = triples(n)
    data = "\n".join(lines).encode()
    insert = "INSERT DATA {\n" + "\n".join(lines) + "\n}"
    delete = "DELETE DATA {\n" + "\n".join(lines) + "\n}"

    def update() -> None:
        report = oms.GrainStore(clock=lambda: CLOCK).update(insert)
        assert report.added == n, report

    def import_() -> None:
        report = oms.GrainStore(clock=lambda: CLOCK).import_(
            io.BytesIO(data), format="ntriples"
        )
        assert report.added == n, report

    def raw() -> None:
        ox.Store().update(insert)

    def held() -> oms.GrainStore:
        store = oms.GrainStore(clock=lambda: CLOCK + 1)
        store.import_(io.BytesIO(data), format="ntriples")
        return store

    def timed_on_held(fn: Callable[[oms.GrainStore], object]) -> float:
        times = []
        for _ in range(3):
            store = held()
            start = time.perf_counter()
            fn(store)
            times.append(time.perf_counter() - start)
        return min(times)

    return {
        "update": best(update),
        "import": best(import_),
        "raw": best(raw),
        "delete": timed_on_held(lambda s: s.update(delete)),
        "retract_all": timed_on_held(
            lambda s: s.retract_all([g.address for g in s.beliefs()], reason="bench")
        ),
    }


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [1000, 10_000]
    for n in sizes:
        t = run(n)
        print(
            f"N={n:>7}: INSERT DATA {t['update']:7.3f} s | import {t['import']:7.3f} s "
            f"(update/import {t['update'] / t['import']:5.2f}x) | raw pyoxigraph "
            f"{t['raw']:7.3f} s (update/raw {t['update'] / t['raw']:7.1f}x)"
        )
        print(
            f"           DELETE DATA {t['delete']:7.3f} s | retract_all "
            f"{t['retract_all']:7.3f} s (delete/retract_all "
            f"{t['delete'] / t['retract_all']:5.2f}x, delete/import "
            f"{t['delete'] / t['import']:5.2f}x)"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
