"""Foreign RDF in and out: the graph as its users wrote it.

Each case under ``tests/rdf_cases`` is adopted into a store, then:

- plain SPARQL over the default dataset gives back the source as Oxigraph itself
  stores it (a plain ``pyoxigraph.Store`` loaded with the same file);
- the plain export gives back the source exactly, lexical forms included;
- adopting the same file again changes nothing;
- the knowledge survives a TriG (grains) and a plain round trip into a fresh store.

Comparisons canonicalise blank nodes (RDFC-1.0 via pyoxigraph), so they test
isomorphism, not labels.
"""

from __future__ import annotations

import io
from pathlib import Path

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf import GrainStore

CASES = Path(__file__).parent / "rdf_cases"
BASE = "http://example.org/base/dir/doc.ttl"
FORMATS = {
    ".ttl": ox.RdfFormat.TURTLE,
    ".nt": ox.RdfFormat.N_TRIPLES,
    ".trig": ox.RdfFormat.TRIG,
    ".nq": ox.RdfFormat.N_QUADS,
    ".rdf": ox.RdfFormat.RDF_XML,
    ".jsonld": ox.RdfFormat.JSON_LD,
}
FILES = sorted(
    p for p in CASES.iterdir() if p.suffix in FORMATS and p.stem != "triple-terms"
)


def canonical(quads: object) -> set[str]:
    dataset = ox.Dataset(quads)  # type: ignore[arg-type]
    dataset.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
    return {str(q) for q in dataset}


def source(path: Path) -> set[str]:
    """The file's quads exactly as written (lexical forms kept)."""
    return canonical(ox.parse(path=path, format=FORMATS[path.suffix], base_iri=BASE))


def as_oxigraph_stores_it(path: Path) -> set[str]:
    plain = ox.Store()
    plain.load(path=path, format=FORMATS[path.suffix], base_iri=BASE)
    return canonical(plain)


ALL_QUADS = "SELECT ?s ?p ?o ?g WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"


def knowledge(store: GrainStore | oms.Snapshot) -> set[str]:
    """What plain SPARQL over the default dataset sees, default graph and named ones."""
    rows = store.query(ALL_QUADS)
    assert isinstance(rows, oms.Solutions)
    return canonical(
        ox.Quad(r["s"], r["p"], r["o"], r["g"] or ox.DefaultGraph()) for r in rows
    )


def adopt(path: Path, store: GrainStore | None = None) -> GrainStore:
    store = store if store is not None else GrainStore()
    store.import_(path, base_iri=BASE, namespace="kb")
    return store


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_sparql_sees_the_source_as_oxigraph_stores_it(path: Path) -> None:
    store = adopt(path)
    assert knowledge(store) == as_oxigraph_stores_it(path)
    # CONSTRUCT over the default graph, as a user would write it.
    constructed = canonical(
        ox.Quad(t.subject, t.predicate, t.object)
        for t in store.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    )
    plain = ox.Store()
    plain.load(path=path, format=FORMATS[path.suffix], base_iri=BASE)
    expected = canonical(
        ox.Quad(q.subject, q.predicate, q.object)
        for q in plain.quads_for_pattern(None, None, None, ox.DefaultGraph())
    )
    assert constructed == expected


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_plain_export_gives_the_exact_source_back(path: Path) -> None:
    store = adopt(path)
    out = io.BytesIO()
    count = store.export(out, format="nquads", grains=False)
    exported = canonical(ox.parse(out.getvalue(), format=ox.RdfFormat.N_QUADS))
    assert exported == source(path)
    assert count == len(exported)
    # The snapshot of now holds the same exact terms.
    assert canonical(store.snapshot()) == source(path)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_adopting_again_changes_nothing(path: Path) -> None:
    store = adopt(path)
    before = {
        str(q) for q in store.backend.quads() if q.graph_name != oms.rdf.vocab.OMS.audit
    }
    report = store.import_(path, base_iri=BASE, namespace="kb")
    after = {
        str(q) for q in store.backend.quads() if q.graph_name != oms.rdf.vocab.OMS.audit
    }
    assert report.added == 0 and report.believed == len(source(path))
    assert after == before


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_round_trips_keep_the_knowledge(path: Path) -> None:
    store = adopt(path)
    held = knowledge(store)
    trig = io.BytesIO()
    store.export(trig, format="trig")
    restored = GrainStore()
    trig.seek(0)
    restored.import_(trig, format="trig")
    assert knowledge(restored) == held
    # Plain knowledge adopted by another store: the same knowledge again.
    plain = io.BytesIO()
    store.export(plain, format="trig", grains=False)
    plain.seek(0)
    again = GrainStore()
    again.import_(plain, format="trig", namespace="kb")
    assert knowledge(again) == held
    if not FORMATS[path.suffix].supports_datasets:
        turtle = io.BytesIO()
        store.export(turtle, format="turtle")
        turtle.seek(0)
        third = GrainStore()
        third.import_(turtle, format="turtle", namespace="kb")
        assert knowledge(third) == held


