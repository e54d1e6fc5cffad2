"""Pages of ``GET /v1/facts`` from ``oms-rdf serve`` on loopback, at N beliefs.

Times the first page of a listing (``?limit=10``, no cursor: each request a new
listing, pinned at its own now), the next pages by their cursor, and, as the
baseline measured in the same run, the page of one subject
(``?subject=…&limit=10``), which the store answers by pattern lookups.
Target: the first page <= 20 ms (median) at 100k beliefs.

    python -m benchmarks.bench_facts_page                  # 100k beliefs, on disk
    python -m benchmarks.bench_facts_page --beliefs 10000
    python -m benchmarks.bench_facts_page --store DIR      # keep the store for reruns
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

import oms_rdf as oms
from benchmarks.data import beliefs

TOKEN = "bench-token-0000000001"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--beliefs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.store or Path(tmp) / "db"
        if not path.exists() or not any(path.iterdir()):
            built = time.perf_counter()
            store = oms.GrainStore(path)
            store.put_many(oms.Grain.from_dict(d) for d in beliefs(args.beliefs))
            store.flush()
            del store
            print(
                f"built {args.beliefs:,} beliefs in {time.perf_counter() - built:.1f} s"
            )
        with _Serving(path, Path(tmp)) as base:
            print(_measure(base, args.rounds))


class _Serving:
    def __init__(self, path: Path, tmp: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        tokens = tmp / "tokens.json"
        tokens.write_text(f'{{"{TOKEN}": {{"namespaces": "*", "write": true}}}}')
        self.command = [sys.executable, "-m", "oms_rdf", "serve", "--store", str(path),
                        "--port", str(self.port), "--token-file", str(tokens)]  # fmt: skip

    def __enter__(self) -> str:
        self.server = subprocess.Popen(self.command, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{base}/v1/facts/search", params={"q": "x"}, headers=_auth())
                return base
            except httpx.TransportError:
                time.sleep(0.2)
        raise SystemExit("the server did not start")

    def __exit__(self, *exc: object) -> None:
        self.server.terminate()
        self.server.wait(timeout=30)


def _auth() -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}"}


def _timed(rounds: int, ask: Callable[[], httpx.Response]) -> list[float]:
    took = []
    for _ in range(rounds):
        start = time.perf_counter()
        got = ask()
        took.append((time.perf_counter() - start) * 1000)
        got.raise_for_status()
    return took


def _measure(base: str, rounds: int) -> str:
    with httpx.Client(base_url=base, headers=_auth(), timeout=120) as client:
        page = {"limit": "10"}
        subject = client.get("/v1/facts", params=page).json()["facts"][0]
        who = subject["fields"]["subject"]
        first = _timed(rounds, lambda: client.get("/v1/facts", params=page))
        cursor = client.get("/v1/facts", params=page).json()["next_cursor"]
        pages = 0

        def next_page() -> httpx.Response:
            nonlocal cursor, pages
            got = client.get("/v1/facts", params={"limit": "10", "cursor": cursor})
            cursor = got.json()["next_cursor"]
            pages += 1
            return got

        later = _timed(rounds, next_page)
        one = {"limit": "10", "subject": who}
        baseline = _timed(rounds, lambda: client.get("/v1/facts", params=one))
        total = client.get("/v1/facts", params={"limit": "1"}).json()
    m_first, m_later = statistics.median(first), statistics.median(later)
    m_base = statistics.median(baseline)
    ok = m_first <= 20
    return (
        f"{rounds} rounds (median, max): first page {m_first:.1f} ms "
        f"({max(first):.1f}); next page by cursor {m_later:.1f} ms "
        f"({max(later):.1f}); baseline, one subject's page {m_base:.1f} ms "
        f"({max(baseline):.1f}); first page / baseline {m_first / m_base:.2f}x; "
        f"target (first page <= 20 ms) {'met' if ok else 'missed'}"
        f"{'' if total['next_cursor'] else ' (one page only?)'}"
    )


if __name__ == "__main__":
    main()
