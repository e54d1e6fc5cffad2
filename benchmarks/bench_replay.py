"""Replay of a bitemporal stream through transactions, against an in-memory oracle.

Contracts carry an ``amount`` over half-open day intervals. The stream is 25
publications; the first brings most contracts, every later one mixes new
contracts, corrections of a whole interval, corrections over a portion of one
(SQL:2011 ``FOR PORTION OF``: ``supersede(old, new, valid_from=a, valid_to=b)``)
and retractions over a portion, each touching a contract at most once. Each
publication is one ``store.transaction()`` at its own system time, on a
``forward_only`` store. 4,776 events by default; ``OMS_BENCH_REPLAY_EVENTS=58724``
for the large tier.

The oracle is plain Python: per contract, its segments ``(from, to, amount)``,
split by each change exactly as ``FOR PORTION OF`` defines it, and a copy per
publication for as-of questions. Timed, each with its oracle:

- the replay (every publication's transaction; the store calls are worked out
  before, untimed), against the same calls each made as its own write;
- the amounts valid on a day, now (one query);
- the amounts valid on a day as known after publication 10 (one query);
- a daily aggregate (the sum of the amounts in force each day) over 60 days of
  valid time, in one query (``valid_during``), checked day by day.

Each question is timed once, as first asked at its point, and then as the
median of a few repetitions; so is its oracle.

Run: .venv/bin/python -m benchmarks.bench_replay
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import oms_rdf as oms
from oms_rdf.codec.grain import Grain
from oms_rdf.rdf.mapping import millis_literal
from oms_rdf.store.portion import pieces

EX = "http://example.org/"
AMOUNT = EX + "amount"
DAY = 86_400_000
T0 = 1_735_689_600_000  # 2025-01-01: valid time starts here
SYS0 = 1_767_225_600_000  # 2026-01-01: the first publication
PUBLICATIONS = 25

Segment = tuple[int, int, int]  # from day, to day, amount
Oracle = dict[str, list[Segment]]
Call = tuple[str, tuple[Any, ...], dict[str, Any]]  # a store method, its arguments


def contract(c: int, amount: int, start: int, end: int, at: int) -> dict[str, Any]:
    return {"type": "belief", "subject": f"{EX}c{c}", "relation": AMOUNT,
            "object": str(amount), "confidence": 1.0, "created_at": at,
            "valid_from": T0 + start * DAY, "valid_to": T0 + end * DAY}  # fmt: skip


def cut(segments: list[Segment], a: int, b: int, amount: int | None) -> list[Segment]:
    """The oracle's FOR PORTION OF: the parts of each segment outside [a, b) stay,
    the part inside takes ``amount`` (None: deleted)."""
    out: list[Segment] = []
    for s, e, v in segments:
        if e <= a or b <= s:
            out.append((s, e, v))
            continue
        if s < a:
            out.append((s, a, v))
        if amount is not None:
            out.append((max(s, a), min(e, b), amount))
        if b < e:
            out.append((b, e, v))
    return sorted(out)


def stream(events: int, seed: int = 7) -> list[list[tuple[Any, ...]]]:
    """The publications: each a list of operations (kind, contract, ...)."""
    rng = random.Random(seed)
    first = events // 3
    later = (events - first) // (PUBLICATIONS - 1)
    pubs: list[list[tuple[Any, ...]]] = []
    made = 0
    for p in range(PUBLICATIONS):
        size = first if p == 0 else later
        if p == PUBLICATIONS - 1:
            size = events - first - later * (PUBLICATIONS - 2)
        ops: list[tuple[Any, ...]] = []
        touched: set[int] = set()
        while len(ops) < size:
            if p == 0 or made < 10 or rng.random() < 0.3:
                start = rng.randrange(0, 300)
                ops.append(("put", made, rng.randrange(10, 1000), start,
                            start + rng.randrange(30, 400)))  # fmt: skip
                touched.add(made)
                made += 1
                continue
            c = rng.randrange(made)
            if c in touched:
                continue
            touched.add(c)
            a = rng.randrange(0, 600)
            kind = rng.choice(("whole", "portion", "portion", "retract"))
            ops.append((kind, c, rng.randrange(10, 1000), a, a + rng.randrange(5, 90)))
        pubs.append(ops)
    return pubs


class Replay:
    """The stream applied to a store and, independently, to the oracle."""

    def __init__(self) -> None:
        self.now = SYS0  # before the store: recording forward-only reads the clock
        self.store = oms.GrainStore(clock=lambda: self.now, forward_only=True)
        self.grains: dict[
            int, list[Grain]
        ] = {}  # the store's segments of each contract
        self.oracle: Oracle = {}
        self.snapshots: list[Oracle] = []

    def plan(self, p: int, ops: list[tuple[Any, ...]]) -> list[Call]:
        """The store calls of publication ``p``, worked out before the replay
        (the addresses of the pieces a portion leaves are the pieces' own)."""
        self.now = SYS0 + p * DAY
        self.calls: list[Call] = []
        for op in ops:
            self._apply(op)
        return self.calls

    def publish(
        self, p: int, calls: list[Call], store: oms.GrainStore | None = None
    ) -> None:
        """Publication ``p``: its calls in one transaction, at its system time
        (on ``store``: each call its own write, the baseline)."""
        self.now = SYS0 + p * DAY
        if store is not None:
            for name, args, kwargs in calls:
                getattr(store, name)(*args, **kwargs)
            return
        with self.store.transaction() as tx:
            for name, args, kwargs in calls:
                getattr(tx, name)(*args, **kwargs)

    def _apply(self, op: tuple[Any, ...]) -> None:
        call = self.calls.append
        kind, c, amount, a, b = op
        if kind == "put":
            fields = contract(c, amount, a, b, self.now)
            call(("put", (fields,), {}))
            self.grains[c] = [Grain.from_dict(fields)]
            return
        overlapping = sorted(
            (g for g in self.grains[c] if _overlaps(g, a, b)),
            key=lambda g: g["valid_from"],
        )  # the earliest segment it touches, as the oracle takes
        if not overlapping:
            return  # the change misses every segment: nothing to do
        old = overlapping[0]  # one change per contract per publication
        lo, hi = (old["valid_from"] - T0) // DAY, (old["valid_to"] - T0) // DAY
        rest = [g for g in self.grains[c] if g is not old]
        if kind == "whole":
            fields = contract(c, amount, lo, hi, self.now)
            call(("supersede", (old.address, fields), {}))
            self.grains[c] = [
                *rest,
                Grain.from_dict(fields | {"derived_from": [old.address]}),
            ]
            return
        start, end = T0 + a * DAY, T0 + b * DAY
        if kind == "portion":
            s, e = max(a, lo), min(b, hi)
            new = contract(c, amount, s, e, self.now) | {"derived_from": [old.address]}
            portion = {"valid_from": start, "valid_to": end}
            call(("supersede", (old.address, new), portion))
            made, reason = [Grain.from_dict(new)], None
        else:
            reason = "withdrawn"
            kwargs = {"reason": reason, "valid_from": start, "valid_to": end}
            call(("retract", (old.address,), kwargs))
            made = []
        kept = pieces(old, start, end, at=self.now, reason=reason)
        self.grains[c] = [*rest, *made, *(Grain.from_dict(f) for f in kept)]

    def model(self, ops: list[tuple[Any, ...]]) -> None:
        """The oracle's publication: the same changes on plain segments."""
        for kind, c, amount, a, b in ops:
            key = f"{EX}c{c}"
            if kind == "put":
                self.oracle[key] = [(a, b, amount)]
                continue
            segs = self.oracle.get(key, [])
            hit = [sg for sg in segs if sg[0] < b and a < sg[1]]
            if not hit:
                continue
            s, e, _v = hit[0]
            others = [sg for sg in segs if sg is not hit[0]]
            if kind == "whole":
                self.oracle[key] = sorted([*others, (s, e, amount)])
            else:
                new = amount if kind == "portion" else None
                self.oracle[key] = sorted([*others, *cut([hit[0]], a, b, new)])
        self.snapshots.append({k: list(v) for k, v in self.oracle.items()})


def _overlaps(g: Grain, a: int, b: int) -> bool:
    lo, hi = (g["valid_from"] - T0) // DAY, (g["valid_to"] - T0) // DAY
    return lo < b and a < hi


def on_day(oracle: Oracle, day: int) -> list[tuple[str, int]]:
    return sorted(
        (k, v) for k, segs in oracle.items() for s, e, v in segs if s <= day < e
    )


def _epoch_day(lexical: str) -> int:
    """The day number (from T0) of an xsd:dateTime lexical form."""
    moment = datetime.fromisoformat(lexical.replace("Z", "+00:00"))
    return (int(moment.timestamp() * 1000) - T0) // DAY


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = work()
    return time.perf_counter() - start, out


AGAIN = 7  # repetitions of a question, for its median


def median_of(work: Callable[[], Any]) -> float:
    return statistics.median(timed(work)[0] for _ in range(AGAIN))


POINT = f"SELECT ?s ?o WHERE {{ ?s <{AMOUNT}> ?o }}"


def daily_query(first: int, days: int) -> str:
    values = " ".join(f'"{millis_literal(T0 + d * DAY).value}"^^xsd:dateTime'
                      for d in range(first, first + days))  # fmt: skip
    return (
        f"SELECT ?day (SUM(xsd:integer(?o)) AS ?total) WHERE {{ ?s <{AMOUNT}> ?o . "
        f"VALUES ?day {{ {values} }} "
        "FILTER (?validFrom <= ?day && (!BOUND(?validTo) || ?day < ?validTo)) } "
        "GROUP BY ?day ORDER BY ?day"
    )


def main() -> None:
    events = int(os.environ.get("OMS_BENCH_REPLAY_EVENTS", "4776"))
    pubs = stream(events)
    replay = Replay()
    oracle_replay, _ = timed(lambda: [replay.model(ops) for ops in pubs])
    planned = [replay.plan(p, ops) for p, ops in enumerate(pubs)]
    seconds, _ = timed(
        lambda: [replay.publish(p, calls) for p, calls in enumerate(planned)]
    )
    total = sum(map(len, pubs))
    plain = oms.GrainStore(clock=lambda: replay.now, forward_only=True)
    single, _ = timed(
        lambda: [replay.publish(p, calls, plain) for p, calls in enumerate(planned)]
    )
    print(f"baseline, each call its own write: {single:.2f} s")
    print(f"events {total}, publications {len(pubs)}, grains {len(replay.store)}")
    print(f"replay: {seconds:.2f} s ({total / seconds:.0f} events/s); "
          f"oracle {oracle_replay:.3f} s; target <= 5 s at 4,776 events")  # fmt: skip
    store, now = replay.store, replay.now
    day = 200
    # The interval layer is read at the first question at a point here (a
    # process asking one reads none), timed on its own.
    store.core.intervals.read_at_question = 1
    layer, _ = timed(lambda: store.query(POINT, valid_at=T0, as_of=now))
    print(f"interval layer read: {layer:.3f} s")

    def point() -> list[tuple[str, int]]:
        rows = store.query(POINT, valid_at=T0 + day * DAY, as_of=now)
        return sorted((str(r["s"].value), int(str(r["o"].value))) for r in rows)

    def past() -> list[tuple[str, int]]:
        rows = store.query(POINT, valid_at=T0 + day * DAY, as_of=SYS0 + 10 * DAY)
        return sorted((str(r["s"].value), int(str(r["o"].value))) for r in rows)

    first, days = 150, 60

    def daily() -> list[int]:
        rows = store.query(
            daily_query(first, days),
            valid_during=(T0 + first * DAY, T0 + (first + days) * DAY), as_of=now,
        )  # fmt: skip
        totals = {
            _epoch_day(str(r["day"].value)): int(str(r["total"].value)) for r in rows
        }
        return [totals.get(d, 0) for d in range(first, first + days)]

    def daily_oracle() -> list[int]:
        return [
            sum(v for _k, v in on_day(replay.oracle, d))
            for d in range(first, first + days)
        ]

    checks = [
        ("amounts on a day, now", point, lambda: on_day(replay.oracle, day)),
        ("amounts on a day, as of publication 10", past,
         lambda: on_day(replay.snapshots[10], day)),
        (f"daily sum over {days} days, one query", daily, daily_oracle),
    ]  # fmt: skip
    for name, ours, theirs in checks:
        t_ours, got = timed(ours)  # the first question at its point
        t_oracle, want = timed(theirs)
        again, again_oracle = median_of(ours), median_of(theirs)
        status = "exact" if got == want else "DIFFERS"
        print(f"{name}: {t_ours:.4f} s, oracle {t_oracle:.4f} s, "
              f"ratio {t_ours / max(t_oracle, 1e-6):.1f}x; asked again (median "
              f"of {AGAIN}) {again:.4f} s, oracle {again_oracle:.4f} s, ratio "
              f"{again / max(again_oracle, 1e-6):.1f}x; {status}")  # fmt: skip


if __name__ == "__main__":
    main()
