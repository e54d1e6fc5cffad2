"""Time travel: queries at a past point against the same queries now, here and in oxilite.

N beliefs (default 100,000; ``OMS_BENCH_TIMETRAVEL_N`` scales it): N/2 people,
each with an employer (``worksAt``, one of 97 organisations) and a department
(``inDept``, one of 13). Then five rounds, each one system time later, supersede
20% of the employers (drawn with a fixed seed). The points are the state after
the load (P0) and after each round (P1..P5); now is P5.

Measured, each the median of a few runs:

- a selective lookup (one person's employer, 50 people), a selective join (the
  departments of one organisation's people), a COUNT/GROUP BY (people per
  organisation) and a FILTER EXISTS asked of every person, at P1
  (``valid_at=as_of=P1``) and now (no time: the plain path);
- ``store.changes`` between each pair of adjacent points, and again with no
  grain in the store's cache (each then read from the store);
- the first question at a point, which reads the interval layer whole (ours);
- the same workload on oxilite 0.9.1 with ``set_versioning("log")``: the load
  and each round as one commit, ``query(as_of="#tick")`` at P1, and
  ``changes(after, until)`` between adjacent commits.

Then the same queries over a store of N/5 beliefs written as an agent writes it
(each belief its own system time, so an extent each; supersessions one by one),
at a point amid its supersessions.

The ratios printed are past / present for each engine (how much a past point
costs over now, in the same engine and run), and ours / oxilite.

Run: .venv/bin/python -m benchmarks.bench_timetravel
     OMS_BENCH_TIMETRAVEL_N=10000 .venv/bin/python -m benchmarks.bench_timetravel
     (OMS_BENCH_TIMETRAVEL_RUNS: runs per figure, default 5; changes at most 3)
"""

from __future__ import annotations

import io
import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import oms_rdf as oms

EX = "http://example.org/"
WORKS, DEPT = f"{EX}worksAt", f"{EX}inDept"
T0 = 1_700_000_000_000
STEP = 86_400_000  # a day between rounds
ROUNDS, SHARE, ORGS, DEPTS = 5, 0.2, 97, 13


RUNS = int(os.environ.get("OMS_BENCH_TIMETRAVEL_RUNS", "5"))


