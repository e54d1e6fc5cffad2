"""SPARQL servers for the tests and benchmarks, on free loopback ports.

Oxigraph is pip's ``oxigraph`` (the ``[test]`` extra), the same version as
pyoxigraph; Virtuoso is Debian's ``virtuoso-opensource`` (``.ci/run`` installs it),
run on a throwaway database with a user allowed SPARQL Update. ``RACER`` is the client program two processes run to race on
supersessions (tests/test_remote.py, benchmarks/bench_remote_race.py).
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

RACER = """
import json, sys, time, oms_rdf as oms
from tests.servers import backend_for
kind, base, worker = sys.argv[1], sys.argv[2], sys.argv[3]
start, step = float(sys.argv[4]), float(sys.argv[5])
addresses = json.loads(sys.stdin.read())
store = oms.GrainStore(backend=backend_for(kind, base))
outcome = []
for i, old in enumerate(addresses):
    while time.time() < start + i * step:  # every round starts together
        time.sleep(0.001)
    new = {"type": "belief", "subject": f"race{i}", "relation": "r", "object": f"by {worker}",
           "confidence": 0.9, "created_at": 2}
    try:
        outcome.append(store.supersede(old, new))
    except oms.OmsError as exc:
        outcome.append(str(exc.code))
store.close()
print(json.dumps(outcome))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _answers(server: subprocess.Popen[bytes], url: str, *, tries: int) -> bool:
    """Wait until ``url`` answers a query; False if it never does or the server dies."""
    for _ in range(tries):
        try:
            httpx.get(url, params={"query": "ASK {}"}, timeout=1)
            return True
        except httpx.TransportError:
            if server.poll() is not None:
                return False
            time.sleep(0.1)
    return False


def start_oxigraph(
    folder: Path, port: int | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Start a server on ``folder``; return it and its base URL once it answers."""
    binary = shutil.which("oxigraph", path=str(Path(sys.executable).parent))
    assert binary is not None, "the [test] extra installs the oxigraph server"
    port = port or free_port()
    server = subprocess.Popen(
        [binary, "serve", "--location", str(folder), "--bind", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    if _answers(server, f"{base}/query", tries=100):
        return server, base
    server.kill()
    raise AssertionError("the oxigraph server did not start")


VIRTUOSO_USER, VIRTUOSO_PASSWORD = "oms", "oms-test"

_VIRTUOSO_INI = """\
[Database]
DatabaseFile = {dir}/virtuoso.db
ErrorLogFile = {dir}/virtuoso.log
LockFile = {dir}/virtuoso.lck
TransactionFile = {dir}/virtuoso.trx
xa_persistent_file = {dir}/virtuoso.pxa
[TempDatabase]
DatabaseFile = {dir}/virtuoso-temp.db
TransactionFile = {dir}/virtuoso-temp.trx
[Parameters]
ServerPort = 127.0.0.1:{sql}
DisableUnixSocket = 1
DirsAllowed = ., {dir}
NumberOfBuffers = 20000
MaxDirtyBuffers = 15000
CheckpointInterval = 60
[HTTPServer]
ServerPort = 127.0.0.1:{http}
ServerRoot = {dir}
ServerThreads = 10
MaxClientConnections = 10
[SPARQL]
ResultSetMaxRows = 1048576
MaxQueryExecutionTime = 600
MaxQueryCostEstimationTime = 600
"""


def start_virtuoso(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start Virtuoso on a new database in ``folder``, with a user who may update
    (``VIRTUOSO_USER``); return it and its base URL once it answers."""
    binary, isql = shutil.which("virtuoso-t"), shutil.which("isql-vt")
    assert binary and isql, "virtuoso-opensource is installed by .ci/run"
    ini = folder / "virtuoso.ini"
    new = not (folder / "virtuoso.db").exists()
    if new:  # a restart keeps its ports, its database and its user
        sql, http = free_port(), free_port()
        ini.write_text(_VIRTUOSO_INI.format(dir=folder, sql=sql, http=http))
    ports = re.findall(r"ServerPort = 127.0.0.1:(\d+)", ini.read_text())
    sql, http = int(ports[0]), int(ports[1])
    server = subprocess.Popen(
        [binary, "+foreground", "+configfile", str(ini)], cwd=folder,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{http}"
    if not _answers(server, f"{base}/sparql", tries=600):
        server.kill()
        log = (folder / "virtuoso.log").read_text()[-2000:]
        raise AssertionError(f"Virtuoso did not start: {log}")
    if not new:
        return server, base
    grant = (
        f"DB.DBA.USER_CREATE('{VIRTUOSO_USER}', '{VIRTUOSO_PASSWORD}'); "
        f'GRANT SPARQL_UPDATE TO "{VIRTUOSO_USER}";'
    )
    subprocess.run([isql, f"127.0.0.1:{sql}", "dba", "dba", f"exec={grant}"],
                   check=True, capture_output=True, timeout=60)  # fmt: skip
    return server, base


def virtuoso_backend(base: str) -> Any:
    """The store's backend on a Virtuoso started by :func:`start_virtuoso`."""
    import oms_rdf as oms

    return oms.VirtuosoBackend(base, user=VIRTUOSO_USER, password=VIRTUOSO_PASSWORD)


STARTERS = {"oxigraph": start_oxigraph, "virtuoso": start_virtuoso}


def backend_for(kind: str, base: str) -> Any:
    """The store's backend on a server of ``kind`` ("oxigraph" or "virtuoso")."""
    import oms_rdf as oms

    if kind == "oxigraph":
        return oms.SparqlBackend.oxigraph(base)
    return virtuoso_backend(base)


def clear(backend: Any) -> None:
    """Remove every quad of the store from a server (never a server's own graphs)."""
    drops = [f"DROP SILENT GRAPH {g}" for g in backend.named_graphs()]
    backend.update(" ;\n".join(["CLEAR DEFAULT", *drops]))


# Seconds between the starts of two rounds: longer than a round takes, so that
# the clients meet on every grain (a client a round ahead would win them all).
ROUND = {"oxigraph": 0.03, "virtuoso": 0.25}


def race(
    kind: str, base: str, addresses: list[str], clients: int = 2
) -> list[list[str]]:
    """Run ``clients`` RACER processes over ``addresses`` at once; their outcomes."""
    import json

    start = time.time() + 2.0  # all start together, once each has imported oms_rdf
    racers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                RACER,
                kind,
                base,
                str(w),
                str(start),
                str(ROUND[kind]),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parent.parent,  # the racer imports tests.servers
        )
        for w in range(clients)
    ]
    for racer in racers:  # every racer gets its work before any is waited for
        assert racer.stdin is not None
        racer.stdin.write(json.dumps(addresses))
        racer.stdin.close()
    outcomes = []
    for racer in racers:
        assert racer.stdout is not None
        outcomes.append(json.loads(racer.stdout.read()))
        racer.stdout.close()
        assert racer.wait(timeout=600) == 0
    return outcomes
