"""Imports and exports at their edges: each refusal names its fault and writes
nothing; each local manifest field travels out and back."""

from __future__ import annotations

import io
from pathlib import Path

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.io import dumps_jsonl, dumps_turtle, format_for, loads_json_grain
from oms_rdf.io.container import read_mg, write_mg
from oms_rdf.io.jsonl import loads_tombstone
from oms_rdf.rdf.mapping import NIH_PREFIX

NOW = 1_800_000_000_000
OMS = "https://w3id.org/oms-rdf/ns#"


def dump(store: oms.GrainStore) -> set[str]:
    return {str(q) for q in store.backend.quads()}


def stored() -> tuple[oms.GrainStore, str]:
    store = oms.GrainStore(clock=lambda: NOW)
    address = store.put(oms.Belief("ann", "likes", "tea", 0.9, created_at=1))
    return store, address


def trig_of(store: oms.GrainStore) -> bytes:
    buffer = io.BytesIO()
    store.export(buffer, format="trig")
    return buffer.getvalue()


# --- exports ------------------------------------------------------------------


def test_an_export_refuses_plain_knowledge_in_a_grain_format() -> None:
    store, _ = stored()
    with pytest.raises(oms.SchemaError) as info:
        store.export(io.BytesIO(), format="mg", grains=False)
    assert "mg carries grains" in str(info.value)


def test_an_export_of_grains_refuses_a_point_in_time() -> None:
    store, _ = stored()
    with pytest.raises(oms.SchemaError) as info:
        store.export(io.BytesIO(), format="trig", valid_at=5)
    assert "carries their whole history" in str(info.value)


def test_an_export_names_the_path_it_cannot_write(tmp_path: Path) -> None:
    store, _ = stored()
    with pytest.raises(oms.NotFoundError) as missing:
        store.export(tmp_path / "no folder" / "x.trig")
    assert missing.value.path == str(tmp_path / "no folder" / "x.trig")
    with pytest.raises(oms.StoreError) as folder:
        store.export(tmp_path, format="trig")
    assert "found a folder" in str(folder.value)
    long = tmp_path / ("x" * 300 + ".trig")  # past the file system's name limit
    with pytest.raises(oms.StoreError) as unwritable:
        store.export(long)
    assert unwritable.value.code == oms.ErrorCode.STORE
    assert list(tmp_path.iterdir()) == []  # no .partial file left behind


def test_dumps_turtle_declares_the_common_prefixes() -> None:
    triple = ox.Triple(
        ox.NamedNode("http://example.org/s"),
        ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
        ox.NamedNode("http://www.w3.org/2002/07/owl#Class"),
    )
    text = dumps_turtle([triple])
    assert "@prefix owl: <http://www.w3.org/2002/07/owl#> ." in text
    assert "owl:Class" in text


@pytest.mark.parametrize(
    ("path", "given", "says"),
    [("x.trig", "xlsx", "unknown format 'xlsx'"), ("x.xyz", None, "cannot tell")],
)
def test_a_format_is_named_or_told_by_the_suffix(
    path: str, given: str | None, says: str
) -> None:
    with pytest.raises(oms.SchemaError) as info:
        format_for(path, given)
    assert says in str(info.value)


# --- JSON Lines ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code", "says"),
    [
        ("{", "ERR_CORRUPT", "not JSON"),
        ('{"$index": 3}', "ERR_CORRUPT", "$index must be a JSON object"),
        ('{"$blob": "!!"}', "ERR_CORRUPT", "$blob must be base64 text"),
        ('{"a": ' + "9" * 5000 + "}", "ERR_RANGE", "more digits than Python reads"),
    ],
    ids=["not json", "index", "blob", "digits"],
)
def test_a_json_grain_line_is_refused_with_its_fault(
    text: str, code: str, says: str
) -> None:
    with pytest.raises(oms.DecodeError) as info:
        loads_json_grain(text)
    assert info.value.code == code and says in str(info.value)