def test_rdf12_triple_terms_are_refused_with_their_line() -> None:
    store = GrainStore()
    before = {str(q) for q in store.backend.quads()}
    with pytest.raises(oms.OmsError) as info:
        store.import_(CASES / "triple-terms.ttl")
    assert info.value.code == oms.ErrorCode.SCHEMA
    assert info.value.path is not None and "line 4" in info.value.path
    assert {str(q) for q in store.backend.quads()} == before


def test_relative_iris_resolve_against_the_file_by_default(tmp_path: Path) -> None:
    path = tmp_path / "rel.ttl"
    path.write_bytes(b"<a> <b> <c> .\n")
    store = GrainStore()
    store.import_(path)
    (row,) = store.query("SELECT ?s WHERE { ?s ?p ?o }")  # type: ignore[misc]
    assert row["s"].value == path.resolve().as_uri().rsplit("/", 1)[0] + "/a"


def test_a_syntax_error_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.ttl"
    path.write_bytes(
        b"@prefix ex: <http://example.org/> .\nex:a ex:b ex:c .\nex:a ex:b .\n"
    )
    with pytest.raises(oms.DecodeError) as info:
        GrainStore().import_(path)
    assert info.value.path == "line 3"


def test_a_crafted_trig_cannot_touch_a_reserved_graph() -> None:
    store = GrainStore(clock=lambda: 1_800_000_000_000)
    locked = store.put(
        oms.Belief("alice", "role", "admin", 1.0, created_at=1_700_000_000_000,
                   invalidation_policy={"mode": "locked"})
    )  # fmt: skip
    before = {str(q) for q in store.backend.quads()}
    node = f"<nih:sha-256;{locked}>"
    for crafted in (
        f"<https://w3id.org/oms-rdf/ns#index> {{ {node} "
        '<https://w3id.org/oms-rdf/ns#systemTo> "2020-01-01T00:00:00Z"^^'
        "<http://www.w3.org/2001/XMLSchema#dateTime> . }",
        "<https://w3id.org/oms-rdf/ns#current> { <http://e/a> <http://e/b> <http://e/c> . }",
        "<https://w3id.org/oms-rdf/ns#audit> { <urn:x> <http://e/b> <http://e/c> . }",
    ):
        with pytest.raises(oms.OmsError) as info:
            store.import_(io.BytesIO(crafted.encode()), format="trig")
        assert "reserved graph" in str(info.value) and "line 1" in str(info.value)
        assert {str(q) for q in store.backend.quads()} == before
    assert store.status(locked).is_current


def test_published_vocabulary_answers_plain_sparql() -> None:
    shacl = Path(__import__("pyshacl").__file__).parent / "assets" / "shacl.ttl"
    store = GrainStore()
    report = store.import_(shacl)
    plain = ox.Store()
    plain.load(path=shacl)
    assert report.added == len(plain)
    rows = store.query("SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?c a rdfs:Class }")
    expected = plain.query(
        "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
        "SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?c a rdfs:Class }"
    )
    assert [r["n"] for r in rows] == [r["n"] for r in expected]  # type: ignore[union-attr]
    chained = store.query(
        "ASK { <http://www.w3.org/ns/shacl#NodeShape> rdfs:subClassOf+ rdfs:Resource }"
    )
    assert chained is True


def test_a_source_too_large_to_hold_is_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from oms_rdf.io import adopt as adoption

    path = CASES / "blank.ttl"
    held = knowledge(adopt(path))
    monkeypatch.setattr(adoption, "ADOPT_CACHE", 1)
    store = adopt(path)
    assert knowledge(store) == held
    assert len(store) == len(source(path))


