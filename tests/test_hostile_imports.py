"""Crafted exports: refused whole, the store left as it was, and always reopened."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.rdf.vocab import OMS
from oms_rdf.store.journal import JOURNAL, Journal


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


def evidence_lines(target: str, *, log_ratio: bool = True) -> str:
    event = "<urn:uuid:0b6f4c4e-8f1e-4f55-9d7e-0c3a9b1d2e3f>"
    index = f"<{OMS.index.value}>"
    double = "<http://www.w3.org/2001/XMLSchema#double>"
    lines = [
        f"{event} <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{OMS.Evidence.value}> {index} .",
        f"{event} <{OMS.evidenceFor.value}> <nih:sha-256;{target}> {index} .",
        f'{event} <{OMS.evidenceKind.value}> "refuting" {index} .',
        f'{event} <{OMS.strength.value}> "0.9"^^{double} {index} .',
        f'{event} <{OMS.at.value}> "2026-01-15T10:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> {index} .',
    ]
    if log_ratio:
        lines.append(
            f'{event} <{OMS.logRatio.value}> "-2.1972245773362196"^^{double} {index} .'
        )
    return "\n".join(lines) + "\n"


def test_an_import_cannot_add_evidence_to_a_stored_grain(tmp_path: Path) -> None:
    target = oms.GrainStore()
    locked = target.put(
        oms.Belief(
            "alice",
            "works_at",
            "Acme",
            0.9,
            created_at=1768471200000,
            invalidation_policy={"mode": "locked"},
        )
    )
    path, _ = backup(tmp_path)
    path.write_text(path.read_text() + evidence_lines(locked))
    before = dump(target)
    with pytest.raises(oms.StoreError, match="evidence for"):
        target.import_(path)
    assert dump(target) == before
    assert target.evidence_log(locked) == []


@pytest.mark.parametrize("holding", [False, True], ids=["empty", "holding"])
def test_an_evidence_event_without_its_log_ratio_is_refused(
    tmp_path: Path, holding: bool
) -> None:
    path, address = backup(tmp_path)
    path.write_text(path.read_text() + evidence_lines(address, log_ratio=False))
    target = oms.GrainStore()
    if holding:
        target.put(
            oms.Belief("bob", "works_at", "Initech", 0.8, created_at=1768471200000)
        )
    before = dump(target)
    with pytest.raises(oms.StoreError, match="logRatio"):
        target.import_(path)
    assert dump(target) == before


def test_a_whole_event_for_a_grain_the_import_brings_is_restored(
    tmp_path: Path,
) -> None:
    path, address = backup(tmp_path)
    path.write_text(path.read_text() + evidence_lines(address))
    for holding in (False, True):
        target = oms.GrainStore()
        if holding:
            target.put(
                oms.Belief("bob", "works_at", "Initech", 0.8, created_at=1768471200000)
            )
        target.import_(path)
        assert [e.kind for e in target.evidence_log(address)] == ["refuting"]


def test_an_older_backup_brings_no_evidence_of_an_erased_grain_back(
    tmp_path: Path,
) -> None:
    store = oms.GrainStore()
    address = store.put(
        oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1768471200000)
    )
    store.evidence(address, kind="supporting", strength=0.8, note="alice's payslip")
    old = tmp_path / "old.nq"
    store.export(old)
    store.erase(address, reason="GDPR Art. 17")
    report = store.import_(old)
    assert report.skipped
    assert "payslip" not in "".join(dump(store))


@pytest.mark.parametrize("fmt", ["nq", "trig"])
def test_an_older_backup_into_a_store_left_with_only_tombstones(
    tmp_path: Path, fmt: str
) -> None:
    store = oms.GrainStore(tmp_path / "store")
    address = store.put(
        oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1768471200000)
    )
    old = tmp_path / f"old.{fmt}"
    store.export(old)
    store.erase(address, reason="GDPR Art. 17")
    report = store.import_(old)
    assert report.added == 0
    assert (f"grain {address[:12]}…", "erased, skipped") in report.skipped
    assert address not in store
    assert "Acme" not in "".join(dump(store))


@pytest.mark.parametrize("fmt", ["trig", "nq", "jsonld"])
def test_the_export_of_a_store_without_grains_imports(tmp_path: Path, fmt: str) -> None:
    empty = oms.GrainStore()
    (tmp_path / "empty.nt").write_text("")
    empty.import_(tmp_path / "empty.nt")  # an audit event, and no grain
    path = tmp_path / f"empty.{fmt}"
    empty.export(path)
    holding = oms.GrainStore()
    holding.put(oms.Belief("bob", "works_at", "Initech", 0.8, created_at=1768471200000))
    for target in (oms.GrainStore(), oms.GrainStore(tmp_path / "disk"), holding):
        had = len(target.beliefs())
        report = target.import_(path)
        assert report.added == 0
        assert len(target.beliefs()) == had
        target.put(
            oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1768471200000)
        )
        assert len(target.beliefs()) == had + 1


def test_a_container_repeating_one_large_grain_keeps_it_once(tmp_path: Path) -> None:
    import tracemalloc

    from oms_rdf.io.container import write_mg

    blob = oms.encode(
        {"type": "belief", "subject": "alice", "relation": "notes",
         "object": "x" * 700_000, "confidence": 0.5, "created_at": 1768471200000}
    )  # fmt: skip
    path = tmp_path / "repeated.mg"
    with path.open("wb") as out:
        write_mg([blob] * 60, out, compress=True)
    assert path.stat().st_size < 100_000  # 42 MB of grains, compressed
    store = oms.GrainStore()
    tracemalloc.start()
    try:
        report = store.import_(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.added == 1
    assert len(store.beliefs()) == 1
    assert peak < 40 << 20, f"{peak / 2**20:.1f} MiB"


def test_an_overlong_json_lines_line_is_refused_without_reading_it_whole(
    tmp_path: Path,
) -> None:
    import tracemalloc

    source = oms.GrainStore()
    source.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1768471200000))
    good = tmp_path / "good.jsonl"
    source.export(good)
    path = tmp_path / "long.jsonl"
    with path.open("wb") as out:
        out.write(good.read_bytes())
        out.write(b'{"type": "belief", "subject": "' + b"x" * (100 << 20) + b'"}\n')
    for target in (oms.GrainStore(), source):
        before = dump(target)
        tracemalloc.start()
        try:
            with pytest.raises(oms.DecodeError) as caught:
                target.import_(path)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert caught.value.code == "ERR_RANGE" and "line 2" in str(caught.value)
        assert dump(target) == before
        assert peak < 48 << 20, f"{peak / 2**20:.1f} MiB"
