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


@pytest.mark.parametrize("mutate", MUTATIONS, ids=[m.__name__ for m in MUTATIONS])
@pytest.mark.parametrize("holding", [False, True], ids=["fast restore", "general"])
def test_a_layer_that_differs_from_its_blob_is_refused(
    tmp_path: Path, mutate: Callable[[str, str, str], str], holding: bool
) -> None:
    path, alice, bob = export(tmp_path)
    mutated = mutate(path.read_text(), alice, bob)
    assert mutated != path.read_text()
    path.write_text(mutated)
    target = oms.GrainStore(tmp_path / "target")
    if holding:
        target.put(
            oms.Belief("carol", "works_at", "Umbrella", 0.7, created_at=1768471200000)
        )
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
    target = oms.GrainStore(tmp_path / "target")
    if holding:
        target.put(
            oms.Belief("carol", "works_at", "Umbrella", 0.7, created_at=1768471200000)
        )
    target.import_(path)
    assert sorted(g.fields["subject"] for g in target.beliefs()) == sorted(
        ["alice", "bob"] + (["carol"] if holding else [])
    )
    rows = target.query(
        "SELECT ?o WHERE { ?g rdf:subject ?s ; rdf:object ?o ; oms:subjectText 'alice' }",
        grains=True,
    )
    assert [str(r["o"].value) for r in rows] == ["Acme"]
