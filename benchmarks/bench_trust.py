"""Signature verification throughput and supersede-with-policy latency on a large store.

Run: python -m benchmarks.bench_trust [N]
"""

from __future__ import annotations

import statistics
import sys
import time

import oms_rdf as oms
from benchmarks.data import beliefs
from oms_rdf.codec import signing


def main(n: int = 100_000) -> None:
    key = signing.generate_key(seed=bytes(32))
    signed = [oms.Grain.from_dict(d, signed=True) for d in beliefs(5000, seed=3)]
    envelopes = [signing.sign(g.blob, key) for g in signed]
    start = time.perf_counter()
    for envelope in envelopes:
        signing.verify_signature(envelope)
    rate = len(envelopes) / (time.perf_counter() - start)
    print(
        f"verify-signature: {rate:,.0f} envelopes/s (COSE parse + Ed25519 + grain decode)"
    )

    store = oms.GrainStore()
    addresses = store.put_many(oms.Grain.from_dict(d) for d in beliefs(n))
    policies = [
        {"mode": "open"},
        {"mode": "soft_locked"},
        {"mode": "delegated", "authorized": [key.did]},
    ]
    protected = []
    for i, fields in enumerate(beliefs(600, seed=5)):
        fields = {
            **fields,
            "subject": f"protected-{i}",
            "invalidation_policy": policies[i % 3],
        }
        protected.append((store.put(fields), policies[i % 3]["mode"]))
    timings: dict[str, list[float]] = {"open": [], "soft_locked": [], "delegated": []}
    for address, mode in protected:
        old = store.get(address)
        new = {**old.to_dict(), "object": "changed", "created_at": old.created_at + 1}
        new.pop("derived_from", None)
        new.pop("invalidation_policy", None)
        start = time.perf_counter()
        if mode == "delegated":
            store.supersede(old, new, signer=key)
        else:
            store.supersede(old, new, justification="benchmark")
        timings[mode].append(time.perf_counter() - start)
    print(
        f"store of {len(addresses):,} beliefs; supersede with policy check, median latency:"
    )
    for mode, values in timings.items():
        print(f"  {mode:12} {statistics.median(values) * 1000:.2f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
