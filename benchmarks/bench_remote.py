"""The store on a SPARQL server, against the server's own load and plain HTTP.

Run: python -m benchmarks.bench_remote [N] [KIND ...]
     (default 100000 beliefs; kinds: embedded, oxigraph, virtuoso; default all)

Baselines, measured in the same run on the same machine (loopback):
- the server's own load of the same quads, which ``put_many`` is compared with:
  Oxigraph, one Graph Store ``POST`` of N-Quads over HTTP;
  embedded, pyoxigraph's own ``Store.load`` of the N-Quads; Virtuoso, its bulk
  loader (``ld_dir``, ``rdf_loader_run``) on the same N-Quads file, and the same
  quads sent as plain ``INSERT DATA`` requests over HTTP (its load over HTTP);
- a hand-written ``SELECT`` of one subject's current beliefs, sent as a plain
  HTTP request (embedded: asked of pyoxigraph), which ``beliefs(subject)`` is
  compared with.
"""

from __future__ import annotations

import io
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pyoxigraph as ox

import oms_rdf as oms
from benchmarks.data import beliefs
from oms_rdf.backends.virtuoso import DATA_QUADS
from tests.servers import (
    VIRTUOSO_PASSWORD,
    VIRTUOSO_USER,
    start_oxigraph,
    start_virtuoso,
    virtuoso_backend,
)

KINDS = ("embedded", "oxigraph", "virtuoso")


def median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000


def hand_query(subject: str) -> str:
    return (
        "PREFIX oms: <https://w3id.org/oms-rdf/ns#> SELECT ?g WHERE { ?g oms:subjectText "
        f'"{subject}" . FILTER NOT EXISTS {{ GRAPH oms:index {{ ?g oms:systemTo ?t }} }} }}'
    )


class Target:
    """One kind of store: how to start it, load it natively, and ask it by hand."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind, self.root, self.servers = kind, root, []

    def start(self, name: str) -> str:
        starter = start_oxigraph if self.kind == "oxigraph" else start_virtuoso
        (self.root / name).mkdir()
        server, base = starter(self.root / name)
        self.servers.append(server)
        return base

    def store(self) -> oms.GrainStore:
        if self.kind == "embedded":
            return oms.GrainStore()
        base = self.start("ours")
        self.base = base
        if self.kind == "oxigraph":
            return oms.GrainStore(backend=oms.SparqlBackend.oxigraph(base))
        backend = virtuoso_backend(base)
        return oms.GrainStore(backend=backend)

    def native_load(self, nquads: bytes) -> float:
        """Seconds the server's own load of these quads takes (into a fresh one)."""
        if self.kind == "embedded":
            start = time.perf_counter()
            ox.Store().load(nquads, ox.RdfFormat.N_QUADS)
            return time.perf_counter() - start
        base = self.start("raw")
        start = time.perf_counter()
        if self.kind == "oxigraph":
            httpx.post(f"{base}/store", content=nquads,
                       headers={"content-type": "application/n-quads"}, timeout=7200)  # fmt: skip
            return time.perf_counter() - start
        # Virtuoso's own bulk loader (ld_dir, rdf_loader_run), as its operators
        # load large files: its Graph Store POST of a graph this size stalls on
        # lock waits.
        folder = self.root / "raw"
        (folder / "load").mkdir()
        (folder / "load" / "all.nq").write_bytes(nquads)
        sql = re.findall(
            r"ServerPort = 127.0.0.1:(\d+)", (folder / "virtuoso.ini").read_text()
        )[0]
        grains = oms.rdf.vocab.OMS.grains.value
        script = (f"ld_dir('{folder / 'load'}', '*.nq', '{grains}'); "
                  "rdf_loader_run(); checkpoint;")  # fmt: skip
        start = time.perf_counter()
        subprocess.run(["isql-vt", f"127.0.0.1:{sql}", "dba", "dba", f"exec={script}"],
                       check=True, capture_output=True, timeout=7200)  # fmt: skip
        elapsed = time.perf_counter() - start
        loaded = len(virtuoso_backend(base))
        assert loaded >= nquads.count(b"\n"), f"the loader took {loaded} quads"
        return elapsed

    def update_load(self, nquads: bytes) -> float | None:
        """Virtuoso: seconds to send the same quads over plain HTTP as SPARQL
        updates (``INSERT DATA`` of ``DATA_QUADS``, the most one request takes),
        into a fresh server: its own load over HTTP, since its Graph Store ``POST``
        of a graph this size stalls. None for the other kinds, whose Graph Store
        load is the baseline already."""
        if self.kind != "virtuoso":
            return None
        base = self.start("updates")
        client = httpx.Client(auth=httpx.DigestAuth(VIRTUOSO_USER, VIRTUOSO_PASSWORD),
                              timeout=600)  # fmt: skip
        grains = oms.rdf.vocab.OMS.grains
        quads = [
            q if q.graph_name != ox.DefaultGraph() else ox.Quad(q.subject, q.predicate, q.object, grains)
            for q in ox.parse(nquads, ox.RdfFormat.N_QUADS)
        ]  # fmt: skip
        start = time.perf_counter()
        for at in range(0, len(quads), DATA_QUADS):
            body = " ".join(f"GRAPH {q.graph_name} {{ {q.subject} {q.predicate} {q.object} }}"
                            for q in quads[at : at + DATA_QUADS])  # fmt: skip
            client.post(
                f"{base}/sparql-auth",
                content=f"DEFINE sql:big-data-const 1\nINSERT DATA {{ {body} }}".encode(),
                headers={"content-type": "application/sparql-update"},
            ).raise_for_status()
        elapsed = time.perf_counter() - start
        loaded = len(virtuoso_backend(base))
        assert loaded >= len(quads), f"the updates left {loaded} quads"
        return elapsed

    def asker(self, store: oms.GrainStore) -> Callable[[str], Any]:
        """A hand-written query, sent the plainest way this kind allows."""
        if self.kind == "embedded":
            return lambda text: list(store.backend.query(text))
        digest = httpx.DigestAuth(VIRTUOSO_USER, VIRTUOSO_PASSWORD)
        client = httpx.Client(auth=digest if self.kind == "virtuoso" else None)
        accept = {"accept": "application/sparql-results+json"}
        if self.kind == "oxigraph":
            return lambda text: client.post(
                f"{self.base}/query", content=text.encode(),
                headers={"content-type": "application/sparql-query", **accept},
            )  # fmt: skip
        grains = oms.rdf.vocab.OMS.grains.value
        return lambda text: client.post(
            f"{self.base}/sparql-auth", headers=accept,
            data={"query": text, "default-graph-uri": grains,
                  "named-graph-uri": oms.rdf.vocab.OMS.index.value},
        )  # fmt: skip

    def stop(self) -> None:
        for server in self.servers:
            server.terminate()
            server.wait()


