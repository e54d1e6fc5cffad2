"""Export and import: every format round-trips; imports are all or nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf import io as oms_io
from oms_rdf.rdf.vocab import OMS
from oms_rdf.store import GrainStore

T = 1_700_000_000_000
DAY = 86_400_000
NOW = T + 400 * DAY
DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
OTHER_TYPES: list[dict[str, Any]] = [
    {"type": "event", "content": "User asked \"why?\"\nthen left", "role": "user"},
    {"type": "state", "context": {"memory_blocks": ["a"], "bytes": b"\x00\xff"}},
    {"type": "workflow", "nodes": ["a", "b"], "edges": [{"src": "a", "dst": "b", "max_cycles": 2}]},
    {"type": "tool", "tool_name": "search", "input": {"q": "x"}, "content": [1, 2.0], "is_error": False},
    {"type": "observation", "observer_id": "cam-1", "observer_type": "camera", "subject": "room", "object": "empty"},
    {"type": "goal", "description": "ship it", "goal_state": "active", "progress": 0.5},
    {"type": "reasoning", "premises": ["a" * 64], "conclusion": "so"},
    {"type": "consensus", "participating_observers": ["x"], "threshold": 1, "agreement_count": 1, "dissent_count": 0},
    {"type": "consent", "subject_did": DID, "grantee_did": "did:key:z6Mkother", "scope": ["store"], "is_withdrawal": False},
    {"type": "skill", "name": "cook", "description": "pasta", "proficiency": 0.4},
    {"type": "recommendation", "target_ref": "entity:ns/x", "analyzer": {"id": "pub.lint/1"}, "summary": {"template_id": "t"},
     "dedup_key": "k", "proposal_data": {"v": 1}},
    {"type": "trigger", "kind": "manual", "workflow": "b" * 64, "config": {"int:base_url": "https://x"}},
    {"type": "acme.note", "body": "app type", "_byte": 0xF1},
]  # fmt: skip


def make_store() -> GrainStore:
    store = GrainStore(clock=lambda: NOW)
    old = store.put(
        oms.Belief(
            "alice",
            "works_at",
            "Acme",
            0.9,
            created_at=T,
            valid_from=T - 100 * DAY,
            author_did=DID,
        )
    )
    store.supersede(
        old,
        oms.Belief(
            "alice",
            "works_at",
            "Initech",
            0.95,
            created_at=T + 50 * DAY,
            valid_from=T + 40 * DAY,
        ),
    )
    wrong = store.put(
        oms.Belief("bob", "lives_in", "Paris", 0.7, created_at=T, namespace="home")
    )
    store.retract(wrong, reason="never said", by=DID, at=T + 10 * DAY)
    french = store.put(
        oms.Belief(
            "dave", "speaks", "French", 0.6, created_at=T, structural_tags=["pii:name"]
        )
    )
    store.contradict(french, at=T + 20 * DAY)
    bike = store.put(
        oms.Belief(
            "eve", "owns", "a bike", 0.5, created_at=T, context={"n": 1, "f": 1.0}
        )
    )
    store.set_verification(bike, "disputed", at=T + 30 * DAY)
    store.put(oms.Belief("frank", "knows", "Python", 1, created_at=T, namespace="work",
                         invalidation_policy={"mode": "locked"}, derived_from=[old]))  # fmt: skip
    for i, fields in enumerate(OTHER_TYPES):
        fields = {**fields, "created_at": T + i}
        byte = fields.pop("_byte", None)
        store.put(oms.Grain.from_dict(fields, type_byte=byte))
    return store


@pytest.fixture(scope="module")
def store() -> GrainStore:
    return make_store()


def addresses(store: GrainStore) -> set[str]:
    return {
        q.subject.value.removeprefix("nih:sha-256;")
        for q in store.backend.quads(None, OMS.blob, None, OMS.blobs)
    }


def states(store: GrainStore) -> dict[str, oms.IndexState]:
    return {a: store.status(a) for a in addresses(store)}


def answers(store: GrainStore) -> list[list[str]]:
    points = [
        (None, None),
        (T - 50 * DAY, None),
        (T + 5 * DAY, T + 5 * DAY),
        (T + 45 * DAY, T + 45 * DAY),
    ]
    return [
        sorted(g.address for g in store.beliefs(valid_at=v, as_of=a)) for v, a in points
    ]


def snapshot(store: GrainStore) -> set[str]:
    return {str(q) for q in store.backend.quads()}


def round_trip(store: GrainStore, fmt: str) -> GrainStore:
    buffer = io.BytesIO()
    store.export(buffer, format=fmt)
    fresh = GrainStore(clock=lambda: NOW)
    buffer.seek(0)
    fresh.import_(buffer, format=fmt)
    return fresh


@pytest.mark.parametrize("fmt", ["trig", "nquads", "jsonld", "trig12", "mg"])
def test_whole_store_formats_keep_everything(store: GrainStore, fmt: str) -> None:
    again = round_trip(store, fmt)
    assert addresses(again) == addresses(store)
    assert states(again) == states(store)
    assert answers(again) == answers(store)
    assert {str(q) for q in again.backend.quads(None, None, None, OMS.current)} == {
        str(q) for q in store.backend.quads(None, None, None, OMS.current)
    }
    for address in addresses(store):
        assert again.get(address).blob == store.get(address).blob


def test_jsonl_keeps_every_grain_and_its_index_state(store: GrainStore) -> None:
    again = round_trip(store, "jsonl")
    assert addresses(again) == addresses(store)
    assert states(again) == states(store)
    assert answers(again) == answers(store)
    assert any(s.status != "active" for s in states(again).values())
    assert {str(q) for q in again.backend.quads(None, None, None, OMS.current)} == {
        str(q) for q in store.backend.quads(None, None, None, OMS.current)
    }


@pytest.mark.parametrize("fmt", ["turtle", "ntriples", "rdfxml"])
def test_plain_export_is_the_knowledge_held_now(store: GrainStore, fmt: str) -> None:
    import rdflib
    from rdflib.compare import isomorphic

    buffer = io.BytesIO()
    count = store.export(buffer, format=fmt)
    text = buffer.getvalue()
    body = b"\n".join(  # the store's prefixes are declared; its terms never written
        line for line in text.splitlines() if not line.startswith(b"@prefix ")
    )
    assert b"nih:sha-256" not in body and b"oms-rdf/ns#" not in body
    assert b"oms:" not in body
    names = {"turtle": "turtle", "ntriples": "nt", "rdfxml": "xml"}
    exported = rdflib.Graph().parse(data=text, format=names[fmt])
    held = rdflib.Graph()
    for t in store.query("CONSTRUCT WHERE { ?s ?p ?o }"):
        held.parse(data=f"{t} .", format="nt")
    assert count == len(exported) == len(held) > 0
    assert isomorphic(exported, held)
    # Adopted by another store, the same knowledge: minted IRIs give their labels back.
    again = round_trip(store, fmt)
    assert {str(t) for t in again.query("CONSTRUCT WHERE { ?s ?p ?o }")} == {
        str(t) for t in store.query("CONSTRUCT WHERE { ?s ?p ?o }")
    }


def test_rdf12_view_answers_reifier_patterns(store: GrainStore) -> None:
    buffer = io.BytesIO()
    store.export(buffer, format="turtle12")
    assert b"<<(" in buffer.getvalue()
    view = ox.Store()
    view.load(buffer.getvalue(), format=ox.RdfFormat.TURTLE)
    rows = list(view.query(
        'SELECT ?g ?o WHERE { << ?s <https://w3id.org/oms-rdf/id/rel/works_at> ?o ~ ?g >> }'
    ))  # fmt: skip
    assert sorted(r["o"].value for r in rows) == ["Acme", "Initech"]
    assert all(r["g"].value.startswith("nih:sha-256;") for r in rows)


def test_export_to_a_path_and_import_by_suffix(
    store: GrainStore, tmp_path: Path
) -> None:
    for name in ("s.trig", "s.nq", "s.mg", "s.jsonl"):
        path = tmp_path / name
        assert store.export(path) == len(store)
        again = GrainStore()
        report = again.import_(path)
        assert report.added == len(store) and addresses(again) == addresses(store)
    for name in ("s.ttl", "s.nt", "s.rdf"):  # plain knowledge: adopted as beliefs
        path = tmp_path / name
        held = len(store.snapshot())
        assert store.export(path) == held
        assert GrainStore().import_(path).added == held
    assert not list(tmp_path.glob("*.partial"))


def test_import_is_idempotent(store: GrainStore) -> None:
    buffer = io.BytesIO()
    store.export(buffer, format="mg")
    again = GrainStore(clock=lambda: NOW)
    buffer.seek(0)
    assert again.import_(buffer, format="mg").added == len(store)
    before = {s for s in snapshot(again) if "urn:uuid" not in s}
    buffer.seek(0)
    assert again.import_(buffer, format="mg").added == 0
    assert {s for s in snapshot(again) if "urn:uuid" not in s} == before


def test_jsonl_bad_line_keeps_nothing(tmp_path: Path) -> None:
    good = [
        oms_io.dumps_jsonl(oms.Belief("a", "r", str(i), 0.5, created_at=i))
        for i in range(3)
    ]
    path = tmp_path / "b.jsonl"
    path.write_text(
        "\n".join([good[0], good[1], '{"type": "belief", "subject": ""}', good[2]])
        + "\n"
    )
    target = GrainStore()
    before = snapshot(target)
    with pytest.raises(oms.OmsError) as info:
        target.import_(path)
    assert info.value.path is not None and info.value.path.startswith("line 3")
    assert snapshot(target) == before
    report = target.import_(path, skip_invalid=True)
    assert report.added == 3 and [w for w, _ in report.skipped] == ["line 3"]
    assert "ERR_" in report.skipped[0][1]


def test_jsonl_into_an_empty_disk_store_undoes_what_it_loaded_before_a_bad_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Written as it is read: small chunks have gone to the bulk loader before
    # line 31 is read, and the refusal takes them all back.
    from oms_rdf.io import plans
    from oms_rdf.store import journal

    monkeypatch.setattr(journal, "CHUNK_ROWS", 20)
    monkeypatch.setattr(plans, "BATCH", 5)  # grains read ahead of their rows
    lines = [
        oms_io.dumps_jsonl(oms.Belief("a", "r", str(i), 0.5, created_at=i))
        for i in range(35)
    ]
    lines.insert(30, '{"type": "belief", "subject": ""}')
    path = tmp_path / "b.jsonl"
    path.write_text("\n".join(lines) + "\n")
    loads: list[int] = []
    real = journal.Journal._chunk

    def counting(self: Any, rows: Any, *args: Any) -> Any:
        loads.append(len(rows))
        return real(self, rows, *args)

    monkeypatch.setattr(journal.Journal, "_chunk", counting)
    target = GrainStore(tmp_path / "store")
    before = snapshot(target)
    with pytest.raises(oms.OmsError) as info:
        target.import_(path)
    assert info.value.path is not None and info.value.path.startswith("line 31")
    assert len(loads) > 5  # the bad line came after many loads
    assert snapshot(target) == before
    target.close()
    assert snapshot(GrainStore(tmp_path / "store")) == before


def test_jsonl_with_a_grain_on_two_lines_imports_as_once(store: GrainStore) -> None:
    # One pass cannot tell which line's index state counts; the import reads the
    # file again in two passes, as into a store that holds grains.
    buffer = io.BytesIO()
    store.export(buffer, format="jsonl")
    lines = buffer.getvalue().splitlines(keepends=True)
    twice = b"".join([*lines, lines[0]])
    fresh = GrainStore(clock=lambda: NOW)
    report = fresh.import_(io.BytesIO(twice), format="jsonl")
    assert report.added == len(lines)
    assert addresses(fresh) == addresses(store)
    assert states(fresh) == states(store)
    assert answers(fresh) == answers(store)


def test_corrupt_blob_in_trig_keeps_nothing(store: GrainStore) -> None:
    buffer = io.BytesIO()
    store.export(buffer, format="nquads")
    lines = buffer.getvalue().decode().splitlines()
    index = next(i for i, line in enumerate(lines) if "#blob>" in line)
    start = lines[index].index('"') + 5
    lines[index] = (
        lines[index][:start]
        + ("A" if lines[index][start] != "A" else "B")
        + lines[index][start + 1 :]
    )
    target = GrainStore()
    before = snapshot(target)
    with pytest.raises(oms.OmsError):
        target.import_(io.BytesIO("\n".join(lines).encode()), format="nquads")
    assert snapshot(target) == before


def test_syntax_error_names_the_line() -> None:
    target = GrainStore()
    with pytest.raises(oms.DecodeError) as info:
        target.import_(
            io.BytesIO(b"<a:b> <a:c> <a:d> .\n<a:b> <a:c> oops .\n"), format="nquads"
        )
    assert info.value.path == "line 2"


class FailingBackend(oms.backends.LocalBackend):  # type: ignore[name-defined]
    """A real pyoxigraph backend whose n-th write fails, as a full disk would."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.writes, self.fail_at = 0, fail_at

    def _count(self) -> None:
        self.writes += 1
        if self.writes == self.fail_at:
            raise oms.StoreError("disk full")

    def load(self, data: Any, fmt: Any) -> None:
        self._count()
        super().load(data, fmt)

    def add(self, quads: Any) -> None:
        self._count()
        super().add(quads)


