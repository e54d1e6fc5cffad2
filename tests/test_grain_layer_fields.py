"""The grain layer offers what its documentation says SPARQL over ``grains=True`` finds.

``ontology/README.md`` ("Properties of a grain", "Graphs") and README's "RDF
mapping" name the properties a grain node carries. Each one is asked for here by
SPARQL over the grain layer of a real store, for a grain that has the field, so
that a change to the layout that drops one fails here first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import oms_rdf as oms

OMS = "https://w3id.org/oms-rdf/ns#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
PROV = "http://www.w3.org/ns/prov#"
FIELD = "https://w3id.org/oms-rdf/field/"
T0 = 1_737_000_000_000

# Every field literal and link of a belief the documentation names.
RICH = {
    "type": "belief",
    "subject": "alice",
    "relation": "works_at",
    "object": "Acme",
    "confidence": 0.9,
    "importance": 0.5,
    "source_type": "user_explicit",
    "created_at": T0,
    "system_valid_from": T0 + 1,  # oms:createdAt is written when it differs
    "valid_from": T0 - 86_400_000,
    "valid_to": T0 + 10 * 86_400_000,
    "author_did": "alice-local",
    "user_id": "u1",
    "temporal_type": "state",
    "epistemic_status": "asserted",
    "supersession_justification": "a reason",
    "invalidation_policy": {"mode": "open"},
    "provenance_chain": [{"source": "x"}],
    "context": {"k": "v"},
    "namespace": "work",
    "structural_tags": ["t1"],
    "custom_note": "hello",
}
RICH_PROPERTIES = [
    f"{RDF}type",
    f"{RDF}subject",
    f"{RDF}predicate",
    f"{RDF}object",
    f"{OMS}subjectText",
    f"{OMS}confidence",
    f"{OMS}importance",
    f"{OMS}sourceType",
    f"{OMS}createdAt",
    f"{OMS}validTo",
    f"{OMS}authorDid",
    f"{OMS}userId",
    f"{OMS}temporalType",
    f"{OMS}epistemicStatus",
    f"{OMS}supersessionJustification",
    f"{OMS}invalidationPolicy",
    f"{OMS}provenanceChain",
    f"{OMS}context",
    f"{OMS}validFrom",
    f"{OMS}systemFrom",
    f"{OMS}namespace",
    f"{OMS}tag",
    f"{FIELD}custom_note",
]
# A derived belief of a named graph, by an IRI DID, with a typed link.
LINKED_PROPERTIES = [
    f"{OMS}typeString",
    f"{PROV}wasAttributedTo",
    f"{PROV}wasDerivedFrom",
    f"{OMS}relatedTo",
    f"{OMS}supports",
    f"{OMS}graph",
    f"{OMS}validFrom",
    f"{OMS}systemFrom",
    f"{OMS}namespace",
]


def _store(path: Path | None) -> tuple[oms.GrainStore, str, str]:
    store = oms.GrainStore(path, clock=lambda: T0 + 1_000)
    rich = store.put(oms.Grain.from_dict(RICH))
    linked = store.put(
        oms.Grain.from_dict(
            {
                "type": "fact",
                "subject": "bob",
                "relation": "knows",
                "object": "ann",
                "confidence": 0.8,
                "created_at": T0 + 5,
                "derived_from": [rich],
                "related_to": [{"relation_type": "supports", "hash": rich}],
                "author_did": "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
                "context": {"rdf:graph": "http://example.org/g"},
            }
        )
    )
    return store, rich, linked


def _properties(store: oms.GrainStore, address: str) -> set[str]:
    rows = store.query(
        f"SELECT DISTINCT ?p WHERE {{ <nih:sha-256;{address}> ?p ?v }}", grains=True
    )
    return {row["p"].value for row in rows}


@pytest.mark.parametrize("on_disk", [False, True])
def test_each_documented_field_is_in_the_grain_layer(
    tmp_path: Path, on_disk: bool
) -> None:
    store, rich, linked = _store(tmp_path / "s" if on_disk else None)
    found = _properties(store, rich)
    assert [p for p in RICH_PROPERTIES if p not in found] == []
    found = _properties(store, linked)
    assert [p for p in LINKED_PROPERTIES if p not in found] == []


def test_the_blob_and_the_index_are_in_their_graphs() -> None:
    store, rich, _ = _store(None)
    node = f"<nih:sha-256;{rich}>"
    assert store.query(
        f"ASK {{ GRAPH oms:blobs {{ {node} oms:blob ?b }} }}", grains=True
    )
    new = {**RICH, "object": "Initech", "created_at": T0 + 500}
    store.supersede(rich, new)
    index = f"ASK {{ GRAPH oms:index {{ {node} oms:status oms:superseded ; oms:supersededBy ?n ; oms:systemTo ?t }} }}"
    assert store.query(index, grains=True)
    assert store.query(
        "ASK { GRAPH oms:audit { ?e a oms:AuditEvent ; oms:operation ?o } }",
        grains=True,
    )


def test_the_documented_typed_values_keep_their_datatypes() -> None:
    store, rich, _ = _store(None)
    rows = store.query(
        f"""SELECT ?c ?at ?to WHERE {{ <nih:sha-256;{rich}> oms:confidence ?c ;
             oms:createdAt ?at ; oms:validTo ?to }}""",
        grains=True,
    ).rows()
    (row,) = rows
    assert row["c"].datatype.value.endswith("#double")
    assert row["at"].datatype.value.endswith("#dateTime")
    assert row["to"].datatype.value.endswith("#dateTime")


def test_the_creation_time_is_created_at_else_system_from() -> None:
    """``oms:createdAt`` is written only where it differs from ``oms:systemFrom``
    (ontology README, "Properties of a grain"): the creation time is the one,
    else the other."""
    store = oms.GrainStore(clock=lambda: T0 + 1_000)
    plain = store.put(oms.Belief("ann", "likes", "tea", 0.9, created_at=T0))
    late = store.put(
        oms.Grain.from_dict({**RICH, "object": "Initech", "system_valid_from": T0 + 7})
    )
    assert f"{OMS}createdAt" not in _properties(store, plain)
    rows = store.query(
        """SELECT ?g ?at WHERE { ?g oms:systemFrom ?from
             OPTIONAL { ?g oms:createdAt ?created } BIND(COALESCE(?created, ?from) AS ?at) }""",
        grains=True,
    )
    found = {r["g"].value.removeprefix("nih:sha-256;"): r["at"].value for r in rows}
    assert found[plain] == "2025-01-16T04:00:00Z"
    assert found[late] == "2025-01-16T04:00:00Z"