def median_time(fn: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def plan(n: int) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """The initial N-Triples lines, and each round's (person, new org) pairs."""
    people = n // 2
    lines = []
    for i in range(people):
        lines.append(f"<{EX}p{i}> <{WORKS}> <{EX}org{i % ORGS}> .")
        lines.append(f"<{EX}p{i}> <{DEPT}> <{EX}dept{i % DEPTS}> .")
    rng = random.Random(7)
    rounds = []
    for r in range(ROUNDS):
        chosen = rng.sample(range(people), int(people * SHARE))
        rounds.append([(p, (p + r + 1) % ORGS) for p in chosen])
    return lines, rounds


QUERIES = {
    "lookup": f"SELECT ?o WHERE {{ <{EX}p{{k}}> <{WORKS}> ?o }}",
    "join": f"SELECT ?p ?d WHERE {{ ?p <{WORKS}> <{EX}org5> . ?p <{DEPT}> ?d }}",
    "group": f"SELECT ?o (COUNT(?p) AS ?n) WHERE {{ ?p <{WORKS}> ?o }} GROUP BY ?o",
    # An EXISTS asked of every person: once cubic at a point (the group was
    # planned without the person bound), now a lookup each.
    "exists": f"SELECT (COUNT(*) AS ?n) WHERE {{ ?p <{DEPT}> ?d "
    f"FILTER EXISTS {{ ?p <{WORKS}> <{EX}org5> }} }}",
}


def workload(ask: Callable[[str], Any], people: int) -> dict[str, Callable[[], int]]:
    """Each query as a function returning its row count (lookup: 50 people)."""
    picks = random.Random(3).sample(range(people), min(50, people))

    def lookup() -> int:
        return sum(
            len(list(ask(QUERIES["lookup"].replace("{k}", str(k))))) for k in picks
        )

    return {
        "lookup": lookup,
        "join": lambda: len(list(ask(QUERIES["join"]))),
        "group": lambda: len(list(ask(QUERIES["group"]))),
        "exists": lambda: len(list(ask(QUERIES["exists"]))),
    }


def ours(lines: list[str], rounds: list[list[tuple[int, int]]]) -> dict[str, float]:
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    start = time.perf_counter()
    store.import_(io.BytesIO("\n".join(lines).encode()), format="ntriples")
    load = time.perf_counter() - start
    start = time.perf_counter()
    for r, moves in enumerate(rounds, 1):
        clock[0] = T0 + r * STEP
        with store.transaction() as tx:
            for person, org in moves:
                (old,) = store.beliefs(f"{EX}p{person}", WORKS)
                fields = dict(old.fields)
                fields.update(object=f"{EX}org{org}", created_at=clock[0])
                fields.pop("valid_from", None)
                tx.supersede(old, fields)
    rounds_s = time.perf_counter() - start
    clock[0] = T0 + (ROUNDS + 1) * STEP
    past = T0 + STEP
    # The first question at a point reads the interval layer whole (in a process
    # that asks more than one: here, at once).
    store.core.intervals.read_at_question = 1
    start = time.perf_counter()
    store.query(QUERIES["group"], valid_at=past, as_of=past)
    out = {"load": load, "rounds": rounds_s, "layer": time.perf_counter() - start}
    now_q = workload(lambda q: store.query(q), len(lines) // 2)
    past_q = workload(
        lambda q: store.query(q, valid_at=past, as_of=past), len(lines) // 2
    )
    for name in QUERIES:
        assert now_q[name]() > 0 and past_q[name]() > 0, name
        out[f"{name} now"] = median_time(now_q[name])
        out[f"{name} past"] = median_time(past_q[name])
    out["changes"] = statistics.median(
        median_time(
            lambda r=r: store.changes(T0 + r * STEP, T0 + (r + 1) * STEP), min(RUNS, 3)
        )
        for r in range(ROUNDS)
    )
    out["changes, cold"] = statistics.median(
        cold_changes(store, T0 + r * STEP, T0 + (r + 1) * STEP) for r in range(ROUNDS)
    )
    return out


def one_at_a_time(n: int) -> dict[str, float]:
    """The same queries over a store written as an agent writes it: each belief
    with its own system time (an extent each), then 20% of the employers
    superseded one by one; the point is the middle of those supersessions."""
    people = n // 2
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0])
    grains = []
    for i in range(people):
        clock[0] += 1_000
        for relation, obj in ((WORKS, f"org{i % ORGS}"), (DEPT, f"dept{i % DEPTS}")):
            grains.append(oms.Grain.from_dict({
                "type": "belief", "subject": f"{EX}p{i}", "relation": relation,
                "object": f"{EX}{obj}", "confidence": 0.9, "created_at": clock[0],
            }))  # fmt: skip
    store.put_many(grains)
    rng = random.Random(7)
    moved = rng.sample(range(people), int(people * SHARE))
    for k, person in enumerate(moved):
        if k == len(moved) // 2:
            past = clock[0]
        clock[0] += 1_000
        (old,) = store.beliefs(f"{EX}p{person}", WORKS)
        store.supersede(old, {"type": "belief", "subject": f"{EX}p{person}",
                              "relation": WORKS, "object": f"{EX}org{rng.randrange(ORGS)}",
                              "confidence": 0.9, "created_at": clock[0]})  # fmt: skip
    clock[0] += 1_000
    layer = store.core.intervals
    layer.read_at_question = 1
    store.query("ASK {}", valid_at=past, as_of=past)  # the layer is read here
    out = {"extents": float(len(layer.extents))}
    start = time.perf_counter()  # the first question at the point finds its graphs
    store.query(QUERIES["group"], valid_at=past, as_of=past)
    out["group past, first"] = time.perf_counter() - start
    now_q = workload(lambda q: store.query(q), people)
    past_q = workload(lambda q: store.query(q, valid_at=past, as_of=past), people)
    for name in QUERIES:
        out[f"{name} now"] = median_time(now_q[name])
        out[f"{name} past"] = median_time(past_q[name])
    return out


