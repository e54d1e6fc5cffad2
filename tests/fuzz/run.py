"""Long fuzz runs: ``python -m tests.fuzz.run --count 1000000 [--seconds S] [--target NAME] [--seed N]``.

Inputs go to every target in turn (or one), mutated from the seeds. A failure
(an exception that is not an ``OmsError``, or a broken law) is recorded by its
kind (target, exception type, the line it came from) with the first input that
showed it, and the run goes on (failures known.py lists are marked known); inputs that take over a second are counted as
hangs. The run ends after ``--count`` inputs or ``--seconds``, prints what it
found, and exits 1 if anything not known failed.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
import traceback

from .known import known
from .seeds import mutate, seeds_for
from .targets import TARGETS


def _kind(name: str, exc: BaseException) -> tuple[str, str, str]:
    frames = traceback.extract_tb(exc.__traceback__)
    inner = [f for f in frames if "/oms_rdf/" in f.filename] or frames
    where = f"{inner[-1].filename.rsplit('/', 2)[-1]}:{inner[-1].lineno}"
    if isinstance(exc, AssertionError):
        where = str(exc).split(":")[0][:60] + " / " + str(exc).split(": ", 1)[-1][:50]
    reproducer = known(exc)
    if reproducer is not None:
        return name, type(exc).__name__, f"known, {reproducer}"
    return name, type(exc).__name__, where


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=float("inf"))
    parser.add_argument("--target", action="append", choices=sorted(TARGETS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.getLogger("rdflib").setLevel(logging.CRITICAL)  # its cast warnings
    names = args.target or sorted(TARGETS)
    rng = random.Random(args.seed)
    seeds = {name: seeds_for(name) for name in names}
    done = dict.fromkeys(names, 0)
    failures: dict[tuple[str, str, str], tuple[int, str, str]] = {}
    hangs, slowest, start = 0, 0.0, time.monotonic()
    total = 0
    for i in range(args.count):
        if time.monotonic() - start > args.seconds:
            break
        name = names[i % len(names)]
        data = (
            mutate(rng.choice(seeds[name]), rng)
            if i % 10
            else rng.randbytes(rng.randrange(64))
        )
        began = time.monotonic()
        try:
            TARGETS[name](data)
        except Exception as exc:  # a finding: recorded and counted
            kind = _kind(name, exc)
            seen, first, message = failures.get(kind, (0, data.hex(), str(exc)[:400]))
            failures[kind] = (seen + 1, first, message)
            if not seen:
                print(f"NEW {kind}: {message[:300]}\n  input {data.hex()}", flush=True)
        took = time.monotonic() - began
        slowest = max(slowest, took)
        hangs += took > 1.0
        done[name] += 1
        total += 1
        if total % 10_000 == 0:
            print(f"{total} inputs, {time.monotonic() - start:.0f} s, "
                  f"{len(failures)} kinds of failure", flush=True)  # fmt: skip
    elapsed = time.monotonic() - start
    print(f"{total} inputs in {elapsed:.0f} s: {done}; slowest {slowest * 1000:.0f} ms, "
          f"{hangs} over 1 s; {len(failures)} kinds of failure")  # fmt: skip
    for kind, (seen, first, message) in sorted(failures.items()):
        print(f"  {seen} x {kind}: {message[:300]}\n    first input {first}")
    return 1 if any("known, " not in kind[2] for kind in failures) else 0


if __name__ == "__main__":
    sys.exit(main())
