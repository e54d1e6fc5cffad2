"""Writes and footprint against the closest peers, measured in the same run.

The peers are the ``bench`` extra (``pip install -e '.[bench]'``): oxilite (an
Oxigraph-compatible store on SQLite, here with its change log,
``set_versioning("log")``), Areev (an embedded OMS memory engine) and raw
pyoxigraph. Each side runs in a fresh subprocess, so its RSS and its disk are its
own; the parent prints every figure and the ratio ours / peer.

The workload: P people (default 20,000; ``OMS_BENCH_PEERS_PEOPLE`` scales it) with
three properties each (``worksAt``, ``inDept``, ``name``), 3P triples, loaded in
memory and on disk; then rounds that each supersede 20% of the triples (a new
employer, department or name; one transaction a round against oxilite's logged
``DELETE DATA``/``INSERT DATA``); one change in one transaction; the disk after the
load and after five rounds (open, and once reopened: pyoxigraph's compaction
leaves the files it replaced until the next opening); RSS at the end. One round
again in memory as oxilite is given it, one SPARQL Update request. Against Areev:
2P/3 beliefs written by ``put_many`` (``add_batch``), then a single write and
``latest(subject, relation)`` on disk. Then the count of current beliefs (``count_beliefs()`` and
``len(store)``) against the SPARQL COUNT each stands for; adoption of schema.org
(pyshacl's copy) against ``pyoxigraph.Store().load``, in memory and on disk; and
``put_many`` against the raw load of the quads it writes.

Run: .venv/bin/python -m benchmarks.bench_peers
     OMS_BENCH_PEERS_PEOPLE=2000 .venv/bin/python -m benchmarks.bench_peers   # quick
     .venv/bin/python -m benchmarks.bench_peers --json peers.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

EX = "http://example.org/"
PROPS = (f"{EX}worksAt", f"{EX}inDept", f"{EX}name")
T0 = 1_700_000_000_000
STEP = 86_400_000
ROUNDS, SHARE = 5, 0.2
COUNT_ALL = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
COUNT_GRAINS = (
    "PREFIX oms: <https://w3id.org/oms-rdf/ns#>\n"
    "SELECT (COUNT(*) AS ?n) WHERE { GRAPH oms:blobs { ?g oms:blob ?b } }"
)
COUNT_HELD = (
    "PREFIX oms: <https://w3id.org/oms-rdf/ns#>\n"
    "SELECT (COUNT(*) AS ?n) WHERE { GRAPH oms:current { ?s ?p ?o } }"
)


# --- the workload ----------------------------------------------------------------


def value(prop: int, person: int, version: int) -> str:
    if prop == 0:
        return f"<{EX}org{(person + version) % 97}>"
    if prop == 1:
        return f"<{EX}dept{(person + version) % 13}>"
    return f'"Person {person} v{version}"'


def triples(people: int) -> list[str]:
    return [
        f"<{EX}p{i}> <{PROPS[k]}> {value(k, i, 0)} ."
        for i in range(people)
        for k in range(3)
    ]


def rounds(people: int) -> list[list[tuple[int, int]]]:
    """Each round's (person, property) pairs: 20% of the triples, fixed seed."""
    rng = random.Random(7)
    keys = [(i, k) for i in range(people) for k in range(3)]
    return [rng.sample(keys, int(len(keys) * SHARE)) for _ in range(ROUNDS)]


# --- measuring ---------------------------------------------------------------------


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def each(fn: Callable[[Any], object], keys: list[Any]) -> float:
    """The median time of fn over the keys, one call each."""
    times = []
    for key in keys:
        start = time.perf_counter()
        fn(key)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def best(fn: Callable[[], object], runs: int = 5) -> float:
    return statistics.median(timed(fn) for _ in range(runs))


def count_of(result: Any) -> int:
    return int(next(iter(result))["n"].value)


# --- our side ------------------------------------------------------------------------


