"""len(store) and count_beliefs() are answered by the engine, and stay exact."""

from __future__ import annotations

from pathlib import Path

import pytest

import oms_rdf as oms
from oms_rdf.rdf.vocab import OMS
from oms_rdf.store import lookup

T0 = 1_700_000_000_000


def _story(store: oms.GrainStore) -> set[str]:
    """Puts, a supersession, a retraction and an erasure; the addresses left."""
    held = set()
    for i in range(12):
        belief = oms.Belief(f"p{i}", "works_at", f"org {i}", 0.9, created_at=T0 + i)
        held.add(store.put(belief))
    old = store.beliefs("p0", "works_at")[0]
    new = {**old.to_dict(), "object": "elsewhere", "created_at": T0 + 100}
    held.add(store.supersede(old, new))
    store.retract(store.beliefs("p1", "works_at")[0], reason="wrong")
    gone = store.beliefs("p2", "works_at")[0]
    store.erase(gone, reason="asked to")
    held.discard(gone.address)
    return held


@pytest.mark.parametrize("on_disk", [False, True])
def test_len_and_count_match_the_grains(tmp_path: Path, on_disk: bool) -> None:
    clock = [T0 + 1_000]
    store = oms.GrainStore(tmp_path / "s" if on_disk else None, clock=lambda: clock[0])
    held = _story(store)
    blobs = {
        q.subject.value.removeprefix("nih:sha-256;")
        for q in store.backend.quads(None, OMS.blob, None, OMS.blobs)
    }
    assert blobs == held
    assert len(store) == len(held)
    assert store.count_beliefs() == len(store.beliefs())
    assert store.count_beliefs() == len(held) - 2  # the superseded and the retracted


def test_len_asks_the_engine_one_count() -> None:
    """The count of grains is one COUNT the engine answers, and len(store) is it."""
    store = oms.GrainStore()
    for i in range(5):
        store.put(oms.Belief(f"p{i}", "knows", "x", 0.9, created_at=T0 + i))
    assert lookup.count_grains(store.backend) == 5 == len(store)
