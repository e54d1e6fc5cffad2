from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# Over a server every store costs HTTP round trips: fewer examples, the same laws.
settings.register_profile(
    "remote", parent=settings.get_profile("default"), max_examples=25
)
settings.load_profile("remote" if os.environ.get("OMS_RDF_TEST_BACKEND") else "default")

GOLDEN = Path(__file__).parent / "golden"
DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


def load_vectors() -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = json.loads((GOLDEN / "vectors.json").read_text())[
        "vectors"
    ]
    return vectors


@pytest.fixture
def belief_fields() -> dict[str, Any]:
    return {
        "type": "belief",
        "subject": "user",
        "relation": "prefers",
        "object": "dark mode",
        "confidence": 0.9,
        "source_type": "user_explicit",
        "created_at": 1768471200000,
        "namespace": "shared",
        "author_did": DID,
    }


# With OMS_RDF_TEST_BACKEND=oxigraph (or virtuoso), every store a test makes in
# memory lives on a real server instead: each store has a server of its own while
# it lives (servers are reused, cleared, once their store is gone). The behaviour
# suites run this way from tests/test_remote.py.
BACKEND = os.environ.get("OMS_RDF_TEST_BACKEND")


@pytest.fixture(autouse=True, scope="session")
def _stores_on_the_backend_under_test(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if BACKEND not in ("oxigraph", "virtuoso"):
        yield
        return
    import subprocess
    import weakref

    import oms_rdf as oms
    from tests.servers import clear, start_oxigraph, start_virtuoso, virtuoso_backend

    servers: list[subprocess.Popen[bytes]] = []
    idle: list[str] = []

    def start() -> str:
        starter = start_oxigraph if BACKEND == "oxigraph" else start_virtuoso
        server, base = starter(tmp_path_factory.mktemp("server"))
        servers.append(server)
        return base

    original = oms.GrainStore.__init__

    def on_a_server(self: Any, path: Any = None, **options: Any) -> None:
        if path is None and options.get("backend") is None:
            base = idle.pop() if idle else start()
            if BACKEND == "oxigraph":
                backend = oms.SparqlBackend.oxigraph(base)
            else:
                backend = virtuoso_backend(base)
            clear(backend)
            options["backend"] = backend
            # The server is free again once the store is gone.
            weakref.finalize(self, idle.append, base)
            weakref.finalize(self, backend.close)
        original(self, path, **options)

    oms.GrainStore.__init__ = on_a_server  # type: ignore[method-assign]
    yield
    oms.GrainStore.__init__ = original  # type: ignore[method-assign]
    for server in servers:
        server.terminate()
        server.wait()