def test_a_json_value_that_is_no_object_is_given_back_for_the_grain_check() -> None:
    assert loads_json_grain("[1, 2]") == ([1, 2], None)
    assert loads_tombstone("{") is None and loads_tombstone("[1]") is None


def test_a_json_lines_import_names_a_line_that_is_not_utf8() -> None:
    store, _ = stored()
    before = dump(store)
    with pytest.raises(oms.DecodeError) as info:
        line = dumps_jsonl(oms.Belief("bo", "likes", "tea", 0.9, created_at=1))
        store.import_(io.BytesIO(line.encode() + b"\n\xff\n"), format="jsonl")
    assert "not UTF-8: byte 0xff at column 1" in str(info.value)
    assert info.value.path == "line 2" and dump(store) == before


def test_an_import_of_a_missing_file_is_not_found(tmp_path: Path) -> None:
    store, _ = stored()
    with pytest.raises(oms.StoreError) as info:
        store.import_(tmp_path / "gone.trig")
    assert info.value.code == oms.ErrorCode.NOT_FOUND


# --- .mg manifests ------------------------------------------------------------


def container(grains: list[oms.Grain], manifest: dict[str, dict[str, object]]) -> bytes:
    buffer = io.BytesIO()
    write_mg([g.blob for g in grains], buffer, manifest=manifest)
    return buffer.getvalue()


def test_local_manifest_fields_come_back_as_they_went() -> None:
    grain = oms.Belief("ann", "likes", "tea", 0.9, created_at=1)
    rival = oms.Belief("bo", "likes", "tea", 0.9, created_at=1)
    entry = {
        "oms_rdf:ireason": "wrong",
        "oms_rdf:itype": "contradiction",
        "oms_rdf:conflicts": [rival.address],
        "oms_rdf:contradicted": True,
        "oms_rdf:pe": NOW - 5,
        "oms_rdf:voided": NOW,
        "svt": NOW,
        "vstatus": "retracted",
    }
    store = oms.GrainStore(clock=lambda: NOW)
    store.import_(
        io.BytesIO(container([grain, rival], {grain.address: entry})), format="mg"
    )
    state = store.status(grain.address)
    assert (state.status, state.verification) == ("retracted", "contradicted")
    assert state.pending_erasure == NOW - 5
    buffer = io.BytesIO()
    store.export(buffer, format="mg")
    entries = {
        item[0]: item[1]
        for item in read_mg(io.BytesIO(buffer.getvalue())).items()
        if not isinstance(item, bytes)
    }
    assert entries[grain.address] == entry


BAD_ENTRIES = {
    "successor": ({"sb": 5}, "sb of"),
    "evidence event": ({"oms_rdf:evidence": [3]}, "must be a map with an id"),
}


@pytest.mark.parametrize("case", sorted(BAD_ENTRIES))
def test_a_malformed_manifest_entry_is_refused(case: str) -> None:
    entry, says = BAD_ENTRIES[case]
    grain = oms.Belief("ann", "likes", "tea", 0.9, created_at=1)
    store = oms.GrainStore(clock=lambda: NOW)
    with pytest.raises(oms.DecodeError) as info:
        store.import_(
            io.BytesIO(container([grain], {grain.address: entry})), format="mg"
        )
    assert says in str(info.value) and store.is_empty()


def test_a_signed_grain_needs_its_own_envelope_in_the_manifest() -> None:
    from oms_rdf.codec.signing import generate_key, sign

    key = generate_key(bytes(32))
    fields = {"type": "belief", "subject": "ann", "relation": "owns", "object": "a key",
              "confidence": 0.9, "created_at": 3}  # fmt: skip
    signed = oms.Grain.from_dict(fields, signed=True)
    other = oms.Grain.from_dict({**fields, "object": "a pen"}, signed=True)
    cases = {
        oms.ErrorCode.SIGNED_MISMATCH: {},
        oms.ErrorCode.SIGNATURE: {"oms_rdf:envelope": sign(other.blob, key)},
    }
    for code, entry in cases.items():
        store = oms.GrainStore(clock=lambda: NOW)
        data = container([signed], {signed.address: entry})
        with pytest.raises(oms.SignatureError) as info:
            store.import_(io.BytesIO(data), format="mg")
        assert info.value.code == code and store.is_empty()


