"""Crafted exports: refused whole, the store left as it was, and always reopened."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.store.journal import JOURNAL, Journal
from oms_rdf.vocab import OMS


def dump(store: oms.GrainStore) -> list[str]:
    return sorted(str(q) for q in store.core.backend.quads())


def backup(tmp_path: Path) -> tuple[Path, str]:
    source = oms.GrainStore()
    address = source.put(
        oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1768471200000)
    )
    path = tmp_path / "backup.nq"
    source.export(path)
    return path, address


@pytest.mark.parametrize("holding", [False, True], ids=["empty", "holding"])
@pytest.mark.parametrize("graph", ["index", "audit", "blobs", "default"])
def test_blank_nodes_in_the_stores_own_graphs_are_refused(
    tmp_path: Path, holding: bool, graph: str
) -> None:
    path, address = backup(tmp_path)
    where = "" if graph == "default" else f" <{getattr(OMS, graph).value}>"
    path.write_text(
        path.read_text()
        + f'_:b1 <{OMS.note.value}> "x"{where} .\n'
        + f"<nih:sha-256;{address}> <{OMS.note.value}> _:b1{where} .\n"
    )
    store_path = tmp_path / "target"
    target = oms.GrainStore(store_path)
    if holding:
        target.put(
            oms.Belief("bob", "works_at", "Initech", 0.8, created_at=1768471200000)
        )
    before = dump(target)
    with pytest.raises(oms.OmsError):
        target.import_(path)
    assert dump(target) == before
    target.close()
    again = oms.GrainStore(store_path)  # opens for writing, nothing left to undo
    assert dump(again) == before
    again.put(
        oms.Belief("carol", "works_at", "Umbrella", 0.7, created_at=1768471200000)
    )
    again.close()


def test_an_undo_removes_journalled_quads_that_hold_blank_nodes(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = oms.GrainStore(path)
    store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1768471200000))
    before = dump(store)
    journal = Journal.begin(store.backend)
    blank = ox.BlankNode("b1")
    journal.write(
        [
            ox.Quad(blank, OMS.note, ox.Literal("x"), OMS.index),
            ox.Quad(OMS.settings, OMS.note, blank, OMS.index),
            ox.Quad(blank, OMS.note, blank, OMS.audit),
        ]
    )
    assert len(dump(store)) > len(before)
    store.close()  # as a crash would leave it
    reopened = oms.GrainStore(path)
    assert dump(reopened) == before
    assert next(reopened.backend.quads(JOURNAL, None, None, OMS.index), None) is None
    reopened.close()