def ours_load(people: int, where: Path | None) -> dict[str, float]:
    import oms_rdf as oms

    clock = [T0]
    path = None if where is None else where / "oms"
    store = oms.GrainStore(path, clock=lambda: clock[0])
    text = "\n".join(triples(people)).encode()
    out: dict[str, float] = {}
    out["load"] = timed(lambda: store.import_(io.BytesIO(text), format="ntriples"))
    if path is not None:
        store.optimize()
        out["disk after load"] = du(path)
    out["quads after load"] = len(store.backend.store)
    versions: dict[tuple[int, int], int] = {}
    plan = rounds(people)
    for r, moves in enumerate(plan if path is not None else plan[:1], 1):
        clock[0] = T0 + r * STEP

        def one_round(moves: list[tuple[int, int]] = moves) -> None:
            with store.transaction() as tx:
                for person, k in moves:
                    (old,) = store.beliefs(f"{EX}p{person}", PROPS[k])
                    version = versions[person, k] = versions.get((person, k), 0) + 1
                    fields = dict(old.fields)
                    obj = value(k, person, version)
                    fields["object"] = obj[1:-1]
                    fields["created_at"] = clock[0]
                    fields.pop("valid_from", None)
                    tx.supersede(old, fields)

        out[f"round {r}"] = timed(one_round)
    out["quads final"] = len(store.backend.store)
    picks = random.Random(5).sample(range(people), min(50, people))
    clock[0] += STEP

    def one_change(person: int) -> None:
        clock[0] += 1
        (old,) = store.beliefs(f"{EX}p{person}", PROPS[2])
        fields = dict(old.fields)
        fields.update(object=f"renamed {clock[0]}", created_at=clock[0])
        fields.pop("valid_from", None)
        with store.transaction() as tx:
            tx.supersede(old, fields)

    out["one change"] = each(one_change, picks)
    if path is not None:
        out["disk final, before compaction"] = du(path)
        store.optimize()
        out["disk final"] = du(path)
    out.update(count_rows(store))
    out["rss"] = rss_mb()
    if path is not None:
        # pyoxigraph's compaction leaves the files it replaced (and the write-ahead
        # log) on disk while the store is open; the next opening deletes them.
        store.close()
        oms.GrainStore(path).close()
        out["disk final, reopened"] = du(path)
    return out


def count_rows(store: Any) -> dict[str, float]:
    raw = store.backend.store
    held = count_of(raw.query(COUNT_HELD))
    counts: list[int] = []
    # The first question at a point asks the grain layer; the second reads the
    # interval layer, which later counts are answered from.
    first = timed(lambda: counts.append(store.count_beliefs()))
    layer = timed(lambda: counts.append(store.count_beliefs()))
    assert counts == [held, held], (counts, held)
    grains = count_of(raw.query(COUNT_GRAINS))
    assert len(store) == grains, (len(store), grains)
    return {
        "count_beliefs(), first": first,
        "count_beliefs(), reading the layer": layer,
        "count_beliefs()": best(store.count_beliefs),
        "SPARQL COUNT of oms:current": best(lambda: count_of(raw.query(COUNT_HELD))),
        "len(store)": best(lambda: len(store)),
        "SPARQL COUNT of blobs": best(lambda: count_of(raw.query(COUNT_GRAINS))),
    }


def ours_facts(people: int, where: Path) -> dict[str, float]:
    """Areev's workload on our side: put_many, single write, latest, count, disk."""
    import oms_rdf as oms
    from benchmarks.data import beliefs

    n = people * 2 // 3 or 1
    data = beliefs(n)
    path = where / "oms"
    store = oms.GrainStore(path)
    out = {
        "put_many": timed(lambda: store.put_many(oms.Grain.from_dict(d) for d in data))
    }
    store.optimize()
    out["disk"] = du(path)
    keys = [(d["subject"], d["relation"], d["namespace"]) for d in data[:200]]
    assert all(store.beliefs(s, r, namespace=ns) for s, r, ns in keys)
    out["latest"] = each(lambda k: store.beliefs(k[0], k[1], namespace=k[2]), keys)
    fresh = [
        oms.Belief(f"new-{i}", "likes", f"thing {i}", 0.8, created_at=T0 + i)
        for i in range(200)
    ]
    out["single write"] = each(store.put, fresh)
    out["count_beliefs()"] = best(store.count_beliefs)
    out["rss"] = rss_mb()
    return out