# --- RDF exports of ours --------------------------------------------------------

HOSTILE_QUADS = {
    "journal": f"<{OMS}journal> <{OMS}journalGrain> <urn:x> <{OMS}index> .",
    "blob property": "<{node}> <{OMS}status> <{OMS}retracted> <{OMS}blobs> .",
    "two blobs": '<{node}> <{OMS}blob> "AAAA" <{OMS}blobs> .',
    "blob of no grain": f'<urn:x> <{OMS}blob> "AAAA" <{OMS}blobs> .',
}


@pytest.mark.parametrize("case", sorted(HOSTILE_QUADS))
@pytest.mark.parametrize("into", ["empty", "held"])
def test_an_export_with_a_quad_no_export_holds_is_refused(case: str, into: str) -> None:
    """Into an empty store (the fast restore) or one with grains (two passes)."""
    source, address = stored()
    node = f"{NIH_PREFIX}{address}"
    quad = HOSTILE_QUADS[case].replace("{node}", node).replace("{OMS}", OMS)
    nquads = io.BytesIO()
    source.export(nquads, format="nquads")
    data = nquads.getvalue() + quad.encode() + b"\n"
    target = oms.GrainStore(clock=lambda: NOW)
    if into == "held":
        target.put(oms.Belief("cy", "likes", "tea", 0.9, created_at=1))
    before = dump(target)
    with pytest.raises(oms.StoreError) as info:
        target.import_(io.BytesIO(data), format="nquads")
    assert info.value.code == oms.ErrorCode.CONFLICT
    assert dump(target) == before


def test_a_named_graph_no_belief_names_is_left_to_the_rebuild() -> None:
    source, address = stored()
    extra = b"<urn:s> <urn:p> <urn:o> <urn:g> .\n"
    nquads = io.BytesIO()
    source.export(nquads, format="nquads")
    target = oms.GrainStore(clock=lambda: NOW)
    report = target.import_(io.BytesIO(nquads.getvalue() + extra), format="nquads")
    assert report.added == 1 and address in target
    assert not any(
        True for _ in target.backend.quads(None, None, None, ox.NamedNode("urn:g"))
    )


def test_an_export_imported_again_into_its_store_adds_nothing() -> None:
    store, address = stored()
    store.retract(address, reason="wrong")
    data = trig_of(store)
    before = dump(store)
    report = store.import_(io.BytesIO(data), format="trig")
    assert report.added == 0
    assert {q for q in dump(store) if "audit" not in q} == {
        q for q in before if "audit" not in q
    }


def test_a_grain_layer_without_its_blob_is_skipped_when_asked() -> None:
    source, address = stored()
    node = f"{NIH_PREFIX}{'0' * 64}"
    orphan = f'<{node}> <{OMS}systemFrom> "1970-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n'
    target = oms.GrainStore(clock=lambda: NOW)
    target.put(oms.Belief("cy", "likes", "tea", 0.9, created_at=1))
    data = trig_of(source) + orphan.encode()
    report = target.import_(io.BytesIO(data), format="trig", skip_invalid=True)
    assert report.added == 1 and address in target
    assert [why for _, why in report.skipped] == [
        "ERR_CORRUPT: a grain node without its blob in graph oms:blobs"
    ]


# --- adoption and SPARQL Update ----------------------------------------------------


def test_an_adoption_skips_a_quad_of_a_reserved_graph_when_asked() -> None:
    data = (
        b"<urn:s> <urn:p> <urn:o> .\n"
        + f"<urn:s> <urn:p> <urn:o> <{OMS}index> .\n".encode()
    )
    store = oms.GrainStore(clock=lambda: NOW)
    report = store.import_(io.BytesIO(data), format="nquads", skip_invalid=True)
    assert report.added == 1 and len(report.skipped) == 1
    assert "reserved graph" in report.skipped[0][1]


