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
import json, sys, oms_rdf as oms
from tests.servers import backend_for
kind, base, worker = sys.argv[1], sys.argv[2], sys.argv[3]
addresses = json.loads(sys.stdin.readline())
store = oms.GrainStore(backend=backend_for(kind, base))
print("ready", flush=True)
for i, old in enumerate(addresses):
    sys.stdin.readline()  # the round starts when the runner says so, for all at once
    new = {"type": "belief", "subject": f"race{i}", "relation": "r", "object": f"by {worker}",
           "confidence": 0.9, "created_at": 2}
    try:
        outcome = store.supersede(old, new)
    except oms.OmsError as exc:
        outcome = str(exc.code)
    print(outcome, flush=True)
store.close()
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
MaxQueryCostEstimationTime = 0
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


def race(
    kind: str, base: str, addresses: list[str], clients: int = 2
) -> list[list[str]]:
    """Run ``clients`` RACER processes over ``addresses`` in lock step; their
    outcomes, one list per client.

    Each round starts for every client at once, when all have finished the one
    before, so the clients meet on every grain however loaded the machine is
    (with rounds on a timer, a client a round behind lost them all). Who is told
    first turns each round, so that no client is systematically ahead."""
    import json
    import tempfile

    logs = [tempfile.TemporaryFile("w+") for _ in range(clients)]
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, kind, base, str(w)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=Path(__file__).parent.parent,  # the racer imports tests.servers
        )
        for w, log in enumerate(logs)
    ]

    def line(w: int) -> str:
        said = racers[w].stdout.readline().strip()
        if not said:  # the racer died: its error is the test's failure
            racers[w].wait(timeout=60)
            logs[w].seek(0)
            raise AssertionError(f"racer {w} failed: {logs[w].read()[-3000:]}")
        return said

    def tell(w: int, text: str) -> None:
        racers[w].stdin.write(text + "\n")
        racers[w].stdin.flush()

    try:
        for w in range(clients):
            tell(w, json.dumps(addresses))
        assert all(line(w) == "ready" for w in range(clients))
        outcomes: list[list[str]] = [[] for _ in range(clients)]
        for i in range(len(addresses)):
            order = [(i + k) % clients for k in range(clients)]
            for w in order:
                tell(w, "go")
            for w in range(clients):
                outcomes[w].append(line(w))
        for racer in racers:
            racer.stdin.close()
            assert racer.wait(timeout=60) == 0
        return outcomes
    finally:
        for racer in racers:
            racer.kill()
            racer.wait(timeout=60)
            for pipe in (racer.stdin, racer.stdout):
                if pipe is not None:
                    pipe.close()
        for log in logs:
            log.close()
