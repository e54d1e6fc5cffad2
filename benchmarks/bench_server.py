"""A bounded load run of ``oms-rdf serve`` on loopback.

8 client threads ask point queries (the facts of one subject and relation, now)
while one client
writes new facts; then every write is read back. Reports queries per second, p50
and p99 latency, and lost writes. Target: >= 500 queries/s with p99 <= 50 ms.

    python -m benchmarks.bench_server            # 10k beliefs, 20 s
    python -m benchmarks.bench_server --beliefs 100000 --seconds 30
"""

from __future__ import annotations

import argparse
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

import oms_rdf as oms
from benchmarks.data import beliefs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--beliefs", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "db"
        store = oms.GrainStore(path)
        data = beliefs(args.beliefs)
        store.put_many(oms.Grain.from_dict(d) for d in data)
        store.flush()
        del store
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        tokens = Path(tmp) / "tokens.json"
        tokens.write_text(
            '{"bench-token-0000000001": {"namespaces": "*", "write": true}}'
        )
        server = subprocess.Popen(
            [sys.executable, "-m", "oms_rdf", "serve", "--store", str(path), "--port", str(port),
             "--token-file", str(tokens)],
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        headers = {"authorization": "Bearer bench-token-0000000001"}
        try:
            _wait(base, headers)
            report = _load(base, headers, data, args.clients, args.seconds)
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(report)


def _wait(base: str, headers: dict[str, str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{base}/v1/facts", params={"limit": "1"}, headers=headers)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit("the server did not start")


def _load(base: str, headers: dict[str, str], data: list[dict[str, object]], clients: int,
          seconds: float) -> str:  # fmt: skip
    points = sorted({(str(d["subject"]), str(d["relation"])) for d in data})
    stop = time.monotonic() + seconds
    latencies: list[list[float]] = [[] for _ in range(clients)]
    written: list[str] = []
    errors: list[str] = []

    def reader(slot: int) -> None:
        rng = random.Random(slot)
        with httpx.Client(base_url=base, headers=headers) as client:
            while time.monotonic() < stop:
                subject, relation = rng.choice(points)
                start = time.perf_counter()
                got = client.get(
                    "/v1/facts", params={"subject": subject, "relation": relation}
                )
                latencies[slot].append(time.perf_counter() - start)
                if got.status_code != 200:
                    errors.append(f"read {got.status_code}")

    def writer() -> None:
        with httpx.Client(base_url=base, headers=headers) as client:
            n = 0
            while time.monotonic() < stop:
                n += 1
                fact = {"type": "belief", "subject": f"writer-{n}", "relation": "wrote",
                        "object": f"fact {n}", "confidence": 0.5,
                        "created_at": 1_800_000_000_000 + n}  # fmt: skip
                got = client.post("/v1/facts", json=fact)
                if got.status_code == 201:
                    written.append(got.json()["id"])
                else:
                    errors.append(f"write {got.status_code}")

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(clients)]
    threads.append(threading.Thread(target=writer))
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    with httpx.Client(base_url=base, headers=headers) as client:
        lost = sum(client.get(f"/v1/facts/{a}").status_code != 200 for a in written)
    every = sorted(x for slot in latencies for x in slot)
    qps = len(every) / elapsed
    p50 = statistics.median(every) * 1000
    p99 = every[int(len(every) * 0.99) - 1] * 1000
    ok = qps >= 500 and p99 <= 50
    return (
        f"{clients} readers + 1 writer, {elapsed:.0f} s: {qps:.0f} queries/s, p50 {p50:.1f} ms, "
        f"p99 {p99:.1f} ms; {len(written)} writes, {lost} lost; {len(errors)} errors; "
        f"target (>= 500/s, p99 <= 50 ms) {'met' if ok else 'missed'}"
    )


if __name__ == "__main__":
    main()
