"""No term a caller supplies can be one of the store's own IRIs, on any way in.

A belief naming ``oms:blobs`` as its graph once had the next knowledge rebuild clear
every blob; these tests hold every position and every way in to the refusal, and
the rebuild to never clearing a reserved graph whatever the grain layer says.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

import oms_rdf as oms
from oms_rdf.rdf.terms import GENID, RESERVED
from oms_rdf.rdf.vocab import OMS

BLOBS = "https://w3id.org/oms-rdf/ns#blobs"


def dump(store: oms.GrainStore) -> list[str]:
    """Every quad of every graph, sorted: the store's whole state."""
    return sorted(str(q) for q in store.core.backend.quads())


def belief(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "type": "belief",
        "subject": "alice",
        "relation": "knows",
        "object": "bob",
        "confidence": 0.9,
        "created_at": 1768471200000,
    }
    fields.update(changes)
    return fields


def crafted() -> list[tuple[str, dict[str, Any]]]:
    """Beliefs whose terms are the store's own IRIs, in every position."""
    cases: list[tuple[str, dict[str, Any]]] = []
    for iri in sorted(RESERVED):
        name = iri.rsplit("#", 1)[1]
        cases += [
            (f"graph {name}", belief(context={"rdf:graph": iri})),
            (f"subject {name}", belief(subject=iri)),
            (f"relation {name}", belief(relation=iri)),
            (f"object {name}", belief(object=iri)),
            (f"iri object {name}", belief(object=iri, context={"rdf:object": "iri"})),
            (
                f"n-triples object {name}",
                belief(object=f"<{iri}>", context={"rdf:object": "n-triples"}),
            ),
            (f"datatype {name}", belief(context={"rdf:datatype": iri})),
        ]
    skolem = GENID + "b0"
    cases += [
        ("spelled skolem subject", belief(subject=skolem)),
        ("spelled skolem object", belief(object=skolem)),
        ("spelled skolem graph", belief(context={"rdf:graph": skolem})),
    ]
    return cases


CASES = crafted()


@pytest.fixture
def held() -> oms.GrainStore:
    """A store with a locked grain, a held one, a supersession and a retraction."""
    store = oms.GrainStore()
    store.put(
        belief(subject="carol", invalidation_policy={"mode": "locked"}, object="x")
    )
    old = store.put(belief(subject="dan", object="y"))
    store.supersede(old, belief(subject="dan", object="z", created_at=1768471300000))
    gone = store.put(belief(subject="erin", object="w"))
    store.retract(gone, reason="wrong")
    return store


@pytest.mark.parametrize(("case", "fields"), CASES, ids=[c for c, _ in CASES])
def test_put_refuses_the_stores_own_iris(
    held: oms.GrainStore, case: str, fields: dict[str, Any]
) -> None:
    before = dump(held)
    with pytest.raises(oms.SchemaError) as caught:
        held.put(fields)
    assert caught.value.code == "ERR_SCHEMA"
    assert dump(held) == before
    held.rebuild_current()
    assert dump(held) == before


def test_a_blank_node_graph_and_the_ontologys_own_terms_stay_allowed() -> None:
    store = oms.GrainStore()
    store.put(belief(context={"rdf:graph": "_:g1"}))
    store.put(belief(subject=str(OMS.Belief), relation=str(OMS.confidence)))
    store.put(
        belief(subject="_:b0", object="_:b1", context={"rdf:object": "blank node"})
    )
    assert len(store.beliefs()) == 3


@pytest.mark.parametrize("fmt", ["jsonl", "mg"])
def test_grain_files_with_a_reserved_graph_are_refused_whole(
    held: oms.GrainStore, tmp_path: Path, fmt: str
) -> None:
    source = oms.GrainStore()
    source.put(belief(subject="frank"))
    bad = oms.encode(belief(context={"rdf:graph": BLOBS}))
    # The grain reaches the file the way a hostile writer would put it there.
    path = tmp_path / f"bad.{fmt}"
    if fmt == "jsonl":
        good = io.BytesIO()
        source.export(good, format="jsonl")
        lines = good.getvalue().decode().splitlines()
        lines.append(json.dumps({"$blob": base64.b64encode(bad).decode()}))
        path.write_text("\n".join(lines) + "\n")
    else:
        from oms_rdf.io.container import write_mg

        with path.open("wb") as out:
            write_mg([bad], out)
    before = dump(held)
    with pytest.raises(oms.OmsError):
        held.import_(path)
    assert dump(held) == before


def test_a_crafted_grain_layer_line_in_nquads_is_refused(
    held: oms.GrainStore, tmp_path: Path
) -> None:
    source = oms.GrainStore()
    address = source.put(belief(subject="gina"))
    path = tmp_path / "backup.nq"
    source.export(path)
    line = f"<nih:sha-256;{address}> <{OMS.graph.value}> <{BLOBS}> .\n"
    path.write_text(path.read_text() + line)
    for target in (held, oms.GrainStore()):
        before = dump(target)
        with pytest.raises(oms.OmsError):
            target.import_(path)
        assert dump(target) == before


def test_the_rebuild_never_clears_a_reserved_graph_whatever_the_layer_says(
    held: oms.GrainStore,
) -> None:
    # A grain layer that got past every check, written under the store's feet.
    node = ox.NamedNode("nih:sha-256;" + "ab" * 32)
    for graph in (OMS.blobs, OMS.index, OMS.audit):
        held.core.backend.add([ox.Quad(node, OMS.graph, graph, ox.DefaultGraph())])
    blobs = sorted(str(q) for q in held.core.backend.quads(None, None, None, OMS.blobs))
    index = sorted(str(q) for q in held.core.backend.quads(None, None, None, OMS.index))
    audit = sorted(str(q) for q in held.core.backend.quads(None, None, None, OMS.audit))
    held.rebuild_current()
    after = held.core.backend
    assert sorted(str(q) for q in after.quads(None, None, None, OMS.blobs)) == blobs
    assert sorted(str(q) for q in after.quads(None, None, None, OMS.index)) == index
    assert sorted(str(q) for q in after.quads(None, None, None, OMS.audit)) == audit
    assert len(blobs) == 4
