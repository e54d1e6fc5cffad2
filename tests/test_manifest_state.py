"""`.mg` and JSON Lines carry what the store learnt: evidence, disputes, signatures."""

from __future__ import annotations

import io
from typing import Any

import pytest

import oms_rdf as oms
from oms_rdf.codec.signing import generate_key, sign
from oms_rdf.io import plans
from oms_rdf.io.container import read_mg, write_mg

NOW = 1_800_000_000_000


def index_quads(store: oms.GrainStore) -> set[str]:
    """The index layer and the envelopes, without the audit log."""
    return {
        str(q)
        for graph in (oms.rdf.vocab.OMS.index, oms.rdf.vocab.OMS.blobs)
        for q in store.backend.quads(None, None, None, graph)
        if q.predicate != oms.rdf.vocab.OMS.auditChain  # each store has its own chain
    }


def learnt() -> tuple[oms.GrainStore, str, str]:
    store = oms.GrainStore(clock=lambda: NOW, functional_relations=["lives_in"])
    tea = store.put(oms.Belief("alice", "likes", "tea", 0.6, created_at=1))
    for i, kind in enumerate(["supporting"] * 4 + ["refuting"]):
        store.evidence(
            tea, kind, 0.9, note=f"seen {i}", at=NOW - 1000 + i, by="did:web:a"
        )
    store.put(oms.Belief("bob", "lives_in", "Paris", 0.7, created_at=1))
    with pytest.warns(oms.ConflictWarning):
        store.put(oms.Belief("bob", "lives_in", "Rome", 0.7, created_at=2))
    key = generate_key(bytes(32))
    signed = oms.Grain.from_dict(
        {"type": "belief", "subject": "carol", "relation": "owns", "object": "a key",
         "confidence": 0.9, "created_at": 3}, signed=True)  # fmt: skip
    store.put(sign(signed.blob, key))
    # Marked, then retracted: the spec's vstatus holds only "retracted".
    for mark in ("verified", "disputed"):
        marked = store.put(oms.Belief("dan", "saw", mark, 0.5, created_at=4))
        store.set_verification(marked, mark, at=NOW - 10)
        store.retract(marked, reason="withdrawn", at=NOW - 5)
    return store, tea, signed.address


