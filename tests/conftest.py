from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# The default tier is run on every change and must stay within minutes: 50 examples
# a property (a test that names its own count keeps it). OMS_RDF_HYPOTHESIS=deep
# tries ten times as many, for a run on demand before a release.
settings.register_profile(
    "default",
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep", parent=settings.get_profile("default"), max_examples=500
)
# Over a server every store costs HTTP round trips: fewer examples, the same laws.
settings.register_profile(
    "remote", parent=settings.get_profile("default"), max_examples=25
)
settings.load_profile(
    os.environ.get("OMS_RDF_HYPOTHESIS")
    or ("remote" if os.environ.get("OMS_RDF_TEST_BACKEND") else "default")
)

# The servers tier: each test names the system package it needs with
# @pytest.mark.servers("virtuoso-opensource") or ("chromium"), and the programs of
# it on PATH tell whether it is installed (one of each tuple is enough).
PACKAGES = {
    "virtuoso-opensource": [("virtuoso-t",), ("isql-vt",)],
    "chromium": [("chromium", "chromium-browser")],
}


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    for item in items:
        for mark in item.iter_markers("servers"):
            unknown = [p for p in mark.args if p not in PACKAGES]
            if not mark.args or unknown:
                raise pytest.UsageError(
                    f"{item.nodeid}: @pytest.mark.servers takes the system packages"
                    f" it needs, of {sorted(PACKAGES)}; found {list(mark.args)}"
                )
        if BACKEND and item.nodeid in SOAK_ON_A_SERVER:
            item.add_marker(pytest.mark.soak)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a test whose system package is missing, naming it; under CI=true (CI
    installs every package, in .ci/run) a missing package fails the test. The
    same holds for the W3C test files of the w3c tier."""
    if item.get_closest_marker("w3c") is not None:
        from tests import w3c

        if w3c.root() is None:
            reason = f"needs the W3C SPARQL test files: {w3c.FETCH_HINT}"
            if os.environ.get("CI") == "true":
                pytest.fail(f"CI=true and {reason}", pytrace=False)
            pytest.skip(reason)
    for mark in item.iter_markers("servers"):
        for package in mark.args:
            missing = [
                " or ".join(names)
                for names in PACKAGES[package]
                if not any(shutil.which(name) for name in names)
            ]
            if missing:
                reason = (
                    f"needs Debian's {package} ({', '.join(missing)} not on PATH):"
                    f" apt-get install {package}, as .ci/run does"
                )
                if os.environ.get("CI") == "true":
                    pytest.fail(f"CI=true and {reason}", pytrace=False)
                pytest.skip(reason)


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
# Over a server these take minutes (thousands of requests an example): the
# default tier runs them in process, the soak tier over each server too.
SOAK_ON_A_SERVER = {
    "tests/test_lookup.py::test_random_histories",
    "tests/test_rewrite.py::test_random_histories_answer_the_same_both_ways",
    "tests/test_changes.py::test_the_delta_is_the_difference_of_the_two_points",
    "tests/test_versions.py::test_a_belief_is_in_force_where_a_version_holds",
}


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
