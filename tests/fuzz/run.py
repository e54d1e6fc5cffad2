"""Long fuzz runs: ``python -m tests.fuzz.run --count 1000000 [--target NAME] [--seed N]``.

Inputs go to every target in turn (or one), mutated from the seeds. The run
stops at the first exception that is not an ``OmsError`` or a broken round-trip
law, printing the input; inputs that take over a second are counted as hangs.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from .seeds import mutate, seeds_for
from .targets import TARGETS


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--target", action="append", choices=sorted(TARGETS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    names = args.target or sorted(TARGETS)
    rng = random.Random(args.seed)
    seeds = {name: seeds_for(name) for name in names}
    done = dict.fromkeys(names, 0)
    hangs, slowest, start = 0, 0.0, time.monotonic()
    for i in range(args.count):
        name = names[i % len(names)]
        data = (
            mutate(rng.choice(seeds[name]), rng)
            if i % 10
            else rng.randbytes(rng.randrange(64))
        )
        began = time.monotonic()
        try:
            TARGETS[name](data)
        except BaseException:
            print(f"{name} failed on input {data.hex()}", file=sys.stderr)
            raise
        took = time.monotonic() - began
        slowest = max(slowest, took)
        hangs += took > 1.0
        done[name] += 1
        if (i + 1) % 100_000 == 0:
            print(f"{i + 1} inputs, {time.monotonic() - start:.0f} s", flush=True)
    elapsed = time.monotonic() - start
    print(f"{args.count} inputs in {elapsed:.0f} s: {done}; slowest {slowest * 1000:.0f} ms, "
          f"{hangs} over 1 s; only OmsError, round trips held")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
