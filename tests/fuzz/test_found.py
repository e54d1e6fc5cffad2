"""Reproducers of what the fuzzers found: each failed until its fix, and guards it."""

from __future__ import annotations

import io

import pytest

import oms_rdf as oms

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
OMS = "https://w3id.org/oms-rdf/ns#"


def _store_with_a_grain() -> oms.GrainStore:
    store = oms.GrainStore(clock=lambda: 1_800_000_000_000)
    store.put(oms.Belief("x", "y", "z", 1.0, created_at=1))
    return store


def _dump(store: oms.GrainStore) -> list[str]:
    return sorted(str(q) for q in store.core.backend.quads())


@pytest.mark.parametrize("datatype", ["langString", "dirLangString"])
def test_a_lang_string_datatype_in_context_is_refused_on_a_store_with_grains(
    datatype: str,
) -> None:
    store = _store_with_a_grain()
    before = _dump(store)
    with pytest.raises(oms.SchemaError):
        store.put({"type": "belief", "subject": "a", "relation": "b", "object": "c",
                   "confidence": 1, "created_at": 1,
                   "context": {"rdf:datatype": RDF + datatype}})  # fmt: skip
    assert _dump(store) == before


def test_a_lang_string_datatype_in_context_is_a_schema_error_on_an_empty_store() -> (
    None
):
    store = oms.GrainStore(clock=lambda: 1_800_000_000_000)
    with pytest.raises(oms.SchemaError):
        store.put({"type": "belief", "subject": "a", "relation": "b", "object": "c",
                   "confidence": 1, "created_at": 1,
                   "context": {"rdf:datatype": RDF + "langString"}})  # fmt: skip


def test_grain_to_quads_raises_only_oms_errors_on_a_lang_string_datatype() -> None:
    grain = oms.Belief("a", "b", "c", 1.0, created_at=1,
                       context={"rdf:datatype": RDF + "langString"})  # fmt: skip
    try:
        oms.grain_to_quads(grain)
    except oms.OmsError:
        pass


@pytest.mark.parametrize("predicate", [f"{OMS}status", f"{OMS}evidenceFor", "urn:x"])
def test_a_restore_refuses_a_stray_quad_in_the_blobs_graph(predicate: str) -> None:
    source = oms.GrainStore(clock=lambda: 1_800_000_000_000)
    source.put(oms.Belief("x", "y", "z", 1.0, created_at=1))
    export = io.BytesIO()
    source.export(export, format="nquads", grains=True)
    stray = f'<nih:sha-256;{"0" * 64}> <{predicate}> "x" <{OMS}blobs> .\n'
    store = oms.GrainStore(clock=lambda: 1_800_000_000_000)
    before = _dump(store)
    with pytest.raises(oms.OmsError):
        store.import_(io.BytesIO(export.getvalue() + stray.encode()), format="nquads")
    assert _dump(store) == before
