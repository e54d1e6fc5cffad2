"""Two processes racing to supersede the same grains on one Oxigraph server.

Run: python -m benchmarks.bench_remote_race [ROUNDS]   (default 200)

Each round a fresh grain is superseded by both clients at once. The store takes
its write lock (store/writelock.py) and re-checks, inside its own update, that the
grain is still current and that the audit chain's head is the one it links to.
The probe counts rounds that both clients won: it must be zero. (Without the lock,
Oxigraph server's snapshot updates let 15 to 49 rounds of 200 have two winners.)
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

import oms_rdf as oms

RACER = """
import json, sys, time, oms_rdf as oms
base, worker, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
addresses = json.loads(sys.stdin.read())
store = oms.GrainStore(backend=oms.SparqlBackend.oxigraph(base))
while time.time() < start:
    time.sleep(0.001)
outcome = []
for i, old in enumerate(addresses):
    new = {"type": "belief", "subject": f"race{i}", "relation": "r", "object": f"by {worker}",
           "confidence": 0.9, "created_at": 2}
    try:
        outcome.append(store.supersede(old, new))
    except oms.OmsError as exc:
        outcome.append(str(exc.code))
store.close()
print(json.dumps(outcome))
"""


def main(rounds: int = 200) -> None:
    binary = shutil.which("oxigraph", path=str(Path(sys.executable).parent))
    assert binary is not None, "pip install oxigraph (the [test] extra)"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    folder = tempfile.mkdtemp(prefix="oms-race-")
    server = subprocess.Popen([binary, "serve", "--location", folder, "--bind", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                httpx.get(f"{base}/query", params={"query": "ASK {}"}, timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        store = oms.GrainStore(backend=oms.SparqlBackend.oxigraph(base))
        heads = store.put_many(
            [
                oms.Belief(f"race{i}", "r", "first", 0.9, created_at=1)
                for i in range(rounds)
            ]
        )
        start = time.time() + 2.0
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", RACER, base, str(w), str(start)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for w in range(2)
        ]
        for racer in racers:
            assert racer.stdin is not None
            racer.stdin.write(json.dumps(heads))
            racer.stdin.close()
        outcomes = []
        for racer in racers:
            assert racer.stdout is not None
            outcomes.append(json.loads(racer.stdout.read()))
            racer.wait()
        both = sum(all(len(o[i]) == 64 for o in outcomes) for i in range(rounds))
        successors = sum(
            1 for q in store.backend.quads(None, oms.vocab.OMS.supersededBy, None, None)
        )
        print(f"{rounds} rounds, 2 clients: both won {both} rounds; "
              f"{successors} successors recorded for {rounds} grains; "
              f"audit chain ok: {store.verify_audit().ok}")  # fmt: skip
        store.close()
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