def test_a_source_path_that_cannot_be_resolved_is_not_found() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    with pytest.raises(oms.StoreError) as info:
        store.import_("bad\x00name.nt")
    assert info.value.code == oms.ErrorCode.NOT_FOUND


def test_a_ground_delete_where_is_delete_data() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    store.update("INSERT DATA { <urn:s> <urn:p> <urn:o> }")
    report = store.update(
        "DELETE { <urn:s> <urn:p> <urn:o> } WHERE { <urn:s> <urn:p> <urn:o> }"
    )
    assert len(report.retracted) == 1 and list(store.beliefs()) == []


@pytest.mark.parametrize(
    "sparql",
    [
        "DELETE { GRAPH <urn:g> { <urn:s> <urn:p> <urn:o> } } WHERE { <urn:s> <urn:p> <urn:o> }",
        "DELETE { <urn:s> <urn:p> <urn:o> } WHERE { <urn:s> <urn:p> <urn:o> FILTER (true) }",
        "DELETE { <urn:s> <urn:p> <urn:o> } WHERE { { <urn:s> <urn:p> <urn:o> } OPTIONAL { <urn:s> <urn:p> ?x } }",
    ],
    ids=["graph template", "filter", "optional"],
)
def test_a_delete_where_that_is_not_delete_data_is_refused(sparql: str) -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    store.update("INSERT DATA { <urn:s> <urn:p> <urn:o> }")
    before = dump(store)
    with pytest.raises(oms.QueryError):
        store.update(sparql)
    assert dump(store) == before


def test_an_insert_of_a_believed_triple_at_another_confidence_adds_nothing() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    store.update("INSERT DATA { <urn:s> <urn:p> <urn:o> }", confidence=0.5)
    report = store.update("INSERT DATA { <urn:s> <urn:p> <urn:o> }", confidence=0.9)
    assert (report.added, report.believed) == (0, 1)


def test_a_delete_leaves_beliefs_of_other_graphs_and_closed_ones() -> None:
    store = oms.GrainStore(clock=lambda: NOW)
    store.update("INSERT DATA { GRAPH <urn:g> { <urn:s> <urn:p> <urn:o> } }")
    store.update("INSERT DATA { <urn:s> <urn:p> <urn:o> }", confidence=0.5)
    store.update("DELETE DATA { <urn:s> <urn:p> <urn:o> }")
    store.update("INSERT DATA { <urn:s> <urn:p> <urn:o> }", confidence=0.7)
    report = store.update("DELETE DATA { <urn:s> <urn:p> <urn:o> }")
    assert len(report.retracted) == 1  # the graph's belief and the closed one stay
    assert len(list(store.beliefs())) == 1


@pytest.mark.parametrize("src", [b"<http://a> <http://b> <http://c> .", 7, None])
def test_an_import_names_a_source_that_is_no_path_nor_file(src: object) -> None:
    store = oms.GrainStore()
    with pytest.raises(oms.StoreError) as info:
        store.import_(src, format="ntriples")  # type: ignore[arg-type]
    assert (info.value.code, info.value.path) == ("ERR_SCHEMA", "src")
    assert "io.BytesIO" in str(info.value)
    assert store.is_empty()


def test_a_refused_quad_is_named_briefly_where_no_line_holds_it() -> None:
    """A prefixed Turtle quad is found on no line by its N-Triples text: the
    refusal quoted it whole, a 1.2 MB literal twice (message and path)."""
    turtle = (
        b'@prefix ex: <http://example.org/> .\nex:a ex:p "'
        + b"x" * 1_200_000
        + b'" .\n'
    )
    with pytest.raises(oms.OmsError) as info:
        oms.GrainStore().import_(io.BytesIO(turtle), format="turtle")
    assert info.value.code == "ERR_RANGE"
    assert len(str(info.value)) < 1000 and "<http://example.org/a>" in str(info.value)