@pytest.mark.parametrize("target", ["empty", "non-empty"])
def test_a_crafted_export_cannot_smuggle_quads_into_reserved_graphs(
    target: str,
) -> None:
    source = GrainStore()
    source.put(oms.Belief("alice", "knows", "bob", 0.9, created_at=1_700_000_000_000))
    out = io.BytesIO()
    source.export(out, format="nquads")
    genuine = out.getvalue()
    stray = "<nih:sha-256;" + "ab" * 32 + ">"
    for extra in (
        "<http://e/a> <http://e/b> <http://e/c> .\n",  # into the grain layer
        f"{stray} <https://w3id.org/oms-rdf/ns#systemTo> "
        '"2020-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> '
        "<https://w3id.org/oms-rdf/ns#index> .\n",  # index state for no grain
        f"{stray} <http://e/b> <http://e/c> <https://w3id.org/oms-rdf/ns#audit> .\n",
    ):
        store = GrainStore()
        if target == "non-empty":
            store.put(oms.Belief("zed", "likes", "tea", 0.5, created_at=1))
        before = {str(q) for q in store.backend.quads()}
        with pytest.raises(oms.StoreError) as info:
            store.import_(io.BytesIO(genuine + extra.encode()), format="nquads")
        assert info.value.code == oms.ErrorCode.CONFLICT
        assert info.value.path is not None and info.value.path.startswith("line ")
        assert {str(q) for q in store.backend.quads()} == before
    # A grain node without its blob, in the grain layer.
    store = GrainStore()
    before = {str(q) for q in store.backend.quads()}
    with pytest.raises(oms.DecodeError, match="without its blob") as info:
        extra = f"{stray} <http://e/b> <http://e/c> .\n"
        store.import_(io.BytesIO(genuine + extra.encode()), format="nquads")
    assert info.value.path == f"grain {'ab' * 6}…"
    assert {str(q) for q in store.backend.quads()} == before
    # Knowledge quads are never taken from a file: they are rebuilt from the grains.
    store = GrainStore()
    store.import_(
        io.BytesIO(
            genuine
            + b"<http://e/x> <http://e/y> <http://e/z> <https://w3id.org/oms-rdf/ns#current> .\n"
        ),
        format="nquads",
    )
    assert knowledge(store) == knowledge(source)


def test_an_iri_subject_that_is_not_nfc_is_kept_not_changed() -> None:
    # Grain text is NFC: such an IRI is kept as escaped N-Triples (tests/test_nfc_terms.py).
    store = GrainStore()
    source = b'\n<http://example.org/cafe\\u0301> <http://example.org/p> "x" .\n'
    store.import_(io.BytesIO(source), format="turtle")
    rows = store.query("SELECT ?s WHERE { ?s <http://example.org/p> ?o }")
    assert [r["s"].value for r in rows] == ["http://example.org/cafe\u0301"]


@pytest.mark.parametrize("target", ["empty", "non-empty"])
def test_a_grain_node_without_its_blob_is_refused(target: str) -> None:
    source = GrainStore()
    source.put(oms.Belief("alice", "knows", "bob", 0.9, created_at=1_700_000_000_000))
    out = io.BytesIO()
    source.export(out, format="nquads")
    orphan = "<nih:sha-256;" + "cd" * 32 + ">"
    crafted = (
        out.getvalue()
        + (
            f'{orphan} <https://w3id.org/oms-rdf/ns#subjectText> "alice" .\n'
            f"{orphan} <http://www.w3.org/1999/02/22-rdf-syntax-ns#subject> "
            "<https://w3id.org/oms-rdf/id/entity/shared/alice> .\n"
        ).encode()
    )
    store = GrainStore()
    if target == "non-empty":
        store.put(oms.Belief("zed", "likes", "tea", 0.5, created_at=1))
    before = {str(q) for q in store.backend.quads()}
    with pytest.raises(oms.DecodeError, match="without its blob"):
        store.import_(io.BytesIO(crafted), format="nquads")
    assert {str(q) for q in store.backend.quads()} == before
    assert store.beliefs("alice") == []  # and nothing half-written answers


@pytest.mark.parametrize("target", ["empty", "non-empty"])
@pytest.mark.parametrize(
    ("field", "error", "says"),
    [
        ("blob", oms.DecodeError, "found <<"),
        ("baseIri", oms.DecodeError, "found <<"),
        ("hash", oms.IntegrityError, "fails its hash chain"),
        ("auditHead", oms.IntegrityError, "fails its hash chain"),
    ],
)
def test_a_triple_term_where_a_value_belongs_is_refused(
    target: str, field: str, error: type[oms.OmsError], says: str
) -> None:
    source = GrainStore()
    source.put(oms.Belief("alice", "knows", "bob", 0.9, created_at=1_700_000_000_000))
    out = io.BytesIO()
    source.export(out, format="nquads")
    lines = out.getvalue().decode().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if f"/ns#{field}> " in line)
    subject, predicate = lines[at].split(" ")[:2]
    lines[at] = (
        f"{subject} {predicate} <<( <http://e/a> <http://e/b> <http://e/c> )>> "
        f"{lines[at].rsplit(' ', 2)[-2]} .\n"
    )
    store = GrainStore()
    if target == "non-empty":
        store.put(oms.Belief("zed", "likes", "tea", 0.5, created_at=1))
    before = {str(q) for q in store.backend.quads()}
    with pytest.raises(error, match=says):
        store.import_(io.BytesIO("".join(lines).encode()), format="nquads")
    assert {str(q) for q in store.backend.quads()} == before
