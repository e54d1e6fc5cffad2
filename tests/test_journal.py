"""Large writes are all or nothing: the journal undoes an interrupted one on open."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.rdf.vocab import OMS
from oms_rdf.store.journal import JOURNAL, Journal

TURTLE = b"""@prefix ex: <http://example.org/> .
ex:alice ex:knows ex:bob ; ex:name "Alice" .
"""


def quads(store: oms.GrainStore) -> set[str]:
    return {str(q) for q in store.backend.quads()}


def reopen(store: oms.GrainStore, path: Path) -> oms.GrainStore:
    """Close the store with its write unfinished, as a crash would, and open it again."""
    store.close()
    return oms.GrainStore(path)


def grains(start: int, n: int, subject: str = "s") -> list[oms.Belief]:
    return [
        oms.Belief(subject, "r", f"o{i}", 0.5, created_at=i)
        for i in range(start, start + n)
    ]


def half_written(
    store: oms.GrainStore, new: list[oms.Belief], extra: list[Any]
) -> None:
    """Write part of a large write and stop, as a crash between chunks would."""
    journal = Journal.begin(store.backend)
    rows = [row for grain in new for row in store.rows_for(grain)]
    journal.write(rows[: len(rows) // 2])  # a grain cut in two, its blob unwritten
    journal.write(extra)
    assert next(store.backend.quads(JOURNAL, None, None, OMS.index), None) is not None


def test_an_interrupted_write_into_a_store_with_grains_is_undone_on_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    store = oms.GrainStore(path)
    old = store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1))
    store.supersede(old, oms.Belief("alice", "works_at", "Initech", 0.9, created_at=2))
    store.import_(io.BytesIO(TURTLE), format="turtle", base_iri="http://example.org/")
    before = quads(store)
    # New grains, one asserting a triple an adopted grain holds already, plus an
    # audit event and a mark on a stored grain: all must go, and nothing else.
    same = oms.Belief("http://example.org/alice", "http://example.org/knows",
                      "http://example.org/bob", 0.4, created_at=3)  # fmt: skip
    extra = [
        ox.Quad(
            ox.NamedNode("urn:uuid:1"), OMS.operation, ox.Literal("import"), OMS.audit
        ),
        ox.Quad(
            ox.NamedNode(f"nih:sha-256;{old}"),
            OMS.needsReview,
            ox.Literal("x"),
            OMS.index,
        ),
    ]
    half_written(store, [*grains(10, 40), same], extra)
    assert quads(store) != before
    store = reopen(store, path)
    assert quads(store) == before
    assert [g["object"] for g in store.beliefs("alice")] == ["Initech"]


def test_an_interrupted_first_load_into_an_empty_store_is_undone_on_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    store = oms.GrainStore(path, base_iri="https://example.org/kb/")
    before = quads(store)
    half_written(store, grains(0, 60), [])
    store = reopen(store, path)
    assert quads(store) == before
    assert store.is_empty() and store.settings.base_iri == "https://example.org/kb/"


def test_a_failed_bulk_write_is_undone_at_once(tmp_path: Path) -> None:
    store = oms.GrainStore(tmp_path / "store")
    store.put(oms.Belief("alice", "likes", "tea", 0.5, created_at=1))
    before = quads(store)
    with pytest.raises(RuntimeError, match="boom"), store.bulk() as journal:
        journal.write(row for g in grains(0, 30) for row in store.rows_for(g))
        raise RuntimeError("boom")
    assert quads(store) == before
    with pytest.raises(oms.StoreError, match="without finish"), store.bulk() as journal:
        journal.write(row for g in grains(0, 30) for row in store.rows_for(g))
    assert quads(store) == before


def test_an_import_may_not_carry_a_journal(tmp_path: Path) -> None:
    """A crafted journal in an export would make the next open delete grains."""
    source = oms.GrainStore()
    source.put(oms.Belief("alice", "likes", "tea", 0.5, created_at=1))
    victim = oms.GrainStore(tmp_path / "store")
    kept = victim.put(oms.Belief("bob", "likes", "coffee", 0.5, created_at=1))
    buffer = io.BytesIO()
    source.export(buffer, format="nquads", grains=True)
    crafted = (
        buffer.getvalue()
        + (
            f"<{JOURNAL.value}> <{OMS.journalGrain.value}> <nih:sha-256;{kept}> <{OMS.index.value}> .\n"
        ).encode()
    )
    for target in (victim, oms.GrainStore(tmp_path / "empty")):
        before = quads(target)
        with pytest.raises(oms.StoreError, match="journal") as info:
            target.import_(io.BytesIO(crafted), format="nquads")
        assert info.value.code == oms.ErrorCode.CONFLICT
        assert quads(target) == before


def test_two_earlier_states_in_a_journal_are_refused_not_guessed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    store = oms.GrainStore(path)
    Journal.begin(store.backend)
    store.backend.add([ox.Quad(JOURNAL, OMS.journalBefore, ox.Literal(""), OMS.index)])
    store.close()
    with pytest.raises(oms.StoreError, match="2 earlier states"):
        oms.GrainStore(path)


def test_records_left_after_the_end_of_a_write_are_cleared_not_undone(
    tmp_path: Path,
) -> None:
    # A crash between the operation that ends a write (the mark gone, the audit
    # event in) and the one that clears the records: the write is whole, and is kept.
    path = tmp_path / "store"
    store = oms.GrainStore(path)
    store.put(oms.Belief("zed", "likes", "tea", 0.5, created_at=1))
    with store.bulk() as journal:
        journal.write([row for grain in grains(10, 5) for row in store.rows_for(grain)])
        records = [
            q for q in store.backend.quads(JOURNAL, OMS.journalGrain, None, OMS.index)
        ]
        assert len(records) == 5
        journal.finish(store.audit_rows("put_many", count=5))
    assert next(store.backend.quads(JOURNAL, None, None, OMS.index), None) is None
    store.backend.add(records)  # as if the clearing had not run
    kept = quads(store) - {str(q) for q in records}
    store = reopen(store, path)
    assert quads(store) == kept
    assert len(store.beliefs("s")) == 5 and store.verify_audit().ok


def test_ending_a_write_costs_the_same_whatever_its_journal_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The operation that ends a write matches one solution: its audit
    # event is written once, not once per record (39 s at 100k grains on disk).
    from oms_rdf.backends.embedded import LocalBackend

    backend = LocalBackend()
    backend.shared = True  # type: ignore[attr-defined]  # a server's journal: records
    store = oms.GrainStore(backend=backend)
    solutions: list[int] = []
    real = LocalBackend.update

    def update(self: LocalBackend, text: str) -> None:
        if "INSERT {" in text and "journalBefore" in text:  # the end: its WHERE, now
            where = text.split("WHERE", 1)[1].split(" ;", 1)[0]
            solutions.append(len(list(self.store.query(f"SELECT * WHERE {where}"))))
        real(self, text)

    monkeypatch.setattr(LocalBackend, "update", update)
    store.put_many(grains(0, 50))
    assert solutions == [1]
    assert len(store.beliefs("s")) == 50 and store.verify_audit().ok
    assert next(store.backend.quads(JOURNAL, None, None, OMS.index), None) is None


def test_a_native_load_into_a_store_with_grains_is_refused_and_undone() -> None:
    store = oms.GrainStore()
    store.put(oms.Belief("ann", "likes", "tea", 0.6, created_at=1))
    before = sorted(map(str, store.backend.quads()))
    data = b"<http://example.org/a> <http://example.org/b> <http://example.org/c> .\n"
    with pytest.raises(oms.StoreError) as caught, store.bulk() as journal:
        journal.load(data, ox.RdfFormat.N_QUADS)
    assert caught.value.code == oms.ErrorCode.STORE
    assert "held no grain" in str(caught.value)
    assert sorted(map(str, store.backend.quads())) == before


def _pieces(lines: list[str], size: int) -> list[bytes]:
    return ["".join(lines[i : i + size]).encode() for i in range(0, len(lines), size)]


EX = "http://example.org/"
LINES = [
    f'<http://example.org/s{i}> <http://example.org/p> "{i}" .\n' for i in range(90)
]


def test_pieces_loaded_into_a_store_in_memory_are_seen_whole_or_not_at_all() -> None:
    backend = oms.backends.LocalBackend()  # type: ignore[attr-defined]
    backend.add(
        [ox.Quad(ox.NamedNode(f"{EX}x"), ox.NamedNode(f"{EX}note"), ox.Literal("kept"))]
    )
    seen = []

    def made() -> Any:
        for piece in _pieces(LINES, 10):
            seen.append(len(backend))  # a reader between pieces: the store before
            yield piece

    backend.load_pieces(made(), ox.RdfFormat.N_QUADS)
    assert seen == [1] * 9
    assert len(backend) == 91
    kept = backend.quads(None, ox.NamedNode(f"{EX}note"), None)
    assert {str(q.object) for q in kept} == {'"kept"'}


@pytest.mark.parametrize("fault", ["maker", "engine"])
def test_pieces_that_fail_on_either_side_leave_the_store_as_it_was(fault: str) -> None:
    backend = oms.backends.LocalBackend()  # type: ignore[attr-defined]
    backend.load(b"".join(_pieces(LINES[:5], 5)), ox.RdfFormat.N_QUADS)
    before = {str(q) for q in backend.quads()}

    def made() -> Any:
        pieces = _pieces(LINES[5:], 10)
        yield from pieces[:4]
        if fault == "maker":
            raise oms.SchemaError("refused while making the fifth piece")
        yield b"<http://example.org/s> <http://example.org/p> oops .\n"

    error = oms.SchemaError if fault == "maker" else oms.DecodeError
    with pytest.raises(error):
        backend.load_pieces(made(), ox.RdfFormat.N_QUADS)
    assert {str(q) for q in backend.quads()} == before


def test_a_put_many_refused_while_its_rows_are_made_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Into a store that holds no grain, put_many makes its rows as they are
    loaded; a grain refused by the mapping then (a term only the store may
    write) comes after pieces were loaded, and none of them stays."""
    from oms_rdf.store import journal

    monkeypatch.setattr(journal, "PIECE_ROWS", 50)  # many pieces before the refusal
    store = oms.GrainStore()
    before = quads(store)
    many = [oms.Belief(f"http://example.org/p{i}", "http://example.org/knows",
                       f"x{i}", 0.9, created_at=1_000 + i) for i in range(200)]  # fmt: skip
    reserved = oms.Belief(str(OMS.index.value), "http://example.org/knows", "x", 0.9)
    with pytest.raises(oms.SchemaError, match="store's own IRI"):
        store.put_many([*many, reserved])
    assert quads(store) == before
    assert store.put_many(many) and len(store) == 200
    assert store.verify_audit().ok


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_an_adoption_into_an_empty_store_refused_late_leaves_it_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Into a store that holds no grain, foreign RDF is checked as it is written
    (one read); a triple refused after pieces and chunks were loaded leaves
    nothing, and the line it is on is named."""
    from oms_rdf.backends import embedded
    from oms_rdf.store import journal

    monkeypatch.setattr(journal, "PIECE_ROWS", 50)
    monkeypatch.setattr(journal, "CHUNK_ROWS", 50)
    loads: list[int] = []  # pieces (memory) or chunks (disk) loaded
    piece, chunk = embedded._staged_load, embedded.LocalBackend.bulk_load
    monkeypatch.setattr(embedded, "_staged_load", lambda *a: loads.append(piece(*a)))
    monkeypatch.setattr(
        embedded.LocalBackend, "bulk_load", lambda *a: loads.append(chunk(*a))
    )
    store = oms.GrainStore(None if where == "memory" else tmp_path / "store")
    before = quads(store)
    good = [f"<http://example.org/p{i}> <http://example.org/knows> <http://example.org/q{i}> ."
            for i in range(100)]  # fmt: skip
    bad = f"<http://example.org/z> <http://example.org/knows> <http://example.org/q> <{OMS.current.value}> ."
    text = "\n".join([*good, bad, *good[:5]]).encode()
    with pytest.raises(oms.SchemaError, match=r"reserved graph.*line 101"):
        store.import_(io.BytesIO(text), format="nquads")
    assert len(loads) > 10  # written as read: the refusal came after them
    assert quads(store) == before
    report = store.import_(io.BytesIO("\n".join(good * 2).encode()), format="nquads")
    assert report.added == 100 and len(store) == 100  # repeats are one belief
    assert len(store.beliefs("http://example.org/p7")) == 1
    assert store.verify_audit().ok