def ours_put_many(people: int) -> dict[str, float]:
    """put_many in memory against pyoxigraph's own load of the quads it wrote."""
    import pyoxigraph as ox

    import oms_rdf as oms
    from benchmarks.data import beliefs

    data = beliefs(people * 2 // 3 or 1)
    grains = [oms.Grain.from_dict(d) for d in data]
    store = oms.GrainStore()
    out = {"put_many": timed(lambda: store.put_many(grains))}
    text = ox.serialize(store.backend.store, format=ox.RdfFormat.N_QUADS)
    out["quads"] = len(store.backend.store)
    out["quads per belief"] = out["quads"] / len(data)
    out["raw load"] = best(
        lambda: ox.Store().load(text, format=ox.RdfFormat.N_QUADS), 3
    )
    return out


def schema_path() -> Path:
    import pyshacl

    return Path(pyshacl.__file__).parent / "assets" / "schema.ttl"


def ours_schema(where: Path) -> dict[str, float]:
    import pyoxigraph as ox

    import oms_rdf as oms

    source = schema_path()
    out: dict[str, float] = {}
    store = oms.GrainStore()
    out["adopt, memory"] = timed(lambda: store.import_(source))
    out["triples"] = count_of(store.query(COUNT_ALL, held=True))
    out["quads"] = len(store.backend.store)
    out["raw load, memory"] = best(
        lambda: ox.Store().load(path=source, format=ox.RdfFormat.TURTLE), 3
    )
    disk = oms.GrainStore(where / "oms")
    out["adopt, disk"] = timed(lambda: disk.import_(source))
    out["raw load, disk"] = timed(
        lambda: ox.Store(str(where / "raw")).load(
            path=source, format=ox.RdfFormat.TURTLE
        )
    )
    return out


# --- the peers ------------------------------------------------------------------------


def round_request(
    moves: list[tuple[int, int]], versions: dict[tuple[int, int], int]
) -> str:
    """One round as one SPARQL Update: each triple's old value out, its next in
    (``versions`` is moved on)."""
    old, new = [], []
    for person, k in moves:
        version = versions.get((person, k), 0)
        old.append(f"<{EX}p{person}> <{PROPS[k]}> {value(k, person, version)} .")
        versions[person, k] = version + 1
        new.append(f"<{EX}p{person}> <{PROPS[k]}> {value(k, person, version + 1)} .")
    return f"DELETE DATA {{ {' '.join(old)} }} ;\nINSERT DATA {{ {' '.join(new)} }}"


def ours_update(people: int) -> dict[str, float]:
    """A round as oxilite is given it, one SPARQL Update request, in memory: each
    pair supersedes (same subject, relation and graph, another object)."""
    import oms_rdf as oms

    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    store.import_(io.BytesIO("\n".join(triples(people)).encode()), format="ntriples")
    clock[0] += STEP
    update = round_request(rounds(people)[0], {})
    report: list[Any] = []
    out = {"round 1": timed(lambda: report.append(store.update(update)))}
    assert len(report[0].superseded) == int(3 * people * SHARE), report[0]
    return out


def oxilite_load(people: int, where: Path | None) -> dict[str, float]:
    import oxilite

    path = None if where is None else where / "oxilite.sqlite"
    store = oxilite.Store() if path is None else oxilite.Store(str(path))
    store.set_versioning("log")
    text = "\n".join(triples(people)).encode()
    out: dict[str, float] = {}
    out["load"] = timed(lambda: store.load(text, format=oxilite.RdfFormat.N_TRIPLES))
    if path is not None:
        out["disk after load"] = du(where)  # type: ignore[arg-type]
    versions: dict[tuple[int, int], int] = {}
    plan = rounds(people)
    for r, moves in enumerate(plan if path is not None else plan[:1], 1):
        update = round_request(moves, versions)
        out[f"round {r}"] = timed(lambda u=update: store.update(u))
    picks = random.Random(5).sample(range(people), min(50, people))
    tick = [0]

    def one_change(person: int) -> None:
        tick[0] += 1
        o = f"<{EX}p{person}> <{PROPS[2]}> "
        found = list(store.query(f"SELECT ?v WHERE {{ {o} ?v }}"))
        lit = found[0]["v"]
        store.update(
            f'DELETE DATA {{ {o} {lit} . }} ;\nINSERT DATA {{ {o} "renamed {tick[0]}" . }}'
        )

    out["one change"] = each(one_change, picks)
    if path is not None:
        out["disk final"] = du(where)  # type: ignore[arg-type]
    out["SPARQL COUNT"] = best(lambda: count_of(store.query(COUNT_ALL)))
    out["rss"] = rss_mb()
    return out


def raw_load(people: int, where: Path | None) -> dict[str, float]:
    import pyoxigraph as ox

    text = "\n".join(triples(people)).encode()
    store = ox.Store() if where is None else ox.Store(str(where / "raw"))
    out = {"load": timed(lambda: store.load(text, format=ox.RdfFormat.N_TRIPLES))}
    if where is not None:
        store.optimize()
        out["disk after load"] = du(where / "raw")
    out["rss"] = rss_mb()
    return out


def areev_facts(people: int, where: Path) -> dict[str, float]:
    import areev  # type: ignore[import-not-found]

    from benchmarks.data import beliefs

    data = beliefs(people * 2 // 3 or 1)
    db = areev.Areev(str(where / "a.db"))
    batch = json.dumps(
        [
            {
                "grain_type": "fact",
                "fields": {k: v for k, v in d.items() if k != "type"},
            }
            for d in data
        ]
    )
    out = {"put_many": timed(lambda: db.add_batch(batch))}
    out["disk"] = du(where)
    keys = [(d["subject"], d["relation"], d["namespace"]) for d in data[:200]]
    assert all(db.latest(*k) is not None for k in keys)
    out["latest"] = each(lambda k: db.latest(*k), keys)
    out["single write"] = each(
        lambda i: db.add_fact(f"new-{i}", "likes", f"thing {i}", 0.8), list(range(200))
    )
    out["stats()"] = best(db.stats)
    out["rss"] = rss_mb()
    return out


WORKERS: dict[str, Callable[[int, Path], dict[str, float]]] = {
    "ours memory": lambda n, d: ours_load(n, None),
    "ours disk": ours_load,
    "oxilite memory": lambda n, d: oxilite_load(n, None),
    "oxilite disk": oxilite_load,
    "pyoxigraph memory": lambda n, d: raw_load(n, None),
    "pyoxigraph disk": raw_load,
    "ours facts": ours_facts,
    "areev facts": areev_facts,
    "ours put_many": lambda n, d: ours_put_many(n),
    "ours update": lambda n, d: ours_update(n),
    "ours schema": lambda n, d: ours_schema(d),
}


def run_worker(name: str, people: int) -> dict[str, float]:
    """Run one side in a fresh interpreter; return its figures."""
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.bench_peers",
        "--worker",
        name,
        "--people",
        str(people),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{name} failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# --- the report -----------------------------------------------------------------------


def fmt(x: float, unit: str) -> str:
    if unit == "s":
        return f"{x:.3f} s" if x >= 0.1 else f"{x * 1000:.2f} ms"
    if unit == "MB":
        return f"{x / 1e6:.1f} MB"
    if unit == "RSS":
        return f"{x:.0f} MB"
    return f"{x:,.0f}"


def table(
    r: dict[str, dict[str, float]], people: int
) -> list[tuple[str, float, str, float, str]]:
    """(work, ours, peer name, peer, unit): every row the report prints."""
    om, od = r["ours memory"], r["ours disk"]
    xm, xd = r["oxilite memory"], r["oxilite disk"]
    pm, pd = r["pyoxigraph memory"], r["pyoxigraph disk"]
    of, af = r["ours facts"], r["areev facts"]
    pmany, sch = r["ours put_many"], r["ours schema"]
    n3 = 3 * people
    rows = [
        (f"load {n3:,} triples, memory", om["load"], "oxilite (log)", xm["load"], "s"),
        (f"load {n3:,} triples, memory", om["load"], "pyoxigraph load", pm["load"], "s"),
        (f"load {n3:,} triples, disk", od["load"], "oxilite (log)", xd["load"], "s"),
        (f"load {n3:,} triples, disk", od["load"], "pyoxigraph load", pd["load"], "s"),
        (f"round of {int(n3 * SHARE):,} supersessions, memory", om["round 1"], "oxilite delete+insert", xm["round 1"], "s"),
        (f"round of {int(n3 * SHARE):,} supersessions, memory, as one SPARQL Update", r["ours update"]["round 1"],
         "oxilite delete+insert", xm["round 1"], "s"),
        (f"round of {int(n3 * SHARE):,} supersessions, disk", od["round 1"], "oxilite delete+insert", xd["round 1"], "s"),
        (f"{ROUNDS} rounds, disk", sum(od[f"round {i}"] for i in range(1, ROUNDS + 1)), "oxilite",
         sum(xd[f"round {i}"] for i in range(1, ROUNDS + 1)), "s"),
        ("one change, one transaction, memory", om["one change"], "oxilite", xm["one change"], "s"),
        ("one change, one transaction, disk", od["one change"], "oxilite", xd["one change"], "s"),
        ("disk after load (compacted)", od["disk after load"], "oxilite", xd["disk after load"], "MB"),
        ("disk after load (compacted)", od["disk after load"], "pyoxigraph", pd["disk after load"], "MB"),
        (f"disk after {ROUNDS} rounds, before compaction", od["disk final, before compaction"], "oxilite",
         xd["disk final"], "MB"),
        (f"disk after {ROUNDS} rounds, compacted", od["disk final"], "oxilite", xd["disk final"], "MB"),
        (f"disk after {ROUNDS} rounds, compacted, reopened", od["disk final, reopened"], "oxilite", xd["disk final"],
         "MB"),
        ("RSS after the rounds, disk", od["rss"], "oxilite", xd["rss"], "RSS"),
        ("RSS after a round, memory", om["rss"], "oxilite", xm["rss"], "RSS"),
        ("count_beliefs(), memory", om["count_beliefs()"], "its SPARQL COUNT", om["SPARQL COUNT of oms:current"], "s"),
        ("count_beliefs(), disk", od["count_beliefs()"], "its SPARQL COUNT", od["SPARQL COUNT of oms:current"], "s"),
        ("len(store), memory", om["len(store)"], "its SPARQL COUNT", om["SPARQL COUNT of blobs"], "s"),
        ("len(store), disk", od["len(store)"], "its SPARQL COUNT", od["SPARQL COUNT of blobs"], "s"),
        ("count_beliefs(), disk", of["count_beliefs()"], "Areev stats()", af["stats()"], "s"),
        (f"put_many {people * 2 // 3:,} beliefs, disk", of["put_many"], "Areev add_batch", af["put_many"], "s"),
        ("single write, disk", of["single write"], "Areev add_fact", af["single write"], "s"),
        ("latest(subject, relation), disk", of["latest"], "Areev latest", af["latest"], "s"),
        (f"disk per {people * 2 // 3:,} beliefs", of["disk"], "Areev", af["disk"], "MB"),
        (f"put_many {people * 2 // 3:,} beliefs, memory", pmany["put_many"], "load of its quads", pmany["raw load"], "s"),
        (f"adopt schema.org ({sch['triples']:,.0f} triples), memory", sch["adopt, memory"], "Store().load",
         sch["raw load, memory"], "s"),
        ("adopt schema.org, disk", sch["adopt, disk"], "Store(path).load", sch["raw load, disk"], "s"),
    ]  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument(
        "--people",
        type=int,
        default=int(os.environ.get("OMS_BENCH_PEERS_PEOPLE", "20000")),
    )
    parser.add_argument(
        "--only", help="comma-separated worker names (the rest are skipped)"
    )
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    if args.worker:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(WORKERS[args.worker](args.people, Path(tmp))))
        return
    names = args.only.split(",") if args.only else list(WORKERS)
    results = {}
    for name in names:
        start = time.perf_counter()
        results[name] = run_worker(name, args.people)
        print(f"# {name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"people": args.people, "results": results}, indent=1)
        )
    if args.only:
        print(json.dumps(results, indent=1))
        return
    pmany = results["ours put_many"]
    print(f"{args.people:,} people x 3 properties; quads per belief (put_many): {pmany['quads per belief']:.2f}; "
          f"quads after load {results['ours disk']['quads after load']:,.0f}, final "
          f"{results['ours disk']['quads final']:,.0f}")  # fmt: skip
    print("| work | ours | peer | peer's | ratio |\n|---|---:|---|---:|---:|")
    for work, ours, peer, theirs, unit in table(results, args.people):
        print(
            f"| {work} | {fmt(ours, unit)} | {peer} | {fmt(theirs, unit)} | {ours / theirs:.2f}x |"
        )


if __name__ == "__main__":
    main()
