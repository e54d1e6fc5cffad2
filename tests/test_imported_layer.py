"""An imported grain's layer must be what the mapping makes of its blob, or nothing.

Each mutation edits one line of a real export; the import must refuse the file on
the fast restore (into a store without grains) and on the general path (into one
with grains), and leave the store as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import oms_rdf as oms
from oms_rdf.rdf.vocab import OMS, RDF


def dump(store: oms.GrainStore) -> list[str]:
    return sorted(str(q) for q in store.core.backend.quads())


def export(tmp_path: Path) -> tuple[Path, str, str]:
    source = oms.GrainStore()
    alice = source.put(
        oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1768471200000)
    )
    bob = source.put(
        oms.Belief("bob", "works_at", "Initech", 0.8, created_at=1768471300000)
    )
    path = tmp_path / "backup.nq"
    source.export(path)
    return path, alice, bob


def drop_system_from(text: str, alice: str, bob: str) -> str:
    return "".join(
        line
        for line in text.splitlines(keepends=True)
        if not (alice in line and f"<{OMS.systemFrom.value}>" in line)
    )


def change_object(text: str, alice: str, bob: str) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        if alice in line and f"<{RDF.object.value}>" in line:
            line = line.replace('"Acme"', '"Evil Corp"')
        out.append(line)
    return "".join(out)


def claim_other_subject(text: str, alice: str, bob: str) -> str:
    bob_subject = next(
        line.split(" ", 2)[2]
        for line in text.splitlines()
        if bob in line and f"<{RDF.subject.value}>" in line
    )
    out = []
    for line in text.splitlines(keepends=True):
        if alice in line and f"<{RDF.subject.value}>" in line:
            line = (
                line.split(" ", 2)[0] + f" <{RDF.subject.value}> " + bob_subject + "\n"
            )
        out.append(line)
    return "".join(out)


def add_a_field(text: str, alice: str, bob: str) -> str:
    return text + (
        f"<nih:sha-256;{alice}> <{OMS.confidence.value}> "
        '"0.1"^^<http://www.w3.org/2001/XMLSchema#double> .\n'
    )


MUTATIONS: list[Callable[[str, str, str], str]] = [
    drop_system_from,
    change_object,
    claim_other_subject,
    add_a_field,
]


def target_store(tmp_path: Path, holding: bool) -> oms.GrainStore:
    """The store imported into: empty (the fast restore), or holding a belief of
    its own (the general import)."""
    target = oms.GrainStore(tmp_path / "target")
    if holding:
        target.put(
            oms.Belief("carol", "works_at", "Umbrella", 0.7, created_at=1768471200000)
        )
    return target


@pytest.mark.parametrize("mutate", MUTATIONS, ids=[m.__name__ for m in MUTATIONS])
@pytest.mark.parametrize("holding", [False, True], ids=["fast restore", "general"])
def test_a_layer_that_differs_from_its_blob_is_refused(
    tmp_path: Path, mutate: Callable[[str, str, str], str], holding: bool
) -> None:
    path, alice, bob = export(tmp_path)
    mutated = mutate(path.read_text(), alice, bob)
    assert mutated != path.read_text()
    path.write_text(mutated)
    target = target_store(tmp_path, holding)
    before = dump(target)
    with pytest.raises(oms.DecodeError) as caught:
        target.import_(path)
    assert caught.value.code == "ERR_CORRUPT"
    assert alice[:12] in str(caught.value)
    assert dump(target) == before
    assert [g.fields["subject"] for g in target.beliefs()] == (
        ["carol"] if holding else []
    )


@pytest.mark.parametrize("holding", [False, True], ids=["fast restore", "general"])
def test_an_unchanged_export_restores_with_its_layer(
    tmp_path: Path, holding: bool
) -> None:
    path, _alice, _bob = export(tmp_path)
    target = target_store(tmp_path, holding)
    target.import_(path)
    assert sorted(g.fields["subject"] for g in target.beliefs()) == sorted(
        ["alice", "bob"] + (["carol"] if holding else [])
    )
    rows = target.query(
        "SELECT ?o WHERE { ?g rdf:subject ?s ; rdf:object ?o ; oms:subjectText 'alice' }",
        grains=True,
    )
    assert [str(r["o"].value) for r in rows] == ["Acme"]


GOLDEN_V1 = Path(__file__).parent / "golden" / "layer-v1.nq"


@pytest.mark.parametrize("holding", [False, True], ids=["fast restore", "general"])
def test_an_export_with_the_earlier_layer_restores(
    tmp_path: Path, holding: bool
) -> None:
    """An export written before ``oms:createdAt`` moved to the blob (where it equals
    ``oms:systemFrom``) holds it in the layer: it is accepted as it is."""
    text = GOLDEN_V1.read_text()
    assert text.count(f"<{OMS.createdAt.value}>") == 3  # the earlier layout
    target = target_store(tmp_path, holding)
    target.import_(GOLDEN_V1)
    assert sorted(g.fields["subject"] for g in target.beliefs()) == sorted(
        ["alice", "http://example.org/bob", "dana"] + (["carol"] if holding else [])
    )
    again = tmp_path / "again.nq"
    target.export(again)
    oms.GrainStore(tmp_path / "third").import_(again)


def test_an_earlier_layer_with_a_wrong_creation_time_is_refused(
    tmp_path: Path,
) -> None:
    out = []
    for line in GOLDEN_V1.read_text().splitlines(keepends=True):
        if line.startswith("<nih:sha-256;05c55f29") and "createdAt" in line:
            line = line.replace("10:00:00Z", "10:00:09Z")
        out.append(line)
    path = tmp_path / "wrong.nq"
    path.write_text("".join(out))
    assert path.read_text() != GOLDEN_V1.read_text()
    target = oms.GrainStore(tmp_path / "target")
    with pytest.raises(oms.DecodeError) as caught:
        target.import_(path)
    assert caught.value.code == "ERR_CORRUPT"


def test_an_earlier_layer_goes_with_its_grain_on_erasure(tmp_path: Path) -> None:
    target = oms.GrainStore(tmp_path / "target")
    target.import_(GOLDEN_V1)
    alice = "05c55f29c97f45b29918e050364c9af58b645a98ec2bf1c17c63801f0b38c003"
    assert any(f"{alice}> <{OMS.createdAt.value}>" in q for q in dump(target))
    target.erase(alice, reason="a subject's request")
    left = [q for q in dump(target) if q.startswith(f"<nih:sha-256;{alice}>")]
    assert [q for q in left if f"<{OMS.erasedAt.value}>" not in q] == []  # a tombstone
