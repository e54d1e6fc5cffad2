"""Beliefs written to reach past their own triple: about another grain's node, in
the store's own properties, with bytes that are not what they say."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import oms_rdf as oms
from oms_rdf.rdf.mapping import NIH_PREFIX

T = 1_700_000_000_000
REVIEWED = "http://example.org/reviewed"


def dump(store: oms.GrainStore) -> set[str]:
    return {str(q) for q in store.backend.quads()}


@pytest.mark.parametrize("on_disk", [False, True])
def test_erasing_a_grain_keeps_another_belief_about_its_node(
    tmp_path: Path, on_disk: bool
) -> None:
    store = oms.GrainStore(tmp_path / "s" if on_disk else None, clock=lambda: T + 100)
    target = store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=T))
    about = store.put({"type": "belief", "subject": NIH_PREFIX + target,
                       "relation": REVIEWED, "object": "ok", "confidence": 0.5,
                       "created_at": T + 1, "namespace": "crm"})  # fmt: skip
    ask = f'ASK {{ <{NIH_PREFIX}{target}> <{REVIEWED}> "ok" }}'
    store.erase(target, reason="asked to forget alice's employer")
    assert store.status(about).status == "active"
    assert store.query(ask) and store.query(ask, held=True)
    assert store.query(ask, namespace="crm")
    assert f"<{REVIEWED}>" in "".join(dump(store))
    # The erased grain itself is gone: no row of its node but its tombstone.
    node = f"<{NIH_PREFIX}{target}>"
    left = [q for q in dump(store) if q.startswith(node) and REVIEWED not in q]
    assert len(left) == 1 and "erasedAt" in left[0]
    store.close()


@pytest.mark.parametrize("name", ["blob", "envelope"])
def test_the_properties_of_a_grains_bytes_are_no_relation_of_a_belief(
    name: str,
) -> None:
    store = oms.GrainStore(clock=lambda: T + 100)
    store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=T))
    before = dump(store)
    iri = f"https://w3id.org/oms-rdf/ns#{name}"
    with pytest.raises(oms.SchemaError) as caught:
        store.put({"type": "belief", "subject": "http://example.org/x",
                   "relation": iri, "object": "QUJD", "confidence": 0.5,
                   "created_at": T + 1})  # fmt: skip
    assert caught.value.code == "ERR_SCHEMA" and iri in str(caught.value)
    with pytest.raises(oms.OmsError):
        store.update(f'INSERT DATA {{ <http://example.org/x> <{iri}> "QUJD" }}')
    assert dump(store) == before
    # So a plain export (no grains) of the store reads back as knowledge.
    out = io.BytesIO()
    store.export(out, format="turtle")
    copy = oms.GrainStore()
    assert copy.import_(io.BytesIO(out.getvalue()), format="turtle").added == 1


@pytest.mark.parametrize("junk", ["!!!", "Q=U=J=D", "QUJD!!!", "QU_JD"])
def test_base64_text_with_other_characters_is_corrupt(
    tmp_path: Path, junk: str
) -> None:
    line = {"type": "belief", "subject": "http://example.org/s", "relation": "r",
            "object": "o", "confidence": 0.5, "created_at": T,
            "context": {"k": {"$base64": junk}}}  # fmt: skip
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(line) + "\n")
    store = oms.GrainStore()
    with pytest.raises(oms.OmsError) as caught:
        store.import_(path)
    assert caught.value.code == "ERR_CORRUPT" and "base64" in str(caught.value)
    assert store.is_empty()


@pytest.mark.parametrize(
    ("insert", "kept"), [("", True), ("!", False), (" ", False), ("\\n", False)]
)
def test_a_blob_literal_is_base64_as_the_store_writes_it(
    insert: str, kept: bool
) -> None:
    """A blob's text with a character outside base64 is corrupt, never read as
    the bytes left once it is skipped, nor kept in a form the store never writes."""
    store = oms.GrainStore(clock=lambda: T + 100)
    store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=T))
    out = io.BytesIO()
    store.export(out, format="nquads")
    lines = out.getvalue().decode().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "#blob>" in line)
    head, text, tail = lines[at].split('"', 2)
    lines[at] = f'{head}"{text[:8]}{insert}{text[8:]}"{tail}'
    copy = oms.GrainStore()
    source = io.BytesIO("".join(lines).encode())
    if kept:
        assert copy.import_(source, format="nquads").added == 1

        def blobs(kept: oms.GrainStore) -> set[str]:  # kept as the store writes it
            return {q for q in dump(kept) if "#blob>" in q}

        assert blobs(copy) == blobs(store)
        return
    with pytest.raises(oms.OmsError) as caught:
        copy.import_(source, format="nquads")
    assert caught.value.code == "ERR_CORRUPT"
    assert copy.is_empty()