def run(kind: str, n: int, data: list[Any], nquads: bytes) -> None:
    root = Path(tempfile.mkdtemp(prefix=f"oms-{kind}-"))
    target = Target(kind, root)
    try:
        raw_load = target.native_load(nquads)
        update_load = target.update_load(nquads)
        store = target.store()
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
        ask = target.asker(store)
        lookups, by_hand = [], []
        for subject in subjects:
            start = time.perf_counter()
            store.beliefs(subject)
            lookups.append(time.perf_counter() - start)
            start = time.perf_counter()
            ask(hand_query(subject))
            by_hand.append(time.perf_counter() - start)
        times = sorted(d["created_at"] for d in data)  # a point inside the story
        middle = times[len(times) // 2]
        start = time.perf_counter()
        counted = store.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
                              valid_at=middle, as_of=middle)  # fmt: skip
        assert int(next(iter(counted))["n"].value) > 0
        travel = time.perf_counter() - start
        start = time.perf_counter()
        store.search("nothing at all")  # builds the client's index
        first_search = time.perf_counter() - start
        searches = []
        for subject in subjects[:100]:
            start = time.perf_counter()
            assert store.search(subject)
            searches.append(time.perf_counter() - start)
        start = time.perf_counter()
        store.export(io.BytesIO(), format="nquads")
        export = time.perf_counter() - start
        store.close()
        print(f"{kind}, {n:,} beliefs (loopback)")
        print(f"  put_many            {put_many:8.1f} s    {put_many / raw_load:5.2f}x the native load ({raw_load:.1f} s)")  # fmt: skip
        if update_load is not None:
            print(f"                                  {put_many / update_load:5.2f}x the same quads "
                  f"as plain INSERT DATA over HTTP ({update_load:.1f} s)")  # fmt: skip
        print(f"  put                 {median_ms(puts):8.2f} ms median")
        print(f"  supersede           {median_ms(supersedes):8.2f} ms median")
        print(f"  beliefs(subject)    {median_ms(lookups):8.2f} ms median  "
              f"{median_ms(lookups) / median_ms(by_hand):5.2f}x a hand-written SELECT ({median_ms(by_hand):.2f} ms)")  # fmt: skip
        print(f"  time-travel query   {travel:8.1f} s")
        print(f"  search              {median_ms(searches):8.2f} ms median, "
              f"the first {first_search:.1f} s (builds the index)")  # fmt: skip
        print(f"  export (N-Quads)    {export:8.1f} s", flush=True)
    finally:
        target.stop()
        shutil.rmtree(root, ignore_errors=True)


def main(n: int = 100_000, kinds: tuple[str, ...] = KINDS) -> None:
    data = beliefs(n)
    local = oms.GrainStore()
    local.put_many(data)
    dump = io.BytesIO()
    local.export(dump, format="nquads")
    for kind in kinds:
        run(kind, n, data, dump.getvalue())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000,
         tuple(sys.argv[2:]) or KINDS)  # fmt: skip
