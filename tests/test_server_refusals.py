"""On a SPARQL server, time travel is asked where the data is, or refused.

A query of a point is rewritten onto the grain layer; a form the rewrite cannot
take is refused with ERR_QUERY naming the form, never answered by copying the
point's knowledge into the process (in process, that copy is the answer).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

import oms_rdf as oms
from tests.servers import clear, start_oxigraph

T1 = 1_700_000_000_000
EX = "http://example.org/"
POINT = {"valid_at": T1, "as_of": T1}

# Each form, and words the refusal must use to name it.
FORMS = {
    f"SELECT ?o WHERE {{ <{EX}a> <{EX}p>+ ?o }}": "repeats",
    f"SELECT ?o WHERE {{ <{EX}a> <{EX}p>* ?o }}": "repeats",
    f"DESCRIBE <{EX}a>": "DESCRIBE",
    f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }} VALUES ?o {{ <{EX}b> }}": "VALUES",
    f"SELECT ?o FROM <{EX}g> WHERE {{ <{EX}a> <{EX}p> ?o }}": "dataset",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    process: subprocess.Popen[bytes]
    process, base = start_oxigraph(tmp_path_factory.mktemp("oxigraph"))
    yield base
    process.terminate()
    process.wait(timeout=30)


def fill(store: oms.GrainStore) -> None:
    for s, o in (("a", "b"), ("b", "c")):
        store.put(oms.Belief(f"{EX}{s}", f"{EX}p", f"{EX}{o}", 0.9, created_at=T1))


@pytest.mark.parametrize("query", FORMS)
def test_a_form_the_rewrite_cannot_take_is_refused(server: str, query: str) -> None:
    backend = oms.SparqlBackend.oxigraph(server)
    clear(backend)
    store = oms.GrainStore(backend=backend, clock=lambda: T1 + 1000)
    fill(store)
    with pytest.raises(oms.QueryError) as refused:
        store.query(query, **POINT)
    message = str(refused.value)
    assert refused.value.code == "ERR_QUERY"
    assert FORMS[query].lower() in message.lower(), message
    assert "server" in message, message
    store.close()


def test_in_process_the_same_forms_are_answered() -> None:
    store = oms.GrainStore(clock=lambda: T1 + 1000)
    fill(store)
    rows = store.query(f"SELECT ?o WHERE {{ <{EX}a> <{EX}p>+ ?o }}", **POINT)
    assert sorted(r["o"].value for r in rows) == [f"{EX}b", f"{EX}c"]


def test_a_form_the_rewrite_takes_is_answered_on_the_server(server: str) -> None:
    backend = oms.SparqlBackend.oxigraph(server)
    clear(backend)
    store = oms.GrainStore(backend=backend, clock=lambda: T1 + 1000)
    fill(store)
    rows = store.query(f"SELECT ?o WHERE {{ <{EX}a> <{EX}p>/<{EX}p> ?o }}", **POINT)
    assert [r["o"].value for r in rows] == [f"{EX}c"]
    store.close()