@pytest.mark.parametrize("one_pass", [True, False], ids=["kept", "read again"])
@pytest.mark.parametrize("fmt", ["mg", "jsonl"])
def test_evidence_disputes_and_signatures_come_back(
    fmt: str, one_pass: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the first read's grains are kept for writing, or the file is read
    again (past ONE_PASS_LIMIT), the same state comes back."""
    if not one_pass:
        monkeypatch.setattr(plans, "ONE_PASS_LIMIT", 2)
    store, tea, signed = learnt()
    buffer = io.BytesIO()
    store.export(buffer, format=fmt)
    again = oms.GrainStore(clock=lambda: NOW)
    again.import_(io.BytesIO(buffer.getvalue()), format=fmt)
    assert index_quads(again) == index_quads(store)
    # The knowledge came in with the grains, without a rebuild: it is the rebuild's.
    current = {
        str(q) for q in again.backend.quads(None, None, None, oms.rdf.vocab.OMS.current)
    }
    again.rebuild_current()
    assert {
        str(q) for q in again.backend.quads(None, None, None, oms.rdf.vocab.OMS.current)
    } == current
    assert again.evidence_log(tea) == store.evidence_log(tea)
    assert again.status(tea).sprt_status == "promoted"
    assert again.status(signed).signed_by == store.status(signed).signed_by is not None
    assert again.conflicts() == store.conflicts()
    # Importing the same file again changes nothing and raises nothing.
    before = index_quads(again)
    assert again.import_(io.BytesIO(buffer.getvalue()), format=fmt).added == 0
    assert index_quads(again) == before


def test_a_signed_flag_grain_without_its_envelope_is_refused_from_mg() -> None:
    store, _tea, signed = learnt()
    buffer = io.BytesIO()
    store.export(buffer, format="mg")
    buffer.seek(0)
    reader = read_mg(buffer)
    blobs = list(reader.blobs())
    manifest: dict[str, Any] = {a: dict(e) for a, e in reader.manifest.items()}
    del manifest[signed]["oms_rdf:envelope"]
    stripped = io.BytesIO()
    write_mg(blobs, stripped, manifest={a: e for a, e in manifest.items() if e})
    target = oms.GrainStore()
    with pytest.raises(oms.SignatureError) as info:
        target.import_(io.BytesIO(stripped.getvalue()), format="mg")
    assert info.value.code == oms.ErrorCode.SIGNED_MISMATCH
    assert target.is_empty()


@pytest.mark.parametrize(
    "bad",
    [
        {"oms_rdf:lr": "1 ; DROP"},
        {"oms_rdf:sprt": "winning"},
        {"vstatus": "retracted", "oms_rdf:verification": "sure"},
        {"oms_rdf:conflicts": ["> <urn:x> <urn:y> ."]},
        {
            "oms_rdf:evidence": [
                {
                    "id": "urn:uuid:x> <a:b> <c:d",
                    "kind": "supporting",
                    "strength": 0.9,
                    "at": 1,
                    "lr": 0.1,
                }
            ]
        },
        {
            "oms_rdf:evidence": [
                {
                    "id": "urn:uuid:12345678-1234-5678-1234-567812345678",
                    "kind": "supporting",
                    "strength": "lots",
                    "at": 1,
                    "lr": 0,
                }
            ]
        },
    ],
)
def test_a_malformed_local_field_is_refused_and_nothing_is_written(
    bad: dict[str, Any],
) -> None:
    grain = oms.Belief("alice", "likes", "tea", 0.6, created_at=1)
    buffer = io.BytesIO()
    write_mg([grain.blob], buffer, manifest={grain.address: bad})
    target = oms.GrainStore()
    before = {str(q) for q in target.backend.quads()}
    with pytest.raises((oms.DecodeError, oms.IntegrityError)) as info:
        target.import_(io.BytesIO(buffer.getvalue()), format="mg")
    assert info.value.code in (oms.ErrorCode.CORRUPT, oms.ErrorCode.HASH_LENGTH)
    assert {str(q) for q in target.backend.quads()} == before


SPEC_KEYS = {"sb", "svt", "vstatus", "rstat", "ac", "laa"}  # spec §6, §11.3


def test_an_export_keeps_to_the_specs_keys_and_values() -> None:
    """Beside the spec's keys only oms_rdf: ones: a dispute was written as vstatus
    "disputed" (no 1.6 value) and itype/ireason/iinit (fields of a superseding
    grain's blob) without the prefix, which a strict reader refuses."""
    store, _tea, _signed = learnt()
    store.contradict(store.put(oms.Belief("eve", "likes", "tea", 0.5, created_at=5)),
                     reason="no", at=NOW - 1)  # fmt: skip
    buffer = io.BytesIO()
    store.export(buffer, format="mg")
    reader = read_mg(io.BytesIO(buffer.getvalue()))
    list(reader.blobs())  # the manifest follows the grains
    entries = [e for e in reader.manifest.values() if "oms_rdf:erased" not in e]
    assert {e.get("vstatus") for e in entries} <= {
        None,
        "verified",
        "contested",
        "retracted",
    }
    assert all(k in SPEC_KEYS or k.startswith("oms_rdf:") for e in entries for k in e)
    assert any(e.get("oms_rdf:verification") == "disputed" for e in entries)
    assert any(e.get("oms_rdf:itype") == "contradiction" for e in entries)


def test_an_older_entry_with_vstatus_disputed_and_bare_itype_is_read() -> None:
    grain = oms.Belief("alice", "likes", "tea", 0.6, created_at=1)
    entry = {"vstatus": "disputed", "itype": "note", "ireason": "as written once"}
    buffer = io.BytesIO()
    write_mg([grain.blob], buffer, manifest={grain.address: entry})
    store = oms.GrainStore()
    store.import_(io.BytesIO(buffer.getvalue()), format="mg")
    state = store.status(grain.address)
    assert (state.verification, state.invalidation_type, state.reason) == (
        "disputed", "note", "as written once")  # fmt: skip


@pytest.mark.parametrize("fmt", ["mg", "jsonl", "trig"])
def test_a_store_takes_its_own_export_after_evidence(fmt: str) -> None:
    """Evidence writes an SPRT status of "accumulating", which a manifest
    leaves out as the state of a grain with none: the same history."""
    store = oms.GrainStore(clock=lambda: NOW)
    a = store.put(oms.Belief("a", "r", "o", 0.9, created_at=1))
    store.evidence(a, "supporting", 0.9)
    out = io.BytesIO()
    store.export(out, format=fmt)
    assert store.import_(io.BytesIO(out.getvalue()), format=fmt).added == 0
    assert store.status(a).sprt_status == "accumulating"