def test_interrupted_import_is_rolled_back(
    store: GrainStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    buffer = io.BytesIO()
    store.export(buffer, format="trig")
    monkeypatch.setattr(oms.store.journal, "CHUNK_ROWS", 50)  # many small atomic steps
    target = GrainStore(backend=FailingBackend(fail_at=6))
    target.put(oms.Belief("zed", "likes", "tea", 0.5, created_at=1))
    before = snapshot(target)
    buffer.seek(0)
    with pytest.raises(oms.StoreError, match="disk full"):
        target.import_(buffer, format="trig")
    assert snapshot(target) == before


def test_conflicting_index_state_is_refused(store: GrainStore) -> None:
    buffer = io.BytesIO()
    store.export(buffer, format="mg")
    target = GrainStore(clock=lambda: NOW)
    acme = next(
        g for g in store.beliefs(valid_at=T, as_of=NOW) if g["object"] == "Acme"
    )
    target.put(acme)  # here it is active; in the container it is superseded
    before = snapshot(target)
    buffer.seek(0)
    with pytest.raises(oms.StoreError) as info:
        target.import_(buffer, format="mg")
    assert info.value.code == oms.ErrorCode.CONFLICT
    assert snapshot(target) == before


def test_foreign_turtle_is_adopted() -> None:
    turtle = b"""
    @prefix ex: <http://example.org/> .
    ex:alice ex:worksAt ex:acme ;
             ex:name "Alice"@en ;
             ex:age 42 .
    ex:acme ex:locatedIn "Berlin" .
    """
    target = GrainStore()
    report = target.import_(
        io.BytesIO(turtle), format="turtle", namespace="crm", confidence=0.8
    )
    assert report.added == 4
    by_relation = {g["relation"]: g for g in target.beliefs(namespace="crm")}
    works = by_relation["http://example.org/worksAt"]
    assert (works["subject"], works["object"], works["confidence"]) == (
        "http://example.org/alice",
        "http://example.org/acme",
        0.8,
    )
    # An absolute IRI is an IRI by default: nothing needs recording.
    assert works["source_type"] == "imported" and "context" not in works.fields
    assert by_relation["http://example.org/name"]["context"] == {"rdf:language": "en"}
    assert by_relation["http://example.org/age"]["context"] == {
        "rdf:datatype": "http://www.w3.org/2001/XMLSchema#integer"
    }
    assert "context" not in by_relation["http://example.org/locatedIn"].fields


class Pipe(io.RawIOBase):
    """A stream that cannot seek, as a pipe."""

    def __init__(self, data: bytes) -> None:
        self.data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readinto(self, b: Any) -> int:
        chunk = self.data.read(len(b))
        b[: len(chunk)] = chunk
        return len(chunk)


def test_import_from_a_pipe(store: GrainStore) -> None:
    buffer = io.BytesIO()
    store.export(buffer, format="jsonl")
    again = GrainStore()
    assert again.import_(Pipe(buffer.getvalue()), format="jsonl").added == len(store)


def knowledge_quads(store: GrainStore) -> set[str]:
    reserved = (OMS.blobs, OMS.index, OMS.audit)
    return {str(q) for q in store.backend.quads() if q.graph_name not in reserved}


@pytest.mark.parametrize("fmt", ["trig", "nquads"])
@pytest.mark.parametrize("how", ["path", "stream", "pipe"])
def test_an_export_restores_in_one_load_keeping_its_knowledge(
    fmt: str, how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Into a store without grains, an export of ours is loaded natively while it
    # is checked, and its knowledge is kept as it is: neither the two-pass import
    # nor the knowledge rebuild runs.
    source = make_store()
    source.import_(io.BytesIO(b"<http://e/a> <http://e/b> <http://e/c> <http://e/g> .\n"),
                   format="nquads")  # fmt: skip
    path = tmp_path / f"export.{fmt}"
    source.export(path, format=fmt)
    data = path.read_bytes()

    def two_pass(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the two-pass import ran")

    rebuilds: list[bool] = []
    from oms_rdf.store.journal import Journal

    finish = Journal.finish

    def finishing(journal: Any, rows: Any = (), *, rebuild: bool = True) -> None:
        rebuilds.append(rebuild)
        finish(journal, rows, rebuild=rebuild)

    monkeypatch.setattr(oms_io.importing, "plan_dataset", two_pass)
    monkeypatch.setattr(Journal, "finish", finishing)
    target = GrainStore(tmp_path / "store", clock=lambda: NOW)
    src: Any = {"path": path, "stream": io.BytesIO(b"#\n" + data),
                "pipe": Pipe(data)}[how]  # fmt: skip
    if how == "stream":
        src.readline()  # a stream is read from where it stands
    report = target.import_(src, format=fmt)
    assert report.added == len(addresses(source))
    assert rebuilds == [False]
    assert addresses(target) == addresses(source)
    assert states(target) == states(source)
    assert knowledge_quads(target) == knowledge_quads(source)
    assert ("http://e/g",) in {(r["g"].value,) for r in target.query(
        "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")}  # fmt: skip


def test_progress_reports_bytes(store: GrainStore) -> None:
    buffer = io.BytesIO()
    store.export(buffer, format="nquads")
    seen: list[int] = []
    buffer.seek(0)
    GrainStore().import_(buffer, format="nquads", progress=seen.append)
    assert sum(seen) == len(buffer.getvalue())


def test_rdflib_bridge(store: GrainStore) -> None:
    import warnings

    import rdflib

    plain = store.to_rdflib()
    with (
        warnings.catch_warnings()
    ):  # rdflib 7's Dataset.query uses its own deprecated API
        warnings.filterwarnings("ignore", "Dataset.*deprecated", DeprecationWarning)
        rows = list(
            plain.query(
                "SELECT ?o WHERE { ?s <https://w3id.org/oms-rdf/id/rel/works_at> ?o }"
            )
        )
    assert rows and {str(r[0]) for r in rows} == {
        t.object.value
        for t in store.query("CONSTRUCT WHERE { ?s ?p ?o }")
        if t.predicate.value.endswith("/works_at")
    }
    dataset = store.to_rdflib(grains=True)
    assert isinstance(dataset, rdflib.Dataset)
    names = {str(g.identifier) for g in dataset.graphs()}
    assert {str(OMS.blobs.value), str(OMS.index.value), str(OMS.audit.value)} <= names
    again = GrainStore.from_rdflib(dataset)
    assert addresses(again) == addresses(store)
    assert states(again) == states(store)


@pytest.mark.parametrize("fmt", ["trig", "nquads"])
def test_streaming_path_matches_the_restore_path(store: GrainStore, fmt: str) -> None:
    # A store that already holds a grain takes the two-pass streaming import.
    buffer = io.BytesIO()
    store.export(buffer, format=fmt)
    target = GrainStore(clock=lambda: NOW)
    extra = target.put(oms.Belief("zed", "likes", "tea", 0.5, created_at=1))
    buffer.seek(0)
    report = target.import_(buffer, format=fmt)
    assert report.added == len(store)
    assert addresses(target) == addresses(store) | {extra}
    assert {a: s for a, s in states(target).items() if a != extra} == states(store)
    assert [[a for a in point if a != extra] for point in answers(target)] == answers(
        store
    )


def test_base_iri_conflict_is_refused_even_into_an_empty_store(
    store: GrainStore,
) -> None:
    buffer = io.BytesIO()
    store.export(buffer, format="trig")
    target = GrainStore(base_iri="https://example.org/other/")
    before = snapshot(target)
    buffer.seek(0)
    with pytest.raises(oms.StoreError) as info:
        target.import_(buffer, format="trig")
    assert info.value.code == oms.ErrorCode.CONFLICT
    assert snapshot(target) == before


KNOWS = "SELECT ?o WHERE { ?s <https://w3id.org/oms-rdf/id/rel/knows> ?o }"


@pytest.mark.parametrize("fmt", ["nquads", "trig"])
@pytest.mark.parametrize("target", ["empty", "non-empty"])
def test_entity_relation_conflict_is_refused(fmt: str, target: str) -> None:
    # An RDF export's grain layer was mapped with its store's entity relations
    # ("bob" an IRI); a store that maps "knows" to literals cannot keep it as is.
    source = GrainStore(entity_relations={"knows"})
    source.put(oms.Belief("alice", "knows", "bob", 0.9, created_at=T))
    buffer = io.BytesIO()
    source.export(buffer, format=fmt)
    store = GrainStore()
    if target == "non-empty":
        store.put(oms.Belief("zed", "likes", "tea", 0.5, created_at=1))
    before = snapshot(store)
    with pytest.raises(oms.StoreError, match="entity relations") as info:
        store.import_(io.BytesIO(buffer.getvalue()), format=fmt)
    assert info.value.code == oms.ErrorCode.CONFLICT
    assert snapshot(store) == before
    # The same settings restore; JSON Lines and .mg map each grain afresh.
    same = GrainStore(entity_relations={"knows"})
    assert same.import_(io.BytesIO(buffer.getvalue()), format=fmt).added == 1
    assert [r["o"] for r in same.query(KNOWS)] == [r["o"] for r in source.query(KNOWS)]


def test_jsonl_keeps_a_foreign_blob_with_index_fields() -> None:
    from tests.helpers import belief_wire, raw_blob

    grain = oms.Grain.from_blob(raw_blob(belief_wire(sb="a" * 64)))
    source = GrainStore()
    source.put(grain)
    buffer = io.BytesIO()
    source.export(buffer, format="jsonl")
    assert b'"$blob"' in buffer.getvalue()
    target = GrainStore()
    buffer.seek(0)
    target.import_(buffer, format="jsonl")
    assert target.get(grain.address).blob == grain.blob


def test_jsonl_index_state_is_checked_not_pasted() -> None:
    grain = oms.Belief("alice", "role", "admin", 1.0, created_at=1_700_000_000_000)
    line = oms.io.dumps_jsonl(grain, {"sb": "x> <http://e/p> <http://e/o"})
    store = GrainStore()
    before = snapshot(store)
    with pytest.raises(oms.OmsError) as info:
        store.import_(io.BytesIO(line.encode() + b"\n"), format="jsonl")
    assert info.value.path is not None and "line 1" in info.value.path
    assert snapshot(store) == before


def test_cli_put_reads_what_export_writes(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from oms_rdf.cli import cli

    grain = oms.Grain.from_dict({"type": "belief", "subject": "a", "relation": "b",
                                 "object": "c", "confidence": 0.5, "created_at": 1,
                                 "context": {"raw": b"\x00\x01"}})  # fmt: skip
    source = GrainStore()
    source.put(grain)
    source.export(tmp_path / "x.jsonl")
    db = str(tmp_path / "db")
    out = CliRunner().invoke(cli, ["--store", db, "put", str(tmp_path / "x.jsonl")])
    assert out.exit_code == 0, out.output
    assert grain.address in out.output  # bytes came back as bytes: the same grain
    later = oms.Belief("a", "b", "d", 0.5, created_at=2)
    source.supersede(grain, later)
    source.export(tmp_path / "y.jsonl")
    refused = CliRunner().invoke(cli, ["--store", db, "put", str(tmp_path / "y.jsonl")])
    assert refused.exit_code == 1 and "oms-rdf import" in refused.output


@pytest.mark.parametrize("fmt", ["turtle", "ntriples"])
def test_a_grain_layer_turtle_validates_and_restores(
    store: GrainStore, fmt: str
) -> None:
    import warnings

    import pyshacl
    import rdflib

    buffer = io.BytesIO()
    assert store.export(buffer, format=fmt, grains=True) == len(store)
    graph = rdflib.Graph().parse(
        data=buffer.getvalue(), format="nt" if fmt == "ntriples" else "turtle"
    )
    shapes = str(Path(__file__).parent.parent / "ontology" / "shapes.ttl")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Dataset.*deprecated", DeprecationWarning)
        conforms, _, report = pyshacl.validate(graph, shacl_graph=shapes)
    assert conforms, report
    again = GrainStore(clock=lambda: NOW)
    buffer.seek(0)
    again.import_(buffer, format=fmt)
    assert addresses(again) == addresses(store)
    assert states(again) == states(store)
    assert answers(again) == answers(store)


def test_our_turtle_adopted_elsewhere_gives_the_same_beliefs() -> None:
    source = GrainStore()
    source.put(oms.Belief("alice", "works_at", "Acme", 0.9, namespace="work",
                          created_at=1_700_000_000_000))  # fmt: skip
    source.put(oms.Belief("bob", "knows", "http://example.org/carol", 0.9,
                          created_at=1_700_000_000_000))  # fmt: skip
    buffer = io.BytesIO()
    source.export(buffer, format="turtle")
    again = GrainStore()
    buffer.seek(0)
    again.import_(buffer, format="turtle")
    (alice,) = again.beliefs("alice", "works_at", namespace="work")
    assert (alice["object"], alice.get("namespace")) == ("Acme", "work")
    (bob,) = again.beliefs("bob", "knows")
    assert bob["object"] == "http://example.org/carol" and "namespace" not in bob.fields
    buffer.seek(0)
    assert again.import_(buffer, format="turtle").added == 0  # already believed


def test_jsonl_carries_a_signed_grain_with_its_envelope() -> None:
    from oms_rdf.codec import signing

    key = signing.generate_key(bytes(range(32)))
    grain = oms.Belief(
        "alice", "role", "admin", 0.9, created_at=1_700_000_000_000, signed=True
    )
    source = GrainStore()
    source.put(signing.sign(grain.blob, key))
    buffer = io.BytesIO()
    source.export(buffer, format="jsonl")
    assert b'"$envelope"' in buffer.getvalue()
    target = GrainStore()
    buffer.seek(0)
    assert target.import_(buffer, format="jsonl").added == 1
    assert target.get(grain.address).blob == grain.blob  # the same grain, still signed
    assert target.status(grain.address).signed_by == key.did


@pytest.mark.parametrize("fmt", ["nquads", "trig"])
def test_skip_invalid_keeps_the_good_grains_of_a_dataset(fmt: str) -> None:
    source = GrainStore()
    grains = [oms.Belief("a", "r", str(i), 0.5, created_at=i) for i in range(4)]
    source.put_many(grains)
    buffer = io.BytesIO()
    source.export(buffer, format="nquads")
    text = buffer.getvalue().decode()
    victim = grains[2].address
    blob_line = next(
        line for line in text.splitlines() if victim in line and "#blob>" in line
    )
    start = blob_line.index('"') + 12
    broken = (
        blob_line[:start]
        + ("A" if blob_line[start] != "A" else "B")
        + blob_line[start + 1 :]
    )
    data = text.replace(blob_line, broken).encode()
    if fmt == "trig":  # the same dataset written as TriG
        data = ox.serialize(
            ox.parse(data, ox.RdfFormat.N_QUADS), format=ox.RdfFormat.TRIG
        )
    target = GrainStore()
    report = target.import_(io.BytesIO(data), format=fmt, skip_invalid=True)
    assert report.added == 3
    assert [where for where, _ in report.skipped] == [f"grain {victim[:12]}…"]
    assert "ERR_INTEGRITY" in report.skipped[0][1]
    assert victim not in target and all(
        g.address in target for g in grains if g.address != victim
    )
    assert len(target.beliefs("a")) == 3


def test_skip_invalid_drops_a_manifest_entry_for_a_missing_grain() -> None:
    from oms_rdf.io.container import write_mg

    grain = oms.Belief("a", "r", "o", 0.5, created_at=1)
    ghost = "ab" * 32
    buffer = io.BytesIO()
    write_mg([grain.blob], buffer, manifest={ghost: {"vstatus": "verified"}})
    target = GrainStore()
    with pytest.raises(oms.DecodeError, match="does not hold"):
        target.import_(io.BytesIO(buffer.getvalue()), format="mg")
    report = target.import_(
        io.BytesIO(buffer.getvalue()), format="mg", skip_invalid=True
    )
    assert report.added == 1 and [w for w, _ in report.skipped] == [
        f"manifest {ghost[:12]}…"
    ]
    assert grain.address in target and ghost not in target


def test_plain_knowledge_exports_as_json_ld_and_turtle_with_prefixes(
    tmp_path: Path,
) -> None:
    store = oms.GrainStore()
    store.update(
        'INSERT DATA { <http://example.org/a> <http://www.w3.org/2000/01/rdf-schema#label> "A" . '
        "<http://example.org/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
        "<http://www.w3.org/2002/07/owl#Thing> }"
    )
    path = tmp_path / "k.jsonld"
    assert store.export(str(path), grains=False) == 2
    data = json.loads(path.read_text())
    back = ox.Dataset(ox.parse(path.read_bytes(), format=ox.RdfFormat.JSON_LD))
    assert len(back) == 2 and isinstance(data, list)
    assert "urn:oms" not in path.read_text() and "oms-rdf/ns" not in path.read_text()
    other = tmp_path / "k2.json"
    assert store.export(str(other), format="jsonld", grains=False) == 2
    assert other.read_bytes() == path.read_bytes()
    turtle = tmp_path / "k.ttl"
    store.export(str(turtle))
    text = turtle.read_text()
    for prefix in ("rdf", "rdfs", "xsd", "owl", "prov", "oms"):
        assert f"@prefix {prefix}: <" in text, prefix
    assert "rdfs:label" in text and "owl:Thing" in text
    assert len(list(ox.parse(turtle.read_bytes(), format=ox.RdfFormat.TURTLE))) == 2


@pytest.mark.parametrize("fmt", ["trig", "nquads", "mg", "jsonl"])
def test_an_import_counts_the_grains_the_store_held_already(
    tmp_path: Path, fmt: str
) -> None:
    """A store's own export imported again reported 0 added and 0 already
    believed: the grains it already held were counted nowhere."""
    source = GrainStore(clock=lambda: 1_800_000_000_000)
    beliefs = [
        oms.Belief(f"s{i}", "likes", "tea", 0.5, created_at=i + 1) for i in range(3)
    ]
    source.put_many(beliefs[:2])
    first = tmp_path / f"first.{fmt}"
    source.export(first)
    again = source.import_(first)
    assert (again.added, again.held) == (0, 2)
    source.put(beliefs[2])
    both = tmp_path / f"both.{fmt}"
    source.export(both)
    target = GrainStore(clock=lambda: 1_800_000_000_000)
    assert target.import_(first).held == 0
    report = target.import_(both)
    assert (report.added, report.held) == (1, 2)
