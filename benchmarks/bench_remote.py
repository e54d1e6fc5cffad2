"""The store on an Oxigraph server, against the server's own load and plain HTTP.

Run: python -m benchmarks.bench_remote [N]   (default 100000 beliefs)

Baselines, measured in the same run on the same machine (loopback):
- the server's own load: one Graph Store ``POST`` of the N-Quads of the same grains
  into an empty server, which ``put_many`` is compared with;
- a hand-written ``SELECT`` of one subject's current beliefs over HTTP, which
  ``beliefs(subject)`` is compared with.
"""

from __future__ import annotations

import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

import oms_rdf as oms
from benchmarks.data import beliefs
from tests.servers import start_oxigraph


def median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000


def main(n: int = 100_000) -> None:
    root = Path(tempfile.mkdtemp(prefix="oms-remote-"))
    servers = []
    try:
        data = beliefs(n)
        local = oms.GrainStore()
        local.put_many(data)
        dump = io.BytesIO()
        local.export(dump, format="nquads")

        server, raw_base = start_oxigraph(root / "raw")
        servers.append(server)
        start = time.perf_counter()
        httpx.post(f"{raw_base}/store", content=dump.getvalue(),
                   headers={"content-type": "application/n-quads"}, timeout=3600)  # fmt: skip
        raw_load = time.perf_counter() - start

        server, base = start_oxigraph(root / "ours")
        servers.append(server)
        store = oms.GrainStore(backend=oms.SparqlBackend.oxigraph(base))
        start = time.perf_counter()
        store.put_many(data)
        put_many = time.perf_counter() - start

        puts = []
        for i in range(100):
            grain = oms.Belief(f"extra{i}", "r", "o", 0.5, created_at=i)
            start = time.perf_counter()
            store.put(grain)
            puts.append(time.perf_counter() - start)
        supersedes = []
        for i in range(100):
            old = store.beliefs(f"extra{i}")[0]
            start = time.perf_counter()
            store.supersede(
                old, {**old.to_dict(), "object": "p", "created_at": 1000 + i}
            )
            supersedes.append(time.perf_counter() - start)
        subjects = sorted({d["subject"] for d in data})[:200]
        lookups, by_hand = [], []
        client = httpx.Client()
        for subject in subjects:
            start = time.perf_counter()
            store.beliefs(subject)
            lookups.append(time.perf_counter() - start)
            query = (
                "PREFIX oms: <https://w3id.org/oms-rdf/ns#> SELECT ?g WHERE { ?g oms:subjectText "
                f'"{subject}" . FILTER NOT EXISTS {{ GRAPH oms:index {{ ?g oms:systemTo ?t }} }} }}'
            )
            start = time.perf_counter()
            client.post(f"{base}/query", content=query.encode(),
                        headers={"content-type": "application/sparql-query",
                                 "accept": "application/sparql-results+json"})  # fmt: skip
            by_hand.append(time.perf_counter() - start)
        client.close()
        start = time.perf_counter()
        answer = store.query(
            "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", valid_at="2024-01-01"
        )
        list(answer)
        travel = time.perf_counter() - start
        start = time.perf_counter()
        store.export(io.BytesIO(), format="nquads")
        export = time.perf_counter() - start
        store.close()
        print(f"Oxigraph server on loopback, {n:,} beliefs")
        print(
            f"  put_many            {put_many:8.1f} s   {put_many / raw_load:5.2f}x the server's own load ({raw_load:.1f} s)"
        )
        print(f"  put                 {median_ms(puts):8.1f} ms median")
        print(f"  supersede           {median_ms(supersedes):8.1f} ms median")
        print(f"  beliefs(subject)    {median_ms(lookups):8.1f} ms median   "
              f"{median_ms(lookups) / median_ms(by_hand):5.2f}x a hand-written SELECT ({median_ms(by_hand):.1f} ms)")  # fmt: skip
        print(f"  time-travel query   {travel:8.1f} s")
        print(f"  export (N-Quads)    {export:8.1f} s")
    finally:
        for server in servers:
            server.terminate()
            server.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
