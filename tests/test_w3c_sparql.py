"""The W3C SPARQL 1.0/1.1 query-evaluation tests, over adopted data, four ways.

Each test's data is imported into a store, then its query is asked:
- plainly, ``store.query(q)``;
- at now on both axes, ``store.query(q, valid_at=now, as_of=now)``, each triple
  pattern matched in a version whose extent holds the point;
- at a past point: the data is imported at T1, then at T2 a third of the beliefs are
  retracted, a third superseded by other objects and new beliefs put, and the query
  is asked ``as_of=T1, valid_at=T1``: of the interval layer's graphs in force
  there, and again rewritten onto the grain layer, as a server is asked.

Every way must give the answer the suite expects, for every test that pyoxigraph
itself passes over the same files (the scope; ``test_the_scope_is_the_suites``
pins its size). The files come from PyPI (see ``tests/w3c.py``): ``python -m
tests.w3c`` fetches them, and the tier runs with ``pytest -m w3c``.
"""

from __future__ import annotations

import io
from functools import cache
from typing import Any

import pyoxigraph as ox
import pytest

from oms_rdf import Belief, GrainStore
from oms_rdf.backends.embedded import LocalBackend
from tests import w3c

pytestmark = pytest.mark.w3c

T1 = 1_700_000_000_000
T2 = T1 + 86_400_000
LATER = "http://example.org/oms-rdf/later/"


@cache
def _scope() -> tuple[list[w3c.Case], list[str]]:
    """The cases pyoxigraph passes, and the ids of those it does not."""
    folder = w3c.root()
    if folder is None:
        return [], []
    passed, failed = [], []
    for case in w3c.cases(folder):
        try:
            plain = ox.Store()
            plain.extend(w3c.dataset(case))
            answer = plain.query(case.text, base_iri=case.base)
            ok = w3c.same(w3c.expected(case), w3c.actual(case, answer))
        except (SyntaxError, ValueError, OSError):
            ok = False
        if ok:
            passed.append(case)
        else:
            failed.append(case.id)
    return passed, failed


def _ids() -> list[Any]:
    cases, _ = _scope()
    params = [pytest.param(case, id=case.id) for case in cases]
    return params or [pytest.param(None, id="files-not-fetched")]


class _GrainLayerOnly(LocalBackend):
    intervals = False  # a point's questions rewritten onto the grain layer


def _store(case: w3c.Case, backend: Any = None) -> tuple[GrainStore, list[int]]:
    clock = [T1]
    store = GrainStore(backend=backend, clock=lambda: clock[0])
    data = w3c.nquads(w3c.dataset(case))
    if data:
        store.import_(io.BytesIO(data), format="nquads")
    return store, clock


def _query(case: w3c.Case) -> str:
    # The store takes no base IRI per query; the query's own prologue can say it.
    return f"BASE <{case.base}>\n{case.text}"


def _later(store: GrainStore, clock: list[int]) -> None:
    """Retract a third, supersede a third, put new beliefs: all at T2."""
    clock[0] = T2
    held = store.beliefs()
    for i, grain in enumerate(held):
        if i % 3 == 0:
            store.retract(grain.address, reason="a later correction")
        elif i % 3 == 1:
            fields = dict(grain.fields)
            fields["object"] = f"{LATER}object/{i}"
            fields["created_at"] = T2
            fields.pop("derived_from", None)
            store.supersede(grain.address, fields, justification="a later value")
    for i in range(3):
        store.put(
            Belief(f"{LATER}s{i}", f"{LATER}p", f"{LATER}o{i}", 0.9, created_at=T2)
        )


def _check(case: w3c.Case | None, ask: Any) -> None:
    if case is None:
        pytest.fail(f"the W3C test files are not fetched: {w3c.FETCH_HINT}")
    want = w3c.expected(case)
    got = w3c.actual(case, ask(case))
    assert w3c.same(want, got), f"{case.id}: expected {want!r}, found {got!r}"


@pytest.mark.parametrize("case", _ids())
def test_plain(case: w3c.Case | None) -> None:
    _check(case, lambda c: _store(c)[0].query(_query(c)))


@pytest.mark.parametrize("case", _ids())
def test_at_now(case: w3c.Case | None) -> None:
    def ask(c: w3c.Case) -> Any:
        store, clock = _store(c)
        # Each triple pattern tests its version's extent, as past many extents.
        store.core.intervals.read_at_question = 1
        store.core.intervals.named_at_most = 0
        return store.query(_query(c), valid_at=clock[0], as_of=clock[0])

    _check(case, ask)


@pytest.mark.parametrize("case", _ids())
def test_at_a_past_point_after_later_changes(case: w3c.Case | None) -> None:
    def ask(c: w3c.Case) -> Any:
        store, clock = _store(c)
        _later(store, clock)
        store.core.intervals.read_at_question = 1  # the first question reads it
        return store.query(_query(c), valid_at=T1, as_of=T1)

    _check(case, ask)


@pytest.mark.parametrize("case", _ids())
def test_at_a_past_point_on_the_grain_layer(case: w3c.Case | None) -> None:
    def ask(c: w3c.Case) -> Any:
        store, clock = _store(c, _GrainLayerOnly())
        _later(store, clock)
        return store.query(_query(c), valid_at=T1, as_of=T1)

    _check(case, ask)


def test_the_scope_is_the_suites() -> None:
    """The scope cannot shrink unnoticed: pyoxigraph passes 388 of the 422 tests."""
    folder = w3c.root()
    if folder is None:
        pytest.fail(f"the W3C test files are not fetched: {w3c.FETCH_HINT}")
    passed, failed = _scope()
    assert (len(passed), len(passed) + len(failed)) == (388, 422), failed
