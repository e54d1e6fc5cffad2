"""Two processes racing to supersede the same grains on one Oxigraph server.

Run: python -m benchmarks.bench_remote_race [ROUNDS]   (default 200)

Each round a fresh grain is superseded by both clients at once. The store takes
its write lock (store/writelock.py) and re-checks, inside its own update, that the
grain is still current and that the audit chain's head is the one it links to.
The probe counts rounds that both clients won: it must be zero. (Without the lock,
Oxigraph server's snapshot updates let 15 to 49 rounds of 200 have two winners.)
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import oms_rdf as oms
from tests.servers import race, start_oxigraph


def main(rounds: int = 200) -> None:
    folder = tempfile.mkdtemp(prefix="oms-race-")
    server, base = start_oxigraph(Path(folder))
    try:
        store = oms.GrainStore(backend=oms.SparqlBackend.oxigraph(base))
        heads = store.put_many(
            [
                oms.Belief(f"race{i}", "r", "first", 0.9, created_at=1)
                for i in range(rounds)
            ]
        )
        outcomes = race("oxigraph", base, heads)
        both = sum(all(len(o[i]) == 64 for o in outcomes) for i in range(rounds))
        successors = sum(
            1
            for q in store.backend.quads(
                None, oms.rdf.vocab.OMS.supersededBy, None, None
            )
        )
        print(f"{rounds} rounds, 2 clients: both won {both} rounds; "
              f"{successors} successors recorded for {rounds} grains; "
              f"audit chain ok: {store.verify_audit().ok}")  # fmt: skip
        store.close()
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
