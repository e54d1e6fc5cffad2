"""The prefixes of adopted sources: recorded at adoption, declared by the plain
Turtle and TriG exports, offered by the explorer, kept when the store reopens."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pyoxigraph as ox
import pyshacl
import pytest

from oms_rdf import GrainStore
from oms_rdf.errors import OmsError
from oms_rdf.http.app import create_app
from oms_rdf.store import PREFIXES
from tests.helpers import running

VOCAB = """\
@prefix ex: <http://example.org/vocab#> .
@prefix : <http://example.org/data/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
:ann ex:worksAt :acme ; rdfs:label "Ann" .
:acme a ex:Company .
"""

SCHEMA = Path(pyshacl.__file__).parent / "assets" / "schema.ttl"


def adopted(tmp_path: Path, text: str, name: str = "vocab.ttl") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def plain(store: GrainStore) -> set[ox.Quad]:
    return set(store.snapshot().quads)


def same_up_to_blank_labels(left: set[ox.Quad], right: set[ox.Quad]) -> bool:
    """The same number of quads, and the same ones among those with no blank node
    (blank nodes get new labels from each adopted source)."""

    def named(quads: set[ox.Quad]) -> set[ox.Quad]:
        return {q for q in quads if not any(isinstance(t, ox.BlankNode) for t in q)}

    return len(left) == len(right) and named(left) == named(right)


def declarations(turtle: str) -> dict[str, str]:
    lines = [line.split() for line in turtle.splitlines() if line.startswith("@prefix")]
    return {parts[1].removesuffix(":"): parts[2].strip("<>") for parts in lines}


def test_a_turtle_adoption_records_its_prefixes_with_the_stores_own(
    tmp_path: Path,
) -> None:
    store = GrainStore()
    assert store.prefixes() == PREFIXES  # nothing adopted yet
    store.import_(adopted(tmp_path, VOCAB))
    got = store.prefixes()
    assert got["ex"] == "http://example.org/vocab#"
    assert got[""] == "http://example.org/data/"
    assert {k: got[k] for k in PREFIXES} == PREFIXES  # the store's own kept


def test_the_plain_turtle_export_declares_them_and_reads_back_the_same(
    tmp_path: Path,
) -> None:
    store = GrainStore()
    store.import_(adopted(tmp_path, VOCAB))
    out = tmp_path / "out.ttl"
    store.export(out)
    text = out.read_text()
    declared = declarations(text)
    assert declared["ex"] == "http://example.org/vocab#"
    assert declared[""] == "http://example.org/data/"
    assert "ex:worksAt" in text and ":acme" in text  # the terms written short
    again = GrainStore()
    again.import_(out)
    assert same_up_to_blank_labels(
        plain(again), plain(store)
    )  # blank nodes get new labels
    assert again.prefixes() == store.prefixes()  # the export's @prefix lines adopted


def test_the_plain_trig_export_declares_them(tmp_path: Path) -> None:
    store = GrainStore()
    store.import_(adopted(tmp_path, VOCAB))
    out = tmp_path / "out.trig"
    store.export(out, grains=False)
    assert declarations(out.read_text())["ex"] == "http://example.org/vocab#"


def test_plain_knowledge_exports_as_json_ld_and_reads_back(tmp_path: Path) -> None:
    store = GrainStore()
    store.import_(adopted(tmp_path, VOCAB))
    out = tmp_path / "out.jsonld"
    assert store.export(out, grains=False) == len(plain(store))
    again = GrainStore()
    again.import_(out)
    assert same_up_to_blank_labels(
        plain(again), plain(store)
    )  # blank nodes get new labels


def test_a_clashing_prefix_keeps_the_first_namespace(tmp_path: Path) -> None:
    store = GrainStore()
    store.import_(adopted(tmp_path, VOCAB))
    clash = "@prefix ex: <http://other.example/#> .\n@prefix oms: <http://o/> .\n"
    store.import_(adopted(tmp_path, clash + "ex:a ex:b ex:c .\n", "clash.ttl"))
    assert store.prefixes()["ex"] == "http://example.org/vocab#"
    assert store.prefixes()["oms"] == PREFIXES["oms"]  # the store's own come first


def test_a_refused_adoption_records_no_prefix(tmp_path: Path) -> None:
    store = GrainStore()
    bad = "@prefix ex: <http://example.org/vocab#> .\nex:a ex:b ex:c .\nex:a ex:b .\n"
    with pytest.raises(OmsError):
        store.import_(adopted(tmp_path, bad, "bad.ttl"))
    assert store.prefixes() == PREFIXES and store.is_empty()


def test_prefixes_survive_reopening_and_the_grain_exports(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with GrainStore(folder) as store:
        store.import_(adopted(tmp_path, VOCAB))
        recorded = store.prefixes()
        store.export(tmp_path / "backup.trig")  # grains and their settings
    with GrainStore(folder) as reopened:
        assert reopened.prefixes() == recorded
    restored = GrainStore()
    restored.import_(tmp_path / "backup.trig")
    assert restored.prefixes() == recorded


@pytest.mark.parametrize("fmt", ["trig12", "trig"])
def test_an_import_read_quad_by_quad_keeps_the_sources_prefixes(
    tmp_path: Path, fmt: str
) -> None:
    """TriG 1.2 (its reifiers), or a store already holding a grain, take an
    import past the native restore; its recorded prefixes were dropped there."""
    source = GrainStore()
    source.import_(adopted(tmp_path, VOCAB))
    source.export(tmp_path / f"backup.{fmt}", format=fmt)
    target = GrainStore()
    if fmt == "trig":
        target.import_(
            adopted(tmp_path, "<http://e/x> <http://e/p> <http://e/y> .\n", "b.nt")
        )
    target.import_(tmp_path / f"backup.{fmt}", format=fmt)
    assert target.prefixes()["ex"] == "http://example.org/vocab#"
    assert target.prefixes() == source.prefixes()


def test_the_explorer_offers_the_adopted_prefixes(tmp_path: Path) -> None:
    store = GrainStore()
    store.import_(adopted(tmp_path, VOCAB))
    with running(create_app(store)) as base:
        got = httpx.get(base + "/explorer/prefixes").json()
    assert got["store"]["ex"] == "http://example.org/vocab#"
    assert got["store"]["rel"].endswith("rel/")


@pytest.mark.soak
def test_schema_org_from_pyshacl_keeps_its_prefixes(tmp_path: Path) -> None:
    declared = ox.parse(path=str(SCHEMA), format=ox.RdfFormat.TURTLE)
    triples = sum(1 for _ in declared)
    store = GrainStore()
    store.import_(SCHEMA)
    got = store.prefixes()
    assert declared.prefixes and all(
        got[name] == iri
        for name, iri in declared.prefixes.items()
        if name not in PREFIXES
    )
    out = tmp_path / "schema-out.ttl"
    assert store.export(out) == triples
    written = declarations(out.read_text())
    assert written["schema"] == declared.prefixes["schema"]
    again = GrainStore()
    again.import_(out)
    assert same_up_to_blank_labels(
        plain(again), plain(store)
    )  # blank nodes get new labels


def test_only_prefixes_turtle_can_declare_are_recorded(tmp_path: Path) -> None:
    """A JSON-LD context's term need not be a Turtle prefix name: "1x" was
    recorded, and every plain Turtle export after it was unreadable."""
    source = adopted(tmp_path, json.dumps({
        "@context": {"1x": "http://example.org/x/", "end.": "http://example.org/e/",
                     "ok": "http://example.org/ok/", "é-1": "http://example.org/u/",
                     "µ": "http://example.org/m/", "x²": "http://example.org/s/"},
        "@id": "1x:a", "ok:p": "v",
    }), "terms.jsonld")  # fmt: skip
    store = GrainStore()
    store.import_(source)
    recorded = {k for k, v in store.prefixes().items() if "example.org" in v}
    assert recorded == {"ok", "é-1"}
    out = tmp_path / "out.ttl"
    store.export(out)
    again = GrainStore()
    again.import_(out)
    assert plain(again) == plain(store)


def test_a_triple_format_refuses_knowledge_in_named_graphs(tmp_path: Path) -> None:
    """Turtle, N-Triples and RDF/XML hold one graph: the named graphs' triples
    were left out, and the count returned said they were written."""
    store = GrainStore()
    store.import_(adopted(tmp_path, '@prefix ex: <http://example.org/> .\n'
                  'ex:a ex:p "default" . ex:g { ex:a ex:p "named" . }\n', "g.trig"))  # fmt: skip
    for fmt in ("turtle", "ntriples", "rdfxml"):
        with pytest.raises(OmsError) as info:
            store.export(tmp_path / f"out.{fmt}", format=fmt)
        assert info.value.code == "ERR_SCHEMA" and "<http://example.org/g>" in str(
            info.value
        )
        assert not (tmp_path / f"out.{fmt}").exists()
    assert store.export(tmp_path / "out.trig", grains=False) == 2
