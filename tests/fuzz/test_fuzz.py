"""The fuzz targets under hypothesis, a CI-sized budget; run.py does the long runs."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf.rdf.vocab import OMS

from . import beliefs, http, laws
from .known import known
from .seeds import mutate, seeds_for
from .targets import TARGETS

# Examples per target: the whole file stays under a minute on a loaded machine.
BUDGET = {
    "decode": 400,
    "container": 200,
    "frames": 200,
    "envelope": 200,
    "json_line": 300,
    "belief": 150,
    "http": 120,
}
STATEFUL = 50  # each restore_* and adopt_* target
QUICK = settings(deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow])  # fmt: skip


def guarded(target: Any, data: Any) -> None:
    """Run a target; a failure test_found.py already reproduces (known.py) passes."""
    try:
        target(data)
    except Exception as exc:
        if known(exc) is None:
            raise


@pytest.fixture(scope="module", autouse=True)
def _close_servers() -> Iterator[None]:
    yield
    http.close()


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_only_oms_errors_escape_and_the_laws_hold(name: str) -> None:
    target, seeds = TARGETS[name], seeds_for(name)
    stateful = name.startswith(("restore_", "adopt_"))

    @settings(QUICK, max_examples=BUDGET.get(name, STATEFUL if stateful else 200))
    @given(
        seed=st.sampled_from(seeds),
        salt=st.integers(0, 2**32),
        raw=st.binary(max_size=64),
    )
    def check(seed: bytes, salt: int, raw: bytes) -> None:
        rng = random.Random(salt)
        guarded(target, raw if salt % 10 == 0 else mutate(seed, rng))

    check()


@settings(QUICK, max_examples=150)
@given(fields=beliefs.belief_fields)
def test_hypothesis_beliefs_keep_the_laws(fields: dict[str, Any]) -> None:
    guarded(beliefs.put_belief, fields)


# The laws themselves must be able to fail.


def test_the_refusal_law_sees_one_changed_quad() -> None:
    store = beliefs.story()
    before = laws.snapshot(store)
    store.core.backend.add([ox.Quad(ox.NamedNode("urn:a"), ox.NamedNode("urn:b"),
                                    ox.Literal("c"))])  # fmt: skip
    with pytest.raises(AssertionError, match="changed the store"):
        laws.refused(before, store, "test")


def test_the_layer_law_sees_a_grain_layer_the_blob_does_not_make() -> None:
    store = beliefs.story()
    before = laws.snapshot(store)
    node = next(iter(before.graph(laws.BLOBS))).subject
    store.core.backend.add([ox.Quad(node, OMS.confidence, ox.Literal("0.1"))])
    with pytest.raises(AssertionError, match="not its blob's mapping"):
        laws.accepted(before, store, "test")


def test_the_reserved_graph_law_sees_a_lost_blob_and_a_stray_index_quad() -> None:
    store = beliefs.story()
    before = laws.snapshot(store)
    blob = next(iter(before.graph(laws.BLOBS)))
    store.core.backend.update(f"DELETE DATA {{ GRAPH {blob.graph_name} {{ "
                              f"{blob.subject} {blob.predicate} {blob.object} }} }}")  # fmt: skip
    with pytest.raises(AssertionError, match="removed blob quads"):
        laws.accepted(before, store, "test")
    store = beliefs.story()
    before = laws.snapshot(store)
    node = next(iter(before.graph(laws.BLOBS))).subject
    store.core.backend.add([ox.Quad(node, OMS.status, OMS.retracted, OMS.index)])
    with pytest.raises(AssertionError, match="index quads no new audit event names"):
        laws.accepted(before, store, "test")


def test_a_story_store_keeps_the_laws_whole() -> None:
    laws.whole(beliefs.story(), "the story")
    assert isinstance(beliefs.story(), oms.GrainStore)


@pytest.mark.soak
def test_a_long_run_keeps_the_laws() -> None:
    from .run import main

    assert main(["--count", "20000", "--seed", "1"]) == 0