def cold_changes(store: oms.GrainStore, since: int, until: int) -> float:
    """``changes`` with no grain in the store's cache: each read from the store,
    as in a process that did not write them."""
    store.core._cache.clear()
    start = time.perf_counter()
    store.changes(since, until)
    return time.perf_counter() - start


def oxilite_side(
    lines: list[str], rounds: list[list[tuple[int, int]]]
) -> dict[str, float]:
    import oxilite

    store = oxilite.Store()
    store.set_versioning("log")
    start = time.perf_counter()
    store.load("\n".join(lines).encode(), format=oxilite.RdfFormat.N_TRIPLES)
    load = time.perf_counter() - start
    ticks = [store.history()[0].tick]
    employer = {i: i % ORGS for i in range(len(lines) // 2)}
    start = time.perf_counter()
    for moves in rounds:
        deleted = "\n".join(
            f"<{EX}p{p}> <{WORKS}> <{EX}org{employer[p]}> ." for p, _ in moves
        )
        inserted = "\n".join(f"<{EX}p{p}> <{WORKS}> <{EX}org{o}> ." for p, o in moves)
        store.update(f"DELETE DATA {{ {deleted} }} ;\nINSERT DATA {{ {inserted} }}")
        employer.update(moves)
        ticks.append(store.history()[0].tick)
    rounds_s = time.perf_counter() - start
    past = f"#{ticks[1]}"
    out = {"load": load, "rounds": rounds_s}
    now_q = workload(lambda q: store.query(q), len(lines) // 2)
    past_q = workload(lambda q: store.query(q, as_of=past), len(lines) // 2)
    for name in QUERIES:
        assert now_q[name]() > 0 and past_q[name]() > 0, name
        out[f"{name} now"] = median_time(now_q[name])
        out[f"{name} past"] = median_time(past_q[name])
    out["changes"] = statistics.median(
        median_time(lambda r=r: store.changes(ticks[r], ticks[r + 1]), min(RUNS, 3))
        for r in range(ROUNDS)
    )
    return out


def main() -> None:
    n = int(os.environ.get("OMS_BENCH_TIMETRAVEL_N", "100000"))
    lines, rounds = plan(n)
    print(
        f"N = {n:,} beliefs, {ROUNDS} rounds of {SHARE:.0%} supersessions (of worksAt)"
    )
    a = ours(lines, rounds)
    b = oxilite_side(lines, rounds)
    print(f"{'':16}{'oms_rdf':>12}{'oxilite':>12}{'ours/oxilite':>14}")
    for key in a:
        if key not in b:
            print(f"{key:16}{a[key]:11.4f}s")
            continue
        print(f"{key:16}{a[key]:11.4f}s{b[key]:11.4f}s{a[key] / b[key]:13.2f}x")
    print("past / present (P1 vs now), each engine against itself:")
    for name in QUERIES:
        ra, rb = (
            a[f"{name} past"] / a[f"{name} now"],
            b[f"{name} past"] / b[f"{name} now"],
        )
        print(f"  {name:8} oms_rdf {ra:7.2f}x   oxilite {rb:7.2f}x")
    c = one_at_a_time(n // 5)
    print(
        f"a belief at a time, N = {n // 5:,} ({c['extents']:,.0f} extents); "
        f"past / present, and the first question at the point "
        f"(group: {c['group past, first']:.4f}s):"
    )
    for name in QUERIES:
        print(f"  {name:8} oms_rdf {c[f'{name} past'] / c[f'{name} now']:7.2f}x")


if __name__ == "__main__":
    main()
